"""MkDocs hook: the API page, rendered from ``exercises/`` at build time so it cannot drift.

The marker ``<!-- kata:api -->`` becomes one section per chapter module in ``exercises/`` (found by
file name, so a new chapter appears by itself): the module's summary, its public constants, and every
public function's signature and Google-style docstring (Args / Returns / Raises as lists).

The stubs are read with :mod:`ast`, never imported: the page shows what a learner's file declares even
while a body is half written, and nothing in it runs at build time. ``tests/test_sync.py`` keeps the
stubs' signatures and docstrings identical to ``solutions/``.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kata import project  # noqa: E402
from kata.judge import answer_key  # noqa: E402

EXERCISES = ROOT / "exercises"
MARKER = re.compile(r"<!--\s*kata:api\s*-->")
SECTIONS = ("Args", "Arguments", "Returns", "Yields", "Raises", "Example", "Examples", "Note", "Notes")


def anchor(module: str, name: str) -> str:
    """The id of a function's heading, e.g. ``api-chapter04_attention-softmax``."""
    return f"api-{module}-{name}"


def _split_sections(doc: str) -> tuple[str, list[tuple[str, str]], str]:
    """Split a cleaned docstring into (free text, ``Section:`` blocks dedented, text after the sections).

    A section runs while its lines are indented; the first flush-left line after it (such as
    ``See docs: chapter 4, step 4.3``) starts the trailing text.
    """
    text: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    trailer: list[str] = []
    for line in doc.splitlines():
        header = line.strip().rstrip(":")
        flush = bool(line.strip()) and not line[0].isspace()
        if flush and line.strip().endswith(":") and header in SECTIONS:
            sections.append((header, []))
        elif trailer or (sections and flush):
            trailer.append(line)
        elif sections:
            sections[-1][1].append(line)
        else:
            text.append(line)
    blocks = [(h, textwrap.dedent("\n".join(b)).strip()) for h, b in sections]
    return "\n".join(text).strip(), blocks, "\n".join(trailer).strip()


def _items(body: str) -> list[str]:
    """The entries of an Args/Raises block: ``name: text`` lines with indented continuations joined."""
    items: list[str] = []
    for line in body.splitlines():
        if line.startswith((" ", "\t")) and items:
            items[-1] += " " + line.strip()
        elif line.strip():
            items.append(line.strip())
    return items


def _entry(item: str) -> str:
    name, sep, text = item.partition(":")
    if sep and re.fullmatch(r"[\w*]+( \(.*\))?", name.strip()):
        return f"- `{name.strip()}` — {text.strip()}"
    return f"- {item}"


def _separate_display_math(text: str) -> str:
    """Give every ``$$ … $$`` block blank lines around it, as Markdown needs for display maths.

    Docstrings often stack two formulas on consecutive lines; on a page they would merge into one
    paragraph that the maths renderer cannot parse.
    """
    out: list[str] = []
    inside = False
    for line in text.splitlines():
        stripped = line.strip()
        opens = not inside and stripped.startswith("$$")
        if opens:
            if out and out[-1].strip():
                out.append("")
            inside = True
            stripped = stripped[2:]
        out.append(line)
        if inside and stripped.endswith("$$"):
            inside = False
            out.append("")
    return "\n".join(out).strip()


def render_docstring(doc: str, link_steps=None) -> str:
    """Markdown for a Google-style docstring: its text, each section as a labelled list, then the rest.

    ``link_steps`` turns step ids such as ``4.3`` in the trailing "See docs" line into links.
    """
    text, sections, trailer = _split_sections(doc)
    out = [_separate_display_math(text)] if text else []
    for header, body in sections:
        if header in ("Args", "Arguments", "Raises"):
            out.append(f"**{header}**\n\n" + "\n".join(_entry(item) for item in _items(body)))
        elif header in ("Example", "Examples"):
            out.append(f"**{header}**\n\n```python\n{body}\n```")
        else:
            out.append(f"**{header}** " + " ".join(line.strip() for line in body.splitlines()))
    if trailer:
        out.append(link_steps(trailer) if link_steps else trailer)
    return "\n\n".join(out)


def signature(node: ast.FunctionDef, source: list[str]) -> str:
    """The ``def`` line(s) exactly as written in the source, without the trailing colon."""
    lines = source[node.lineno - 1: node.body[0].lineno - 1]
    text = "\n".join(lines).rstrip()
    return text[:-1] if text.endswith(":") else text


def _public_constants(tree: ast.Module) -> list[tuple[str, str]]:
    found = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) and node.value is not None else []
        for target in targets:
            if isinstance(target, ast.Name) and target.id.isupper() and not target.id.startswith("_"):
                found.append((target.id, ast.unparse(node.value)))
    return found


def _link_steps(number: int, page: str | None, text: str) -> str:
    """Link every step id of chapter ``number`` in ``text`` (e.g. ``4.3``) to its row on the chapter page."""
    if page is None or number not in answer_key.chapter_files():
        return text
    ids = {s.id for s in answer_key.load(number).steps}

    def link(m: re.Match) -> str:
        step = m.group(0)
        return f"[{step}]({page}#step-{step.replace('.', '-')})" if step in ids else step

    return re.sub(rf"(?<![\d.]){number}\.\d+(?!\d|\.\d)", link, text)


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def render_module(path: Path, pages: dict[int, str]) -> str:
    """One chapter module's section of the API page."""
    module = path.stem
    number = project.chapter_number(module)
    relative = path.relative_to(ROOT).as_posix()
    try:
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source, filename=relative)
    except SyntaxError as error:
        return (f"## `{module}`\n\n!!! failure \"`{relative}` does not parse\"\n    Line {error.lineno}: "
                f"{error.msg}. Fix the file and rebuild the docs.\n")
    summary = (ast.get_docstring(tree) or "").split("\n\n")[0].replace("\n", " ")
    page = pages.get(number)
    link = f" · [chapter page]({page})" if page else ""
    out = [f"## `{module}`", "", f"`{relative}`{link}", "", summary, ""]
    constants = _public_constants(tree)
    if constants:
        out += ["| constant | value |", "| --- | --- |"]
        out += [f"| `{name}` | `{_cell(value)}` |" for name, value in constants]
        out.append("")
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            out.append(f"### `{node.name}` {{ #{anchor(module, node.name)} }}")
            out.append("")
            out.append("```python\n" + signature(node, source.splitlines()) + "\n```")
            out.append("")
            doc = ast.get_docstring(node)
            out.append(render_docstring(doc, functools.partial(_link_steps, number, page)) if doc
                       else "*No docstring.*")
            out.append("")
    return "\n".join(out)


def modules() -> list[Path]:
    """Every chapter module in ``exercises/``, in chapter order."""
    return list(project.chapter_files(EXERCISES).values())


def render(pages: dict[int, str] | None = None) -> str:
    """The whole API reference: every chapter module that exists."""
    return "\n".join(render_module(path, pages or {}) for path in modules())


def _chapter_pages(page) -> dict[int, str]:
    """Links from the page being rendered to each chapter page, by chapter number."""
    depth = page.file.src_uri.count("/")
    found = {}
    for path in sorted((ROOT / "docs" / "chapters").glob("[0-9][0-9]-*.md")):
        found[int(path.name[:2])] = "../" * depth + f"chapters/{path.name}"
    return found


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: D103 - MkDocs hook
    if not MARKER.search(markdown):
        return markdown
    return MARKER.sub(lambda _: render(_chapter_pages(page)), markdown)
