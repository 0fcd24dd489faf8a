"""Write a chapter's stub from its solution.

Same imports, names, signatures and docstrings; every public function body replaced by
``raise NotImplementedError(...)``; private helpers dropped (with the comments just above them and the blank
lines after them). A starting point for authors: edit each message to name the step, what the function computes
and its size budget, never its steps (``tests/test_stubs_no_code.py``), e.g.
``"4.2 attention_scores: the raw scores divided by √d_k, d_k being the keys' width (2 lines)"``.

The input checks that teach nothing about transformers are the course's, not the learner's: the chapter's
``_check_*`` helpers stay in the stub, word for word, and so do the calls of them that open a function's body
(``kata.learners_code.is_given``: ``_check_rows(x, "swiglu: x")`` or ``W = _check_weights(params, ...)``), above the
``raise``; so does an import of an earlier chapter's ``_check_*`` helper. The learner writes the maths. A name
such a call binds (``W``) is marked ``# noqa: F841 - yours to use`` in the stub, where nothing uses it yet.

The stub passes ``ruff check`` as it is written to ``exercises/`` (``tests/test_stubgen.py`` runs ruff on
the stub of every chapter): every import the solution has stays, so the stub binds the same names as the
solution (a later chapter, a notebook or a learner may use them), and an import the stub's own code no
longer uses (an earlier chapter's function the learner will call, ``math`` for the body they will write)
is marked ``# noqa: F401 - yours to use``, as in the stubs in ``exercises/``. A private helper the solution
imports from an earlier chapter (``from .chapter02_matrices import _matrix``) is dropped with the helpers: the
learner's earlier chapter has none to give.

Usage: python -m kata.authoring.stubgen solutions/chapter05_forward_pass.py > exercises/chapter05_forward_pass.py
"""

import ast
import re
import sys
from pathlib import Path

from kata.learners_code import GIVEN, given_checks

UNUSED = "  # noqa: F401 - yours to use"
GIVEN_NAME = "  # noqa: F841 - yours to use"


def _bound(alias: ast.alias) -> str:
    """The name an import binds: ``np`` for ``import numpy as np``, ``os`` for ``import os.path``."""
    return alias.asname or alias.name.split(".")[0]


def _mark_unused_imports(source: str) -> str:
    """``source`` with ``# noqa: F401 - yours to use`` on every import line whose name its code never uses."""
    tree = ast.parse(source)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    lines = source.splitlines(keepends=True)
    marked = set()
    for node in tree.body:
        if not isinstance(node, ast.Import | ast.ImportFrom) or (
                isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            continue
        for alias in node.names:
            if _bound(alias) not in used and alias.lineno not in marked and "# noqa" not in lines[alias.lineno - 1]:
                marked.add(alias.lineno)
    for number in marked:
        line = lines[number - 1]
        ending = line[len(line.rstrip("\r\n")):]
        lines[number - 1] = line.rstrip("\r\n") + UNUSED + (ending or "\n")
    return "".join(lines)


def _dropped(name: str) -> bool:
    """Whether a private name goes from the stub: a helper of the solution's, not a ``_check_*`` the course gives."""
    return name.startswith("_") and not name.startswith(GIVEN)


def stub(source: str) -> str:
    """Return ``source`` with public function bodies (after the docstring) replaced by a raise.

    Every edit is a (first line, last line, replacement) on the original line numbers, applied from the
    bottom up, so no edit shifts the lines of another. A dropped helper takes the blank lines after it along
    (two blank lines between definitions stay two); an import only the dropped code used is kept and marked.
    """
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and any(_dropped(a.name) for a in node.names):
            kept = [a for a in node.names if not _dropped(a.name)]
            again = ast.unparse(ast.ImportFrom(node.module, kept, node.level)) + "\n" if kept else None
            edits.append((node.lineno, node.end_lineno, [again] if again else []))
            continue
        if not isinstance(node, ast.FunctionDef) or node.name.startswith(GIVEN):  # a given check stays whole
            continue
        if _dropped(node.name):  # a helper of the solution: the learner writes their own
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            while first > 1 and lines[first - 2].startswith("#"):  # the comment heading it goes with it
                first -= 1
            last = node.end_lineno
            while last < len(lines) and not lines[last].strip():
                last += 1
            if last == len(lines):  # the last thing in the file: the blank lines before it go too
                while first > 1 and not lines[first - 2].strip():
                    first -= 1
            edits.append((first, last, []))
            continue
        body = node.body
        has_doc = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
        start = body[0].end_lineno + 1 if has_doc else body[0].lineno
        given = given_checks(node)
        if given:  # the checks the course gives stay, above the raise
            start = given[-1].end_lineno + 1
            arguments = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
            for statement in given:  # a new name a given check binds is the learner's to use: not unused
                targets = getattr(statement, "targets", [])
                bound = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
                if bound - arguments and "# noqa" not in lines[statement.end_lineno - 1]:
                    edits.append((statement.end_lineno, statement.end_lineno,
                                  [lines[statement.end_lineno - 1].rstrip("\r\n") + GIVEN_NAME + "\n"]))
        indent = " " * (node.col_offset + 4)
        step = re.search(r"See docs: chapter \d+, step (\d+\.\d+)", ast.get_docstring(node) or "")
        said = f"{step[1]} {node.name}" if step else node.name  # CONTRIBUTING: a message starts with its step id
        edits.append((start, node.end_lineno, [f'{indent}raise NotImplementedError("{said}: not written yet")\n']))
    for first, last, replacement in sorted(edits, reverse=True):
        lines[first - 1:last] = replacement
    return _mark_unused_imports("".join(lines))


if __name__ == "__main__":
    sys.stdout.write(stub(Path(sys.argv[1]).read_text(encoding="utf-8")))
