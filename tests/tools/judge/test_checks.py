"""kata/judge/checks.py: what a failed check of bad input tells the learner."""

from __future__ import annotations

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
