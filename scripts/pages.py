"""Write the answer key's worksheet tables, hints and errata into the pages: ``python scripts/pages.py``.

Every ``<!-- kata:worksheet N -->``, ``<!-- kata:hints N -->`` and ``<!-- kata:errata N|all -->`` marker in
``docs/`` gets its block written out after it, up to a closing marker (``<!-- /kata:worksheet N -->``), from
``reference/`` with the docs hook's own functions (``docs/hooks/answer_key.py``). A page read in the
repository, in an editor or on GitHub, is then whole; the site renders the same blocks afresh.

``--check`` changes nothing and exits 1 naming every page that is out of date (``tests/test_pages_whole.py``
runs it in selfcheck). Run it after editing an answer key or adding a marker.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def hook():
    """The docs hook module that renders the blocks (loaded by file, as MkDocs loads it)."""
    spec = importlib.util.spec_from_file_location("kata_docs_hook_answer_key", DOCS / "hooks" / "answer_key.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stale(write: bool) -> list[Path]:
    """Every page whose blocks differ from a fresh rendering; with ``write``, rewrite them."""
    fill = hook().fill
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        fresh = fill(text, page.relative_to(DOCS).as_posix())
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
    pages = stale(write=not args.check)
    for page in pages:
        print(f"{'out of date' if args.check else 'wrote'}: {page.relative_to(ROOT).as_posix()}")
    if args.check and pages:
        print("run: python scripts/pages.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
