"""Fairness at the edges: a check on a boundary accepts every right way of computing what is on it.

Chapter 16's ``sample_index`` draws the first token whose running sum passes u, and its checks put u exactly
on the boundaries. A running sum added another way — ``math.fsum`` of each prefix, NumPy's pairwise ``np.sum``,
exact fractions — is right too, so the boundaries are probabilities in whole 1024ths (the worksheet's are
quarters), whose running sums are exact whichever way they are added. Each way below is written into a copy of
``solutions/`` in place of the reference's ``np.cumsum`` and every check of the chapter must pass on it, run as
a learner's code is run (``scripts/mutation.py``'s loop, one pytest process for all of them).
"""

from __future__ import annotations

import pytest

from kata.judge import answer_key
from scripts import mutation

ROOT = answer_key.ROOT
CUMSUM = '''    c = np.cumsum(q)  # (vocab,)
    i = int(np.searchsorted(c, u, side="right"))  # the first i with u < c[i]
'''
RUNNING_SUMS = {  # name -> the lines that replace CUMSUM: the first i with u < the running sum up to i
    "math.fsum of each prefix": '''    c = [math.fsum(q[:j + 1]) for j in range(len(q))]
    i = next((j for j, total in enumerate(c) if u < total), len(q))
''',
    "np.sum of each prefix": '''    c = [float(np.sum(q[:j + 1])) for j in range(len(q))]
    i = next((j for j, total in enumerate(c) if u < total), len(q))
''',
    "exact fractions": '''    from fractions import Fraction

    running, i = Fraction(0), len(q)
    for j, pj in enumerate(q):
        running += Fraction(float(pj))
        if Fraction(float(u)) < running:
            i = j
            break
''',
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{name: the results of every chapter 16 test on solutions/ with that running sum}, in one pytest process."""
    chapter = answer_key.load(16)
    work = tmp_path_factory.mktemp("fair-edges")
    text = (ROOT / "solutions" / f"{chapter.module}.py").read_text(encoding="utf-8")
    assert text.count(CUMSUM) == 1, "solutions/ no longer computes sample_index's running sums as this file expects"
    jobs = [{"name": name, "every": True,
             "folder": str(mutation.copy_with(work / f"way{k}", chapter.module, text.replace(CUMSUM, lines)))}
            for k, (name, lines) in enumerate(RUNNING_SUMS.items())]
    results, proc = mutation.run_in_one_process(jobs, [chapter.test_file], work)
    assert len(results) == len(jobs), f"only {len(results)} of {len(jobs)} ran:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
    return results


@pytest.mark.parametrize("chapter", [16])
@pytest.mark.parametrize("way", list(RUNNING_SUMS))
def test_a_running_sum_added_another_way_passes_every_check(runs, way, chapter):
    """sample_index with math.fsum, np.sum or exact fractions for its running sums passes every chapter 16 check"""
    results = runs[way]["results"]
    assert results, f"no chapter {chapter} test ran with {way}"
    bad = [f"{r['nodeid']}: {r['status']}: {r['message'][:400]}" for r in results if r["status"] != "passed"]
    assert not bad, f"sample_index with {way} is right, yet these checks refuse it:\n" + "\n".join(bad)
