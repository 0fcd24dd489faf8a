"""Build the chapter notebooks from their plain-text sources: ``python scripts/notebooks.py`` (jupytext).

``notebooks/src/chapterNN_<topic>.py`` (jupytext's py:percent: ``# %%`` starts a code cell, ``# %% [markdown]``
a Markdown cell) is what authors edit and review; ``notebooks/chapterNN_<topic>.ipynb`` is built from it, with
no outputs. Three directives are expanded on the way, so that no stub, no number and no paragraph of the
chapter's page is typed twice:

- a code cell ``# kata:setup`` becomes the cell that finds the course folder and imports what the stubs use
  (the stub file's own imports; its constants, its given ``_check_*`` input checks and the earlier chapters'
  functions through ``yours``);

- a Markdown line ``<!-- kata:worksheet N -->`` becomes the worksheet table from the answer key (the same
  table as the chapter page's, ``docs/hooks/answer_key.py``);
- a code cell ``# kata:stub NAME`` becomes the stub of NAME exactly as it is in ``exercises/`` (signature,
  docstring, ``raise NotImplementedError``);
- a Markdown cell ``<!-- kata:page-section "TITLE" -->`` becomes the section ``## TITLE`` of the chapter's page
  (its prose, formulas, worksheet and figures; admonitions as quotes, links made relative to notebooks/, so a
  figure is the page's committed ``docs/figures/NAME.svg``, linked as ``../docs/figures/NAME.svg``), so the
  notebook's idea and formulas are the page's and never drift from it;
- a Markdown cell ``<!-- kata:your-turn -->`` becomes "Your turn": for every function of the stub file, in its
  order, a heading, its stub (as ``# kata:stub NAME``) and a check cell, then a check of the
  whole chapter; a function added to the stubs is in the notebook at the next build.

``--check`` changes nothing and exits 1 naming each notebook that is out of date
(``tests/tools/learner/test_notebooks.py`` runs it in selfcheck). ``--scaffold N`` writes a first source for
chapter N from its page (idea, formulas, worksheet) and those directives, to edit from there.
"""

from __future__ import annotations

import argparse
import ast
import posixpath
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "notebooks" / "src"
sys.path.insert(0, str(ROOT))

from kata import project  # noqa: E402
from kata.authoring.generated import docs_hook, write_or_check  # noqa: E402

STUB = re.compile(r"^#\s*kata:stub\s+(\w+)\s*$")
WORKSHEET = re.compile(r"<!--\s*kata:worksheet\s+(\d+)\s*-->")
SECTION = re.compile(r'^<!--\s*kata:page-section\s+"([^"]+)"\s*-->$')
SETUP = re.compile(r"^#\s*kata:setup\s*$")
YOUR_TURN = re.compile(r"^<!--\s*kata:your-turn\s*-->$")
# The page's sections a notebook does not draw: it has its own "Your turn" (a stub cell and a check cell per
# function); hints, mistakes, errata and the recap stay on the page, which the notebook links to.
OWN_SECTIONS = ("Your turn", "Hints", "Common mistakes", "Errata", "Recap")
KERNEL = {"display_name": "Python 3", "language": "python", "name": "python3"}


