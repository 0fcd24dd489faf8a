"""exercises/ and solutions/ stay in sync: same public names, signatures, docstrings and data; stubs are stubs."""

import ast

import pytest

from kata import project
from kata.judge import answer_key
from kata.learners_code import GIVEN, given_checks

ROOT = answer_key.ROOT
MODULES = [p.stem for p in project.chapter_files(ROOT / "solutions").values()]


def _public(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    funcs, data = {}, {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            funcs[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name) and not t.id.startswith("_"):
                    data[t.id] = ast.dump(node.value)
    return tree, funcs, data


@pytest.mark.every_chapter
def test_every_chapter_has_both_files():
    """each solutions/chapterNN_*.py has its exercises/ twin and the other way round"""
    stubs = [p.stem for p in project.chapter_files(ROOT / "exercises").values()]
    assert stubs == MODULES


@pytest.mark.parametrize("module", MODULES)
def test_stub_and_solution_have_the_same_public_names_signatures_and_docstrings(module):
    """same names, same signatures, same docstrings, same data"""
    s_tree, s_funcs, s_data = _public(ROOT / "solutions" / f"{module}.py")
    e_tree, e_funcs, e_data = _public(ROOT / "exercises" / f"{module}.py")
    assert ast.get_docstring(s_tree) == ast.get_docstring(e_tree), f"{module}: module docstrings differ"
    assert sorted(s_funcs) == sorted(e_funcs), f"{module}: public functions differ"
    assert s_data == e_data, f"{module}: public data (constants) differ"
    for name, sf in s_funcs.items():
        ef = e_funcs[name]
        assert ast.dump(sf.args) == ast.dump(ef.args), f"{module}.{name}: signatures differ"
        s_ret = ast.dump(sf.returns) if sf.returns else None
        e_ret = ast.dump(ef.returns) if ef.returns else None
        assert s_ret == e_ret, f"{module}.{name}: return annotations differ"
        assert ast.get_docstring(sf), f"{module}.{name} has no docstring"
        assert ast.get_docstring(sf) == ast.get_docstring(ef), f"{module}.{name}: docstrings differ"
        assert "Returns:" in ast.get_docstring(sf) or "Yields:" in ast.get_docstring(sf), (
            f"{module}.{name}: the docstring must say what it returns (with shapes)")


@pytest.mark.parametrize("module", MODULES)
def test_every_stub_only_raises_not_implemented(module):
    """each stub body is its docstring, the solution's given checks and one `raise NotImplementedError(...)`"""
    _, funcs, _ = _public(ROOT / "exercises" / f"{module}.py")
    _, s_funcs, _ = _public(ROOT / "solutions" / f"{module}.py")
    for name, f in funcs.items():
        given = given_checks(f)
        assert [ast.dump(s) for s in given] == [ast.dump(s) for s in given_checks(s_funcs[name])], (
            f"{module}.{name}: the stub's given checks (the `_check_*` calls above its raise) are not the "
            f"solution's: run python -m kata.authoring.stubgen on it")
        body = (f.body[1:] if ast.get_docstring(f) else f.body)[len(given):]
        assert len(body) == 1 and isinstance(body[0], ast.Raise), f"{module}.{name} is not an untouched stub"
        exc = body[0].exc
        call = exc.func.id if isinstance(exc, ast.Call) and isinstance(exc.func, ast.Name) else None
        assert call == "NotImplementedError", f"{module}.{name} must raise NotImplementedError"
        message = exc.args[0].value if exc.args and isinstance(exc.args[0], ast.Constant) else ""
        number = int(module[len("chapter"):len("chapter") + 2])
        assert message.startswith(f"{number}."), (
            f"{module}.{name}: the stub's message should start with its step id ('{number}.k ...'), got {message!r}")


@pytest.mark.parametrize("module", MODULES)
def test_the_given_checks_are_the_solutions_word_for_word(module):
    """the `_check_*` helpers the stub gives are the solution's, every one, line for line"""
    def helpers(folder):
        source = (ROOT / folder / f"{module}.py").read_text(encoding="utf-8")
        return {n.name: ast.get_source_segment(source, n) for n in ast.parse(source).body
                if isinstance(n, ast.FunctionDef) and n.name.startswith(GIVEN)}

    given, written = helpers("exercises"), helpers("solutions")
    assert sorted(given) == sorted(written), f"{module}: the stub gives {sorted(given)}, the solution has {sorted(written)}"
    changed = [name for name in given if given[name] != written[name]]
    assert not changed, f"{module}: the given checks {changed} differ from the solution's: run python -m kata.authoring.stubgen"
