"""What a grade was computed against and from: the course version, the grading machinery, the submission.

- ``course_version``: a hash of the course's chapter tests, answer key and points file. Recorded with
  every grade, so a score can be matched to the rules it was computed under, and a weight change is a
  new course version without any edit in the learners' repositories.
- ``machinery_version``: the same, plus the grading machinery (``kata/``), ``conftest.py`` and
  ``pyproject.toml``: anything that could change a grade. ``nox -s grade-class`` keys its cache on it.
- ``submission``: the repository and commit a grade belongs to (given, or read from git).
"""

from __future__ import annotations

import hashlib
import subprocess
import urllib.parse
from pathlib import Path

COURSE_FILES = ("tests/test_chapter*.py", "tests/__init__.py", "reference/*.toml")
MACHINERY_FILES = ("kata/**/*.py", "kata/**/*.json", "conftest.py", "pyproject.toml")


def _digest(root: Path, patterns: tuple[str, ...], extra: list[tuple[str, bytes]] = ()) -> str:
    h = hashlib.sha256()
    names = sorted({p for pattern in patterns for p in root.glob(pattern)
                    if p.is_file() and "__pycache__" not in p.parts})
    for path in names:
        data = path.read_bytes()
        h.update(f"{path.relative_to(root).as_posix()}\0{len(data)}\0".encode())
        h.update(data)
    for name, data in extra:
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def folder_files(folder: Path, label: str) -> list[tuple[str, bytes]]:
    """Every file under ``folder`` as (``label/relative path``, bytes), for a hash (instructor's extra tests)."""
    if not folder.is_dir():
        return []
    return [
        (f"{label}/{p.relative_to(folder).as_posix()}", p.read_bytes())
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith(".pyc")
    ]


def course_version(root: Path, points_file: Path | None = None) -> str:
    """``sha256:`` + 16 hex digits over the chapter tests, the answer key and the points file of ``root``."""
    points_file = points_file if points_file is not None else root / "grading.toml"
    extra = [("grading.toml", points_file.read_bytes())] if points_file.is_file() else []
    return "sha256:" + _digest(root, COURSE_FILES, extra)[:16]


def machinery_version(root: Path, points_file: Path | None = None) -> str:
    """The course version plus the grading machinery: ``kata/``, ``conftest.py``, ``pyproject.toml``."""
    extra = [("course", course_version(root, points_file).encode())]
    return _digest(root, MACHINERY_FILES, extra)


def _git(folder: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=20,
                              check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def submission(folder: Path, repository: str | None = None, commit: str | None = None) -> dict:
    """``{"repository", "commit"}`` of the graded code: as given, else from git at ``folder``.

    Either may be None when nothing says (a folder outside any git repository).
    """
    if repository is None and folder.is_dir():
        repository = _without_credentials(_git(folder, "remote", "get-url", "origin"))
    if commit is None and folder.is_dir():
        commit = _git(folder, "rev-parse", "HEAD")
    return {"repository": repository, "commit": commit}


def _without_credentials(url: str | None) -> str | None:
    """``url`` without a user name or token in it (a token is never written into a report)."""
    if not url or "://" not in url:
        return url
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urllib.parse.urlunsplit(parts._replace(netloc=host))
