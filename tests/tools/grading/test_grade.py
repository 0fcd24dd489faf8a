"""`nox -s grade`: full marks on solutions/, zero on the stubs, and a grade whatever the learner's code does.

Each test grades a throwaway implementation (a copy of solutions/ with one planted problem) the way CI
does, in a fresh process, and reads the three reports it writes.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kata.grading import schema

from ..conftest import ROOT, copy_solutions, tool, undocumented_fields

pytestmark = pytest.mark.slow


LOOP_FOREVER = '''
_kata_real_causal_mask = causal_mask


def causal_mask(n):
    if n == 2:  # the worksheet's input: an endless loop
        while True:
            pass
    return _kata_real_causal_mask(n)
'''

LOOP_AND_SWALLOW = '''
_kata_real_encode = encode


def encode(text):
    if text == "A B":  # the worksheet's input: an endless loop that swallows every interrupt
        while True:
            try:
                while True:
                    pass
            except BaseException:
                pass
    return _kata_real_encode(text)
'''

FLOOD = '''
import sys as _kata_sys

for _ in range(200):
    print("import-time noise " * 500)

_kata_real_decode = decode


def decode(ids):
    for _ in range(2000):
        print("x" * 10_000)
        print("y" * 10_000, file=_kata_sys.stderr)
    return _kata_real_decode(ids)
'''


def grade(tmp: Path, *args: str, env: dict | None = None):
    """Grade into ``tmp/out``; return (exit code, results, junit root, summary text, output)."""
    out = tmp / "out"
    proc = tool("grade", "--out", str(out), *args, env=env)
    results_file = out / "results.json"
    assert results_file.exists(), f"grade wrote no results.json:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    results = json.loads(results_file.read_text(encoding="utf-8"))
    junit = ET.parse(out / "junit.xml").getroot()
    summary = (out / "summary.md").read_text(encoding="utf-8")
    return proc.returncode, results, junit, summary, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def on_solutions(tmp_path_factory):
    return grade(tmp_path_factory.mktemp("solutions"), "--impl", "solutions", "--fail-under", "100")


@pytest.fixture(scope="module")
def on_stubs(tmp_path_factory):
    return grade(tmp_path_factory.mktemp("stubs"), "--fail-under", "1")


@pytest.fixture(scope="module")
def endless_loop(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("loop")
    impl = copy_solutions(tmp / "loopy", {"chapter04_attention": LOOP_FOREVER, "chapter01_sequences": LOOP_AND_SWALLOW})
    return grade(tmp, "--impl", str(impl), "--chapters", "1,4", "--timeout", "0.5")


def steps_of(results: dict, number: int) -> dict[str, dict]:
    chapter = next(c for c in results["chapters"] if c["chapter"] == number)
    return {s["id"]: s for s in chapter["steps"]}


def test_solutions_get_full_marks_in_every_chapter(on_solutions, chapters):
    """solutions/ earns every point of every chapter, and --fail-under 100 is met"""
    code, results, _, _, output = on_solutions
    assert code == 0, output
    assert [c["chapter"] for c in results["chapters"]] == [c.number for c in chapters]
    for chapter in results["chapters"]:
        assert chapter["status"] == "passed", (chapter["chapter"], chapter["error"])
        assert chapter["points"] == chapter["max_points"] > 0
    assert results["total"]["percent"] == 100.0


def test_every_worksheet_step_is_graded(on_solutions, chapters):
    """each step of each answer key is one graded unit, besides the checks beyond the worksheet"""
    _, results, _, _, _ = on_solutions
    for chapter in chapters:
        graded = steps_of(results, chapter.number)
        assert [s.id for s in chapter.steps] == [i for i, s in graded.items() if s["kind"] == "step"]
        assert any(s["kind"] == "check" for s in graded.values())


def test_untouched_stubs_get_zero_with_every_step_not_started(on_stubs):
    """the stubs earn nothing, every step is 'not started', and --fail-under 1 fails the run (exit 1)"""
    code, results, _, summary, output = on_stubs
    assert code == 1, output
    assert "below --fail-under" in output
    assert results["total"]["points"] == 0
    for chapter in results["chapters"]:
        assert chapter["status"] == "not started"
        for step in chapter["steps"]:
            assert step["status"] == "not started", step
            assert step["message"].startswith("not started")
    assert "not started" in summary


def test_an_endless_loop_is_timed_out_and_the_rest_is_graded(endless_loop):
    """an endless loop becomes 'timed out' (even one that swallows the interrupt); every other step is graded"""
    code, results, _, _, output = endless_loop
    assert code == 0, output
    ch4 = steps_of(results, 4)
    assert ch4["4.5"]["status"] == "timed out"
    assert ch4["4.5"]["points"] == 0
    assert ch4["4.1"]["status"] == "passed"
    ch1 = steps_of(results, 1)
    assert ch1["1.1"]["status"] == "timed out"
    assert "stopped from outside" in ch1["1.1"]["message"]
    assert ch1["1.2"]["status"] == "passed"
    passed_elsewhere = [s for c in results["chapters"] for s in c["steps"] if s["status"] == "passed"]
    assert len(passed_elsewhere) > 10


def test_a_syntax_error_costs_only_its_chapter_and_those_built_on_it(tmp_path, chapters):
    """chapter 3 with a syntax error is graded 0 with the error; chapters 1-2 are graded as usual"""
    impl = copy_solutions(tmp_path / "broken", {"chapter03_embeddings": "def oops(:\n    pass"})
    code, results, _, summary, output = grade(tmp_path, "--impl", str(impl))
    assert code == 0, output
    by_number = {c["chapter"]: c for c in results["chapters"]}
    assert by_number[3]["status"] == "error"
    assert by_number[3]["points"] == 0
    assert "SyntaxError" in by_number[3]["error"] and "chapter03_embeddings.py" in by_number[3]["error"]
    for number in (1, 2):
        assert by_number[number]["status"] == "passed"
    for number, chapter in by_number.items():
        if number > 3:  # later chapters either pass or fail only because they import chapter 3
            assert chapter["status"] == "passed" or "chapter03_embeddings" in (chapter["error"] or ""), chapter
    assert "SyntaxError" in summary


def test_a_chapter_that_hangs_at_import_costs_one_timeout(tmp_path):
    """an endless loop at module level: one test times out, the rest of the chapter is an error at once"""
    impl = copy_solutions(tmp_path / "hangs", {"chapter02_matrices": "while True:\n    pass"})
    code, results, _, _, output = grade(tmp_path, "--impl", str(impl), "--chapters", "1,2", "--timeout", "0.5")
    assert code == 0, output
    by_number = {c["chapter"]: c for c in results["chapters"]}
    assert by_number[1]["status"] == "passed"
    assert by_number[2]["status"] == "error" and "did not finish" in by_number[2]["error"]
    statuses = [t["status"] for s in by_number[2]["steps"] for t in s["tests"]]
    assert statuses.count("timed out") == 1 and set(statuses) == {"timed out", "error"}


def test_isolate_grades_each_chapter_on_the_reference_of_the_others(tmp_path, chapters):
    """--isolate: a broken chapter 3 costs chapter 3 only; chapter 2, and a chapter importing 3, get full marks"""
    impl = copy_solutions(tmp_path / "broken", {"chapter03_embeddings": "def oops(:\n    pass"})
    users = [c.number for c in chapters if "from .chapter03_embeddings" in (ROOT / "solutions" / f"{c.module}.py").read_text()]
    wanted = ",".join(str(n) for n in [2, 3, *users[:1]])
    code, results, _, summary, output = grade(tmp_path, "--impl", str(impl), "--isolate", "--chapters", wanted)
    assert code == 0, output
    for chapter in results["chapters"]:
        if chapter["chapter"] == 3:
            assert chapter["status"] == "error"
        else:
            assert chapter["status"] == "passed", (chapter["chapter"], chapter["error"])
    assert results["options"]["isolate"] is True
    assert "reference implementation of the others" in summary


def test_a_flood_of_output_does_not_break_the_report(tmp_path):
    """printing megabytes (at import and in a function) leaves the reports whole and the grade right"""
    impl = copy_solutions(tmp_path / "noisy", {"chapter01_sequences": FLOOD})
    code, results, _, summary, output = grade(tmp_path, "--impl", str(impl), "--chapters", "1")
    assert code == 0
    assert results["chapters"][0]["status"] == "passed"
    assert len(output) < 100_000
    assert len(json.dumps(results)) < 200_000


def test_extra_tests_run_and_change_the_wording(tmp_path):
    """--extra-tests adds the instructor's tests to their chapter, and the reports stop saying 'public checks' only"""
    extra = tmp_path / "private"
    extra.mkdir()
    (extra / "test_private_chapter01.py").write_text(
        "CHAPTER = 1\n\n\n"
        "def test_decoding_a_long_text_round_trips(ch):\n"
        '    """decode(encode(text)) is text for a long text"""\n'
        '    text = " ".join(["A", "B", "C", "D"] * 50)\n'
        "    assert ch.decode(ch.encode(text)) == text\n",
        encoding="utf-8",
    )
    code, results, junit, summary, output = grade(
        tmp_path, "--impl", "solutions", "--chapters", "1", "--extra-tests", str(extra)
    )
    assert code == 0, output
    assert results["checks"] == "public and private"
    private = [s for s in results["chapters"][0]["steps"] if s["private"]]
    assert [s["status"] for s in private] == ["passed"]
    assert "instructor's private checks" in summary and "instructor's private checks" in junit.get("name")


