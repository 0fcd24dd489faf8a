"""No chapter test file (they ship in the student edition) defines a function that computes what a stub computes.

A helper written in a test to compute the expected value (an "oracle") hands the learner the answer: the whole
forward pass, ready to copy. Chapter tests use stored snapshots (tests/snapshots/, written from solutions/ by
tests/snapshots/chapterNN.py), numerical gradients of the learner's own functions, and invariants instead.

The test files are read, not run. A helper function (any ``def`` that is not a test) is flagged when
- its name says it is one: it contains "oracle", or it is a stub's name (``one_hot``);
- or it does the work of a stub: it uses at least three quarters of the distinct operations (NumPy calls,
  methods, arithmetic operators) the stub's solution uses, its checks and the calls it makes included,
  where the stub uses at least three; arithmetic that only indexes (``x[i + 1]``, ``range(n - 1)``) and type
  annotations are not operations, on either side;
- or it calls a flagged helper.
"""

import ast

import pytest

from kata import project
from kata.judge import answer_key

ROOT = answer_key.ROOT
TEST_FILES = list(project.chapter_files(ROOT / "tests", prefix="test_").values())
# Bookkeeping that every function uses, not the work of any one of them.
GENERIC = {".asarray", ".array", ".zeros", ".ones", ".zeros_like", ".copy", ".astype", "len()", "float()",
           "int()", "list()", "range()", "isinstance()", "tuple()", "enumerate()", "zip()", "sorted()", "str()",
           "dict()", ".items", ".keys", ".values", ".append", "Eq", "NotEq", "Is", "IsNot", "In", "NotIn"}
# Chapters whose tests still compute expected values with an oracle of their own (to be replaced by snapshots,
# as chapter 10's and chapter 18's were). The list may only shrink: a file listed here that is clean fails the test
# too. Empty now: a chapter's oracle is fixed, not listed.
STILL_TO_CONVERT: set[str] = set()


def operations(node: ast.AST) -> set[str]:
    """The distinct operations a function uses: arithmetic operators, calls of functions and methods.

    Index arithmetic is not counted: an operator inside a subscript (``x[i + 1]``, ``a[: n // 2]``) or in the
    arguments of ``range()`` or ``slice()`` says where to look, not what a stub computes (a call there, such as
    ``p[np.argmax(q)]``, still counts). Nor are type annotations (``int | None`` is no ``|``).
    """
    found = set()

    def visit(n: ast.AST, index: bool) -> None:
        name = None
        if isinstance(n, ast.BinOp) and not index:
            found.add(type(n.op).__name__)
        elif isinstance(n, ast.Call):
            f = n.func
            name = f".{f.attr}" if isinstance(f, ast.Attribute) else f"{getattr(f, 'id', '?')}()"
            found.add(name)
        elif isinstance(n, ast.Compare):
            found.update(type(o).__name__ for o in n.ops)
        for field, value in ast.iter_fields(n):
            if field in ("annotation", "returns"):
                continue
            inner = (index or (isinstance(n, ast.Subscript) and field == "slice")
                     or (name in ("range()", "slice()") and field == "args"))
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST):
                    visit(child, inner)

    visit(node, False)
    return found - GENERIC


class _NoChecks(ast.NodeTransformer):
    """Drop `if ...: raise` blocks and raises: a stub's work is what it computes, not how it refuses."""

    def visit_If(self, node):  # noqa: N802 - ast's naming
        if any(isinstance(s, ast.Raise) for s in node.body):
            return None
        return self.generic_visit(node)

    def visit_Raise(self, node):  # noqa: N802
        return None


def stub_work() -> dict[str, set[str]]:
    """Public function name -> the operations its solution uses, through the solution functions it calls."""
    own, names = {}, {}
    for path in project.chapter_files(ROOT / "solutions").values():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef):
                body = _NoChecks().visit(ast.parse(ast.unparse(node)).body[0])
                own[(path.stem, node.name)] = (operations(body),
                                               {n.id for n in ast.walk(body) if isinstance(n, ast.Name)})
                names.setdefault(node.name, []).append((path.stem, node.name))
    work = {}
    for key in own:
        seen, todo, ops = {key}, [key], set()
        while todo:
            current = todo.pop()
            ops |= own[current][0]
            for name in own[current][1]:
                for other in names.get(name, []):
                    if other not in seen:
                        seen.add(other)
                        todo.append(other)
        if not key[1].startswith("_"):
            work[key[1]] = ops - {f"{n}()" for n in names}
    return work


