"""No chapter page hands over the code its learner writes (issue 31, item 1: the learner derives).

A page gives the idea, the formula, the shapes and hand-worked numbers, and names a NumPy tool in words where it
matters; the learner writes every line of the body. Code on a page shows how to run things and how to call what
the learner has already written. Two checks per chapter page, hints included (they are written into the page):

- **copied:** no line of a function body in the chapter's ``solutions/`` module appears anywhere on the page —
  a statement, the header of a loop or an ``if``, or the value an assignment or ``return`` computes — compared
  with all white space and comments removed. Lines too small to give anything away (``return out``, anything
  shorter than 12 characters without its ``return``, with no operator, call or index) and input checks (``raise``)
  are left out.
- **calls only:** every ``python`` block only calls: each statement is a call, or names the result of one, of a
  function the learner writes (any chapter's) or of ``kata``, ``print`` or another builtin, with plain values as
  arguments (names, numbers, strings, lists, ``np.array(...)``, a subscript by a constant). No arithmetic, no
  comparison, no loop or comprehension, no NumPy or ``math`` function, no method of an array: that is the body.
- **no formula in NumPy:** no inline code (single backquotes, outside fenced blocks) writes a formula as NumPy
  or ``math`` code — a call of ``np.``, ``numpy.`` or ``math.`` with arithmetic around it or in its arguments,
  such as chapter 13's unstable ``x / (1 + np.exp(-x))``, half of ``silu`` shown as the thing to avoid. Say the
  formula in maths and name the tool in words; a call with plain arguments (``np.load(path)``,
  ``np.var(x, ddof=1)``: what a common mistake calls) names a tool and stays allowed.

Written by the Part I pages work (chapters 1–10) for every chapter; the Part II pages pass it too.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

from kata import learners_code, project
from kata.judge import answer_key

ROOT = answer_key.ROOT
CHAPTERS = answer_key.chapters()
FENCE = re.compile(r"^(```+|~~~+)\s*([\w+-]*)[^\n]*\n(.*?)^\1\s*$", re.M | re.S)
SMALLEST = 12  # characters, white space removed: `d_k=K.shape[1]` is a line, `return out` is not
GIVES_SOMETHING = re.compile(r"[-+*/@%<>=\[(]")  # an operator, a call or an index: the line computes something
ALLOWED_NUMPY = {"array", "asarray"}  # building an input to call a function with is not its body
MODULES = {"np", "numpy", "math"}
INLINE_CODE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")


def _flat(text: str) -> str:
    """Text compared with all white space removed and one kind of quote."""
    return re.sub(r"\s+", "", text).replace("'", '"')


def _without_comments(code: str) -> str:
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type != tokenize.COMMENT]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return code
    return tokenize.untokenize(tokens)


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _names_something(node: ast.AST) -> bool:
    """A value a page may show without handing over a line: it only names something.

    A bare call of a function with plain names and constants (``raw_scores(Q, K)``, how a page names a
    function), or an entry of a named dict or array (``state["step"]``, what a function reads or returns).
    """
    plain = (ast.Name, ast.Constant)
    if isinstance(node, ast.Subscript):
        key = node.slice.operand if isinstance(node.slice, ast.UnaryOp) else node.slice
        return isinstance(node.value, ast.Name) and isinstance(key, ast.Constant)
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and all(isinstance(a, plain) for a in node.args) and all(isinstance(k.value, plain) for k in node.keywords))


def body_lines(path: Path) -> dict[str, str]:
    """Every line a learner writes in ``path``'s functions, flattened -> the function it is in.

    A line is a statement (a compound statement by its header: ``for token in text.split()``), or the value an
    assignment, an augmented assignment, a ``return`` or an expression statement computes — unless that value
    only names something (``raw_scores(Q, K)``, ``state["step"]``: ``_names_something``).
    """
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    found: dict[str, str] = {}
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        body = function.body[1:] if function.body and _is_docstring(function.body[0]) else function.body
        for top in body:
            for node in ast.walk(top):
                if not isinstance(node, ast.stmt) or isinstance(node, ast.Raise | ast.FunctionDef):
                    continue
                if isinstance(node, ast.If | ast.For | ast.While | ast.With):
                    header = lines[node.lineno - 1][node.col_offset:].split("#")[0].rstrip().rstrip(":")
                    texts = [header.removeprefix("el")]
                else:
                    texts = [ast.get_source_segment(source, node) or ""]
                    value = getattr(node, "value", None)
                    if isinstance(value, ast.AST) and not _names_something(value):
                        texts.append(ast.get_source_segment(source, value) or "")
                for text in texts:
                    flat = _flat(_without_comments(text))
                    core = flat.removeprefix("return")
                    if len(core) >= SMALLEST and GIVES_SOMETHING.search(core) and "Error(" not in core:
                        found.setdefault(flat, function.name)
    return found


def python_blocks(page_text: str) -> list[str]:
    """The fenced blocks of a page marked ``python`` (or ``py``)."""
    return [m.group(3) for m in FENCE.finditer(page_text) if m.group(2).lower() in ("python", "py", "python3")]


def learners_functions() -> set[str]:
    """The public functions of every chapter's stubs: what a page may show being called."""
    return {name for chapter in project.chapters() for name in learners_code.functions_of(chapter)}


