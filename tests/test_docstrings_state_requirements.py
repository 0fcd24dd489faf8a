"""Every requirement a chapter test checks is stated in the stub's docstring, so the learner can know it.

The tests are read, not run: each ``raises_clearly(lambda: ch.f(...), Error, "word", ...)`` and each
``pytest.raises(Error, match=...)`` around a call of ``ch.f`` must be covered by the ``Raises:`` section
of ``f``'s docstring in ``exercises/`` (or of the functions it refers to, as in "as ``raw_scores``"):

- the exception type is named there;
- a word the message must contain is written there (the docstring says what the message says), unless
  the word is taken from the call's own input (a shape, an id, a number, a row), in which case the
  section must say that the message names something ("the message names both shapes").
"""

import ast
import re

import pytest

from kata.judge import answer_key

ROOT = answer_key.ROOT
TEST_FILES = sorted((ROOT / "tests").glob("test_chapter*.py"))


def stub_docstrings(module: str) -> dict[str, str]:
    """Public function name -> docstring, from exercises/."""
    tree = ast.parse((ROOT / "exercises" / f"{module}.py").read_text(encoding="utf-8"))
    return {n.name: ast.get_docstring(n) or "" for n in tree.body if isinstance(n, ast.FunctionDef)}


def raises_section(docs: dict[str, str], name: str, seen: frozenset = frozenset()) -> str:
    """The ``Raises:`` section of ``name``'s docstring, followed by those of the functions it refers to."""
    doc = docs.get(name, "")
    if "Raises:" not in doc:
        return ""
    text = re.split(r"\n\s*See docs", doc.split("Raises:", 1)[1])[0]
    for other in re.findall(r"``(\w+)``", text):
        if other in docs and other not in seen and other != name:
            text += "\n" + raises_section(docs, other, seen | {name})
    return text


def called_functions(node: ast.AST) -> list[str]:
    """Names of ``ch.<name>(...)`` calls inside ``node``, outermost first."""
    return [n.func.attr for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name) and n.func.value.id == "ch"]


def error_names(node: ast.AST) -> list[str]:
    """``ValueError`` or ``(ValueError, IndexError)`` as names."""
    if isinstance(node, ast.Tuple):
        return [n for e in node.elts for n in error_names(e)]
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    return []


def taken_from_input(word: str, source: str) -> bool:
    """Whether a required word comes from the call's input: written in the call, or holding a number or a shape.

    "4", "-0.1", "(2, 3)", "row 1": the id, value, shape or row of this call.
    """
    return word.strip("'\"") in source or bool(re.search(r"\d|\(.*\)", word))


def requirements():
    """(test file, line, function, error names, [(word, taken from the input?)]) for every required raise."""
    found = []
    for path in TEST_FILES:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == \
                    "raises_clearly" and len(node.args) >= 2:
                call = node.args[0]
                source = ast.unparse(call)
                words = []
                for w in node.args[2:]:
                    if isinstance(w, ast.Constant) and isinstance(w.value, str):
                        words.append((w.value, taken_from_input(w.value, source)))
                    else:
                        words.append((ast.unparse(w), True))  # str(bad), str(shape): the call's own input
                for k in node.keywords:  # names=("A", "dC"): identifiers the message must contain as written
                    if k.arg == "names" and isinstance(k.value, ast.Tuple):
                        words += [(e.value, False) for e in k.value.elts if isinstance(e, ast.Constant)]
                functions = called_functions(call)
                if functions:
                    found.append((path.name, node.lineno, functions[0], error_names(node.args[1]), words))
            if isinstance(node, ast.With):
                for item in node.items:
                    c = item.context_expr
                    if isinstance(c, ast.Call) and ast.unparse(c.func) == "pytest.raises":
                        functions = [f for stmt in node.body for f in called_functions(stmt)]
                        match = next((k.value for k in c.keywords if k.arg == "match"), None)
                        words = []
                        if isinstance(match, ast.Constant):
                            literal = re.sub(r"\\(.)", r"\1", match.value)
                            body = "".join(ast.unparse(s) for s in node.body)
                            words.append((literal, literal in body))
                        if functions and c.args:
                            found.append((path.name, node.lineno, functions[0], error_names(c.args[0]), words))
    return found


def chapter_module(test_file: str) -> str:
    tree = ast.parse((ROOT / "tests" / test_file).read_text(encoding="utf-8"))
    number = next(n.value.value for n in tree.body if isinstance(n, ast.Assign)
                  and any(getattr(t, "id", None) == "CHAPTER" for t in n.targets))
    return answer_key.load(number).module


REQUIREMENTS = requirements()


def test_the_reader_finds_the_required_raises():
    """the test files are read: every chapter requires some errors, and each is found with its function"""
    files = {r[0] for r in REQUIREMENTS}
    assert files == {p.name for p in TEST_FILES}, f"no raises_clearly found in {sorted({p.name for p in TEST_FILES} - files)}"


@pytest.mark.parametrize("requirement", REQUIREMENTS, ids=lambda r: f"{r[0]}:{r[1]}-{r[2]}")
def test_the_docstring_states_what_the_test_requires_of_an_error(requirement):
    """the stub's Raises section names the exception, the words its message must say, and what it names"""
    test_file, line, function, errors, words = requirement
    module = chapter_module(test_file)
    docs = stub_docstrings(module)
    assert function in docs, f"{test_file}:{line} calls ch.{function}, which exercises/{module}.py does not define"
    section = raises_section(docs, function)
    where = f"{test_file}:{line} requires ch.{function} to raise"
    assert section, f"{where} {' or '.join(errors)}, but its docstring has no Raises: section"
    assert any(re.search(rf"\b{e}\b", section) for e in errors), (
        f"{where} {' or '.join(errors)}, but the Raises: section of {function} does not name it:\n{section}")
    for word, from_input in words:
        if from_input:
            assert re.search(r"\bnam(e|es|ing)\b|\bmessage\b", section), (
                f"{where} a message naming {word} (from the call's input), but the Raises: section of {function} "
                f"never says what the message names:\n{section}")
        else:
            assert word.lower() in section.lower(), (
                f"{where} a message containing {word!r}, but the Raises: section of {function} does not say so:"
                f"\n{section}")
