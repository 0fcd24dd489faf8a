"""``nox -s release -- DIR``: write the student edition of the course into DIR.

The edition is the repository as a class receives it, built from an allow-list (``SHIPS``): the folders and
files a course is made of. Any other file it finds (a roster, a gradebook, notes, an export) is *refused*:
the release lists each and writes nothing, unless the file (or its folder) is named with ``--include``.
Rosters, gradebooks, caches and reports are also ignored by git (``.gitignore``), so they never get that far.
Of what the list ships:

- without ``solutions/`` (nor the snapshot builders that run them, ``tests/snapshots/chapterNN.py``, and their
  runner ``kata/authoring/snapshots.py``);
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
from collections import Counter
from pathlib import Path

from .. import project

WORKFLOW = project.ROOT / ".github" / "workflows" / "grade.yml"  # rendered into the edition with its course and tag
MARKERS = ("solution", "authors-only")
_SKIP_PARTS = {".git", ".nox", "__pycache__", ".pytest_cache", ".ruff_cache", ".benchmarks", ".venv", ".kata",
               ".venv-tools"}
_SKIP_TOP = {"grade", "site", "build", "runs"}
# What a course ships: these folders (with everything in them) and files, at the repository's root.
SHIPS = ("docs/", "exercises/", "reference/", "notebooks/", "kata/", "data/", "scripts/", "benchmarks/", "tests/",
         "noxfile.py", "pyproject.toml", "uv.lock", "start.py", "mkdocs.yml", "README.md", "CONTRIBUTING.md",
         "grading.toml", ".gitignore", "conftest.py")
# The authors' own files: known, and left out of every edition (``belongs``); the snapshot builder runs solutions/.
AUTHORS_ONLY = ("solutions/", ".ci/", ".github/", ".kata/", "kata/authoring/snapshots.py")


SHOWN = 10  # files a refusal names one per line; the rest are counted, by folder


def some(paths: list[str], shown: int = SHOWN) -> str:
    """The first ``shown`` paths, one per line, then ``and N more`` with the folders they are in.

    A grading run's output folder left in the repository holds hundreds of files (one folder per learner): a
    refusal listing each would bury its own first line. The folders say where to look (or what to git-ignore).
    """
    lines = [f"  {p}" for p in paths[:shown]]
    rest = paths[shown:]
    if rest:
        tops = Counter(p.split("/")[0] + ("/" if "/" in p else "") for p in rest)
        where = ", ".join(f"{top} ({n:,})" for top, n in sorted(tops.items(), key=lambda t: (-t[1], t[0])))
        lines.append(f"  and {len(rest):,} more, in: {where}")
    return "\n".join(lines)


class Refused(ValueError):
    """Files the repository holds that are not part of a course: nothing is written."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        super().__init__(
            f"{len(paths)} file(s) here are not part of a course and would have gone into the student edition; "
            "nothing was written. Move them out of the repository (a roster or a gradebook belongs outside it; "
            "grading output under class/ or gradebook/ is ignored by git), or name each one to ship with "
            "--include PATH:\n" + some(paths))


