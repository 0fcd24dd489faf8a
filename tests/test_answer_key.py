"""The answer key in reference/ is consistent: every printed number is audited, every step is tested.

A printed number more than one unit in its last printed digit away from the exact value must carry an
erratum; an erratum on a number that agrees is stale and fails too.
"""

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kata.judge import answer_key
from kata.judge.markers import marked_steps

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
            found += marked_steps(node)
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
        if m.value.ndim == step.exact.ndim == 1 and m.value.shape != step.exact.shape:
            continue  # a list of ids of another length (chapter 14: code points, a merge with overlap): distinct
        assert m.value.shape == step.exact.shape, f"step {step.id}: mistake '{m.name}' has the wrong shape"
        if m.value.dtype == bool:
            assert not np.array_equal(m.value, step.exact), f"step {step.id}: mistake '{m.name}' equals the answer"
        else:
            assert not np.allclose(m.value, step.exact, rtol=step.rtol, atol=step.atol), (
                f"step {step.id}: mistake '{m.name}' is within tolerance of the right answer")


# -- a malformed key fails in one line naming the file and the step ------------------------------------------
KEY = '''chapter = 5
title = "The Forward Pass"
module = "chapter05_forward_pass"
page = "docs/chapters/05-forward-pass.md"

[[steps]]
id = "5.1"
title = "first"
exact = [1.0]
hints = ["nudge", "formula", "worked numbers"]

[[steps]]
id = "5.2"
title = "second"
exact = [2.0]
hints = ["nudge", "formula", "worked numbers"]

[[steps.mistakes]]
name = "doubled"
value = [4.0]
'''
WHERE = "reference/chapter05_forward_pass.toml"
MALFORMED = {
    "no exact": (lambda k: k.replace("exact = [2.0]\n", ""), f"{WHERE}, step 5.2: no `exact`"),
    "two hints": (lambda k: k.replace('hints = ["nudge", "formula", "worked numbers"]\n\n[[steps.mistakes]]',
                                      'hints = ["nudge", "formula"]\n\n[[steps.mistakes]]'),
                  f"{WHERE}, step 5.2: 2 hint(s); every step needs exactly three non-empty `hints` (nudge, formula, "
                  "worked numbers)"),
    "an empty hint": (lambda k: k.replace('["nudge", "formula", "worked numbers"]', '["nudge", "", "worked"]', 1),
                      f"{WHERE}, step 5.1: 3 hint(s); every step needs exactly three non-empty `hints` (nudge, "
                      "formula, worked numbers)"),
    "no hints": (lambda k: k.replace('hints = ["nudge", "formula", "worked numbers"]\n', "", 1),
                 f"{WHERE}, step 5.1: no `hints`; every step needs exactly three non-empty `hints` (nudge, formula, "
                 "worked numbers)"),
    "no step title": (lambda k: k.replace('title = "second"\n', ""), f"{WHERE}, step 5.2: no `title`"),
    "no step id": (lambda k: k.replace('id = "5.2"\n', ""),
                   f'{WHERE}, [[steps]] table 2: no `id` (a string such as "5.2")'),
    "no page": (lambda k: k.replace('page = "docs/chapters/05-forward-pass.md"\n', ""),
                f"{WHERE}: no `page` at the top level (a key needs chapter, title, module, page)"),
    "another chapter": (lambda k: k.replace("chapter = 5", "chapter = 6"),
                        f"{WHERE}: `chapter = 6`, but the file is chapter 5's"),
    "a mistake without its value": (lambda k: k.replace("value = [4.0]\n", ""),
                                    f"{WHERE}, step 5.2, [[steps.mistakes]] 1: no `value`"),
}


