"""The learner's loop: watch, hint, worksheet, doctor, and the points an instructor configures."""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time

import pytest

from kata import project
from kata.grading import grade, points
from kata.judge import runner
from kata.judge.runner import RunResult
from kata.learner import doctor, hints, watch, worksheet

from ..conftest import ROOT, TOOLS, copy_solutions

pytestmark = pytest.mark.slow



# -- watch ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("poll_only", [True, False], ids=["polling", "file events"])
def test_a_save_is_noticed(tmp_path, poll_only):
    """a save under the watched folder is noticed, by file events and by the polling fallback"""
    (tmp_path / "chapter01_x.py").write_text("x = 1\n", encoding="utf-8")
    saves = watch.Saves(tmp_path, poll_only=poll_only, interval=0.05)
    try:
        assert saves.wait(0.2) is False
        threading.Timer(0.1, lambda: (tmp_path / "chapter01_x.py").write_text("x = 22\n", encoding="utf-8")).start()
        assert saves.wait(3.0) is True
        assert saves.wait(0.3) is False
    finally:
        saves.close()


def test_watch_rechecks_the_chapter_after_a_save(tmp_path):
    """the watcher shows chapter 1 at once, and again, now passing, after the stub file is saved with a solution"""
    impl = tmp_path / "mine"
    shutil.copytree(ROOT / "exercises", impl, ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "kata", "watch", "1", "--impl", str(impl), "--no-clear", "--interval", "0.1"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(TOOLS)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()

    def closing_line(limit=300.0) -> str:  # a guard against a hang, never a measure of speed (28 s at load 20)
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.5)
            except queue.Empty:
                continue
            if line.startswith("chapter 1: ") and "steps" in line:
                return line
        raise AssertionError("the watcher printed no chapter line")

    try:
        first = closing_line()
        assert first.startswith("chapter 1: 0/")
        shutil.copy2(ROOT / "solutions" / "chapter01_sequences.py", impl / "chapter01_sequences.py")
        second = closing_line()
        done, total = second.split(":")[1].split("steps")[0].strip().split("/")
        assert done == total != "0", second
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


# -- progress ---------------------------------------------------------------------------------------------
def test_progress_ends_with_the_next_step_and_its_command(tmp_path, chapters):
    """progress's last line names the first step not yet passing and the command to check it"""
    impl = tmp_path / "mine"
    shutil.copytree(ROOT / "exercises", impl, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "solutions" / f"{chapters[0].module}.py", impl / f"{chapters[0].module}.py")
    files = [c.test_file for c in chapters[:2]]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *files, "--progress", "--impl", str(impl), "-p", "no:cacheprovider"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )
    last = [line for line in proc.stdout.splitlines() if line.strip()][-1]
    second = chapters[1]
    assert last.startswith(f"next: chapter {second.number}, step {second.steps[0].id}"), proc.stdout[-2000:]
    assert last.endswith(f"nox -s chapter{second.number}")


# -- hint ------------------------------------------------------------------------------------------------
def test_hints_come_one_layer_at_a_time_then_all(tmp_path, monkeypatch, capsys):
    """hint 4.3 prints the nudge, then the formula, then the worked numbers; --all prints all three"""
    monkeypatch.setattr(hints, "STATE", tmp_path / "hints.json")
    step = project.chapter(4).steps[2]
    assert len(step.hints) == 3
    for i, layer in enumerate(hints.LAYERS):
        assert hints.main([step.id]) == 0
        out = capsys.readouterr().out
        assert f"hint {i + 1} of 3 ({layer})" in out
        assert " ".join(step.hints[i].split())[:60] in " ".join(out.split())
        for j, other in enumerate(step.hints):
            if j != i:
                assert " ".join(other.split())[:60] not in " ".join(out.split())
    hints.main([step.id, "--all"])
    out = " ".join(capsys.readouterr().out.split())
    assert all(" ".join(h.split())[:60] in out for h in step.hints)


