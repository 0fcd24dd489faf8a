"""Every requirement a chapter test checks is stated in the stub's docstring, so the learner can know it.

The tests are read, not run: each ``raises_clearly(lambda: ch.f(...), Error, "word", ...)`` and each
``pytest.raises(Error, match=...)`` around a call of ``ch.f`` must be covered by the ``Raises:`` section
of ``f``'s docstring in ``exercises/`` (or of the functions it refers to, as in "as ``raw_scores``"):

- the exception type is named there;
- a word the message must contain is written there (the docstring says what the message says), unless
  the word is taken from the call's own input (a shape, an id, a number, a row), in which case the
  section must say that the message names something ("the message names both shapes");
- ``names=`` entries, constant or formatted: a constant name is written there as it must appear; the
  fixed text of a formatted one (``f"params['{key}']"``: ``params['`` and ``']``) is written there too,
  and what is filled in comes from the input (so the section says what the message names);
- the condition: a call with an empty input (``np.zeros((0, 4))``, ``[]``, ``""``) requires the section to
  say that empty input raises; one with a non-finite value (``np.nan``, ``np.inf``), that it does.

A test marked ``given`` checks an input check the stub gives, written out above its ``raise``: the learner
reads it there, so its requirements are left out here (the docstring keeps what the learner must do).

And every type a check demands (``kind="array"``, ``"float"``, ``"int"`` on ``expect``/``close``) is the
type the ``Returns:`` section of the function promises.
"""

import ast
import re

import pytest

from kata import project
from kata.judge import answer_key

ROOT = answer_key.ROOT
TEST_FILES = list(project.chapter_files(ROOT / "tests", prefix="test_").values())


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
    source = re.sub(r"\bch\.\w+", "", source)  # the function's own name is not its input
    return word.strip("'\"") in source or bool(re.search(r"\d|\(.*\)", word))


def name_requirements(value: ast.AST) -> list[tuple[str, bool]]:
    """What ``names=`` requires: (constant text, False) to be written in the docstring; (filled in, True).

    ``("A", "dC")``: both as written. ``(f"params['{key}']",)``: its fixed parts ``params['`` and ``']``, as
    written, and ``key`` from the input. A name that is a variable (``names=(name,)``): from the input.
    """
    elements = value.elts if isinstance(value, ast.Tuple | ast.List) else [value]
    words: list[tuple[str, bool]] = []
    for e in elements:
        if isinstance(e, ast.Constant) and isinstance(e.value, str):
            words.append((e.value, False))
        elif isinstance(e, ast.JoinedStr):
            for part in e.values:
                if isinstance(part, ast.Constant) and part.value.strip():
                    words.append((part.value.strip(), False))
                elif isinstance(part, ast.FormattedValue):
                    words.append((ast.unparse(part.value), True))
        else:
            words.append((ast.unparse(e), True))
    return words


MAKERS = {"zeros", "ones", "empty", "full", "standard_normal", "normal", "random", "uniform"}


def _empty(node: ast.AST) -> bool:
    """An empty value written in the call: ``[]``, ``""``, ``np.zeros((0, 4))``, ``np.ones((3, 0))``."""
    if isinstance(node, ast.List) and not node.elts or isinstance(node, ast.Constant) and node.value == "":
        return True
    if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in MAKERS:
        shape = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg in ("shape", "size")),
                                                   None)
        dims = shape.elts if isinstance(shape, ast.Tuple) else [shape] if shape is not None else []
        return any(isinstance(d, ast.Constant) and d.value == 0 for d in dims)
    if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("array", "asarray") and node.args:
        return isinstance(node.args[0], ast.List) and not node.args[0].elts
    return False


def _nonfinite(node: ast.AST) -> bool:
    """``np.nan``, ``np.inf``, ``float("nan")`` written in the call."""
    if isinstance(node, ast.Attribute) and node.attr in ("nan", "inf") and getattr(node.value, "id", "") == "np":
        return True
    return isinstance(node, ast.Call) and getattr(node.func, "id", "") == "float" and bool(node.args) \
        and isinstance(node.args[0], ast.Constant) and str(node.args[0].value).lower().lstrip("+-") in ("nan", "inf")