def test_the_well_formed_key_of_these_cases_reads(tmp_path):
    """the key the cases below break reads as two steps"""
    path = tmp_path / "reference" / "chapter05_forward_pass.toml"
    path.parent.mkdir()
    path.write_text(KEY, encoding="utf-8")
    assert [s.id for s in answer_key.read(path).steps] == ["5.1", "5.2"]


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_key_fails_in_one_line_naming_the_file_and_the_step(tmp_path, case):
    """no `exact`, not three hints, no `page`, …: one line, e.g. 'reference/chapter05_….toml, step 5.2: no `exact`'"""
    edit, message = MALFORMED[case]
    path = tmp_path / "reference" / "chapter05_forward_pass.toml"
    path.parent.mkdir()
    path.write_text(edit(KEY), encoding="utf-8")
    with pytest.raises(answer_key.AnswerKeyError) as err:
        answer_key.read(path)
    assert str(err.value) == message


def test_a_chapter_run_on_a_malformed_key_prints_one_line_not_a_traceback(tmp_path):
    """a copy of the course whose step 5.3 has no `exact`: pytest says so in one ERROR line and stops"""
    for part in ("kata", "solutions", "exercises", "reference"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("conftest.py", "pyproject.toml", "tests/__init__.py", "tests/test_chapter05_forward_pass.py"):
        (tmp_path / part).parent.mkdir(exist_ok=True)
        shutil.copy(ROOT / part, tmp_path / part)
    key = tmp_path / "reference" / "chapter05_forward_pass.toml"
    lines = key.read_text(encoding="utf-8").splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.strip() == 'id = "5.3"')
    first = next(i for i in range(start, len(lines)) if lines[i].startswith("exact"))
    last = next(i for i in range(first + 1, len(lines)) if not lines[i].startswith((" ", "]")))
    key.write_text("".join(lines[:first] + lines[last:]), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--impl", "solutions",
                           "tests/test_chapter05_forward_pass.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=False, env={**os.environ, "KATA_WARM": "0"})
    out = (proc.stdout + proc.stderr).strip()
    assert proc.returncode != 0
    assert out == "ERROR: reference/chapter05_forward_pass.toml, step 5.3: no `exact`", out


# -- a step whose value is a central-difference estimate sets its own tolerance ------------------------------
ESTIMATE = ("central difference", "numerical gradient", "finite difference")


def estimate_without_tolerance(step: answer_key.Step) -> str | None:
    """The message for a step checked against central differences that keeps the default tolerance, else None.

    The reference's own estimate is not the exact value to 1e-12, so `--strict-exact` (which compares steps
    without a tolerance of their own at rtol 1e-12) would fail it: the key says how close an estimate must be.
    """
    words = f"{step.title} {step.source}".lower()
    if any(w in words for w in ESTIMATE) and not step.own_tolerance:
        return (f"step {step.id} ({step.title}) is checked against central differences but the key sets no `rtol`/"
                "`atol`: add them with a comment (CONTRIBUTING.md, 'Tolerances')")
    return None


@pytest.mark.parametrize("step", STEPS, ids=lambda s: s.id)
def test_a_central_difference_step_sets_its_own_tolerance(step):
    """a step whose title or source says central differences or numerical gradient has its own rtol/atol"""
    assert estimate_without_tolerance(step) is None, estimate_without_tolerance(step)


def test_a_central_difference_step_without_a_tolerance_is_named(tmp_path):
    """the same key without rtol and atol on its numerical-gradient step: named"""
    path = tmp_path / "reference" / "chapter05_forward_pass.toml"
    path.parent.mkdir()
    path.write_text(KEY.replace('title = "second"', 'title = "Numerical gradient of the loss"'), encoding="utf-8")
    step = answer_key.read(path).step("5.2")
    assert estimate_without_tolerance(step) == (
        "step 5.2 (Numerical gradient of the loss) is checked against central differences but the key sets no "
        "`rtol`/`atol`: add them with a comment (CONTRIBUTING.md, 'Tolerances')")
    path.write_text(KEY.replace('title = "second"', 'title = "Numerical gradient of the loss"\nrtol = 1e-6\natol = 1e-9'),
                    encoding="utf-8")
    assert estimate_without_tolerance(answer_key.read(path).step("5.2")) is None