def test_public_wording_without_extra_tests(on_solutions):
    """without --extra-tests every report says 'public checks'"""
    _, results, junit, summary, output = on_solutions
    assert results["checks"] == "public"
    assert "public checks" in summary and "private" not in summary
    assert junit.get("name").endswith("(public checks)")
    assert "public checks" in output


@pytest.mark.parametrize("run", ["on_solutions", "on_stubs", "endless_loop"])
def test_results_json_validates_against_its_schema(run, request):
    """results.json validates against kata/grading/results.schema.json"""
    _, results, _, _, _ = request.getfixturevalue(run)
    assert schema.errors(results) == []


def test_the_schema_check_can_fail(on_solutions):
    """a broken results.json is caught: a missing key, an unknown status, a negative score"""
    _, results, _, _, _ = on_solutions
    broken = json.loads(json.dumps(results))
    del broken["total"]["points"]
    broken["chapters"][0]["status"] = "almost"
    broken["chapters"][0]["steps"][0]["points"] = -1
    found = "\n".join(schema.errors(broken))
    assert "$.total: 'points' is a required property" in found
    assert "$.chapters[0].status: 'almost' is not one of" in found
    assert "$.chapters[0].steps[0].points: -1 is less than the minimum of 0" in found


def test_every_schema_field_is_documented_on_the_instructors_page():
    """docs/instructors.md names every field of results.json"""
    missing = undocumented_fields(schema.load())
    assert not missing, f"docs/instructors.md does not document: {missing}"


