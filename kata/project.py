"""Where things are: the repository, its chapters (found from ``reference/``), an implementation's files.

Chapters are never listed by hand: whatever has an answer key in ``reference/`` and a test file in
``tests/`` is a chapter, so chapters added later appear in every tool by themselves. Nor are the parts:
a chapter's part is the section of mkdocs.yml's nav its page is listed under (``parts``, ``part_title``).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHAPTER_NAME = re.compile(r"(?:test_|audit_)?chapter(\d\d)_(\w+?)(?:\.(?:py|toml|npz|ipynb|md))?")
"""A chapter's file or module name: ``chapter04_attention`` (``.py``, ``.toml``…), ``test_chapter04_attention.py``,
``audit_chapter12_rope.py``."""


def nav_sections(mkdocs_yml: str) -> dict[str, str]:
    """{page under docs/: the title of the top-level nav section holding it ("" at the top level)} of a mkdocs.yml.

    Read with PyYAML (the docs' own reader, installed with mkdocs), its ``!!python/name:`` tags read as nothing.
    """
    return dict(_nav_sections(mkdocs_yml))


@functools.cache
def _nav_sections(mkdocs_yml: str) -> tuple[tuple[str, str], ...]:
    import yaml

    class Loader(yaml.SafeLoader):
        """YAML with mkdocs' tags read as nothing (only the nav is wanted)."""

    Loader.add_multi_constructor("", lambda loader, suffix, node: None)
    found: dict[str, str] = {}

    def walk(entries, section: str) -> None:
        for entry in entries or []:
            if isinstance(entry, str):
                found[entry] = section
                continue
            for title, value in entry.items():
                if isinstance(value, list):
                    walk(value, section or title)
                elif isinstance(value, str):
                    found[value] = section

    walk((yaml.load(mkdocs_yml, Loader=Loader) or {}).get("nav"), "")
    return tuple(found.items())


def parts(root: Path = ROOT, mkdocs_yml: str | None = None) -> list[str]:
    """The titles of the course's parts, in order: the top-level sections of mkdocs.yml's nav holding a chapter.

    The nav is the one place that says which part a chapter belongs to: its page (``chapters/…``) is listed
    under its part's section, whose title is the part's ("Part I: the book"), and the first part is the book.
    docs/index.md's ``## `` sections and the tests read it from there; a new part is a new section.
    ``mkdocs_yml``: that text instead of ``root``'s file.
    """
    if mkdocs_yml is None:
        mkdocs_yml = (root / "mkdocs.yml").read_text(encoding="utf-8")
    sections = nav_sections(mkdocs_yml)
    return list(dict.fromkeys(t for page, t in sections.items() if t and page.startswith("chapters/")))


def part_title(number: int, root: Path = ROOT, mkdocs_yml: str | None = None) -> str:
    """The title of the part chapter ``number`` belongs to (``parts``), or a ``ValueError`` saying where to list it.

    The chapter's page (its key's ``page``) must be in mkdocs.yml's nav, under its part's section.
    ``mkdocs_yml``: that text instead of ``root``'s file.
    """
    if mkdocs_yml is None:
        mkdocs_yml = (root / "mkdocs.yml").read_text(encoding="utf-8")
    page = chapter(number, root).page
    title = nav_sections(mkdocs_yml).get(page.removeprefix("docs/"))
    if title:
        return title
    where = "is not in mkdocs.yml's nav" if title is None else "is at the top of mkdocs.yml's nav"
    titles = ", ".join(f'"{t}"' for t in parts(root, mkdocs_yml))
    raise ValueError(f"chapter {number}'s page {page} {where}: list it under its part's section ({titles}), "
                     f"or under a new section for a new part")


def chapters(root: Path = ROOT) -> list:
    """Every chapter with an answer key and a test file, in order (``kata.judge.answer_key.Chapter`` objects)."""
    answer_key = importlib.import_module("kata.judge.answer_key")  # by name: it imports this module, below it
    return [c for c in answer_key.chapters() if (root / c.test_file).exists()]


def chapter(number: int, root: Path = ROOT):
    """The chapter with this number, or a ``SystemExit`` naming the chapters there are."""
    found = {c.number: c for c in chapters(root)}
    if number not in found:
        have = ", ".join(str(n) for n in found) or "none"
        raise SystemExit(f"there is no chapter {number} (chapters here: {have})")
    return found[number]


def chapter_number(name: str | Path) -> int | None:
    """The chapter a file or module belongs to, by its name (``chapter04_attention.py`` -> 4); else None."""
    found = CHAPTER_NAME.fullmatch(Path(str(name)).name)
    return int(found[1]) if found else None


def chapter_files(folder: Path, suffix: str = ".py", prefix: str = "") -> dict[int, Path]:
    """The chapter files in a folder, ``<prefix>chapterNN_<topic><suffix>``, by chapter number, in order.

    For an implementation (``chapter04_attention.py``), the answer key (``suffix=".toml"``) or the tests
    (``prefix="test_"``), of this course or of any other folder laid out the same way.
    """
    found = {}
    for path in sorted(Path(folder).glob(f"{prefix}chapter*{suffix}")):
        number = chapter_number(path.name)
        if number is not None:
            found[number] = path
    return dict(sorted(found.items()))


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
    import tomllib

    try:
        lock = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
        pinned = {p["name"]: p.get("version") for p in lock.get("package", [])}
    except (OSError, tomllib.TOMLDecodeError):
        pinned = {}
    return {name: {"installed": installed(name), "locked": pinned.get(name)} for name in names}


def installed(name: str) -> str | None:
    """The version of distribution ``name`` installed here, or None."""
    import importlib.metadata

    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def impl_location(impl: str, root: Path = ROOT) -> Path | None:
    """The folder of an implementation (``--impl``), found without importing it; None when there is none.

    The one rule, for the judge's ``--impl`` and every tool's: a path (with a separator, or starting with ``.``)
    is a folder, relative to the working folder or else to ``root``; a package name is looked for in ``root``,
    then on ``sys.path``, then by the import system, then as a folder in the working folder. No ``--impl`` at all
    is the learner's work as it is, which a caller turns into a folder first with ``learners_code.default_impl``
    (exercises/, with the saved notebooks' finished functions): this module sits below ``answers``.
    """
    if impl is None:
        raise TypeError("impl_location needs an implementation: resolve None first with "
                        "kata.learners_code.default_impl()")
    return next((p.resolve() for p in _impl_candidates(impl, root) if p.is_dir()), None)


def _impl_candidates(impl: str, root: Path):
    """Where ``impl_location`` looks, in order (lazily: the import system is asked only when it comes to that)."""
    path = Path(impl)
    if path.is_absolute() or "/" in impl or os.sep in impl or impl.startswith("."):
        yield path
        if not path.is_absolute():
            yield root / path
        return
    if impl.isidentifier():
        yield root / impl
        yield from (Path(p) / impl for p in sys.path if p)
        spec = importlib.util.find_spec(impl)
        if spec is not None and spec.submodule_search_locations:
            yield Path(next(iter(spec.submodule_search_locations)))
    yield path


def impl_folder(impl: str, root: Path = ROOT) -> Path:
    """The folder of an implementation (``impl_location``), or a ``SystemExit`` saying there is none."""
    found = impl_location(impl, root)
    if found is not None:
        return found
    raise SystemExit(f"no implementation {impl!r}: give a package name such as 'exercises' or a folder path")


def chapter_module(impl: str, number: int, root: Path = ROOT):
    """Import chapter ``number`` of an implementation (a package name or a folder, as ``impl_folder`` reads it)."""
    folder = impl_folder(impl, root)
    found = chapter_files(folder).get(number)
    if found is None:
        raise SystemExit(f"{folder} has no chapter{number:02d}_*.py")
    if str(folder.parent) not in sys.path:
        sys.path.insert(0, str(folder.parent))
    return importlib.import_module(f"{folder.name}.{found.stem}")
