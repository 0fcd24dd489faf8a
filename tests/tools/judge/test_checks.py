"""kata/judge/checks.py: what a failed check of bad input tells the learner."""

from __future__ import annotations

import re

import numpy as np
import pytest

from kata.judge.checks import raises_clearly


def _raising(err: BaseException, frames: list[dict] | None):
    """A call that raises ``err`` as a learner's does through the worker: with the frames of their code."""
    if frames is not None:
        err.frames = frames

    def call():
        raise err

    return call


def test_an_error_of_another_type_says_where_the_learners_code_raised_it():
    """a TypeError from NumPy inside the learner's line, where a ValueError was due: the file, line and source"""
    frames = [{"file": "exercises/chapter16_sampling.py", "line": 98, "function": "top_k_filter",
               "source": "keep = order[:k]"}]
    with pytest.raises(pytest.fail.Exception) as failed:
        raises_clearly(_raising(TypeError("slice indices must be integers"), frames), ValueError, names=("k",))
    said = str(failed.value)
    assert "expected ValueError, got TypeError: slice indices must be integers" in said, said
    assert "raised at exercises/chapter16_sampling.py:98 in top_k_filter: keep = order[:k]" in said, said
    assert "raise ValueError naming it" in said, said


def test_an_error_of_another_type_without_frames_is_still_named():
    """no frames (an error raised in the test's own process): the message as before, no empty 'where'"""
    with pytest.raises(pytest.fail.Exception) as failed:
        raises_clearly(_raising(KeyError("WO"), None), ValueError, names=("WO",))
    said = str(failed.value)
    assert said.startswith("expected ValueError, got KeyError: 'WO'") and "where" not in said, said


def test_a_value_worked_out_from_the_result_is_labelled_derived_not_input():
    """expect(..., derived=...) shows what the test read back from the learner's result as "derived", after the inputs"""
    from kata import load
    from kata.judge.checks import expect

    step = load(7).step("7.6")
    with pytest.raises(pytest.fail.Exception) as failed:
        expect(step, 0.5, inputs={"probs": [0.5, 0.5]}, derived={"read back": 0.5})
    lines = str(failed.value).splitlines()
    assert "  input     probs = [0.5, 0.5]" in lines and "  derived   read back = 0.5" in lines, lines
    assert lines.index("  derived   read back = 0.5") == lines.index("  input     probs = [0.5, 0.5]") + 1, lines


@pytest.mark.parametrize(("step_id", "got"), [("14.1", [1, 2, 3]), ("14.2", [[[97, 97], 9]]), ("14.8", "x")])
def test_every_failing_step_with_hints_says_how_to_get_the_others(step_id, got):
    """numbers and structured answers alike (chapter 14's lists and strings): the first hint, then the command"""
    from kata import load
    from kata.judge.checks import expect

    step = load(14).step(step_id)
    with pytest.raises(pytest.fail.Exception) as failed:
        expect(step, got)
    said = str(failed.value)
    assert f"  hint      {step.hints[0]}" in said and f"more hints: nox -s hint -- {step_id}" in said, said


def test_a_structured_answers_mistake_says_why():
    """a named mistake of a non-numeric step shows its `why`, as a numeric step's does"""
    from kata import load
    from kata.judge.checks import expect

    step = load(14).step("14.2")
    mistake = next(m for m in step.mistakes if m.why)
    with pytest.raises(pytest.fail.Exception) as failed:
        expect(step, mistake.value)
    assert f"looks like: {mistake.name} — {mistake.why}" in str(failed.value), str(failed.value)


def test_a_chapter_test_that_writes_a_steps_failure_itself_says_how_to_get_more_hints():
    """a failure a chapter test writes itself leaves the hint and the docs line to the judge (`checks.footer`)"""
    from pathlib import Path

    tests = Path(__file__).resolve().parents[2]
    alone = [p.name for p in sorted(tests.glob("test_chapter*.py")) if "hints[0]" in p.read_text(encoding="utf-8")]
    assert not alone, f"{alone}: leave the hint out: the judge ends every failing step with its hint and page"


