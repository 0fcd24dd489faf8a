"""Chapter 16's answer key is what its audit computes: scripts/audit_chapter16.py, run as a script.

The audit works from the formulas with Python's ``math`` (sampling) and small NumPy products (the model), apart from
solutions/; the KV-cache steps come from a full forward with no cache at all. Every `exact` value and every mistake's
value in reference/chapter16_sampling.toml must agree with it to 1e-12.
"""

import subprocess
import sys

from kata.judge import answer_key

ROOT = answer_key.ROOT


def test_the_answer_key_of_chapter_16_agrees_with_its_audit():
    """python scripts/audit_chapter16.py --check finds no difference"""
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "audit_chapter16.py"), "--check"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_audit_prints_the_keys_printed_numbers():
    """the worksheet's printed digits are the audit's rounding of its own exact values"""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import audit_chapter16 as audit
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    key = answer_key.load(16)
    for sid, step in audit.audit().items():
        assert key.step(sid).printed == audit.printed(step["exact"]), sid
