"""MkDocs hook: fill the chapter pages' worksheet tables, hints and errata from reference/.

The pages hold these blocks already written out, so that a page read in the repository (an editor,
GitHub) is whole: ``python scripts/pages.py`` writes every block from the answer key between its marker
and a closing one (``<!-- kata:worksheet 4 -->`` … ``<!-- /kata:worksheet 4 -->``), and
``tests/test_pages_whole.py`` keeps them in sync. At build time this hook renders every block afresh with
the same functions, so the site and the files cannot disagree. Plain Markdown and HTML only (a table,
``<details>``, anchors), read alike by GitHub and by Material for MkDocs (``md_in_html``).

Markers in a page (HTML comments, so a page still reads sensibly without the hook):

- ``<!-- kata:worksheet N -->`` — one row per step: id (the step's anchor) and title; then, folded in a
  ``<details>`` block, one row per step of answers: the worksheet's printed value and the exact value (headed
  "exact (float64)" where every step's is a float64 array; "exact" where some are booleans, whole numbers, text
  or lists: chapter 14's token ids and strings).
- ``<!-- kata:hints N -->`` — every step's hints, folded, in three layers.
- ``<!-- kata:errata N -->`` — every erratum and note of chapter N.
- ``<!-- kata:errata all -->`` — every erratum of every chapter in ``reference/``, each linked to its
  step on the chapter's page (the site-wide Errata page).

Numbers on the pages come from the same answer key as the tests; none is typed twice.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kata.judge import answer_key  # noqa: E402
from kata.judge.checks import show  # noqa: E402

MARKER = re.compile(r"<!--\s*kata:(worksheet|hints|errata)\s+(\d+|all)\s*-->")
# A marker with the block written after it (up to its closing marker), or a bare marker.
BLOCK = re.compile(r"<!--\s*kata:(worksheet|hints|errata)\s+(\d+|all)\s*-->"
                   r"(?:(?:(?!<!--\s*kata:(?:worksheet|hints|errata)\s).)*?<!--\s*/kata:\1\s+\2\s*-->)?", re.S)
GENERATED = "<!-- written by scripts/pages.py from reference/: edit the answer key, then run it -->"


def _printed(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, list):
        return "[" + ", ".join(_printed(v) for v in value) + "]"
    return str(value)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def worksheet(chapter: answer_key.Chapter) -> str:
    """The worksheet of a chapter: its steps in a table, then their answers in a second table, folded.

    The steps (each with its anchor, where ``nox -s hint`` and a failing check link) are the blank worksheet a
    learner works with a pencil; the answers (what the worksheet prints, the exact value) sit in a
    ``<details>`` block, folded on GitHub, in a notebook and on the site alike, so that they are read after the
    working, not instead of it. The exact column says float64 only when every exact value is one.
    """
    floats = all(getattr(s.exact, "dtype", None) == np.float64 for s in chapter.steps)
    rows = ["| step | what |", "| --- | --- |"]
    rows += [f'| <a id="{s.anchor}"></a>**{s.id}** | {_cell(s.title)} |' for s in chapter.steps]
    rows += ["", f'<details class="success" markdown="1"><summary>{ANSWERS}</summary>', "",
             f"| step | the worksheet prints | {'exact (float64)' if floats else 'exact'} |", "| --- | --- | --- |"]
    for s in chapter.steps:
        flag = " ⚠ [erratum](#errata)" if s.erratum else ""
        rows.append(f"| **{s.id}** | `{_cell(_printed(s.printed))}`{flag} | `{_cell(show(s.exact))}` |")
    rows += ["", "</details>"]
    return "\n".join(rows) + "\n"


ANSWERS = "The answers: what the worksheet prints and the exact values (open it once you have worked the steps)"


def hints(chapter: answer_key.Chapter) -> str:
    """Every step's hints, folded, layer by layer (``<details>``: folded on GitHub and on the site alike)."""
    out = []
    names = ("nudge", "formula", "worked numbers")
    for s in chapter.steps:
        out.append(f'<details class="tip" markdown="1"><summary>Hints for step {s.id}: {s.title}</summary>')
        out.append("")
        for name, text in zip(names, s.hints, strict=False):
            out.append(f"**{name}** — {text}")
            out.append("")
        out.append("</details>")
        out.append("")
    return "\n".join(out)