class _Computing(ast.NodeVisitor):
    """Collect what in a code block computes instead of calling: each as the source it comes from."""

    PLAIN_STATEMENTS = (ast.Expr, ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom, ast.Pass)
    COMPUTING = (ast.BinOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Lambda, ast.ListComp, ast.SetComp,
                 ast.DictComp, ast.GeneratorExp, ast.Slice, ast.JoinedStr, ast.Await, ast.NamedExpr)

    def __init__(self, source: str, callable_names: set[str]):
        self.source = source
        self.callable = callable_names
        self.found: list[str] = []

    def _say(self, node: ast.AST, why: str) -> None:
        self.found.append(f"{why}: {ast.get_source_segment(self.source, node) or type(node).__name__}")

    def visit_Module(self, node: ast.Module) -> None:  # noqa: N802 - ast's naming
        for statement in node.body:
            if not isinstance(statement, self.PLAIN_STATEMENTS):
                self._say(statement, f"a statement that is not a call ({type(statement).__name__})")
                continue
            if isinstance(statement, ast.Assign | ast.AnnAssign):
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                for target in targets:
                    if not all(isinstance(t, ast.Name | ast.Tuple | ast.Starred) for t in ast.walk(target)
                               if not isinstance(t, ast.Store | ast.Load)):
                        self._say(target, "an assignment into an array or object")
            self.visit(statement)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:  # noqa: N802
        if not (isinstance(node.op, ast.USub | ast.UAdd) and isinstance(node.operand, ast.Constant)):
            return self._say(node, "arithmetic")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:  # noqa: N802
        f = node.func
        if isinstance(f, ast.Attribute):
            root = f.value
            while isinstance(root, ast.Attribute):
                root = root.value
            owner = root.id if isinstance(root, ast.Name) else None
            if owner in MODULES and f.attr not in ALLOWED_NUMPY:
                return self._say(node, f"a function of {owner}")
            if owner not in MODULES and owner != "kata" and f.attr not in self.callable:
                return self._say(node, "a method")
        elif not isinstance(f, ast.Name):
            return self._say(node, "a call of a computed function")
        self.generic_visit(node)

    def generic_visit(self, node: ast.AST) -> None:
        if isinstance(node, self.COMPUTING):
            self._say(node, "computing" if not isinstance(node, ast.BinOp | ast.Compare | ast.BoolOp) else "arithmetic")
            return
        super().generic_visit(node)


def computing(block: str, callable_names: set[str]) -> list[str]:
    """What in a ``python`` block computes rather than calls (empty: the block only calls)."""
    try:
        tree = ast.parse(block)
    except SyntaxError as e:
        return [f"not Python ({e.msg}, line {e.lineno}): a `python` block on a chapter page is code that runs"]
    visitor = _Computing(block, callable_names)
    visitor.visit(tree)
    return visitor.found


