"""Write a chapter's stub from its solution.

Same imports, names, signatures and docstrings; every public function body replaced by
``raise NotImplementedError(...)``; private helpers dropped. A starting point for authors: edit each
message to name the step and give a nudge, e.g. ``"4.2: divide Q @ K.T by sqrt(d_k)"``.

Usage: python -m kata.stubgen solutions/chapter05_forward_pass.py > exercises/chapter05_forward_pass.py
"""

import ast
import sys
from pathlib import Path


def stub(source: str) -> str:
    """Return ``source`` with every top-level function body after its docstring replaced by a raise."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    cuts = []  # (first body line after docstring, last line, indent, name)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            body = node.body
            start = body[1].lineno if (len(body) > 1 and isinstance(body[0], ast.Expr)
                                       and isinstance(body[0].value, ast.Constant)) else body[0].lineno
            if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and len(body) == 1:
                start = body[0].end_lineno + 1
            indent = " " * (node.col_offset + 4)
            cuts.append((start, node.end_lineno, indent, node.name))
    for start, end, indent, name in reversed(cuts):
        lines[start - 1:end] = [f'{indent}raise NotImplementedError("{name}: not written yet")\n']
    private = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("_")]
    for node in reversed(private):  # helpers of the solution are the learner's to write, not to be given
        first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
        lines[first - 1:node.end_lineno] = []
    return "".join(lines)


if __name__ == "__main__":
    sys.stdout.write(stub(Path(sys.argv[1]).read_text(encoding="utf-8")))
