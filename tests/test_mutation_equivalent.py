"""The equivalent mutants of tests/mutants/chapterNN.toml stay honest: each entry is a mutant mutmut still makes, that still survives.

Each chapter's file lists surviving mutants of solutions/ that cannot change behaviour (with the reason), which
`nox -s mutation` leaves out of a chapter's score. An entry whose mutant no longer exists (the code changed)
or that a test now kills must be removed, so the list never hides a real gap.
"""

import importlib.util
import sys
from functools import cache

import pytest

from kata.judge import answer_key
from tests.mutants import equivalents

ROOT = answer_key.ROOT
_spec = importlib.util.spec_from_file_location("kata_mutation", ROOT / "scripts" / "mutation.py")
mutation = importlib.util.module_from_spec(_spec)
sys.modules["kata_mutation"] = mutation  # dataclasses look their module up there
_spec.loader.exec_module(mutation)
ENTRIES = equivalents()
pytestmark = pytest.mark.spread  # each chapter's entries are checked in a process of their own (`nox -s proofs`)


@cache
def mutants(chapter: int) -> tuple:
    return tuple(mutation.make_mutants(answer_key.load(chapter), {e["function"] for e in ENTRIES if e["chapter"] == chapter}))


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


@pytest.mark.proof
@pytest.mark.parametrize("chapter", sorted({e["chapter"] for e in ENTRIES}))
def test_every_entry_is_still_a_mutant_and_still_survives(chapter, tmp_path):
    """mutmut still makes each listed mutant of solutions/, and the chapter's tests that reach it all pass on it"""
    entries = [e for e in ENTRIES if e["chapter"] == chapter]
    gone = [entry_id(e) for e in entries if len(find(e)) != 1]
    assert not gone, ("no mutant of solutions/ matches these entries any more (the code changed): remove them from "
                      f"tests/mutants/chapter{chapter:02d}.toml:\n" + "\n".join(gone))
    number = answer_key.load(chapter)
    jobs = []
    for k, e in enumerate(entries):  # one pytest process checks them all, as `nox -s mutation` does
        mutant = find(e)[0]
        folder = mutation.copy_with(tmp_path / f"m{k}", mutant.module, mutant.source)
        tests = mutation.tests_reaching(number, mutant.function)
        assert tests, f"no test of chapter {chapter} reaches {mutant.function}: {entry_id(e)} is a gap, not an equivalent"
        jobs.append({"name": mutant.name, "folder": str(folder), "tests": tests})
    results, proc = mutation.run_in_one_process(jobs, [number.test_file], tmp_path)
    assert results, f"the mutants were not run:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    killed = [f"{name} ({r['killed_by']})" for name, r in results.items() if r["status"] != "survived"]
    assert len(results) == len(jobs), f"only {len(results)} of {len(jobs)} mutants were run"
    assert not killed, ("a test now kills these, so they are not equivalent: remove them from "
                        f"tests/mutants/chapter{chapter:02d}.toml\n" + "\n".join(killed))