def condition_words(call: ast.AST) -> list[tuple[str, str]]:
    """The conditions a call's input sets up, each with a pattern the Raises: section must match.

    An empty input (a shape with a 0, ``[]``, ``""``): the section says so ("empty", "no rows", "at least
    one"); a NaN or an infinity: the section says so ("finite", "NaN", "inf").
    """
    nodes = list(ast.walk(call))
    found = []
    if any(_empty(n) for n in nodes):
        found.append(("condition: an empty input", r"\bempty\b|\bno (rows|columns|tokens|ids)\b|at least one|"
                      r"\bzero\b|\b0\b"))
    if any(_nonfinite(n) for n in nodes):
        found.append(("condition: a NaN or infinite value", r"finite|\bnan\b|\binf"))
    return found


def requirements():
    """(test file, line, function, error names, [(word, taken from the input?)]) for every required raise."""
    found = []
    for path in TEST_FILES:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        given = {n for test in tree.body if isinstance(test, ast.FunctionDef) and is_given(test)
                 for n in ast.walk(test)}
        for node in ast.walk(tree):
            if node in given:
                continue
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
                    if k.arg == "names":
                        words += name_requirements(k.value)
                words += condition_words(call)
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


def is_given(test: ast.FunctionDef) -> bool:
    """Whether a test is marked ``given`` (``@pytest.mark.given``): it checks a check the stub gives."""
    return any("given" in {getattr(n, "attr", None) for n in ast.walk(d)} for d in test.decorator_list)


def chapter_module(test_file: str) -> str:
    tree = ast.parse((ROOT / "tests" / test_file).read_text(encoding="utf-8"))
    number = next(n.value.value for n in tree.body if isinstance(n, ast.Assign)
                  and any(getattr(t, "id", None) == "CHAPTER" for t in n.targets))
    return answer_key.load(number).module


REQUIREMENTS = requirements()


def test_the_reader_finds_the_required_raises():
    """the test files are read: every chapter requires some errors, and each is found with its function"""
    files = {r[0] for r in REQUIREMENTS}
    learners = {p.name for p in TEST_FILES if any(  # a chapter whose every bad-input check is given has none
        "raises_clearly(" in ast.unparse(test) for test in ast.parse(p.read_text(encoding="utf-8")).body
        if isinstance(test, ast.FunctionDef) and not is_given(test))}
    assert files == learners, f"no raises_clearly found in {sorted(learners - files)}"


def entries(section: str, errors: list[str]) -> str:
    """The entries of a Raises: section for these exceptions (``ValueError: if ...`` up to the next one)."""
    parts = re.split(r"^\s*(\w+(?:Error|Exception)):", section, flags=re.M)
    found = [text for name, text in zip(parts[1::2], parts[2::2], strict=True) if name in errors]
    return "\n".join(found)


def unmet(section: str, function: str, errors: list[str], words: list) -> list[str]:
    """What a required raise demands that the ``Raises:`` section does not say (empty: all is stated)."""
    if not section:
        return [f"{' or '.join(errors)}, but its docstring has no Raises: section"]
    if not any(re.search(rf"\b{e}\b", section) for e in errors):
        return [f"{' or '.join(errors)}, but the Raises: section of {function} does not name it"]
    entry = entries(section, errors) or section
    problems = []
    for word, from_input in words:
        if isinstance(from_input, str):  # a condition of the input: the entry must say it raises for it
            if not re.search(from_input, entry, re.I):
                problems.append(f"{' or '.join(errors)} for {word.removeprefix('condition: ')}, but the Raises: "
                                f"section of {function} does not say so")
        elif from_input:
            if not re.search(r"\bnam(e|es|ing)\b", entry):
                problems.append(f"a message naming {word} (from the call's input), but the Raises: section of "
                                f"{function} never says what the message names")
        elif word.lower() not in entry.lower():
            problems.append(f"a message containing {word!r}, but the Raises: section of {function} does not say so")
    return problems


@pytest.mark.parametrize("requirement", REQUIREMENTS, ids=lambda r: f"{r[0]}:{r[1]}-{r[2]}")
def test_the_docstring_states_what_the_test_requires_of_an_error(requirement):
    """the stub's Raises section names the exception, the words its message must say, and what it names"""
    test_file, line, function, errors, words = requirement
    module = chapter_module(test_file)
    docs = stub_docstrings(module)
    assert function in docs, f"{test_file}:{line} calls ch.{function}, which exercises/{module}.py does not define"
    section = raises_section(docs, function)
    problems = unmet(section, function, errors, words)
    assert not problems, f"{test_file}:{line} requires ch.{function} to raise " + "; ".join(problems) + f":\n{section}"


