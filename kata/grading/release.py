"""``nox -s release -- DIR``: write the student edition of the course into DIR.

The edition is the repository as a class receives it:

- without ``solutions/``;
- without the authors' own checks: in ``tests/`` only the chapter tests (``test_chapter*.py``), the
  snapshots they read (``tests/snapshots/chapterNN.npz``) and ``__init__.py`` stay (the meta tests,
  ``tests/tools/`` and ``.ci/`` run against ``solutions/``);
- without the audit scripts (``scripts/audit_*.py``): they recompute a worksheet from first principles,
  which is a solution by another name;
- without the solution sections of every Markdown file: the lines from ``<!-- kata:solution -->`` to
  ``<!-- /kata:solution -->``, or from ``<!-- kata:authors-only -->`` to ``<!-- /kata:authors-only -->``
  (each marker on a line of its own), are cut; an unclosed marker is an error, never a silent leak;
- with ``.github/workflows/grade.yml``, the grading workflow, set to ``--course-repo`` and ``--tag``.

Files come from git (tracked plus untracked-but-not-ignored) when the repository is a git work tree,
otherwise from the folder minus caches and build output. DIR must not exist or be empty.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
from pathlib import Path

from .. import project

WORKFLOW = project.ROOT / ".github" / "workflows" / "grade.yml"  # rendered into the edition with its course and tag
MARKERS = ("solution", "authors-only")
_SKIP_PARTS = {".git", ".nox", "__pycache__", ".pytest_cache", ".ruff_cache", ".benchmarks", ".venv", ".kata"}
_SKIP_TOP = {"grade", "site", "build"}


def parser() -> argparse.ArgumentParser:
    """The command line of ``nox -s release -- ...``."""
    p = argparse.ArgumentParser(prog="nox -s release --", description="Write the student edition into DIR.")
    p.add_argument("dir", help="where to write the edition (must not exist, or be empty)")
    p.add_argument(
        "--course-repo",
        default="",
        metavar="URL",
        help="the public repository holding the course's release tag (the workflow fetches its tests)",
    )
    p.add_argument("--tag", default="", help="the course's release tag, e.g. v1 (the workflow grades with it)")
    return p


def source_files(root: Path) -> list[str]:
    """Every file of the repository, as paths relative to ``root``."""
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        capture_output=True, text=True, check=False,
    ) if (root / ".git").exists() and shutil.which("git") else None
    if listed is not None and listed.returncode == 0:
        return sorted(n for n in listed.stdout.split("\0") if n and (root / n).is_file())
    found = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if not path.is_file() or _SKIP_PARTS & set(rel.parts) or rel.parts[0] in _SKIP_TOP or path.suffix == ".pyc":
            continue
        found.append(rel.as_posix())
    return sorted(found)


def belongs(path: str) -> bool:
    """Whether a file goes into the student edition."""
    parts = path.split("/")
    if parts[0] in ("solutions", ".ci", ".kata") or parts[0] in _SKIP_TOP:
        return False
    if parts[0] == "scripts" and parts[-1].startswith("audit_"):
        return False  # a worksheet recomputed from first principles: a solution by another name
    if parts[0] == ".github":
        return False  # the edition's only workflow is the grading one, written below
    if parts[0] == "tests":
        if len(parts) == 3 and parts[1] == "snapshots":  # the chapter tests' stored expected values
            return bool(re.fullmatch(r"chapter\d\d\.npz", parts[2]))
        return len(parts) == 2 and (parts[1] == "__init__.py" or re.fullmatch(r"test_chapter\d\d_\w+\.py", parts[1]))
    return True


def strip_sections(text: str, where: str) -> tuple[str, int]:
    """Cut every marked section out of a Markdown text; return the text and how many were cut.

    Raises:
        ValueError: a marker is opened and not closed (or closed and not opened).
    """
    cut = 0
    for name in MARKERS:  # a marker is a line of its own (a marker quoted in a sentence is just text)
        opening, closing = rf"^[ \t]*<!--\s*kata:{name}\s*-->[ \t]*$", rf"^[ \t]*<!--\s*/kata:{name}\s*-->[ \t]*\n?"
        block = re.compile(f"{opening}.*?{closing}", re.S | re.M)
        text, n = block.subn("", text)
        cut += n
        if re.search(rf"^[ \t]*<!--\s*/?kata:{name}\s*-->[ \t]*$", text, re.M):
            raise ValueError(f"{where}: a <!-- kata:{name} --> marker without its partner")
    return text, cut


def render_workflow(course_repo: str, tag: str) -> str:
    """The grading workflow with the course's repository and tag filled in."""
    text = WORKFLOW.read_text(encoding="utf-8")
    text = re.sub(r'(?m)^(\s*COURSE_REPO:).*$', rf'\1 "{course_repo}"', text)
    return re.sub(r'(?m)^(\s*COURSE_TAG:).*$', rf'\1 "{tag}"', text)


def release(root: Path, target: Path, course_repo: str = "", tag: str = "") -> dict:
    """Write the edition; return what was left out and what was cut.

    Args:
        root: the course authors' repository.
        target: the folder to write (created; must be empty if it exists).
        course_repo: the public repository the workflow fetches the release tag from.
        tag: the release tag the workflow grades with.

    Returns:
        ``{"written": n, "left_out": [paths], "sections_cut": {path: n}}``.

    Raises:
        ValueError: ``target`` is not empty, is inside ``root``'s protected folders, or a marker is unclosed.
    """
    target = target.resolve()
    if target.exists() and any(target.iterdir()):
        raise ValueError(f"{target} is not empty; give a new or empty folder")
    inside = root.resolve() in target.parents and target.relative_to(root.resolve()).parts[0] not in _SKIP_TOP
    if target == root.resolve() or inside:
        raise ValueError(f"{target} is inside the repository; write the edition elsewhere (or under build/)")
    files = source_files(root)
    left_out = [f for f in files if not belongs(f)]
    cut: dict[str, int] = {}
    pending: dict[str, bytes] = {}
    for name in files:
        if not belongs(name):
            continue
        data = (root / name).read_bytes()
        if name.endswith(".md"):
            text, n = strip_sections(data.decode("utf-8"), name)
            if n:
                cut[name] = n
                data = text.encode("utf-8")
        pending[name] = data
    pending[".github/workflows/grade.yml"] = render_workflow(course_repo, tag).encode("utf-8")
    for name, data in pending.items():
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        source = root / name
        if source.exists() and source.stat().st_mode & 0o111:
            path.chmod(path.stat().st_mode | 0o111)
    return {"written": len(pending), "left_out": left_out, "sections_cut": cut}


def main(argv: list[str] | None = None) -> int:
    """Write the edition and say what it holds."""
    args = parser().parse_args(argv)
    try:
        done = release(project.ROOT, Path(args.dir), args.course_repo, args.tag)
    except ValueError as err:
        print(f"release: {err}")
        return 2
    print(f"wrote the student edition into {Path(args.dir).resolve()}: {done['written']} files")
    tops = sorted({"/".join(p.split("/")[: 2 if p.startswith("tests/") else 1]) for p in done["left_out"]})
    print(f"left out: {', '.join(tops) or 'nothing'}")
    for name, n in sorted(done["sections_cut"].items()):
        print(f"cut {n} solution/authors-only section(s) from {name}")
    if not args.tag:
        print("note: no --tag given: the workflow grades without --pristine until COURSE_TAG is set in "
              ".github/workflows/grade.yml")
    print("next: docs/instructors.md, 'Set up a course repository'.")
    return 0
