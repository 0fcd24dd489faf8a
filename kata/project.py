"""Where things are: the repository, its chapters (found from ``reference/``), an implementation's files.

Chapters are never listed by hand: whatever has an answer key in ``reference/`` and a test file in
``tests/`` is a chapter, so chapters added later appear in every tool by themselves.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def kata(root: Path = ROOT) -> ModuleType:
    """Import the foundation's ``kata`` package (answer key, plugin) from ``root``."""
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return importlib.import_module("kata")


def chapters(root: Path = ROOT) -> list:
    """Every chapter with an answer key and a test file, in order (``kata.answer_key.Chapter`` objects)."""
    answer_key = kata(root).answer_key
    return [c for c in answer_key.chapters() if (root / c.test_file).exists()]


def chapter(number: int, root: Path = ROOT):
    """The chapter with this number, or a ``SystemExit`` naming the chapters there are."""
    found = {c.number: c for c in chapters(root)}
    if number not in found:
        have = ", ".join(str(n) for n in found) or "none"
        raise SystemExit(f"there is no chapter {number} (chapters here: {have})")
    return found[number]


def parse_chapter(text: str) -> int:
    """Read a chapter number as typed after ``--``: ``3``, ``chapter3`` or ``03``."""
    cleaned = text.strip().lower().removeprefix("chapter").removeprefix("ch")
    if not cleaned.isdigit():
        raise SystemExit(f"expected a chapter number such as 3, got {text!r}")
    return int(cleaned)


def versions(names) -> dict[str, dict]:
    """For each distribution: the version installed here and the version ``uv.lock`` pins (None where absent).

    Every nox session installs from the lock, so the two agree unless someone installed by hand; doctor and
    results.json show both, so a learner's run and the grader's can be compared.
    """
    import importlib.metadata
    import tomllib

    try:
        lock = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
        pinned = {p["name"]: p.get("version") for p in lock.get("package", [])}
    except (OSError, tomllib.TOMLDecodeError):
        pinned = {}
    found = {}
    for name in names:
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            installed = None
        found[name] = {"installed": installed, "locked": pinned.get(name)}
    return found


def impl_folder(impl: str, root: Path = ROOT) -> Path:
    """The folder of an implementation given as a package name (``exercises``) or a path."""
    path = Path(impl)
    if not path.is_absolute() and not (root / impl).is_dir() and path.is_dir():
        return path.resolve()
    candidate = path if path.is_absolute() else root / impl
    if candidate.is_dir():
        return candidate.resolve()
    spec = importlib.util.find_spec(impl) if "/" not in impl else None
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations))).resolve()
    raise SystemExit(f"no implementation {impl!r}: give a package name such as 'exercises' or a folder path")