def stubs(chapter) -> dict[str, str]:
    """{name: source} of every public function of the chapter's file in ``exercises/``."""
    text = (ROOT / "exercises" / f"{chapter.module}.py").read_text(encoding="utf-8")
    lines = text.splitlines()
    return {n.name: "\n".join(lines[n.lineno - 1:n.end_lineno]) for n in ast.parse(text).body
            if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")}


def build(source: str, chapter) -> str:
    """The .ipynb (JSON text) built from a py:percent source."""
    import jupytext
    import nbformat

    notebook = jupytext.reads(source, fmt="py:percent")
    code = stubs(chapter)
    cells = []
    for cell in notebook.cells:
        if cell.cell_type == "code" and SETUP.match(cell.source.strip()):
            cell.source = setup_code(chapter)
        if cell.cell_type == "markdown" and YOUR_TURN.match(cell.source.strip()):
            cells += your_turn(chapter)
        else:
            cells.append(cell)
    notebook.cells = cells
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            m = STUB.match(cell.source.strip())
            if m:
                if m.group(1) not in code:
                    raise ValueError(f"{chapter.module}: # kata:stub {m.group(1)}: no such function in exercises/")
                cell.source = code[m.group(1)]
            cell.outputs, cell.execution_count = [], None
        elif cell.cell_type == "markdown":
            m = SECTION.match(cell.source.strip())
            if m:
                cell.source = page_section(chapter, m.group(1))
            cell.source = WORKSHEET.sub(lambda m: docs_hook("answer_key").worksheet(project.chapter(int(m.group(1))))
                                        .strip(), cell.source)
        cell.metadata = {}
        cell["id"] = f"cell-{index:02d}"  # stable ids: the same source builds the same file
    notebook.metadata = {"kernelspec": KERNEL, "language_info": {"name": "python"}}
    notebook.nbformat, notebook.nbformat_minor = 4, 5
    return nbformat.writes(notebook) + "\n"


def sources() -> list[tuple[Path, Path, object]]:
    """(source, notebook, chapter) for every chapter with a source in notebooks/src/."""
    found = []
    for chapter in project.chapters():
        src = SOURCES / f"{chapter.module}.py"
        if src.is_file():
            found.append((src, ROOT / "notebooks" / f"{chapter.module}.ipynb", chapter))
    return found


def stale(write: bool) -> list[Path]:
    """Every notebook that differs from a fresh build of its source; with ``write``, rebuild them."""
    out = []
    for src, notebook, chapter in sources():
        fresh = build(src.read_text(encoding="utf-8"), chapter)
        if not notebook.is_file() or notebook.read_text(encoding="utf-8") != fresh:
            out.append(notebook)
            if write:
                notebook.write_text(fresh, encoding="utf-8", newline="\n")
    return out


# -- a first source for a chapter, from its page and its stubs -----------------------------------------------
def _sections(page: str) -> list[tuple[str, str]]:
    parts = re.split(r"^## (.+)$", page, flags=re.M)
    return [(parts[i].strip(), parts[i + 1]) for i in range(1, len(parts) - 1, 2)]


def _for_notebook(text: str, chapter) -> str:
    """A page section as notebook Markdown: admonitions as quotes, figures as images, links from notebooks/."""
    text = re.sub(r"<!--\s*kata:worksheet (\d+)\s*-->.*?<!--\s*/kata:worksheet \1\s*-->",
                  lambda m: f"<!-- kata:worksheet {m.group(1)} -->", text, flags=re.S)
    figures = docs_hook("figures")  # the page's image and caption, without its markers; linked from notebooks/ below
    text = figures.BLOCK.sub(lambda m: figures.FIGURES[m.group(1)].markdown(chapter.page.removeprefix("docs/")), text)
    out, quoting = [], False
    for line in text.splitlines():
        m = re.match(r'^(!!!|\?\?\?) \w+(?: "(.*)")?\s*$', line)
        if m:
            out.append(f"> **{m.group(2)}.**" if m.group(2) else ">")
            quoting = True
            continue
        if quoting and (line.startswith("    ") or not line.strip()):
            out.append(("> " + line[4:]).rstrip() if line.strip() else ">")
            continue
        quoting = False
        out.append(line)
    page_dir = posixpath.dirname(chapter.page)

    def link(m: re.Match) -> str:
        target = m.group(1)
        if re.match(r"[a-z]+:|#", target):
            return m.group(0)
        return f"]({posixpath.normpath(posixpath.join('..', page_dir, target))})"

    text = re.sub(r"(?:\n>)+\Z", "", "\n".join(out).strip("\n"))  # no empty quote line left at the end
    return re.sub(r"\]\(([^)\s]+)\)", link, text).strip() + "\n"


def page_section(chapter, title: str) -> str:
    """The section ``## title`` of the chapter's page, as notebook Markdown (its heading included)."""
    page = (ROOT / chapter.page).read_text(encoding="utf-8")
    found = dict(_sections(page))
    if title not in found:
        raise ValueError(f"{chapter.module}: <!-- kata:page-section \"{title}\" -->: {chapter.page} has no section "
                         f"'## {title}' (it has: {', '.join(found)})")
    return f"## {title}\n\n" + _for_notebook(found[title], chapter)


def setup_code(chapter) -> str:
    """The notebook's first code cell: find the course folder, import what the chapter's stubs import."""
    exercise = (ROOT / "exercises" / f"{chapter.module}.py").read_text(encoding="utf-8")
    setup = ["# Run this first: it finds the course folder (the one holding kata/) and imports what the stubs use.",
             "import pathlib", "import sys", "",
             "COURSE = next((p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / \"kata\").is_dir()), "
             "None)",
             "if COURSE is None:  # a copy of the notebook outside the course folder",
             "    raise SystemExit(\"this notebook runs inside the course folder (the one holding kata/): open \"",
             f"                     \"notebooks/{chapter.module}.ipynb there, with `nox -s lab` in that folder\")",
             "sys.path.insert(0, str(COURSE))", ""]
    absolute, theirs = [], []
    for node in ast.parse(exercise).body:
        if isinstance(node, ast.Import | ast.ImportFrom) and not getattr(node, "level", 0):
            absolute.append(ast.get_source_segment(exercise, node))
        elif isinstance(node, ast.ImportFrom):
            theirs += [a.asname or a.name for a in node.names]
        elif isinstance(node, ast.Assign):
            theirs += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.FunctionDef) and node.name.startswith("_check"):
            theirs.append(node.name)  # an input check the course gives: the stubs call it
    setup += [*absolute, "", "import kata"]
    if theirs:
        setup += ["from kata.learner.notebook import yours"]
    setup += ["", f"CHAPTER = {chapter.number}  # kata.check() checks this chapter's functions"]
    if theirs:
        quoted = ", ".join(f'"{n}"' for n in theirs)
        call = f"{', '.join(theirs)} = yours(CHAPTER, {quoted})"
        if len(call) > 120:
            call = f"{', '.join(theirs)} = yours(\n    CHAPTER, {quoted})"
        setup += ["# The chapter's constants and the earlier chapters' functions it uses: yours, from exercises/ "
                  "or your notebooks", call]
    return "\n".join(setup)


