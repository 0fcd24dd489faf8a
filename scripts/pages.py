"""Write the answer key's blocks and the figures' images into the pages: ``python scripts/pages.py``.

Every ``<!-- kata:worksheet N -->``, ``<!-- kata:hints N -->`` and ``<!-- kata:errata N|all -->`` marker in
``docs/`` gets its block written out after it, up to a closing marker (``<!-- /kata:worksheet N -->``), from
``reference/`` with the docs hook's own functions (``docs/hooks/answer_key.py``); every ``<!-- kata:figure
NAME -->`` gets the Markdown image of ``docs/figures/NAME.svg`` and its caption from ``docs/hooks/figures.toml``
(``docs/hooks/figures.py``; ``scripts/figures.py`` draws the file). A page read in the repository, in an editor
or on GitHub, is then whole; the site renders the same blocks afresh. CONTRIBUTING.md's ``<!-- kata:mutation-table
-->`` gets every chapter's mutation figures (``tests/mutants/chapterNN.toml``, ``scripts/mutation.py``'s table).

``--check`` changes nothing and exits 1 naming every page that is out of date (``tests/test_pages_whole.py``
runs it in selfcheck). Run it after editing an answer key or adding a marker.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(ROOT))

from kata.authoring.generated import docs_hook, write_or_check  # noqa: E402


def mutation_table(text: str) -> str:
    """CONTRIBUTING.md with its mutation table written (``scripts/mutation.py``'s ``fill``).

    Imported only where the marker is: the student edition's CONTRIBUTING.md has none, nor ``tests/mutants/``.
    """
    if "<!-- kata:mutation-table -->" not in text:
        return text
    from scripts import mutation

    return mutation.fill(text)


def stale(write: bool) -> list[Path]:
    """Every page whose blocks differ from a fresh rendering; with ``write``, rewrite them."""
    fills = (docs_hook("answer_key").fill, docs_hook("figures").fill)
    found = []
    for page in [*sorted(DOCS.rglob("*.md")), ROOT / "CONTRIBUTING.md"]:
        text = fresh = page.read_text(encoding="utf-8")
        if page.is_relative_to(DOCS):
            for fill in fills:
                fresh = fill(fresh, page.relative_to(DOCS).as_posix())
        else:
            fresh = mutation_table(text)
        if fresh != text:
            found.append(page)
            if write:
                page.write_text(fresh, encoding="utf-8")
    return found


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` only check) the blocks; return the exit code."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 if a page is out of date")
    args = p.parse_args(argv)
    return write_or_check(stale, args.check, "python scripts/pages.py")


if __name__ == "__main__":
    sys.exit(main())