def errata(chapter: answer_key.Chapter) -> str:
    """The chapter's errata (printed numbers that are wrong) and notes."""
    wrong = [s for s in chapter.steps if s.erratum]
    notes = [s for s in chapter.steps if s.note]
    out = []
    if wrong:
        for s in wrong:
            out.append(f"- **{s.id} {s.title}.** The worksheet prints `{_printed(s.printed)}`; exact arithmetic "
                       f"gives `{show(s.exact)}`. {s.erratum}")
    else:
        out.append("No errata: every number this chapter's worksheet prints agrees with exact arithmetic to the "
                   "precision it is printed with.")
    if notes:
        out.append("")
        for s in notes:
            out.append(f"- *Note on {s.id}:* {s.note}")
    return "\n".join(out) + "\n"


def all_errata(from_page: str) -> str:
    """Every erratum of every chapter, grouped by chapter; step ids link to the chapter pages.

    ``from_page`` is the docs-relative path of the page being rendered (links are relative to it).
    """
    up = "../" * from_page.count("/")
    chapters = answer_key.chapters()
    total = sum(1 for c in chapters for s in c.steps if s.erratum)
    out = [f"{total} printed number{'s' if total != 1 else ''} corrected across {len(chapters)} "
           f"chapter{'s' if len(chapters) != 1 else ''} with an answer key.", ""]
    for chapter in chapters:
        page = up + chapter.page.removeprefix("docs/") if (ROOT / chapter.page).is_file() else None
        wrong = [s for s in chapter.steps if s.erratum]
        out.append(f"## Chapter {chapter.number}: {chapter.title}")
        out.append("")
        if chapter.source:
            out.append(f"*Worksheet: {chapter.source}.*" + (f" [Go to the chapter]({page})." if page else ""))
            out.append("")
        if not wrong:
            out.append("No errata: every number this chapter's worksheet prints agrees with exact arithmetic to "
                       "the precision it is printed with.")
        for s in wrong:
            step = f"[{s.id}]({page}#{s.anchor})" if page else s.id
            out.append(f"- **{step} {s.title}.** The worksheet prints "
                       f"`{_printed(s.printed)}`; exact arithmetic gives `{show(s.exact)}`. {s.erratum}")
        out.append("")
    return "\n".join(out)


RENDER = {"worksheet": worksheet, "hints": hints, "errata": errata}


def render(kind: str, which: str, page_path: str) -> str:
    """The Markdown of one block: ``kind`` (worksheet, hints, errata) of chapter ``which`` (or ``all``)."""
    if which == "all":
        if kind != "errata":
            raise ValueError(f"{page_path}: only kata:errata takes 'all', not kata:{kind} all")
        return all_errata(page_path)
    return RENDER[kind](answer_key.load(int(which)))


def fill(markdown: str, page_path: str) -> str:
    """The page with every block written out afresh between its markers (what ``scripts/pages.py`` writes).

    ``page_path`` is the page relative to docs/ (links in ``errata all`` are relative to it).
    """
    def replace(m: re.Match) -> str:
        kind, which = m.group(1), m.group(2)
        body = render(kind, which, page_path).strip("\n")
        return f"<!-- kata:{kind} {which} -->\n{GENERATED}\n\n{body}\n\n<!-- /kata:{kind} {which} -->"

    return BLOCK.sub(replace, markdown)


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: D103 - MkDocs hook
    return BLOCK.sub(lambda m: render(m.group(1), m.group(2), page.file.src_uri), markdown)