@pytest.mark.parametrize("run", ["on_solutions", "on_stubs", "endless_loop"])
def test_results_junit_and_summary_agree(run, request):
    """results.json, junit.xml and summary.md tell the same story, chapter by chapter"""
    _, results, junit, summary, _ = request.getfixturevalue(run)
    suites = junit.findall("testsuite")
    assert len(suites) == len(results["chapters"])
    for chapter, suite in zip(results["chapters"], suites, strict=True):
        tests = [t for s in chapter["steps"] for t in s["tests"]]
        assert int(suite.get("tests")) == len(tests) == chapter["tests"]["total"]
        bad = int(suite.get("failures")) + int(suite.get("errors"))
        assert bad == len(tests) - chapter["tests"]["passed"]
        timed_out = [c for c in suite.iter("testcase") if c.find("error[@type='timed out']") is not None]
        assert len(timed_out) == sum(t["status"] == "timed out" for t in tests)
        row = f"| {chapter['chapter']} | "
        line = next(x for x in summary.splitlines() if x.startswith(row))
        assert f"| {chapter['passed']}/{chapter['total']} |" in line
        assert chapter["status"] in line
    total = results["total"]
    assert int(junit.get("tests")) == total["tests"]["total"]
    assert f"**{total['passed']}/{total['total']}**" in summary
    assert f"{total['percent']:.1f} %" in summary


def test_the_summary_is_appended_to_the_github_step_summary(tmp_path):
    """with $GITHUB_STEP_SUMMARY set, summary.md is appended to it (what GitHub shows on the run's page)"""
    step_summary = tmp_path / "step_summary.md"
    step_summary.write_text("earlier step\n", encoding="utf-8")
    _, _, _, summary, _ = grade(tmp_path, "--chapters", "1", env={"GITHUB_STEP_SUMMARY": str(step_summary)})
    assert step_summary.read_text(encoding="utf-8") == "earlier step\n" + summary


def test_bad_options_are_refused_clearly(tmp_path):
    """an unknown chapter, a bad percentage and a missing ref are refused with a reason, and nothing is written"""
    unknown = tool("grade", "--out", str(tmp_path / "a"), "--chapters", "99")
    assert unknown.returncode == 2 and "no chapter [99]" in unknown.stderr
    percent = tool("grade", "--out", str(tmp_path / "b"), "--fail-under", "150")
    assert percent.returncode == 2 and "between 0 and 100" in percent.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