class NotCommitted(Refused):
    """Files inside the course's folders that git does not track: nothing is written."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        ValueError.__init__(
            self,
            f"{len(paths)} file(s) inside the course's folders are not committed to git and would have gone into the "
            "student edition (a roster or a gradebook copied into data/, docs/ or exercises/ looks just like "
            "this); nothing was written. Commit the ones that belong to the course, move the others out of the "
            "repository, or name each one to ship with --include PATH:\n" + some(paths))


def listed(path: str, names: tuple[str, ...] | list[str]) -> bool:
    """Whether ``path`` is one of ``names`` or inside one of them (a name ending in ``/``, or any folder)."""
    return any(path == n.rstrip("/") or path.startswith(n.rstrip("/") + "/") for n in names)


def parser() -> argparse.ArgumentParser:
    """The command line of ``nox -s release -- ...``."""
    p = argparse.ArgumentParser(prog="nox -s release --", description="Write the student edition into DIR.")
    p.add_argument("dir", help="where to write the edition (must not exist, or be empty)")
    p.add_argument("--course-repo", default="", metavar="URL",
                   help="the public repository holding the course's release tag (the workflow fetches its tests)")
    p.add_argument("--tag", default="", help="the course's release tag, e.g. v1 (the workflow grades with it)")
    p.add_argument("--include", action="append", default=[], metavar="PATH",
                   help="ship this file or folder too, although it is not part of a course (repeatable)")
    return p


def source_files(root: Path) -> list[str]:
    """Every file of the repository, as paths relative to ``root``."""
    listed = _git_files(root, "--cached", "--others")
    if listed is not None:
        return listed
    found = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if not path.is_file() or _SKIP_PARTS & set(rel.parts) or rel.parts[0] in _SKIP_TOP or path.suffix == ".pyc":
            continue
        found.append(rel.as_posix())
    return sorted(found)


def _git_files(root: Path, *which: str) -> list[str] | None:
    """``git ls-files`` of ``root`` (not ignored files only), or None outside git."""
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", *which, "--exclude-standard", "-z"],
        capture_output=True, text=True, check=False,
    ) if (root / ".git").exists() and shutil.which("git") else None
    if listed is None or listed.returncode != 0:
        return None
    return sorted(n for n in listed.stdout.split("\0") if n and (root / n).is_file())


def belongs(path: str) -> bool:
    """Whether a file goes into the student edition."""
    parts = path.split("/")
    if not listed(path, SHIPS) or parts[0] in _SKIP_TOP or listed(path, AUTHORS_ONLY):
        return False  # .github/ among them: the edition's only workflow is the grading one, written below
    if parts[0] == "scripts" and parts[-1].startswith("audit_"):
        return False  # a worksheet recomputed from first principles: a solution by another name
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


def release(root: Path, target: Path, course_repo: str = "", tag: str = "", include: list[str] = ()) -> dict:
    """Write the edition; return what was left out and what was cut.

    Args:
        root: the course authors' repository.
        target: the folder to write (created; must be empty if it exists).
        course_repo: the public repository the workflow fetches the release tag from.
        tag: the release tag the workflow grades with.
        include: files or folders (relative to ``root``) to ship although ``SHIPS`` does not list them.

    Returns:
        ``{"written": n, "left_out": [paths], "sections_cut": {path: n}, "included": [paths]}``.

    Raises:
        Refused: files that are neither part of a course nor the authors' own, not named in ``include``; or
            (``NotCommitted``) files inside the course's folders that git does not track, not named either.
        ValueError: ``target`` is not empty, is inside ``root``'s protected folders, or a marker is unclosed.
    """
    target = target.resolve()
    if target.exists() and any(target.iterdir()):
        raise ValueError(f"{target} is not empty; give a new or empty folder")
    inside = root.resolve() in target.parents and target.relative_to(root.resolve()).parts[0] not in _SKIP_TOP
    if target == root.resolve() or inside:
        raise ValueError(f"{target} is inside the repository; write the edition elsewhere (or under build/)")
    files = source_files(root)
    include = [Path(p).as_posix().strip("/") for p in include]
    unknown = [p for p in include if not any(listed(f, [p]) for f in files)]
    if unknown:
        raise ValueError(f"--include: no file {', '.join(map(repr, unknown))} here (paths are relative to {root})")
    private = [p for p in include if listed(p, AUTHORS_ONLY)]
    if private:
        raise ValueError(f"--include: {', '.join(map(repr, private))} is the authors' own and never ships")
    included = [f for f in files if listed(f, include) and not listed(f, SHIPS) and not listed(f, AUTHORS_ONLY)]
    refused = [f for f in files if not listed(f, SHIPS) and not listed(f, AUTHORS_ONLY) and f not in included]
    if refused:
        raise Refused(refused)
    uncommitted = [f for f in _git_files(root, "--others") or [] if belongs(f) and not listed(f, include)]
    if uncommitted:
        raise NotCommitted(uncommitted)
    left_out = [f for f in files if not belongs(f) and f not in included]
    cut: dict[str, int] = {}
    pending: dict[str, bytes] = {}
    for name in files:
        if not belongs(name) and name not in included:
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
    return {"written": len(pending), "files": sorted(pending), "left_out": left_out, "sections_cut": cut,
            "included": included}


def left_out_said(left_out: list[str], written: list[str], shown: int = 3) -> list[str]:
    """What the edition leaves out, one line per top-level folder or file, true about partly shipped folders.

    A folder none of whose files ships is named whole (``solutions/``); a folder that ships in part (``kata/``
    without its snapshot builder, ``tests/`` with only the chapter tests) says how many of its files stay
    behind and names the first ones, so nobody reads ``kata`` as "the grading machinery is not shipped".
    """
    out = [p for p in left_out if p not in set(written)]  # .github/workflows/grade.yml ships, rewritten
    lines = []
    for top in sorted({p.split("/")[0] for p in out}):
        mine = [p for p in out if p == top or p.startswith(top + "/")]
        if mine == [top]:
            lines.append(f"  {top}")
            continue
        shipped = sum(1 for p in written if p.startswith(top + "/"))
        if not shipped:
            lines.append(f"  {top}/ (the whole folder)")
            continue
        names = ", ".join(mine[:shown]) + (f", and {len(mine) - shown:,} more" if len(mine) > shown else "")
        lines.append(f"  {top}/: {len(mine):,} of its {len(mine) + shipped:,} files ({shipped:,} shipped): {names}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Write the edition and say what it holds."""
    args = parser().parse_args(argv)
    try:
        done = release(project.ROOT, Path(args.dir), args.course_repo, args.tag, args.include)
    except ValueError as err:
        print(f"release: {err}")
        return 2
    print(f"wrote the student edition into {Path(args.dir).resolve()}: {done['written']} files")
    said = left_out_said(done["left_out"], done["files"])
    print("left out, the authors' own (the rest of each folder is in the edition):" if said else "left out: nothing")
    for line in said:
        print(line)
    for name in done["included"]:
        print(f"included (--include): {name}")
    for name, n in sorted(done["sections_cut"].items()):
        print(f"cut {n} solution/authors-only section(s) from {name}")
    if not args.tag:
        print("note: no --tag given: the workflow grades without --pristine until COURSE_TAG is set in "
              ".github/workflows/grade.yml")
    print("next: docs/instructors.md, 'Set up a course repository'.")
    return 0
