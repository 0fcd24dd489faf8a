"""The suite proves itself.

Every test fails on the untouched stubs, passes on solutions/, and catches and names the planted
mistakes in tests/mutants/chapterNN.toml. The tests marked ``given`` check the input checks the stubs give (the
course's code, not the learner's): they pass on solutions/ too, and on the stubs they pass, or wait for a
function the learner writes (a cache from the forward pass); they never fail there.

Each run is a separate pytest process with `--impl`, reading the results the judge streams
(`kata.judge.runner`'s stream, read back by `runner.read`); a chapter's planted mistakes are checked one after another in one pytest
process (scripts/mutation.py's loop, as `nox -s mutation` checks mutmut's mutants: the worker restarted on each
copy, the tests' random inputs put back), the chapter's tests on each up to the first failure. With `--chapter N` the runs on
the stubs and the solutions are of chapter N's tests only.
"""

import ast
import shutil
import subprocess
import sys

import pytest

from kata import project
from kata.judge import answer_key, runner
from scripts import mutation
from tests.mutants import MUTANTS

BOOK = 10  # Part I follows the book's worksheets; from Part II on, every planted mistake shows on the worksheet

ROOT = answer_key.ROOT
CHAPTER_TESTS = [str(p.relative_to(ROOT)) for p in project.chapter_files(ROOT / "tests", prefix="test_").values()]