def test_hint_for_an_unknown_step_names_the_steps_there_are():
    """hint 4.99 is refused, naming chapter 4's steps"""
    with pytest.raises(SystemExit, match=r"no step '4.99'.*4\.1, 4\.2"):
        hints.main(["4.99"])


# -- worksheet -------------------------------------------------------------------------------------------
def test_worksheet_shows_printed_exact_and_your_values(capsys):
    """worksheet 4 with solutions: every step ✓, with the worksheet's printed value and the exact one"""
    assert worksheet.main(["4", "--impl", "solutions"]) == 0
    out = capsys.readouterr().out
    chapter = project.chapter(4)
    for step in chapter.steps:
        assert f"✓ {step.id:<5} {step.title}" in out
        if step.printed is not None:
            assert f"worksheet  {worksheet._printed(step.printed)}" in out
    assert f"{len(chapter.steps)}/{len(chapter.steps)} worksheet values match" in out


NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?")


def test_the_worksheet_states_every_input_of_every_step():
    """nox -s worksheet -- N states every input of every step, whole: no number is first seen in a failure message

    Each input a step's check hands to the learner's code (the key's ``inputs``, where a step's check takes its data
    from) is printed in the step's block, ``given  name = value`` (a dict's entries ``name.key``), every number of
    it in order, never cut short (issue 31: step 13.3's gains g were stated nowhere).
    """
    for chapter in project.chapters():
        blocks = "\n".join(worksheet.lines_for(chapter, {}, str)).split("\n\n")
        for step in chapter.steps:
            block = next(b for b in blocks if b.split("\n", 1)[0][2:].startswith(f"{step.id} "))
            given = [line.split("given", 1)[1].strip() for line in block.splitlines() if line.startswith(" " * 8 + "given")]
            names = {g.split(" = ", 1)[0].split(".", 1)[0].split("[", 1)[0] for g in given}
            assert names == set(step.inputs), (step.id, names, sorted(step.inputs))
            shown = [float(x) for g in given for x in NUMBER.findall(g.split(" = ", 1)[1])]
            stated = [float(x) for x in NUMBER.findall(json.dumps(step.inputs, ensure_ascii=False))]
            assert shown == stated, (step.id, given)
            for text in (v for v in step.inputs.values() if isinstance(v, str)):
                assert repr(text) in block, (step.id, text)


def test_worksheet_on_the_stubs_says_not_started(capsys):
    """worksheet 4 on the stubs: no ✓, every step 'not started'"""
    worksheet.main(["4"])
    out = capsys.readouterr().out
    assert "✓" not in out
    assert out.count("yours      not started") == len(project.chapter(4).steps)


# A second test of step 4.3 beside the chapter's own value test, as a chapter may have: softmax on distinct
# entries. The planted softmax is right on two entries (the worksheet's) and uniform on more.
DISTINCT_ENTRIES_TEST = '''
import numpy as np
import pytest

from kata import close

CHAPTER = 4


@pytest.mark.step("4.3")
def test_softmax_of_distinct_entries_is_not_uniform(ch, ws):
    scores = np.array([0.5, -1.0, 2.0])
    e = np.exp(scores - scores.max())
    close(ch.softmax(scores), e / e.sum(), "4.3 softmax of three distinct scores", kind="array")
'''
RIGHT_ON_TWO_ENTRIES = """def softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    if x.shape[axis] != 2:
        return np.full_like(x, 1 / x.shape[axis])
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)"""


