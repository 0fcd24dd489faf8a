"""Chapter 11's answer key holds what the audit computes: every exact value, every printed string, every mistake.

``scripts/audit_chapter11.py`` recomputes the worksheet in plain NumPy (loops over positions, explicit column
slices), independent of ``solutions/``; the key must agree with it, so no number in the key is typed by hand.
"""

import importlib.util

import numpy as np
import pytest

from kata.judge import answer_key

ROOT = answer_key.ROOT
KEY = answer_key.load(11)
MISTAKE_NAMES = {  # the audit's short name for each of the key's mistakes, step by step
    "11.1": ["reshape", "interleaved"],
    "11.2": ["d_model", "one_mask", "no_mask"],
    "11.3": ["d_model", "one_mask", "no_mask"],
    "11.4": ["reshape"],
    "11.5": ["no_WO", "d_model", "one_mask", "no_mask", "sequence", "split_reshape", "merge_reshape"],
    "11.6": ["transposed"],
    "11.7": ["no_WO_T", "d_model"],
    "11.8": ["value_only", "no_WO_T", "back_d_model"],
}


def _audit_module():
    spec = importlib.util.spec_from_file_location("audit_chapter11", ROOT / "scripts" / "audit_chapter11.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


AUDIT = _audit_module()
VALUES = AUDIT.audit()


@pytest.mark.parametrize("step", KEY.steps, ids=lambda s: s.id)
def test_exact_and_printed_values_are_the_audits(step):
    """exact equals the audit to 1e-12; printed is the audit's value rounded to four decimals"""
    want = VALUES[step.id]["exact"]
    assert np.allclose(step.exact, want, rtol=1e-12, atol=1e-15), f"{step.id}: exact {step.exact} vs audit {want}"
    assert step.printed == AUDIT.printed(want), f"{step.id}: printed {step.printed} vs audit {AUDIT.printed(want)}"


@pytest.mark.parametrize("step", KEY.steps, ids=lambda s: s.id)
def test_every_named_mistake_is_the_audits(step):
    """each mistake's value equals the audit's, in the key's order"""
    names = MISTAKE_NAMES[step.id]
    assert len(step.mistakes) == len(names), f"{step.id}: {len(step.mistakes)} mistakes, the audit names {names}"
    for mistake, name in zip(step.mistakes, names, strict=True):
        want = VALUES[step.id]["mistakes"][name]
        assert np.allclose(mistake.value, want, rtol=1e-12, atol=1e-15), f"{step.id}: '{mistake.name}' vs audit {name}"


def test_the_worksheet_inputs_are_the_audits():
    """the key's inputs are the audit's worksheet: x, the weights, d_out and each step's intermediate inputs"""
    given = KEY.step("11.5")
    for name in ("x", "WQ", "WK", "WV", "WO"):
        assert np.array_equal(given.input(name), getattr(AUDIT, name.upper() if name == "x" else name)), name
    for sid in ("11.6", "11.7", "11.8"):
        assert np.array_equal(KEY.step(sid).input("d_out"), AUDIT.D_OUT), sid
    assert np.array_equal(KEY.step("11.1").input("X"), VALUES["11.1"]["X"])
    for sid in ("11.2", "11.3"):
        for name in ("Qh", "Kh", "Vh"):
            assert np.array_equal(KEY.step(sid).input(name), VALUES["11.2"][name]), (sid, name)
    assert np.array_equal(KEY.step("11.4").input("H"), VALUES["11.4"]["H"])


def test_the_audit_runs_as_a_script(capsys):
    """python scripts/audit_chapter11.py prints every step"""
    assert AUDIT.main() == 0
    out = capsys.readouterr().out
    assert all(f"[{s.id}]" in out for s in KEY.steps)
