"""Fresh inputs on the grader's side: answers fitted to the public inputs do not carry over.

`nox -s grade` draws a new seed for every run (recorded in results.json): the tests' module RNGs are
reseeded, and where the reference and the snapshot builder are at hand (the authors' and instructor's
copies), the stored snapshots are drawn afresh too, their expected values computed by the reference.
"""

import json

import numpy as np
import pytest

from kata.judge import snapshots

from ..conftest import copy_solutions, tool

pytestmark = pytest.mark.slow



def test_a_seed_draws_fresh_snapshots_and_none_keeps_the_stored_ones():
    """with a seed every snapshot input differs from the stored one; without, the stored file is read"""
    before = snapshots.FRESH_SEED
    try:
        snapshots.FRESH_SEED = None
        stored = snapshots.load(10)
        snapshots.FRESH_SEED = 5
        fresh = snapshots.load(10)
    finally:
        snapshots.FRESH_SEED = before
    assert sorted(fresh.data) == sorted(stored.data), "the same cases, so the same tests"
    inputs = [k for k in stored.data if k.endswith("/x") and k != "layer_norm_eps/x"]  # that one is a constant row
    assert inputs and all(not np.array_equal(fresh[k], stored[k]) for k in inputs)
    snapshots.FRESH_SEED, before = None, snapshots.FRESH_SEED
    try:
        assert all(np.array_equal(snapshots.load(10)[k], stored[k]) for k in inputs)
    finally:
        snapshots.FRESH_SEED = before


def test_every_grade_draws_a_new_seed_and_records_it(tmp_path):
    """two grades of the same code record two different seeds; --seed N is kept as given"""
    impl = copy_solutions(tmp_path / "exercises")
    seeds = []
    for run in range(2):
        proc = tool("grade", "--impl", str(impl), "--chapters", "1", "--out", str(tmp_path / f"out{run}"))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        seeds.append(json.loads((tmp_path / f"out{run}" / "results.json").read_text())["options"]["seed"])
    assert all(isinstance(s, int) and s > 0 for s in seeds) and seeds[0] != seeds[1], seeds
    proc = tool("grade", "--impl", str(impl), "--chapters", "1", "--seed", "42", "--out", str(tmp_path / "out42"))
    assert json.loads((tmp_path / "out42" / "results.json").read_text())["options"]["seed"] == 42
