"""``--pristine REF``: grade with the course's own tests and machinery, restored from a git ref.

The grading workspace gets every protected path exactly as it is at REF (files the learner added
there are dropped, files they deleted come back), and the report lists every file that differed,
in the working tree or in the commit being graded.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from pathlib import Path

# What a learner must not be able to change the grade with. Everything else (exercises/, docs/) is theirs.
PROTECTED = ("tests", "reference", "conftest.py", "noxfile.py", "pyproject.toml", "kata", "grading.toml")


class PristineError(Exception):
    """The ref cannot be used: no git, not a repository, or no such ref."""


def _git(root: Path, *args: str, text: bool = True) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=text, check=False)
    except FileNotFoundError as err:
        raise PristineError("--pristine needs git, and git is not installed") from err


def resolve(root: Path, ref: str) -> str:
    """The commit ``ref`` names, or a PristineError saying why there is none."""
    inside = _git(root, "rev-parse", "--is-inside-work-tree")
    if inside.returncode != 0:
        raise PristineError(f"--pristine needs a git repository, and {root} is not one")
    found = _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if found.returncode != 0:
        raise PristineError(
            f"--pristine: no commit or tag {ref!r} in this repository "
            f"(fetch it first, e.g. git fetch <course repository> tag {ref})"
        )
    return found.stdout.strip()


def _files_at(root: Path, commit: str) -> dict[str, bytes]:
    listed = _git(root, "ls-tree", "-r", "--name-only", "-z", commit, "--", *PROTECTED)
    names = [n for n in listed.stdout.split("\0") if n]
    if not names:
        return {}
    archive = _git(root, "archive", "--format=tar", commit, "--", *names, text=False)
    if archive.returncode != 0:
        raise PristineError(f"git archive failed: {archive.stderr.decode(errors='replace').strip()}")
    files = {}
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        for member in tar.getmembers():
            if member.isfile():
                files[member.name] = tar.extractfile(member).read()
    return files


def _worktree_files(root: Path) -> list[str]:
    listed = _git(root, "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", *PROTECTED)
    return [n for n in listed.stdout.split("\0") if n and (root / n).is_file()]


def _head_changes(root: Path, commit: str) -> dict[str, str]:
    if _git(root, "rev-parse", "--verify", "--quiet", "HEAD").returncode != 0:
        return {}
    diff = _git(root, "diff", "--name-status", "--no-renames", "-z", commit, "HEAD", "--", *PROTECTED)
    parts = [p for p in diff.stdout.split("\0") if p]
    words = {"M": "modified", "A": "added", "D": "deleted", "T": "modified"}
    return {parts[i + 1]: words.get(parts[i][:1], "modified") for i in range(0, len(parts) - 1, 2)}


def restore(root: Path, ref: str, workspace: Path) -> dict:
    """Put the protected paths of ``ref`` into ``workspace``; return what differed in ``root``.

    Args:
        root: the learner's repository (a git work tree holding ``ref``).
        ref: a tag, branch or commit: the course's release.
        workspace: the copy of ``root`` that will be graded; its protected paths are replaced.

    Returns:
        ``{"ref", "commit", "differed": [{"path", "change"}]}`` with change modified, added or deleted.

    Raises:
        PristineError: git is missing, ``root`` is not a repository, or ``ref`` does not exist there.
    """
    commit = resolve(root, ref)
    pristine = _files_at(root, commit)
    differed: dict[str, str] = {}
    for name in _worktree_files(root):
        if name not in pristine:
            differed[name] = "added"
        elif (root / name).read_bytes() != pristine[name]:
            differed[name] = "modified"
    for name in pristine:
        if not (root / name).is_file():
            differed[name] = "deleted"
    for name, change in _head_changes(root, commit).items():
        differed.setdefault(name, change)
    for top in PROTECTED:
        target = workspace / top
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    for name, data in pristine.items():
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return {
        "ref": ref,
        "commit": commit,
        "differed": [{"path": p, "change": differed[p]} for p in sorted(differed)],
    }
