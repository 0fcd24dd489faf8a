"""Chapter 14's answer key is what its audit computes: scripts/audit_chapter14.py, run as a script.

The audit recounts the whole text every round with plain loops over tuples of bytes, apart from solutions/;
every `exact`, `printed` and mistake value in reference/chapter14_bpe.toml must equal it.
"""

import subprocess
import sys

from kata.judge import answer_key

ROOT = answer_key.ROOT


def test_the_answer_key_of_chapter_14_agrees_with_its_audit():
    """python scripts/audit_chapter14.py --check finds no difference"""
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "audit_chapter14.py"), "--check"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_audit_prints_the_keys_printed_values():
    """the worksheet's printed ids, pairs, tokens and text are the audit's printing of its own exact values"""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import audit_chapter14 as audit
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    key = answer_key.load(14)
    for sid, step in audit.audit().items():
        assert key.step(sid).printed == audit.printed(sid, step["exact"]), sid