def your_turn(chapter) -> list:
    """The cells of "Your turn": a heading, the stub and a check cell per function, then the chapter's check."""
    import nbformat.v4 as nbf

    cells = [nbf.new_markdown_cell(_wrap(
        "## Your turn\n\nEach function's docstring is its full specification, shapes included. Replace the "
        "`raise NotImplementedError(...)` with your code, run the cell, then run the check under it: "
        "✓ passed, ✗ failed, · not started, ⧗ timed out, ! error (crashed or does not import)."))]
    for name, source in stubs(chapter).items():
        step = re.search(r'NotImplementedError\(\s*"([\d./]+) ', source)
        cells.append(nbf.new_markdown_cell(f"### `{name}`" + (f" — step {step.group(1)}" if step else "")))
        cells.append(nbf.new_code_cell(f"# kata:stub {name}"))
        cells.append(nbf.new_code_cell(f"kata.check({name})"))
    cells.append(nbf.new_markdown_cell(
        f"## The whole chapter\n\nEvery step and check of chapter {chapter.number}, as `nox -s chapter"
        f"{chapter.number}` shows them. Your answers count where you save them: `nox -s grade` grades every "
        "function finished in a saved notebook, and exercises/ for the rest."))
    cells.append(nbf.new_code_cell("kata.check()"))
    return cells


def _wrap(text: str) -> str:
    """The paragraphs written here, wrapped like the pages (headings and code spans at a line's start stay)."""
    return "\n\n".join(textwrap.fill(p, 110) if not p.startswith(("#", "`")) else p for p in text.split("\n\n"))


def scaffold(chapter) -> str:
    """A first py:percent source for a chapter: its title, the setup, the page's sections, "Your turn"."""
    import jupytext
    import nbformat.v4 as nbf

    page = (ROOT / chapter.page).read_text(encoding="utf-8")
    cells = [nbf.new_markdown_cell(_wrap(
        f"# Chapter {chapter.number} — {chapter.title}\n\n"
        f"The notebook way through chapter {chapter.number}: read, work the worksheet with a pencil, then fill "
        f"in each function below and run the check cell under it (`kata.check(...)`): the same steps, "
        f"worksheet numbers and diagnoses as `nox -s chapter{chapter.number}`. Run the cells in order, "
        f"starting with the next one. The whole page, with hints and common mistakes: "
        f"[{chapter.page}](../{chapter.page})."))]
    cells.append(nbf.new_code_cell("# kata:setup"))
    for title, _ in _sections(page):
        if title not in OWN_SECTIONS:
            cells.append(nbf.new_markdown_cell(f'<!-- kata:page-section "{title}" -->'))
    cells.append(nbf.new_markdown_cell("<!-- kata:your-turn -->"))
    text = jupytext.writes(nbf.new_notebook(cells=cells), fmt="py:percent")
    return re.sub(r"\A# ---\n(?:#.*\n)*?# ---\n\n", "", text)  # no header: jupytext's version would churn


def main(argv: list[str] | None = None) -> int:
    """Build the notebooks (``--check``: only compare; ``--scaffold N``: write a first source)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 if a notebook is out of date")
    p.add_argument("--scaffold", type=int, metavar="N", help="write notebooks/src/ for chapter N from its page")
    args = p.parse_args(argv)
    if args.scaffold is not None:
        chapter = project.chapter(args.scaffold)
        target = SOURCES / f"{chapter.module}.py"
        if target.exists():
            print(f"{target.relative_to(ROOT)} exists; delete it first to scaffold it afresh")
            return 2
        SOURCES.mkdir(parents=True, exist_ok=True)
        target.write_text(scaffold(chapter), encoding="utf-8", newline="\n")
        print(f"wrote {target.relative_to(ROOT)}; edit it, then: nox -s notebooks-build")
        return 0
    return write_or_check(stale, args.check, "nox -s notebooks-build")


if __name__ == "__main__":
    sys.exit(main())