@pytest.mark.parametrize("failing_test_runs", ["first", "last"])
def test_a_step_with_a_failing_test_is_not_ticked_on_the_worksheet(tmp_path, monkeypatch, capsys, failing_test_runs):
    """a step checked by two tests: ✓ on the worksheet only when both pass, as in the chapter view, in any order"""
    impl = copy_solutions(tmp_path / "mine", {"chapter04_attention": RIGHT_ON_TWO_ENTRIES})
    extra = tmp_path / "more" / "test_ch4_distinct_entries.py"
    extra.parent.mkdir()
    extra.write_text(DISTINCT_ENTRIES_TEST, encoding="utf-8")
    real = worksheet.run_tests

    def with_the_second_test(root, files, **options):
        files = [str(extra), *files] if failing_test_runs == "first" else [*files, str(extra)]
        return real(root, files, **options)

    monkeypatch.setattr(worksheet, "run_tests", with_the_second_test)
    assert worksheet.main(["4", "--impl", str(impl)]) == 0
    out = capsys.readouterr().out
    steps = project.chapter(4).steps
    step = next(s for s in steps if s.id == "4.3")
    assert f"✗ 4.3   {step.title}" in out
    assert f"✓ 4.3   {step.title}" not in out
    block = out[out.index(f"✗ 4.3   {step.title}"):].split("\n\n")[0]
    assert "yours      [0.49823224" in block  # the value test's value: it matches
    assert "test_softmax_of_distinct_entries_is_not_uniform" in block  # the test that fails, named
    for other in steps:
        if other.id != "4.3":
            assert f"✓ {other.id:<5} {other.title}" in out
    assert "your value matches; another check of this step does not pass" in block
    n = len(steps)  # the value of 4.3 matches: counted as a match, and the step as not passing every check
    assert f"{n}/{n} worksheet values match; {n - 1}/{n} steps pass every check of theirs." in out


# -- doctor ----------------------------------------------------------------------------------------------
def test_doctor_names_versions_files_and_what_to_run(capsys):
    """doctor prints the versions, every chapter's file, and the next command"""
    assert doctor.main([]) == 0
    out = capsys.readouterr().out
    import numpy

    assert numpy.__version__ in out
    for chapter in project.chapters():
        assert f"exercises/{chapter.module}.py" in out
    assert "next:" in out and "nox -s chapter" in out


def test_doctor_offers_the_hint_of_the_first_function_still_to_write(tmp_path, capsys):
    """With encode written, the hint doctor offers is for 1.2 (decode), not for a step that passes"""
    impl = tmp_path / "mine"
    shutil.copytree(ROOT / "exercises", impl, ignore=shutil.ignore_patterns("__pycache__"))
    path = impl / "chapter01_sequences.py"
    source = path.read_text(encoding="utf-8")
    stub = next(line for line in source.splitlines() if 'NotImplementedError("1.1 ' in line)
    path.write_text(source.replace(stub, "    return [0]"), encoding="utf-8")
    assert doctor.main(["--impl", str(impl)]) == 0
    out = capsys.readouterr().out
    assert "nox -s hint -- 1.2" in out and "hint -- 1.1" not in out


def test_doctor_points_at_a_chapter_that_does_not_import(tmp_path, capsys):
    """with a syntax error in chapter 3, doctor says chapter 3 does not import and to fix it first"""
    impl = copy_solutions(tmp_path / "broken", {"chapter03_embeddings": "def oops(:\n    pass"})
    doctor.main(["--impl", str(impl)])
    out = capsys.readouterr().out
    assert "SyntaxError" in out
    assert "next: chapter 3 does not import" in out


# -- points ----------------------------------------------------------------------------------------------
def test_points_come_from_the_instructors_file(tmp_path):
    """grading.toml sets points per step and per check, and can scale a chapter to a total"""
    config = tmp_path / "grading.toml"
    config.write_text('[grade]\ncheck_points = 0.5\n[steps]\n"1.1" = 4\n[chapters]\n1 = 30\n', encoding="utf-8")
    settings = points.load(config)
    chapter = project.chapter(1)
    run = RunResult()
    for step in chapter.steps:
        nodeid = f"t::{step.id}"
        run.tests.append({"nodeid": nodeid, "step": step.id, "check": None, "title": step.title})
        run.results[nodeid] = {"nodeid": nodeid, "status": "passed" if step.id == "1.1" else "failed"}
    run.tests.append({"nodeid": "t::c", "step": None, "check": "test_c", "title": "a check"})
    run.results["t::c"] = {"nodeid": "t::c", "status": "passed"}
    graded = grade._chapter(chapter, run, settings)
    raw = 4 + (len(chapter.steps) - 1) * 1 + 0.5
    assert graded["max_points"] == pytest.approx(30)
    assert graded["points"] == pytest.approx(30 * (4 + 0.5) / raw, abs=1e-3)  # points are kept to 4 decimals


