"""Draw the course's figures into ``docs/figures/``: ``python scripts/figures.py`` (the authors' edition).

Every figure of ``docs/hooks/figures.toml`` is drawn by its ``draw_NAME`` (``docs/hooks/figures.py``) from
``solutions/`` and written to ``docs/figures/NAME.svg``, a committed file: the chapter's page on GitHub, its
notebook and the site all show that one file. Run it after changing a solution, an answer key or a drawing;
``python scripts/pages.py`` writes the pages' image blocks.

``--check`` changes nothing and exits 1 naming every figure that is out of date, missing, or no longer listed
(``tests/test_figures.py`` runs it). A figure is up to date when the fresh drawing is the same picture as the
file: the same SVG once matplotlib's content-hashed ids are numbered in order, every number inside a tag (a
coordinate, a transform) within ``SAME_TO`` (a hundredth of a point) and every other character equal. So a
sum's last bit moved by another platform's BLAS rewrites and fails nothing, while any visible change (a label,
a digit, a curve moved by a pixel) does; where nothing differs, the drawing is the file's bytes.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kata.authoring.generated import docs_hook, write_or_check  # noqa: E402

SAME_TO = 0.01  # in SVG user units (points): a hundredth of a point, far below a screen pixel
_ID = re.compile(r'\bid="([^"]+)"')
_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _skeleton(svg: str) -> tuple[list[str], list[float]]:
    """The SVG's text with ids numbered in order of appearance, split into words and the numbers inside its tags.

    Numbers in text between tags (a title, a label not drawn as paths) stay words: they must be equal.
    """
    ids = {name: f"kata-id-{n}" for n, name in enumerate(dict.fromkeys(_ID.findall(svg)))}
    if ids:
        svg = re.sub(r'(?<=id=")[^"]+(?=")|(?<=#)[\w.-]+', lambda m: ids.get(m.group(0), m.group(0)), svg)
    words, numbers, text = [], [], ""
    for part in re.split(r"(<[^>]*>)", svg):
        if not part.startswith("<"):
            text += part
            continue
        start = 0
        for m in _NUMBER.finditer(part):
            if part[m.start() - len("kata-id-"):m.start()] == "kata-id-":
                continue  # an id's number is a word
            words.append(text + part[start:m.start()])
            numbers.append(float(m.group(0)))
            text, start = "", m.end()
        text += part[start:]
    words.append(text)
    return words, numbers


def same_drawing(old: str, new: str) -> bool:
    """Whether two SVG texts draw the same picture: equal, or equal up to ids and coordinates within ``SAME_TO``."""
    if old == new:
        return True
    (old_words, old_numbers), (new_words, new_numbers) = _skeleton(old), _skeleton(new)
    return old_words == new_words and all(abs(a - b) <= SAME_TO for a, b in zip(old_numbers, new_numbers,
                                                                                  strict=True))


def stale(write: bool, names: list[str] | None = None) -> list[Path]:
    """Every figure file that is missing, out of date or not listed any more; with ``write``, fix them.

    ``names``: only these figures (their files are drawn and compared; no other file is looked at).
    """
    figures = docs_hook("figures")
    folder = figures.DOCS / figures.FOLDER
    found = []
    for name, figure in figures.FIGURES.items():
        if names is not None and name not in names:
            continue
        fresh = figure.draw()
        if not figure.file.is_file() or not same_drawing(figure.file.read_text(encoding="utf-8"), fresh):
            found.append(figure.file)
            if write:
                folder.mkdir(parents=True, exist_ok=True)
                figure.file.write_text(fresh, encoding="utf-8", newline="\n")
    if names is None:
        listed = {figure.file for figure in figures.FIGURES.values()}
        for orphan in sorted(p for p in folder.glob("*") if p not in listed) if folder.is_dir() else []:
            found.append(orphan)  # a figure dropped from figures.toml: its file goes too
            if write:
                orphan.unlink()
    return found


def main(argv: list[str] | None = None) -> int:
    """Draw (or with ``--check`` only compare) the figures; return the exit code."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 if a figure is out of date")
    p.add_argument("names", nargs="*", metavar="NAME", help="only these figures (default: all)")
    args = p.parse_args(argv)
    names = args.names or None
    return write_or_check(lambda write: stale(write, names), args.check,
                         "python scripts/figures.py" + "".join(f" {n}" for n in args.names))


if __name__ == "__main__":
    sys.exit(main())
