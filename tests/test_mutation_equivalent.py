"""tests/mutation_equivalent.toml stays honest: each entry is a mutant mutmut still makes, that still survives.

The file lists surviving mutants of solutions/ that cannot change behaviour (with the reason), which
`nox -s mutation` leaves out of a chapter's score. An entry whose mutant no longer exists (the code changed)
or that a test now kills must be removed, so the list never hides a real gap.
"""

import importlib.util
import shutil
import subprocess
import sys
from functools import cache

import pytest

from kata.judge import answer_key

ROOT = answer_key.ROOT
_spec = importlib.util.spec_from_file_location("kata_mutation", ROOT / "scripts" / "mutation.py")
mutation = importlib.util.module_from_spec(_spec)
sys.modules["kata_mutation"] = mutation  # dataclasses look their module up there
_spec.loader.exec_module(mutation)
ENTRIES = mutation.equivalents()


@cache
def mutants(chapter: int) -> tuple:
    return tuple(mutation.make_mutants(answer_key.load(chapter)))


def entry_id(e: dict) -> str:
    return f"ch{e.get('chapter')}-{e.get('function')}-{e.get('mutated', '')[:30]}"


def find(entry: dict):
    return [m for m in mutants(entry["chapter"]) if (m.function, m.original, m.mutated) ==
            (entry["function"], entry["original"], entry["mutated"])]


def test_every_entry_is_complete():
    """every entry names its chapter, function, original and mutated text, and gives a reason"""
    for e in ENTRIES:
        missing = [k for k in ("chapter", "function", "original", "mutated", "reason") if not e.get(k)]
        assert not missing, f"{entry_id(e)} lacks {missing}"
    keys = [(e["chapter"], e["function"], e["original"], e["mutated"]) for e in ENTRIES]
    assert len(keys) == len(set(keys)), "an entry is listed twice"


@pytest.mark.parametrize("entry", ENTRIES, ids=entry_id)
def test_the_entry_is_still_a_mutant_and_still_survives(entry, tmp_path):
    """mutmut still makes this mutant of solutions/, and the chapter's tests still all pass on it"""
    found = find(entry)
    assert len(found) == 1, (f"no mutant of solutions/ matches {entry_id(entry)} any more "
                             f"(the code changed): remove it from tests/mutation_equivalent.toml")
    mutant = found[0]
    package = tmp_path / "solutions"
    shutil.copytree(ROOT / "solutions", package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / f"{mutant.module}.py").write_text(mutant.source, encoding="utf-8")
    chapter = answer_key.load(entry["chapter"])
    selected = mutation.tests_reaching(chapter, mutant.function)  # the others cannot see the mutant
    assert selected, f"no test of chapter {chapter.number} reaches {mutant.function}: that is a gap, not an equivalent"
    proc = subprocess.run([sys.executable, "-m", "pytest", chapter.test_file, "-k", " or ".join(selected),
                           "--impl", str(package), "-q",
                           "-o", f"cache_dir={tmp_path / 'cache'}", "--timeout", "120"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, (
        f"a test now kills {mutant.name} ({mutant.original} -> {mutant.mutated}): it is not equivalent after "
        f"all, remove it from tests/mutation_equivalent.toml\n{proc.stdout[-2000:]}")