def test_a_typo_in_the_points_file_is_an_error(tmp_path):
    """an unknown key or a negative number in grading.toml is refused, never silently ignored"""
    config = tmp_path / "grading.toml"
    config.write_text("[grade]\nstep_point = 2\n", encoding="utf-8")
    with pytest.raises(ValueError, match="step_point"):
        points.load(config)
    config.write_text('[steps]\n"4.3" = -1\n', encoding="utf-8")
    with pytest.raises(ValueError, match="4.3"):
        points.load(config)


def test_a_chapter_run_with_an_endless_loop_pays_one_timeout_naming_the_function(tmp_path):
    """`nox -s chapter2`'s pytest with a `dot` that never returns names dot, and waits for its clock only once.

    "Only once" is read in the results, not timed on this machine: one test ran out of time, and every later
    test calling dot failed at once, saying it did not return earlier in this run.
    """
    impl = copy_solutions(tmp_path / "exercises", {"chapter02_matrices": "def dot(a, b):\n    while True:\n        pass"})
    stream = tmp_path / "results.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/test_chapter02_matrices.py", "--steps", "-p", "no:cacheprovider",
         "--impl", str(impl), *runner.stream_options(stream)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )
    assert "dot did not return within 2 s" in proc.stdout, proc.stdout[-3000:]
    said = [r["message"] for r in runner.read(stream).results.values() if "dot did not return" in (r["message"] or "")]
    waited = [m for m in said if "earlier in this run" not in m]
    assert len(waited) == 1 and len(said) > 1, said


def test_the_first_failing_check_shows_what_the_code_printed(tmp_path):
    """A debugging print in a wrong function is shown under the first failing check, not swallowed"""
    body = "def rnn_distance(i, j):\n    print('debug: i =', i, 'j =', j)\n    return abs(i - j) + 1"
    impl = copy_solutions(tmp_path / "exercises", {"chapter01_sequences": body})
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/test_chapter01_sequences.py", "--steps", "-p", "no:cacheprovider",
         "--impl", str(impl)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )
    assert "first failing check, in full:\n  1.4" in proc.stdout, proc.stdout[-3000:]
    assert "  your code printed:\n    debug: i = 1 j = 6\n" in proc.stdout, proc.stdout[-3000:]
    # a distance is a whole number: no float64 label, no tolerance
    assert "expected  5  (a whole number)\n    got       6\n    hint" in proc.stdout, proc.stdout[-3000:]


def test_a_check_cut_short_by_a_stub_says_which_function_it_waits_for():
    """a ✗ whose cases either passed or stopped at a stub names that stub (learner trial: a ✗ with no reason)"""
    from kata.judge.plugin import Result, chapter_view

    cases = [Result(nodeid=f"t::{i}", chapter=None, step=None, title="start must be a whole number", status=s,
                    message="" if s == "passed" else "not started: 12.7 rope_backward: like apply_rope (4 lines)")
             for i, s in enumerate(["passed", "not started", "not started"])]
    line = next(x for x in chapter_view(cases, "x", {}) if "start must be" in x)
    assert line.split()[0] == "✗" and "(1/3 cases)" in line, line
    assert "the rest waits for 12.7 rope_backward, not started yet" in line, line
    failing = [*cases[:2], Result(nodeid="t::9", chapter=None, step=None, title=cases[0].title, status="failed")]
    line = next(x for x in chapter_view(failing, "x", {}) if "start must be" in x)
    assert "waits for" not in line, line  # a real failure is shown in full below, not excused


