"""The one fold (kata/judge/status.py): the grade, the chapter view and the worksheet agree on every mix of statuses."""

from __future__ import annotations

import itertools

from kata import project
from kata.grading import grade, points
from kata.judge.plugin import STATUS_MARK, Result, chapter_view
from kata.judge.runner import RunResult
from kata.judge.status import STATUSES
from kata.learner import worksheet


def test_the_grade_and_the_screen_fold_a_step_alike():
    """for every mix of a step's test statuses, the grade's step status is what the screen and worksheet show"""
    chapter = project.chapter(4)
    step = chapter.steps[2]
    for n in (1, 2, 3):
        for mix in itertools.product(STATUSES, repeat=n):
            run = RunResult(tests=[{"nodeid": f"t::{i}", "step": step.id, "title": step.title} for i in range(n)],
                            results={f"t::{i}": {"nodeid": f"t::{i}", "status": s} for i, s in enumerate(mix)})
            graded = grade._chapter(chapter, run, points.Points())
            in_grade = next(s["status"] for s in graded["steps"] if s["id"] == step.id)
            ws_lines = worksheet.lines_for(chapter, {step.id: [{"status": s} for s in mix]}, str)
            on_worksheet = next(line for line in ws_lines if f" {step.id} " in line).split()[0]
            as_cases = [Result(nodeid=f"t::{i}", chapter=None, step=None, title="one check", status=s)
                        for i, s in enumerate(mix)]
            on_screen = next(line for line in chapter_view(as_cases, "x", {}) if "one check" in line).split()[0]
            assert STATUS_MARK[in_grade] == on_worksheet == on_screen, (mix, in_grade, on_worksheet, on_screen)


def test_the_worksheet_marks_a_step_as_the_chapter_view_does():
    """for every mix of its tests' statuses, a step's worksheet mark is ✓ only when the chapter view shows only ✓"""
    chapter = project.chapter(4)
    step = chapter.steps[2]
    statuses = list(STATUS_MARK)
    for n in (1, 2, 3):
        for mix in itertools.product(statuses, repeat=n):
            results = [Result(nodeid=f"t::{i}", chapter=4, step=step.id, title=step.title, status=s)
                       for i, s in enumerate(mix)]
            shown = [line[2] for line in chapter_view(results, "x", {})
                     if line[4:].startswith(f"{step.id:<5} {step.title}")]  # the step's lines: "  ✓ 4.3   ..."
            assert len(shown) == n
            ws_lines = worksheet.lines_for(chapter, {step.id: [dict(r.__dict__) for r in results]}, str)
            mark = next(line for line in ws_lines if f" {step.id} " in line).split()[0]
            assert (mark == "✓") == all(m == "✓" for m in shown), (mix, mark, shown)
            as_cases = [Result(nodeid=f"t::{i}", chapter=None, step=None, title="one check", status=s)
                        for i, s in enumerate(mix)]  # the chapter view's own fold of several cases into one mark
            folded = next(line for line in chapter_view(as_cases, "x", {}) if "one check" in line).split()[0]
            assert mark == folded, (mix, mark, folded)


def test_progress_shows_a_long_title_cut_with_an_ellipsis():
    """a chapter title wider than the table's column ends in '…', not in the middle of a word with no sign"""
    from kata.judge.answer_key import chapters
    from kata.judge.plugin import Result, progress_view

    long = next(c for c in chapters() if len(c.title) > 34)
    results = [Result(f"t::{s.id}", long.number, s.id, s.title, "passed") for s in long.steps]
    row = next(line for line in progress_view(results, "exercises", {}) if line.strip().startswith(str(long.number)))
    shown = row.split(None, 1)[1][:34].rstrip()
    assert shown.endswith("…") and long.title.startswith(shown[:-1]), row


def test_a_step_that_waits_for_another_function_says_so_instead_of_not_started():
    """a not-started step whose test says what it waits for shows that, not "not started" (a stub's still does)"""
    chapter = project.chapter(7)
    waits, stub = chapter.steps[0], chapter.steps[3]
    said = ("backward_trace raised ValueError: it waits for linear_backward (step 7.2, where it raises ValueError "
            "on its own)")
    results = [Result(nodeid="t::a", chapter=7, step=waits.id, title=waits.title, status="not started",
                      message=f"not started: {said}"),
               Result(nodeid="t::b", chapter=7, step=stub.id, title=stub.title, status="not started",
                      message=f"not started: {stub.id} backward_trace: run forward (18 lines)")]
    lines = chapter_view(results, "x", {})
    line = next(line for line in lines if f" {waits.id} " in line)
    assert line.endswith(f"{waits.title}  — {said}") and "not started" not in line, line
    assert next(line for line in lines if f" {stub.id} " in line).endswith(f"{stub.title}  not started")