def test_a_formatted_name_the_docstring_lacks_is_caught():
    """the reader sees f-string names=, the condition of an empty input, and the exception's own entry"""
    call = ast.parse('''raises_clearly(lambda: ch.f(np.zeros((0, 4)), p), ValueError, names=(f"weights['{key}']",))''')
    node = call.body[0].value
    words = name_requirements(node.keywords[0].value) + condition_words(node.args[0])
    assert ("weights['", False) in words and ("key", True) in words
    assert any(w.startswith("condition: an empty") for w, _ in words)
    lacking = "\n    ValueError: if p is missing a key (the message names the key).\n"
    assert any("weights['" in p for p in unmet(lacking, "f", ["ValueError"], words))
    assert any("empty input" in p for p in unmet(lacking, "f", ["ValueError"], words))
    stating = "\n    ValueError: if x is empty, or p is missing a key (the message names it as weights['KEY']).\n"
    assert unmet(stating, "f", ["ValueError"], words) == []
    other_entry = "\n    IndexError: the message names it.\n    ValueError: if x is empty or p lacks weights['.\n"
    assert any("never says what the message names" in p for p in unmet(other_entry, "f", ["ValueError"], words))


KIND_WORDS = {  # an array is documented by its shape (each chapter's module docstring: "Types, as every ...")
    "array": r"\barray|\bshape\b|\bmatri|\bvector|\(\w+(, \w+)*,?\)",
    "float": r"\bfloat|\bloss\b|\bnumber\b|\bscalar",
    "int": r"\bint\b|\binteger|whole number|\bcount\b",
}


def kind_requirements():
    """(test file, line, function, kind) for every ``kind=`` check: the type a returned value must have.

    The function is the one whose result the check's first argument holds (``close(got["probs"], ...)`` after
    ``got = ch.per_example(...)``), else the last ``ch.<name>(...)`` called in the test before the check.
    """
    found = []
    for path in TEST_FILES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for test in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
            calls = sorted((n.lineno, n.func.attr) for n in ast.walk(test) if isinstance(n, ast.Call)
                           and isinstance(n.func, ast.Attribute) and getattr(n.func.value, "id", "") == "ch")
            made = {}  # variable -> the ch function whose result it holds (got = ch.f(...); a, b = ch.f(...))
            for node in ast.walk(test):
                if isinstance(node, ast.Assign) and called_functions(node.value):
                    for target in node.targets:
                        for name in ast.walk(target):
                            if isinstance(name, ast.Name):
                                made[name.id] = called_functions(node.value)[0]
            for node in ast.walk(test):
                kind = next((k.value.value for k in getattr(node, "keywords", []) if k.arg == "kind"
                             and isinstance(k.value, ast.Constant)), None) if isinstance(node, ast.Call) else None
                if not kind or not node.args:
                    continue
                checked = node.args[0]
                while isinstance(checked, ast.Subscript | ast.Attribute) and not called_functions(checked):
                    checked = checked.value
                before = [name for line, name in calls if line <= node.lineno]
                function = (called_functions(checked) or [None])[0] or made.get(getattr(checked, "id", None)) \
                    or (before[-1] if before else None)
                if function:
                    found.append((path.name, node.lineno, function, kind))
    return found


def returns_section(doc: str) -> str:
    """The ``Returns:`` section of a docstring (up to ``Raises:`` or ``See docs``)."""
    if "Returns:" not in doc:
        return ""
    return re.split(r"\n\s*(Raises:|See docs)", doc.split("Returns:", 1)[1])[0]


KINDS = kind_requirements()


@pytest.mark.parametrize("requirement", KINDS, ids=lambda r: f"{r[0]}:{r[1]}-{r[2]}-{r[3]}")
def test_the_docstring_promises_the_type_a_check_demands(requirement):
    """kind="array"/"float"/"int" on a check: the function's Returns: section promises that type"""
    test_file, line, function, kind = requirement
    docs = stub_docstrings(chapter_module(test_file))
    section = returns_section(docs.get(function, ""))
    assert re.search(KIND_WORDS[kind], section, re.I), (
        f"{test_file}:{line} demands that ch.{function} returns a {kind}, but its Returns: section does not say "
        f"so:\n{section}")


def test_the_reader_finds_the_kind_checks():
    """kind= checks are found in the chapters that use them"""
    assert len(KINDS) >= 10 and {k for *_, k in KINDS} >= {"array", "float"}