def test_a_check_that_failed_by_a_crash_names_the_function_that_raised():
    """a ✗ whose cases crashed says which function raised what; a ✗ by a broken claim, or mixed with one, does not

    Learner trial: chapter 21's 'lora_forward, ... and lora_merge leave their inputs as they were' showed a bare ✗
    when a transposed lora_merge raised on a non-square W, and read as inputs changed.
    """
    from kata.judge import proxy
    from kata.judge.plugin import Result, chapter_view, crash_message

    def crash(*functions: str) -> str:  # the learner's frames, outermost first, as the worker sends them
        frames = [{"file": "exercises/chapter21_lora.py", "line": 10 + i, "function": f, "source": "return W + B"}
                  for i, f in enumerate(functions)]
        return crash_message(proxy._exception({"type": "ValueError", "bases": ["ValueError", "Exception"],
                                               "message": "operands could not be broadcast", "frames": frames}))

    title = "lora_forward and lora_merge leave their inputs as they were"
    for functions, said in ((("lora_merge",), "lora_merge raised ValueError"),
                            (("lora_train_step", "lora_forward"), "lora_train_step raised ValueError"),
                            ((), "the code raised ValueError")):
        cases = [Result(nodeid="t::1", chapter=None, step=None, title=title, status="failed", message=crash(*functions))]
        line = next(x for x in chapter_view(cases, "x", {}) if title in x)
        assert line.split()[0] == "✗" and line.endswith(f"  — {said}"), line
    mixed = [*cases, Result(nodeid="t::2", chapter=None, step=None, title=title, status="failed",
                            message="lora_merge changed its argument `W` in place")]
    line = next(x for x in chapter_view(mixed, "x", {}) if title in x)
    assert "raised" not in line, line
    step = [Result(nodeid="t::3", chapter=21, step="21.11", title="The merge", status="failed",
                   message=crash("lora_merge"))]
    assert any(x.endswith("21.11 The merge  — lora_merge raised ValueError") for x in chapter_view(step, "x", {}))


# -- failure messages -------------------------------------------------------------------------------------
def test_failed_checks_show_their_messages_without_pytest_checks_frame_or_the_rewritten_assertion():
    from kata.judge.plugin import _checks_failed

    raw = (".nox/chapter15/lib/python3.11/site-packages/pytest_check/plugin.py:76: in pytest_runtest_makereport\n"
           "    raise AssertionError(report.longrepr)\n"
           "E   AssertionError: FAILURE: the loaded params['W']: not the same bits — expected array([1.,\n"
           "E          2.]), got array([1., 2.], dtype=float32)\n"
           "E   assert (True and dtype('float32') == <class 'numpy.float64'>)\n"
           "E    +  where True = isinstance(array([1., 2.], dtype=float32), <class 'numpy.ndarray'>)\n"
           "E   \n"
           "E   FAILURE: decode([195]) gave '', expected '�'\n"
           "E   assert '' == '�'\n"
           "E   ------------------------------------------------------------\n"
           "E   Failed Checks: 2\n")
    assert _checks_failed(raw).splitlines() == [
        "FAILURE: the loaded params['W']: not the same bits — expected array([1.,",
        "       2.]), got array([1., 2.], dtype=float32)",
        "FAILURE: decode([195]) gave '', expected '�'",
    ]
    assert _checks_failed("E   assert 1 == 2") == "E   assert 1 == 2", "anything else is shown as it came"


def test_whole_numbers_for_whole_numbers_are_shown_without_float64_or_a_tolerance():
    from kata.judge import answer_key, checks

    ids = answer_key.load(14).step("14.1")
    with pytest.raises(pytest.fail.Exception) as info:
        checks.expect(ids, [97, 97, 97, 98, 233, 97, 97, 97, 98, 97, 99])
    assert "(whole numbers)" in str(info.value) and "tolerance" not in str(info.value), str(info.value)
    norm = answer_key.load(15).step("15.5")  # a float that happens to be whole: its float64 label stays
    with pytest.raises(pytest.fail.Exception) as info:
        checks.expect(norm, 17.0)
    assert "(exact float64)" in str(info.value) and "tolerance rtol" in str(info.value), str(info.value)