def given_tests() -> set[str]:
    """``file::test`` of every chapter test marked ``given`` (read from the files: ``@pytest.mark.given``)."""
    found = set()
    for path in CHAPTER_TESTS:
        for node in ast.parse((ROOT / path).read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and any(
                    "given" in {getattr(n, "attr", None) for n in ast.walk(d)} for d in node.decorator_list):
                found.add(f"{path}::{node.name}")
    return found


GIVEN = given_tests()


def is_given(result: dict) -> bool:
    """Whether a result is of a test marked ``given``."""
    return result["nodeid"].split("[")[0] in GIVEN


def chapters_run(config: pytest.Config) -> list[answer_key.Chapter]:
    """The chapters of this run: those of `--chapter N`, else every one."""
    wanted = set(config.getoption("chapter", default=None) or [])
    return [c for c in answer_key.chapters() if not wanted or c.number in wanted]


def chapter_tests(config: pytest.Config) -> list[str]:
    """The chapter test files of this run (every one without `--chapter`)."""
    files = {c.test_file for c in chapters_run(config)}
    return [f for f in CHAPTER_TESTS if f in files]


def run_chapters(impl: str, out, files=CHAPTER_TESTS, *options: str) -> dict:
    """Run chapter tests against `impl` in a fresh process; return their results, exit code and output."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *files, *options, "--impl", str(impl), *runner.stream_options(out),
         "-q", "-p", "no:cacheprovider", "--timeout", "120"],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )
    run = runner.read(out) if out.exists() else runner.RunResult()
    assert run.tests, f"pytest collected nothing:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return {"results": list(run.results.values()), "returncode": proc.returncode, "output": proc.stdout,
            "chapters_not_importing": {str(k): v for k, v in run.not_importing.items()}}


@pytest.fixture(scope="module")
def on_solutions(request, tmp_path_factory):
    # --strict-exact: the key's exact values must agree with the reference to 1e-12, so a value typed from
    # a rounded printout (off by 1e-9, inside the learners' tolerance) is caught here.
    return run_chapters("solutions", tmp_path_factory.mktemp("solutions") / "results.jsonl",
                        chapter_tests(request.config), "--strict-exact", "--given")


@pytest.fixture(scope="module")
def on_stubs(request, tmp_path_factory):
    # --tb=no, as a chapter run and the grader have it: a stub's "not started" is the same either way, and
    # pytest drawing hundreds of NotImplementedError tracebacks nobody reads was most of this run.
    return run_chapters("exercises", tmp_path_factory.mktemp("stubs") / "results.jsonl",
                        chapter_tests(request.config), "--tb=no", "--given")


@pytest.mark.every_chapter
def test_every_chapter_test_passes_on_the_solutions(on_solutions):
    """solutions/ passes every chapter test, worksheet steps at rtol 1e-12 (the key's values are exact)"""
    results = on_solutions["results"]
    assert results, "no chapter tests ran"
    bad = [f"{r['nodeid']}: {r['status']}: {r['message'][:300]}" for r in results if r["status"] != "passed"]
    assert not bad, "on solutions/:\n" + "\n".join(bad)
    assert on_solutions["returncode"] == 0


@pytest.mark.every_chapter
def test_no_chapter_test_passes_on_the_untouched_stubs(on_stubs):
    """every test, step or check, fails on the stubs, and every one shows as 'not started' (but the given ones)"""
    results = [r for r in on_stubs["results"] if not is_given(r)]
    assert results, "no chapter tests ran"
    passing = [r["nodeid"] for r in results if r["status"] == "passed"]
    assert not passing, "these tests pass on the untouched stubs, so they cannot tell a learner anything:\n" + \
        "\n".join(passing)
    other = [f"{r['nodeid']}: {r['status']}" for r in results if r["status"] != "not started"]
    assert not other, "on the stubs every test should read 'not started':\n" + "\n".join(other)


@pytest.mark.every_chapter
def test_the_given_checks_work_in_the_untouched_stubs(on_stubs):
    """a test marked given passes on the stubs, or waits for a function the learner writes; it never fails there"""
    given = [r for r in on_stubs["results"] if is_given(r)]
    bad = [f"{r['nodeid']}: {r['status']}: {r['message'][:300]}" for r in given
           if r["status"] not in ("passed", "not started")]
    assert not bad, "these given checks do not work in the stubs as given:\n" + "\n".join(bad)
    steps = [r["nodeid"] for r in given if r["step"]]
    assert not steps, f"a worksheet step is the learner's, never given: {steps}"


def test_a_learner_run_leaves_the_given_tests_out(tmp_path):
    """without --given (a learner's run, the grade, the progress) the tests marked given are not run"""
    chapter = answer_key.load(13)
    run = run_chapters("solutions", tmp_path / "results.jsonl", [chapter.test_file])
    assert not [r["nodeid"] for r in run["results"] if is_given(r)]
    assert any(n.startswith(chapter.test_file) for n in GIVEN), "chapter 13 has tests marked given"


@pytest.mark.every_chapter
def test_every_chapter_has_steps_on_both_runs(request, on_solutions, on_stubs):
    """both runs saw every chapter's every step"""
    for chapter in chapters_run(request.config):
        for data in (on_solutions, on_stubs):
            seen = {r["step"] for r in data["results"] if r["chapter"] == chapter.number and r["step"]}
            assert seen == {s.id for s in chapter.steps}, f"chapter {chapter.number}: steps run {sorted(seen)}"


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """``planted(n)``: {index in MUTANTS: the results of chapter n's tests on that mistake}, one process a chapter.

    Each mistake is written into a copy of solutions/ of its own, and scripts/mutation.py's loop runs the
    chapter's tests on each copy in turn, as a fresh pytest process with ``--impl`` that copy would, up to the
    first failure: the check a learner reads first is all the verdict needs. ``planted(n, only=k)`` runs every
    test on mistake ``k`` alone, on past the first failure (``"every"``): what a failing verdict shows, whether a
    later check names the mistake.
    """
    done: dict[tuple, dict[int, dict]] = {}

    def run(number: int, only: int | None = None) -> dict[int, dict]:
        if (number, only) not in done:
            work = tmp_path_factory.mktemp(f"planted{number}")
            chapter, jobs = answer_key.load(number), []
            for k, m in enumerate(MUTANTS):
                text = (ROOT / "solutions" / m.file).read_text(encoding="utf-8")
                if m.chapter == number and text.count(m.old) == 1 and only in (None, k):
                    folder = mutation.copy_with(work / f"m{k}", m.file.removesuffix(".py"), text.replace(m.old, m.new))
                    jobs.append({"name": str(k), "folder": str(folder), "record": True, "every": only is not None})
            results, proc = mutation.run_in_one_process(jobs, [chapter.test_file], work)
            assert len(results) == len(jobs), (f"only {len(results)} of chapter {number}'s {len(jobs)} planted "
                                               f"mistakes were run:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
            done[number, only] = {int(name): r for name, r in results.items()}
        return done[number, only]

    return run


@pytest.mark.parametrize("mutant", [pytest.param(m, marks=pytest.mark.xdist_group(f"planted-chapter{m.chapter}"))
                                    for m in MUTANTS], ids=lambda m: f"ch{m.chapter}-{m.named[:40]}")
def test_a_planted_mistake_fails_and_is_named(mutant, planted):
    """a copy of solutions/ with one classic mistake fails, and the first failing check names it

    From Part II on, that first failing check is a worksheet step (issue 31, item 3).
    """
    text = (ROOT / "solutions" / mutant.file).read_text(encoding="utf-8")
    assert text.count(mutant.old) == 1, f"{mutant.file} must contain the mutated text exactly once: {mutant.old!r}"
    k = MUTANTS.index(mutant)
    data = planted(mutant.chapter)[k]
    assert data["results"], f"no test of chapter {mutant.chapter} ran on the mistake '{mutant.named}'"
    failed = [r for r in data["results"] if r["status"] in ("failed", "error", "timed out")]
    assert failed, f"no test caught the mistake '{mutant.named}'"
    if not names(failed[0], mutant):  # every check run on it, to say whether a later one names it
        failed = [r for r in planted(mutant.chapter, only=k)[k]["results"] if r["status"] in ("failed", "error",
                                                                                                  "timed out")]
        named = [r for r in failed if names(r, mutant)]
        assert named, (f"the mistake '{mutant.named}' was caught but never named; failure messages were:\n"
                       + "\n---\n".join(r["message"][:400] for r in failed))
        assert failed[0] in named, (f"the mistake '{mutant.named}' is named, but not by the first check that "
                                    f"fails ({failed[0]['nodeid']}): the learner reads that one first. Its message:\n"
                                    + failed[0]["message"][:400])
    assert failed[0]["step"] or mutant.chapter <= BOOK or mutant.beyond, (f"the mistake '{mutant.named}' is first caught beyond the worksheet "
                               f"({failed[0]['nodeid']}): a worksheet step should show it (issue 31, item 3), or its "
                               f"entry in tests/mutants/chapter{mutant.chapter:02d}.toml says in 'beyond' why none can")


def names(result: dict, mutant) -> bool:
    """Whether a failing check's message names the planted mistake ("looks like: …" and its name)."""
    message = result["message"].lower()
    return f"looks like: {mutant.named}".lower() in message or ("looks like:" in message
                                                                  and mutant.named.lower() in message)


def test_a_chapter_that_does_not_import_costs_only_its_own_checks(tmp_path):
    """a syntax error in chapter 2 is reported in one line; chapters 1 and 3 are checked as usual"""
    package = tmp_path / "broken"
    shutil.copytree(ROOT / "solutions", package, ignore=shutil.ignore_patterns("__pycache__"))
    target = package / "chapter02_matrices.py"
    target.write_text(target.read_text(encoding="utf-8") + "\ndef oops(:\n", encoding="utf-8")
    files = [answer_key.load(n).test_file for n in (1, 2, 3)]
    data = run_chapters(package, tmp_path / "results.jsonl", files)
    by_chapter = {n: [r for r in data["results"] if r["chapter"] == n] for n in (1, 2, 3)}
    assert all(r["status"] == "passed" for r in by_chapter[1] + by_chapter[3]), "chapters 1 and 3 should pass"
    assert by_chapter[2] and all(r["status"] == "error" for r in by_chapter[2])
    message = by_chapter[2][0]["message"]
    assert "\n" not in message and "SyntaxError" in message and "chapter02_matrices.py" in message, message
    assert "chapter 2 does not import" in data["chapters_not_importing"]["2"]
