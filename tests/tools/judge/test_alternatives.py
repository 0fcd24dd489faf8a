"""Fairness: the checks accept right code written differently, not only the reference's way.

``tests/tools/alternatives/`` holds whole implementations written from the stubs' docstrings alone, in
other styles (explicit loops and ``math``; ``einsum``, log-sum-exp, inputs kept in their dtype). Each
chapter they hold is checked as a learner's code is (``--impl FOLDER``), and every check must pass.
Mutation testing proves the checks catch wrong code; this proves they accept right code. Cost: one pytest
run per alternative over all ten chapters: about 4 s each, 8 s for the file, on two cores.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kata.grading import release
from kata.judge import answer_key, runner

HERE = Path(__file__).resolve().parents[1] / "alternatives"
ROOT = answer_key.ROOT
ALTERNATIVES = sorted(p for p in HERE.iterdir() if (p / "__init__.py").is_file())
CHAPTERS = answer_key.chapters()


def held(folder: Path) -> list:
    """The chapters an alternative holds."""
    return [c for c in CHAPTERS if (folder / f"{c.module}.py").is_file()]


def test_every_chapter_is_written_at_least_twice_in_other_styles():
    """every chapter has at least two alternative implementations, and each alternative holds every chapter"""
    assert len(ALTERNATIVES) >= 2, f"{HERE} holds {len(ALTERNATIVES)} implementations; the course needs two styles"
    missing = [(folder / f"{c.module}.py").relative_to(ROOT).as_posix() for folder in ALTERNATIVES for c in CHAPTERS
               if c not in held(folder)]
    assert not missing, "chapters not written in every style (CONTRIBUTING: 'right code written differently'):\n  " + \
        "\n  ".join(missing)


def test_the_student_edition_leaves_the_alternatives_out():
    """kata/grading/release.py keeps only the chapter tests of tests/: no alternative ships to learners"""
    files = [p.relative_to(ROOT).as_posix() for p in HERE.rglob("*") if p.is_file()]
    assert files and not [f for f in files if release.belongs(f)]


@pytest.mark.every_chapter
@pytest.mark.parametrize("folder", ALTERNATIVES, ids=lambda p: p.name)
def test_every_check_passes_on_an_alternative_implementation(folder, tmp_path, request):
    """every check of every chapter the alternative holds passes on it, run as a learner's code is run"""
    wanted = set(request.config.getoption("chapter", None) or ())  # --chapter N: that chapter's share only
    files = [c.test_file for c in held(folder) if not wanted or c.number in wanted]
    out = tmp_path / "results.jsonl"
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env["KATA_WARM"] = "0"
    proc = subprocess.run([sys.executable, "-m", "pytest", *files, "--impl", str(folder), "--given", *runner.stream_options(out),
                           "-p", "no:cacheprovider", "-q", "--steps", "-o", "addopts="],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert out.is_file(), proc.stdout[-3000:] + proc.stderr[-3000:]
    results = list(runner.read(out).results.values())
    failed = [r for r in results if r["status"] != "passed"]
    assert results and not failed, f"{folder.name}: {len(failed)} checks fail:\n" + proc.stdout[-6000:]
