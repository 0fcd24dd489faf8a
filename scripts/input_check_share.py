"""How much of what a learner writes is input checking: the share issue 31 keeps at most 5 %.

For every public function of ``solutions/chapterNN_*.py`` it counts the lines the learner writes — the body after
the docstring and the given ``_check_*`` calls that open it (``kata.learners_code.given_checks``), blank and
comment-only lines left out — and, among them, the lines that validate arguments: an ``if`` whose every branch only
raises ``ValueError``/``TypeError``/``IndexError``/``KeyError``, such a ``raise`` or an ``assert`` on its own, and
an assignment whose names only those checks read. A check the learner keeps because it teaches an idea is declared
in its function's docstring with the words "yours to write" (CONTRIBUTING.md, "Input checks"); every other check is
plumbing, which belongs in a given ``_check_*`` helper.

    python scripts/input_check_share.py            # one row per chapter: plumbing, idea checks, learner lines
    python scripts/input_check_share.py -v         # and every check, by function

Run from the repository's root; it reads the files only (Python's ``ast``), no NumPy needed.
"""

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from kata.learners_code import given_checks  # noqa: E402

ERRORS = {"ValueError", "TypeError", "IndexError", "KeyError"}
IDEA = "yours to write"


def _lines(source: list[str], node: ast.AST) -> set[int]:
    """The numbers of a node's lines that hold code (not blank, not only a comment)."""
    return {n for n in range(node.lineno, node.end_lineno + 1)
            if source[n - 1].strip() and not source[n - 1].strip().startswith("#")}


def _is_check(node: ast.stmt) -> bool:
    """Whether a statement only refuses input: a raise of an input error, an assert, or an if of nothing else."""
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, ast.Raise):
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        return isinstance(exc, ast.Name) and exc.id in ERRORS
    if isinstance(node, ast.If):
        return all(map(_is_check, node.body)) and all(map(_is_check, node.orelse))
    return False


def _statements(body: list[ast.stmt]):
    """Every statement of a body, nested ones included (the bodies of if, for, while, with, try)."""
    for node in body:
        yield node
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(node, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                yield from _statements(inner)
        for handler in getattr(node, "handlers", []):
            yield from _statements(handler.body)


def function_share(source: list[str], node: ast.FunctionDef) -> dict:
    """One public function: its learner lines, check lines, the checks' first lines, and whether they are ideas."""
    body = [n for n in node.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    body = body[len(given_checks(node)):]
    learner = set().union(*(_lines(source, n) for n in body)) if body else set()
    statements = list(_statements(body))
    checks = [n for n in statements if _is_check(n) and not any(n is not c and n in ast.walk(c)
                                                                   for c in statements if _is_check(c))]
    read = {n.id for c in checks for n in ast.walk(c) if isinstance(n, ast.Name)}
    for n in statements:  # a name computed only for a check (``bad = [...]`` then ``if bad: raise``)
        if isinstance(n, ast.Assign) and all(isinstance(t, ast.Name) for t in n.targets):
            names = {t.id for t in n.targets}
            others = [m for s in statements if s is not n and not _is_check(s) and not isinstance(s, ast.If)
                      for m in ast.walk(s) if isinstance(m, ast.Name) and m.id in names and isinstance(m.ctx, ast.Load)]
            if names <= read and not others:
                checks.append(n)
    check_lines = set().union(*(_lines(source, c) for c in checks)) if checks else set()
    return {"name": node.name, "lines": len(learner), "checks": len(check_lines),
            "idea": IDEA in " ".join((ast.get_docstring(node) or "").split()),
            "shown": [source[c.lineno - 1].strip() for c in sorted(checks, key=lambda c: c.lineno)]}


def chapter_share(path: Path) -> list[dict]:
    """Every public function of one solution file."""
    text = path.read_text(encoding="utf-8")
    source = text.splitlines()
    return [function_share(source, n) for n in ast.parse(text).body
            if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]


def main(argv: list[str]) -> int:
    """Print one row per chapter (``-v``: and every check, by function)."""
    verbose = "-v" in argv
    print("chapter  plumbing  idea checks  learner lines  plumbing share  all checks")
    for path in sorted((ROOT / "solutions").glob("chapter*.py")):
        rows = chapter_share(path)
        lines = sum(r["lines"] for r in rows)
        plumbing = sum(r["checks"] for r in rows if not r["idea"])
        idea = sum(r["checks"] for r in rows if r["idea"])
        print(f"{path.stem[7:9]:>7}  {plumbing:8d}  {idea:11d}  {lines:13d}  {100 * plumbing / lines:13.1f}%"
              f"  {100 * (plumbing + idea) / lines:9.1f}%")
        for r in rows if verbose else []:
            if r["checks"]:
                print(f"         {r['name']}: {r['checks']}/{r['lines']} lines, {'idea' if r['idea'] else 'PLUMBING'}")
                for line in r["shown"]:
                    print(f"             {line[:100]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
