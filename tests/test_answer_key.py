"""The answer key in reference/ is consistent: every printed number is audited, every step is tested.

A printed number more than one unit in its last printed digit away from the exact value must carry an
erratum; an erratum on a number that agrees is stale and fails too.
"""

import ast
from pathlib import Path

import numpy as np
import pytest

from kata.judge import answer_key

ROOT = answer_key.ROOT
CHAPTERS = answer_key.chapters()
STEPS = [s for c in CHAPTERS for s in c.steps]


@pytest.mark.every_chapter
def test_there_is_an_answer_key():
    """reference/ holds at least one chapter"""
    assert CHAPTERS, "no reference/chapterNN_<topic>.toml found"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: f"chapter{c.number}")
def test_every_chapter_has_its_five_files(chapter):
    """stub, solution, answer key, tests and page exist under the chapter's one name"""
    assert chapter.path.name == f"chapter{chapter.number:02d}_{chapter.module.split('_', 1)[1]}.toml"
    assert chapter.module.startswith(f"chapter{chapter.number:02d}_")
    for path in (chapter.exercise_file, f"solutions/{chapter.module}.py", chapter.test_file, chapter.page):
        assert (ROOT / path).is_file(), f"chapter {chapter.number}: {path} is missing"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: f"chapter{c.number}")
def test_step_ids_are_unique_and_belong_to_their_chapter(chapter):
    """step ids are 'N.k', unique, and in order"""
    ids = [s.id for s in chapter.steps]
    assert ids, f"chapter {chapter.number} has no steps"
    assert len(ids) == len(set(ids)), f"duplicate step ids in {chapter.path.name}: {ids}"
    for sid in ids:
        assert sid.split(".")[0] == str(chapter.number), f"step {sid} is in chapter {chapter.number}'s key"
    keys = [tuple(int(p) for p in sid.split(".")[1:]) for sid in ids]
    assert keys == sorted(keys), f"steps out of order in {chapter.path.name}: {ids}"


def _marked_steps(test_file: Path) -> list[str]:
    tree = ast.parse(test_file.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                if (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute) and dec.func.attr == "step"
                        and dec.args and isinstance(dec.args[0], ast.Constant)):
                    found.append(dec.args[0].value)
    return found


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: f"chapter{c.number}")
def test_every_step_has_exactly_one_test(chapter):
    """each step id in the key is checked by one test, and every marked test names a real step"""
    marked = _marked_steps(ROOT / chapter.test_file)
    ids = [s.id for s in chapter.steps]
    assert sorted(set(marked)) == sorted(ids), (
        f"{chapter.test_file}: steps without a test {sorted(set(ids) - set(marked))}, "
        f"tests for unknown steps {sorted(set(marked) - set(ids))}")
    dupes = sorted({m for m in marked if marked.count(m) > 1})
    assert not dupes, f"{chapter.test_file}: more than one test for steps {dupes}"


@pytest.mark.parametrize("step", STEPS, ids=lambda s: s.id)
def test_every_step_has_three_hint_layers(step):
    """nudge, formula, worked numbers"""
    assert len(step.hints) == 3 and all(h.strip() for h in step.hints), f"step {step.id} needs 3 hints"


@pytest.mark.parametrize("step", [s for s in STEPS if s.printed is not None and isinstance(s.exact, np.ndarray)],
                         ids=lambda s: s.id)
def test_printed_numbers_agree_with_exact_ones_or_carry_an_erratum(step):
    """each printed number is within one unit of its last digit of the exact value, unless an erratum says why not"""
    printed = step.printed_values()
    units = step.printed_units()
    assert printed.shape == step.exact.shape, (
        f"step {step.id}: printed shape {printed.shape} differs from exact shape {step.exact.shape}")
    off = np.abs(printed - step.exact) > units * (1 + 1e-9)
    if off.any():
        assert step.erratum, (
            f"step {step.id}: printed {step.printed} disagrees with exact {step.exact.tolist()} beyond its printed "
            f"precision at {np.argwhere(off).tolist()}, and the key has no erratum explaining why")
    else:
        assert not step.erratum, (
            f"step {step.id}: the printed value agrees with the exact one, but the key carries an erratum; "
            "move it to `note` if it is a remark rather than a correction")


@pytest.mark.parametrize("step", [s for s in STEPS if s.mistakes], ids=lambda s: s.id)
def test_named_mistakes_differ_from_the_right_answer(step):
    """a named mistake must be distinguishable from the exact value"""
    for m in step.mistakes:
        if not isinstance(step.exact, np.ndarray):
            assert m.value != step.exact, f"step {step.id}: mistake '{m.name}' equals the answer"
            continue
        assert m.value.shape == step.exact.shape, f"step {step.id}: mistake '{m.name}' has the wrong shape"
        if m.value.dtype == bool:
            assert not np.array_equal(m.value, step.exact), f"step {step.id}: mistake '{m.name}' equals the answer"
        else:
            assert not np.allclose(m.value, step.exact, rtol=step.rtol, atol=step.atol), (
                f"step {step.id}: mistake '{m.name}' is within tolerance of the right answer")