def _calls_a_module(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    root = node.func.value
    while isinstance(root, ast.Attribute):
        root = root.value
    return isinstance(root, ast.Name) and root.id in MODULES


def _arithmetic(node: ast.AST) -> bool:
    return isinstance(node, ast.BinOp) or (isinstance(node, ast.UnaryOp) and not isinstance(node.operand, ast.Constant))


def numpy_formulas(page_text: str) -> list[str]:
    """The inline code of a page (fenced blocks aside) that writes a formula in NumPy.

    That is a NumPy or ``math`` call with arithmetic in the same expression (``x / (1 + np.exp(-x))``,
    ``np.exp(-x)``); a call with plain arguments names a tool and is left alone.
    """
    found = []
    for m in INLINE_CODE.finditer(FENCE.sub("", page_text)):
        try:
            tree = ast.parse(m.group(1).strip(), mode="eval")
        except SyntaxError:
            continue
        nodes = list(ast.walk(tree))
        if any(map(_calls_a_module, nodes)) and any(map(_arithmetic, nodes)):
            found.append(m.group(1))
    return found


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.page)
def test_no_line_of_a_solution_body_is_on_the_page(chapter):
    """no line of a solution function's body on the chapter page (code, inline code, hints), white space aside"""
    page = _flat((ROOT / chapter.page).read_text(encoding="utf-8"))
    solution = ROOT / "solutions" / f"{chapter.module}.py"
    copied = {}
    for line, function in body_lines(solution).items():
        if line in page:
            copied.setdefault(function, []).append(line)
    assert not copied, (
        f"{chapter.page} hands over the body of {len(copied)} function(s) of {solution.relative_to(ROOT).as_posix()}"
        " (white space removed): " + "; ".join(f"{f}: {', '.join(lines)}" for f, lines in copied.items())
        + ". Give the formula, the shapes and a hand-worked example instead; the learner writes the line.")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.page)
def test_python_on_the_page_only_calls_what_the_learner_wrote(chapter):
    """every `python` block on the chapter page only calls functions (the learner's, kata's), computes nothing"""
    names = learners_functions()
    found = []
    for block in python_blocks((ROOT / chapter.page).read_text(encoding="utf-8")):
        found += computing(block, names)
    assert not found, (
        f"{chapter.page} shows code that computes, the learner's to write: " + "; ".join(found)
        + ". A page's code shows how to run things and call what the learner has written; say the rest in maths.")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.page)
def test_no_formula_is_written_in_numpy_on_the_page(chapter):
    """no inline code on the chapter page writes a formula as NumPy code (a NumPy call inside arithmetic)"""
    found = numpy_formulas((ROOT / chapter.page).read_text(encoding="utf-8"))
    assert not found, (
        f"{chapter.page} writes a formula in NumPy, the learner's to write: " + "; ".join(f"`{f}`" for f in found)
        + ". Give the formula in maths ($...$) and name the NumPy tool in words where it matters.")


def test_the_checks_catch_a_handed_over_body():
    """the checks themselves: a copied solution line and a computing block are found, a call and prose are not"""
    solution = ROOT / "solutions" / "chapter04_attention.py"
    lines = body_lines(solution)
    assert lines, "no body lines found in chapter 4's solution"
    line = next(iter(lines))
    assert line in _flat(f"Some text.\n\n```python\n{line}\n```\n"), "a copied line is not found"
    names = learners_functions()
    assert "softmax" in names
    assert computing("weights = softmax(np.array([1.0, 2.0]))\nprint(weights)\n", names) == []
    assert computing("e = np.exp(x - x.max())", names), "a NumPy body passes as a call"
    assert computing("for i in range(3):\n    print(i)\n", names), "a loop passes as a call"
    assert computing("S[i, j] = 0\n", names), "an assignment into an array passes as a call"
    assert computing("y = x.sum(axis=0)\n", names), "a method of an array passes as a call"
    assert numpy_formulas("Written as `x / (1 + np.exp(-x))` it overflows."), "a NumPy formula inline passes"
    assert numpy_formulas("Here `math.sqrt(a * a + b * b)` is the length."), "a math formula inline passes"
    assert not numpy_formulas("Not `np.load(path)` with `allow_pickle=True`, nor `np.var(x, ddof=1)`, "
                              "nor `x + F(x)`.\n\n```python\ny = np.exp(-x)\n```\n"), "a named tool is refused"
