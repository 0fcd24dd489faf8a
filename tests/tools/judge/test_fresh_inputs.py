"""Fresh inputs on the grader's side: answers fitted to the public inputs do not carry over.

`nox -s grade` draws a new seed for every run (recorded in results.json): the tests' module RNGs are
reseeded, and where the reference and the snapshot builder are at hand (the authors' and instructor's
copies), the stored snapshots are drawn afresh too, their expected values computed by the reference.
"""

import json
from dataclasses import replace

import numpy as np
import pytest

from kata.judge import answer_key, plugin, snapshots
from kata.judge.checks import RunSettings, expect

from ..conftest import copy_solutions, tool

pytestmark = pytest.mark.slow


def test_a_seed_draws_fresh_snapshots_and_none_keeps_the_stored_ones():
    """with a seed every snapshot input differs from the stored one; without, the stored file is read"""
    stored = snapshots.load(10)
    fresh = snapshots.load(10, seed=5)
    assert sorted(fresh.data) == sorted(stored.data), "the same cases, so the same tests"
    inputs = [k for k in stored.data if k.endswith("/x") and k != "layer_norm_eps/x"]  # that one is a constant row
    assert inputs and all(not np.array_equal(fresh[k], stored[k]) for k in inputs)
    again = snapshots.load(10)
    assert all(np.array_equal(again[k], stored[k]) for k in inputs), "the seed stayed with its load"


class _Options:
    """Stands in for a pytest config: its options and its stash (all ``plugin.settings`` reads)."""

    def __init__(self, **options) -> None:
        self.options, self.stash = options, pytest.Stash()

    def getoption(self, name, default=None):  # noqa: ANN001, ANN201 - pytest's signature
        return self.options.get(name, default)


def test_two_runs_settings_in_one_process_do_not_leak_into_each_other():
    """a strict, seeded, recording run's settings change nothing of a plain run's in the same process"""
    strict = plugin.settings(_Options(strict_exact=True, kata_seed=5, kata_record_values=True))
    plain = plugin.settings(_Options(strict_exact=False, kata_seed=None))
    assert plain == RunSettings() and plain.recorded is None
    assert strict == RunSettings(strict_exact=True, fresh_seed=5) and strict.recorded == {}
    step = answer_key.load(4).step("4.3")  # no tolerance of its own: rtol 1e-6, or 1e-12 when strict
    near = step.exact * (1 + 1e-9)
    for _ in range(2):  # in turn, twice: neither run's settings outlive its own call
        expect(replace(step, settings=plain), near)
        with pytest.raises(pytest.fail.Exception, match="tolerance rtol 1e-12"):
            expect(replace(step, settings=strict), near)
    assert list(strict.recorded) == ["4.3"], "the strict run recorded its value, in its own settings only"
    seen, stored = plugin.snapshot(10), snapshots.load(10)
    assert seen.data.keys() == stored.data.keys()
    assert all(np.array_equal(seen[k], stored[k]) for k in stored.data), \
        "outside a run's collection, a test module's snapshot is the stored one"


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
