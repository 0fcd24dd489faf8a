"""Chapter 13's answer key says what its audit says: inputs, exact values, printed strings, every mistake.

``scripts/audit_chapter13.py`` recomputes the worksheet with Python loops and ``math``, independent of
``solutions/``; this test runs it and holds the key to it.
"""

import runpy
import subprocess
import sys

import numpy as np
import pytest

from kata.judge import answer_key

ROOT = answer_key.ROOT
AUDIT = ROOT / "scripts" / "audit_chapter13.py"
AUDITED = runpy.run_path(str(AUDIT))
STEPS, PRINTED = AUDITED["steps"](), AUDITED["printed"]
KEY = answer_key.load(13)


def same(key_value, audit_value, where):
    """The key's input equals the audit's: numbers exactly, dicts key by key."""
    if isinstance(audit_value, dict):
        assert isinstance(key_value, dict) and sorted(key_value) == sorted(audit_value), where
        for k, v in audit_value.items():
            same(key_value[k], v, f"{where}.{k}")
        return
    np.testing.assert_array_equal(np.asarray(key_value, dtype=np.float64), np.asarray(audit_value, dtype=np.float64),
                                  err_msg=where)


def test_the_answer_key_of_chapter_13_agrees_with_its_audit():
    """python scripts/audit_chapter13.py --check finds no difference"""
    proc = subprocess.run([sys.executable, str(AUDIT), "--check"], capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_audit_runs():
    proc = subprocess.run([sys.executable, str(AUDIT)], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "# 13.1" in proc.stdout


def test_the_audit_and_the_key_cover_the_same_steps():
    assert sorted(STEPS) == sorted(s.id for s in KEY.steps)


@pytest.mark.parametrize("step", KEY.steps, ids=lambda s: s.id)
def test_the_key_says_what_the_audit_computes(step):
    audit = STEPS[step.id]
    for name, value in audit["inputs"].items():
        same(step.inputs[name], value, f"{step.id} {name}")
    assert sorted(step.inputs) == sorted(audit["inputs"]), f"{step.id}: the key's inputs differ from the audit's"
    np.testing.assert_allclose(step.exact, np.asarray(audit["exact"]), rtol=1e-12, atol=1e-15, err_msg=step.id)
    assert step.printed == PRINTED(audit["exact"]), f"{step.id}: printed is not the audit's value at four decimals"
    named = {m.name: m.value for m in step.mistakes}
    assert sorted(named) == sorted(audit["mistakes"]), f"{step.id}: the key names other mistakes than the audit"
    for name, value in audit["mistakes"].items():
        np.testing.assert_allclose(named[name], np.asarray(value), rtol=1e-12, atol=1e-15, err_msg=f"{step.id} {name}")
