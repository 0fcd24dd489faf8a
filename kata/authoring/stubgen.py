"""Write a chapter's stub from its solution.

Same imports, names, signatures and docstrings; every public function body replaced by
``raise NotImplementedError(...)``; private helpers dropped. A starting point for authors: edit each
message to name the step and give a nudge, e.g. ``"4.2: divide Q @ K.T by sqrt(d_k)"``.

Usage: python -m kata.authoring.stubgen solutions/chapter05_forward_pass.py > exercises/chapter05_forward_pass.py
"""

import ast
import sys
from pathlib import Path


def stub(source: str) -> str:
    """Return ``source`` with public function bodies (after the docstring) replaced by a raise.

    Every edit is a (first line, last line, replacement) on the original line numbers, applied from the
    bottom up, so no edit shifts the lines of another.
    """
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        if node.name.startswith("_"):  # a helper of the solution: the learner writes their own
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            edits.append((first, node.end_lineno, []))
            continue
        body = node.body
        has_doc = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
        start = body[0].end_lineno + 1 if has_doc else body[0].lineno
        indent = " " * (node.col_offset + 4)
        edits.append((start, node.end_lineno, [f'{indent}raise NotImplementedError("{node.name}: not written yet")\n']))
    for first, last, replacement in sorted(edits, reverse=True):
        lines[first - 1:last] = replacement
    return "".join(lines)


if __name__ == "__main__":
    sys.stdout.write(stub(Path(sys.argv[1]).read_text(encoding="utf-8")))
