"""The suite proves itself.

Every test fails on the untouched stubs, passes on solutions/, and catches and names the planted
mistakes in tests/mutants.py.

Each run is a separate pytest process with `--impl`, reading the machine-readable results the kata
plugin writes with `--kata-results`.
"""

import json
import shutil
import subprocess
import sys

import pytest

from kata.judge import answer_key
from tests.mutants import MUTANTS

ROOT = answer_key.ROOT
CHAPTER_TESTS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_chapter*.py"))


def run_chapters(impl: str, out, files=CHAPTER_TESTS, *options: str) -> dict:
    """Run chapter tests against `impl` in a fresh process; return the plugin's JSON results."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *files, *options, "--impl", str(impl), "--kata-results", str(out),
         "-q", "-p", "no:cacheprovider", "--timeout", "120"],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )
    assert out.exists(), f"pytest wrote no results:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    data = json.loads(out.read_text(encoding="utf-8"))
    data["returncode"] = proc.returncode
    data["output"] = proc.stdout
    return data


@pytest.fixture(scope="module")
def on_solutions(tmp_path_factory):
    # --strict-exact: the key's exact values must agree with the reference to 1e-12, so a value typed from
    # a rounded printout (off by 1e-9, inside the learners' tolerance) is caught here.
    return run_chapters("solutions", tmp_path_factory.mktemp("solutions") / "results.json", CHAPTER_TESTS,
                        "--strict-exact")


@pytest.fixture(scope="module")
def on_stubs(tmp_path_factory):
    return run_chapters("exercises", tmp_path_factory.mktemp("stubs") / "results.json")


def test_every_chapter_test_passes_on_the_solutions(on_solutions):
    """solutions/ passes every chapter test, worksheet steps at rtol 1e-12 (the key's values are exact)"""
    results = on_solutions["results"]
    assert results, "no chapter tests ran"
    bad = [f"{r['nodeid']}: {r['status']}: {r['message'][:300]}" for r in results if r["status"] != "passed"]
    assert not bad, "on solutions/:\n" + "\n".join(bad)
    assert on_solutions["returncode"] == 0


def test_no_chapter_test_passes_on_the_untouched_stubs(on_stubs):
    """every test, step or check, fails on the stubs, and every one shows as 'not started'"""
    results = on_stubs["results"]
    assert results, "no chapter tests ran"
    passing = [r["nodeid"] for r in results if r["status"] == "passed"]
    assert not passing, "these tests pass on the untouched stubs, so they cannot tell a learner anything:\n" + \
        "\n".join(passing)
    other = [f"{r['nodeid']}: {r['status']}" for r in results if r["status"] != "not started"]
    assert not other, "on the stubs every test should read 'not started':\n" + "\n".join(other)


def test_every_chapter_has_steps_on_both_runs(on_solutions, on_stubs):
    """both runs saw every chapter's every step"""
    for chapter in answer_key.chapters():
        for data in (on_solutions, on_stubs):
            seen = {r["step"] for r in data["results"] if r["chapter"] == chapter.number and r["step"]}
            assert seen == {s.id for s in chapter.steps}, f"chapter {chapter.number}: steps run {sorted(seen)}"


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.id)
def test_a_planted_mistake_fails_and_is_named(mutant, tmp_path):
    """a copy of solutions/ with one classic mistake fails a test and the failure names it"""
    package = tmp_path / "mutant"
    shutil.copytree(ROOT / "solutions", package, ignore=shutil.ignore_patterns("__pycache__"))
    target = package / mutant.file
    text = target.read_text(encoding="utf-8")
    assert text.count(mutant.old) == 1, f"{mutant.file} must contain the mutated text exactly once: {mutant.old!r}"
    target.write_text(text.replace(mutant.old, mutant.new), encoding="utf-8")
    chapter = answer_key.load(mutant.chapter)
    data = run_chapters(package, tmp_path / "results.json", [chapter.test_file])
    failed = [r for r in data["results"] if r["status"] in ("failed", "error", "timed out")]
    assert failed, f"no test caught the mistake '{mutant.named}'"
    named = [r for r in failed if f"looks like: {mutant.named}".lower() in r["message"].lower()
             or ("looks like:" in r["message"].lower() and mutant.named.lower() in r["message"].lower())]
    assert named, (f"the mistake '{mutant.named}' was caught but never named; failure messages were:\n"
                   + "\n---\n".join(r["message"][:400] for r in failed))


def test_a_chapter_that_does_not_import_costs_only_its_own_checks(tmp_path):
    """a syntax error in chapter 2 is reported in one line; chapters 1 and 3 are checked as usual"""
    package = tmp_path / "broken"
    shutil.copytree(ROOT / "solutions", package, ignore=shutil.ignore_patterns("__pycache__"))
    target = package / "chapter02_matrices.py"
    target.write_text(target.read_text(encoding="utf-8") + "\ndef oops(:\n", encoding="utf-8")
    files = [answer_key.load(n).test_file for n in (1, 2, 3)]
    data = run_chapters(package, tmp_path / "results.json", files)
    by_chapter = {n: [r for r in data["results"] if r["chapter"] == n] for n in (1, 2, 3)}
    assert all(r["status"] == "passed" for r in by_chapter[1] + by_chapter[3]), "chapters 1 and 3 should pass"
    assert by_chapter[2] and all(r["status"] == "error" for r in by_chapter[2])
    message = by_chapter[2][0]["message"]
    assert "\n" not in message and "SyntaxError" in message and "chapter02_matrices.py" in message, message
    assert "chapter 2 does not import" in data["chapters_not_importing"]["2"]
