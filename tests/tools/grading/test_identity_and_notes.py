"""`nox -s grade-class`: one learner, one repository, by identity; every note bounded and complete.

Spellings of one repository (a trailing `/`, `.git`, `ssh://`, `:443`, `www.`, upper case on GitHub, a
symbolic link) are one repository, and a local path outside the roster's folder is refused unless allowed.
One class run (chapter 1, unsealed, to stay fast) grades bo, whose repository has 5,000 newer branches with
long names, a file whose path is thousands of characters long and a notebook with merge-conflict markers, and
whose e-mail has a Cyrillic `а`: the gradebook, its JSON, the report and the LMS files stay small, every CSV
cell within Excel's 32,767 characters, and each of those things is named in bo's note in a short line.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kata.grading import roster, submissions

from ..conftest import tool
from . import class_repos

pytestmark = pytest.mark.slow

BRANCHES = 5_000
CONFLICTED = """<<<<<<< HEAD
{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
=======
{"cells": [{"cell_type": "code", "source": "x = 1", "metadata": {}, "outputs": []}],
 "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
>>>>>>> work
"""


# -- one repository, by identity ---------------------------------------------------------------------------
SPELLINGS = ["https://github.com/ana/katas", "https://github.com/ana/katas.git", "ssh://git@github.com/ana/katas.git",
             "https://github.com:443/ana/katas", "https://www.github.com/Ana/Katas", "git@github.com:ana/katas.git",
             "https://x-access-token:secret@github.com/ana/katas/", "ana/katas", "git://GitHub.com/ana/katas"]


def test_every_spelling_of_one_github_repository_is_one():
    learners = [roster.Learner(f"s{i}", repo, i + 2) for i, repo in enumerate(SPELLINGS)]
    found = roster.shared(learners, lambda repo: submissions.source(repo, Path("/nonexistent")))
    assert set(found) == {x.student for x in learners}, found
    assert len(found["s0"]) == len(SPELLINGS) - 1


def test_a_port_that_is_not_the_default_and_the_path_case_elsewhere_tell_repositories_apart():
    one = submissions.identity("https://git.example.edu/Ana/katas")
    assert one == submissions.identity("ssh://git@git.example.edu:22/Ana/katas.git")
    assert one != submissions.identity("https://git.example.edu:8443/Ana/katas")
    assert one != submissions.identity("https://git.example.edu/ana/katas")  # a server of its own: case counts
    assert submissions.identity("https://git.example.edu/Ana/katas", "https://git.example.edu") == \
        submissions.identity("https://git.example.edu/ana/katas", "https://git.example.edu")  # --git-host: GitHub


def test_every_spelling_of_one_local_repository_is_one(tmp_path):
    ana = tmp_path / "learners" / "ana"
    ana.mkdir(parents=True)
    class_repos.git(ana, "init", "-q")
    os.symlink(ana, tmp_path / "learners" / "link")
    bare = tmp_path / "learners" / "bo.git"
    bare.mkdir()
    spellings = ["ana", "ana/", "ana/.git", "ana/.git/", "./ana", "link", f"{ana}/", f"file://{ana}/.git"]
    learners = [roster.Learner(f"s{i}", repo, i + 2) for i, repo in enumerate(spellings)]
    learners += [roster.Learner("bo", "bo", 20), roster.Learner("bo2", "bo.git/", 21)]
    found = roster.shared(learners, lambda repo: submissions.source(repo, tmp_path / "learners"))
    assert sorted(x.student for x in found["s0"]) == sorted(f"s{i}" for i in range(1, len(spellings)))
    assert [x.student for x in found["bo"]] == ["bo2"]  # git finds bo.git for "bo", as it clones


def test_a_repository_written_two_ways_is_refused_naming_both_spellings(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text("student,repo\nana,https://github.com/ana/katas\nbo,https://tok@www.github.com:443/Ana/Katas/\n",
                    encoding="utf-8")
    said = "\n".join(roster.shared_problems(roster.load(path), roster.shared(
        roster.load(path).learners, lambda repo: submissions.source(repo, tmp_path))))
    assert "line 3: 'bo' has the repository of 'ana' (line 2)" in said, said
    assert "https://www.github.com:443/Ana/Katas/ (there written https://github.com/ana/katas)" in said, said
    assert "tok" not in said  # a credential in a URL is never shown


def test_a_local_path_outside_the_rosters_folder_is_refused_naming_it(tmp_path):
    course = tmp_path / "course"  # the instructor's own copy, answer key and all
    course.mkdir()
    class_repos.git(course, "init", "-q")
    (tmp_path / "class").mkdir()
    os.symlink(course, tmp_path / "class" / "innocent")
    (tmp_path / "class" / "roster.csv").write_text(
        f"student,repo\nana,../course\nbo,{course}/.git/\ncy,innocent\ndee,inside\n", encoding="utf-8")
    proc = tool("grade-class", str(tmp_path / "class" / "roster.csv"), "--out", str(tmp_path / "out"), timeout=120)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    for line, student in ((2, "ana"), (3, "bo"), (4, "cy")):
        assert f"roster.csv, line {line}: '{student}': the repository" in proc.stderr, proc.stderr
    assert f"is {course}, outside the roster's folder {tmp_path / 'class'}" in proc.stderr
    assert "--allow-outside-paths" in proc.stderr and "line 5" not in proc.stderr
    assert not (tmp_path / "out").exists()


# -- notes: complete, and bounded -------------------------------------------------------------------------