def test_whole_numbers_compared_exactly_show_no_tolerance():
    """close() on integer pairs (chapter 14's most_frequent_pair) compares exactly: no "tolerance" line; floats keep it"""
    from kata.judge.checks import close

    with pytest.raises(pytest.fail.Exception) as failed:
        close((97, 99), [97, 46], "most_frequent_pair of 4 counts")
    said = str(failed.value)
    assert "got       [97, 99]" in said and "tolerance" not in said, said
    with pytest.raises(pytest.fail.Exception) as failed:
        close([0.5, 0.25], [0.5, 0.5], "probs")
    assert "  tolerance rtol 1e-06, atol 1e-09" in str(failed.value), str(failed.value)


def test_whole_numbers_are_compared_exactly_whatever_their_size():
    """ids and counts in the tens of millions: one apart is wrong, though rtol 1e-6 would have let it through"""
    from kata.judge.checks import close

    with pytest.raises(pytest.fail.Exception):
        close([10_000_001], [10_000_000], "a count")
    close([10_000_000], [10_000_000.0], "a count")  # a whole float64 answer: the same number passes


@pytest.mark.parametrize(("got", "said"), [
    (list(range(13)), "got       13 items, expected 14 items: [0, 1,"),
    (tuple(range(15)), "got       15 items, expected 14 items: [0, 1,"),
    (np.arange(13), "got       shape (13,), expected shape (14,): [0, 1,"),
])
def test_a_list_of_the_wrong_length_is_told_in_items_an_array_in_shape(got, said):
    """a list or tuple result: "got 13 items, expected 14 items" (plain words); an array keeps NumPy's shape (13,)"""
    from kata import load
    from kata.judge.checks import close, expect

    with pytest.raises(pytest.fail.Exception) as failed:
        expect(load(14).step("14.1"), got)
    assert said in str(failed.value), str(failed.value)
    with pytest.raises(pytest.fail.Exception) as failed:
        close(got, list(range(14)), "to_byte_ids")
    assert said in str(failed.value), str(failed.value)
    with pytest.raises(pytest.fail.Exception) as failed:
        close([[1, 2], [3, 4]], [[1, 2, 3], [4, 5, 6]], "rows")
    assert "got       2 items of 2, expected 2 items of 3: [[1, 2], [3, 4]]" in str(failed.value), str(failed.value)


def test_a_model_given_as_input_is_shown_an_entry_a_line_and_never_cut():
    """a failing step whose input is a model (dicts in a list in a dict) shows each weight whole on its own line"""
    from kata.judge.answer_key import load
    from kata.judge.checks import expect

    step = load(16).step("16.9")
    with pytest.raises(pytest.fail.Exception) as failed:
        expect(step, np.zeros_like(np.asarray(step.exact, dtype=float)) + 7.0)
    said = str(failed.value)
    assert "more characters" not in said, said
    assert re.search(r'^  input     model\["blocks"\]\[0\]\["WQ"\] = \[\[', said, re.M), said
    assert re.search(r'^  input     model\["tok_emb"\] = \[\[', said, re.M), said
    assert re.search(r"^  input     n_heads = \d+$", said, re.M), said


def test_a_failing_check_of_other_inputs_does_not_print_the_worksheets_nudge():
    """a step's first hint works its worksheet case: under a `close` of other inputs it is not printed as if it fit"""
    from kata import load
    from kata.judge.checks import BEYOND, close, footer

    step = load(4).step("4.3")
    with pytest.raises(pytest.fail.Exception) as failed:
        close([0.5, 0.5], [0.02, 0.98], "4.3 softmax of other scores", inputs={"scores": [-2.47, 1.41]})
    said = str(failed.value).splitlines()
    assert any(BEYOND in line for line in said), said
    tail = footer(step, said)
    assert f"  hint      {step.hints[0]}" not in tail and any("worksheet's own case" in line for line in tail), tail
    assert f"more hints: nox -s hint -- {step.id}" in "\n".join(tail), tail
    assert f"  hint      {step.hints[0]}" in footer(step, ["4.3 the worksheet's case", "  expected  0.5"])
