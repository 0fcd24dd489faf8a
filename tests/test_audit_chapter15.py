"""Chapter 15's answer key is what its audit computes: scripts/audit_chapter15.py, run as a script.

The audit works from the formulas with Python's ``math`` and ``fractions`` and plain loops, apart from solutions/ and NumPy;
every `exact` value and every mistake's value in reference/chapter15_adamw.toml must agree with it to 1e-12.
"""

import subprocess
import sys

from kata.judge import answer_key

ROOT = answer_key.ROOT


def test_the_answer_key_of_chapter_15_agrees_with_its_audit():
    """python scripts/audit_chapter15.py --check finds no difference"""
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "audit_chapter15.py"), "--check"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_audit_prints_the_keys_printed_numbers():
    """the worksheet's printed digits are the audit's rounding of its own exact values"""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import audit_chapter15 as audit
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    key = answer_key.load(15)
    for sid, step in audit.audit().items():
        assert key.step(sid).printed == audit.printed(step["exact"]), sid
