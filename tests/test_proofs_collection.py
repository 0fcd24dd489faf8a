"""`nox -s proofs` (``-m proof``) collects only the test files that mark a test proof, and misses none.

The root conftest's ``pytest_ignore_collect`` passes over a file whose text never says ``mark.proof`` under
``-m proof``; its ``pytest_collection_modifyitems`` refuses, on every whole collection (selfcheck's), a test
marked proof in a file that does not say so (marked through ``getattr``, say), which ``-m proof`` would miss.
"""

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("kata_root_conftest", ROOT / "conftest.py")
root_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(root_conftest)


def _config(markexpr: str):
    return SimpleNamespace(option=SimpleNamespace(markexpr=markexpr), getoption=lambda name: [],
                           workerinput={})


def test_under_m_proof_only_files_that_mark_a_proof_are_collected(tmp_path):
    """a test file without mark.proof is passed over under -m proof, and only then; other files are pytest's"""
    plain, proof = tmp_path / "test_plain.py", tmp_path / "test_heavy.py"
    plain.write_text("def test_a():\n    pass\n", encoding="utf-8")
    proof.write_text("import pytest\n\n\n@pytest.mark.proof\ndef test_b():\n    pass\n", encoding="utf-8")
    assert root_conftest.pytest_ignore_collect(plain, _config("proof")) is True
    assert root_conftest.pytest_ignore_collect(proof, _config("proof")) is None
    for expr in ("", "not proof", "slow"):
        assert root_conftest.pytest_ignore_collect(plain, _config(expr)) is None
    assert root_conftest.pytest_ignore_collect(tmp_path / "conftest.py", _config("proof")) is None


def test_a_proof_marked_where_m_proof_cannot_see_it_is_refused(tmp_path):
    """a test marked proof through getattr, in a file that never says mark.proof: the collection stops, naming it"""
    hidden = tmp_path / "test_hidden.py"
    hidden.write_text("import pytest\n\nproof = getattr(pytest.mark, 'pro' + 'of')\n", encoding="utf-8")
    item = SimpleNamespace(path=hidden, get_closest_marker=lambda name: object() if name == "proof" else None)
    with pytest.raises(pytest.UsageError, match="test_hidden.py"):
        root_conftest.pytest_collection_modifyitems(None, _config("not proof"), [item])
    seen = SimpleNamespace(path=Path(__file__), get_closest_marker=lambda name: None)
    root_conftest.pytest_collection_modifyitems(None, _config("not proof"), [seen])  # nothing marked: no refusal
