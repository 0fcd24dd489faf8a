"""`nox -s grade -- --pristine REF`: tests nobody can edit away.

A temporary git repository stands in for a learner's: the course's files are committed and tagged,
then a test file is tampered with (made to pass on the stubs) and a conftest is added.
"""

from __future__ import annotations

import json

import pytest

from ..conftest import copy_repository, git, tool

TAMPERED = '''"""All green, whatever the code does."""

CHAPTER = 1


def test_everything_is_fine():
    assert True
'''


@pytest.fixture(scope="module")
def learner_repo(tmp_path_factory):
    repo = copy_repository(tmp_path_factory.mktemp("learner") / "repo")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the course, as released")
    git(repo, "tag", "v1")
    (repo / "tests" / "test_chapter01_sequences.py").write_text(TAMPERED, encoding="utf-8")
    git(repo, "commit", "-q", "-am", "make the tests pass")
    (repo / "tests" / "conftest.py").write_text("# added by the learner\n", encoding="utf-8")
    return repo


def grade(repo, *args):
    proc = tool("grade", "--chapters", "1", *args, root=repo)
    assert (repo / "grade" / "results.json").exists(), proc.stdout + proc.stderr
    return proc, json.loads((repo / "grade" / "results.json").read_text(encoding="utf-8"))


def test_the_tampered_test_would_pass_without_pristine(learner_repo):
    """without --pristine the tampered file is what runs (so the next test proves something)"""
    _, results = grade(learner_repo)
    assert results["chapters"][0]["passed"] == results["chapters"][0]["total"] == 1
    assert results["pristine"] is None


def test_pristine_runs_the_original_tests_and_names_every_file_that_differed(learner_repo):
    """--pristine v1 grades with the released tests (the stubs earn nothing) and lists what differed"""
    proc, results = grade(learner_repo, "--pristine", "v1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    chapter = results["chapters"][0]
    assert chapter["points"] == 0 and chapter["total"] > 1
    assert {s["status"] for s in chapter["steps"]} == {"not started"}
    differed = {d["path"]: d["change"] for d in results["pristine"]["differed"]}
    assert differed == {"tests/test_chapter01_sequences.py": "modified", "tests/conftest.py": "added"}
    summary = (learner_repo / "grade" / "summary.md").read_text(encoding="utf-8")
    assert "`tests/test_chapter01_sequences.py` (modified)" in summary
    assert "tests/test_chapter01_sequences.py" in proc.stdout
    assert (learner_repo / "tests" / "test_chapter01_sequences.py").read_text(encoding="utf-8") == TAMPERED


def test_pristine_with_an_unknown_ref_stops_with_a_reason(learner_repo):
    """a ref that does not exist is an error (exit 3) that says how to fetch it, not a silent normal grade"""
    proc = tool("grade", "--chapters", "1", "--pristine", "v9", "--out", "grade-v9", root=learner_repo)
    assert proc.returncode == 3
    assert "no commit or tag 'v9'" in proc.stderr and "git fetch" in proc.stderr
    assert not (learner_repo / "grade-v9").exists()