WORK = stub_work()


def flagged_helpers(path) -> dict[str, str]:
    """Helper name -> why it computes what a stub computes."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    helpers = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and not n.name.startswith("test_")}
    flagged = {}
    for name, node in helpers.items():
        tokens = name.strip("_").split("_")
        stub = name if name in WORK else None
        if "oracle" in tokens:
            flagged[name] = "its name says it is an oracle"
        elif stub:
            flagged[name] = f"it is named after the stub {stub}"
        else:
            ops = operations(node)
            for stub, theirs in WORK.items():
                if len(theirs) >= 3 and len(theirs & ops) >= 0.75 * len(theirs):
                    flagged[name] = f"it does the work of {stub} ({', '.join(sorted(theirs & ops))})"
                    break
    changed = True
    while changed:  # a helper that calls a flagged one computes through it
        changed = False
        for name, node in helpers.items():
            called = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} & set(flagged)
            if name not in flagged and called - {name}:
                flagged[name] = f"it calls {', '.join(sorted(called))}"
                changed = True
    return flagged


def test_the_reader_knows_the_stubs():
    """every public function of solutions/ has its operations read (the comparison has something to compare)"""
    assert "softmax" in WORK and "transformer_forward" in WORK and len(WORK["softmax"]) >= 3


def test_the_reader_finds_an_oracle(tmp_path):
    """a helper that writes out softmax under another name, and one that calls it, are both found"""
    path = tmp_path / "test_chapter99_example.py"
    path.write_text("import numpy as np\n\n\ndef weights(x):\n    e = np.exp(x - x.max(axis=-1, keepdims=True))\n"
                    "    return e / e.sum(axis=-1, keepdims=True)\n\n\ndef uses(x):\n    return weights(x) * 2\n\n\n"
                    "def tree(value):\n    return {k: value[k] for k in value}\n", encoding="utf-8")
    found = flagged_helpers(path)
    assert sorted(found) == ["uses", "weights"], found


def test_index_arithmetic_is_not_the_work_of_a_stub(tmp_path):
    """a helper whose arithmetic only indexes and annotates is not flagged; the same operators computing a value are

    ``causal_pair_count`` is n(n + 1)/2 in whole numbers (``*``, ``+``, ``//``): a helper that slices rows with
    ``x[i * w // 2 : (i + 1) * w]`` does not compute it, a helper that returns ``n * (n + 1) // 2`` does.
    """
    path = tmp_path / "test_chapter99_example.py"
    path.write_text("def rows(x, i: int, w: int | None = None):\n    return [x[i * w // 2 : (i + 1) * w] for _ in range(i + 1)]\n"
                    "\n\ndef pairs(n: int | None) -> int | None:\n    return n * (n + 1) // 2\n", encoding="utf-8")
    assert WORK["causal_pair_count"] == {"Add", "FloorDiv", "Mult"}, WORK["causal_pair_count"]
    found = flagged_helpers(path)
    assert sorted(found) == ["pairs"] and "causal_pair_count" in found["pairs"], found


@pytest.mark.parametrize("path", TEST_FILES, ids=lambda p: p.name)
def test_no_chapter_test_defines_an_implementation_of_a_stub(path):
    """the chapter's test file defines no helper that computes what a stub computes (snapshots instead)"""
    found = flagged_helpers(path)
    if path.name in STILL_TO_CONVERT:
        assert found, f"{path.name} has no oracle left: remove it from STILL_TO_CONVERT"
        return
    assert not found, (f"{path.name} ships to learners but computes what stubs compute:\n"
                       + "\n".join(f"  {name}: {why}" for name, why in sorted(found.items()))
                       + "\nstore expected values in tests/snapshots/ (the chapter's builder, tests/snapshots/chapterNN.py) instead")
