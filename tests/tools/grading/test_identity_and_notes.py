"""`nox -s grade-class`: one learner, one repository, by identity; every note bounded and complete.

Spellings of one repository (a trailing `/`, `.git`, `ssh://`, `:443`, `www.`, upper case on GitHub, a
symbolic link) are one repository, and a local path outside the roster's folder is refused unless allowed.
One class run (chapter 1, unsealed, to stay fast) grades bo, whose repository has 5,000 newer branches with
long names, a file whose path is thousands of characters long and a notebook with merge-conflict markers, and
whose e-mail has a Cyrillic `а`: the gradebook, its JSON, the report and the LMS files stay small, every CSV
cell within Excel's 32,767 characters, and each of those things is named in bo's note in a short line.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from kata.grading import classroom, gradebook, lms, roster, submissions

from ..conftest import ROOT, tool
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
    read = roster.load(path)
    sharing = roster.shared(read.learners, lambda repo: submissions.source(repo, tmp_path))
    said = "\n".join(roster.repository_problems(read, lambda repo: submissions.source(repo, tmp_path), sharing,
                                                outside=False))
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


def test_a_roster_path_longer_than_the_system_allows_is_missing_in_one_short_line(tmp_path):
    (tmp_path / "t").mkdir()
    got = submissions.fetch("x" * 5_000, tmp_path / "t", base=tmp_path)
    assert isinstance(got, submissions.Missing) and len(got.reason) < 250, got.reason
    assert got.reason.startswith("unreachable: file name too long: ") and "(5,0" in got.reason, got.reason


# -- notes: complete, and bounded -------------------------------------------------------------------------
def test_a_notebook_with_merge_conflict_markers_is_named_with_why(tmp_path):
    (tmp_path / "exercises").mkdir()
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "chapter01_sequences.ipynb").write_text(CONFLICTED, encoding="utf-8")
    (tmp_path / "notebooks" / "chapter02_matrices.ipynb").write_bytes(b"\xff\xfe{}")
    sub = submissions.Submission(commit="c" * 40, committed_at="", exercises=tmp_path / "exercises",
                                 notebooks=tmp_path / "notebooks")
    impl, answered = classroom._with_notebooks(sub, ROOT, [1, 2], tmp_path / "work")
    assert impl == tmp_path / "exercises" and answered == []
    assert sub.dropped == [
        "notebooks/chapter01_sequences.ipynb: merge-conflict markers (<<<<<<< on line 1): resolve the conflict and "
        "commit the notebook again; its answers are not graded (exercises/ is)",
        "notebooks/chapter02_matrices.ipynb: not UTF-8 text (byte 0); its answers are not graded (exercises/ is)"]


def test_a_cell_and_a_note_are_capped_however_long_their_text():
    learner = roster.Learner("ana", "ana", 2)
    row = gradebook.row(learner, status="missing", repo="ana", commit=None, committed_at=None, note="é" * 50_000,
                        results=None, chapters=[1])
    assert len(row["note"]) <= gradebook.MAX_NOTE and row["note"].endswith("more characters)")
    assert gradebook.cell("😀" * 40_000).encode("utf-16-le").__len__() // 2 <= gradebook.MAX_CELL  # Excel's count
    assert gradebook.cell("x" * 32_767) == "x" * 32_767


@pytest.fixture(scope="module")
def noisy(tmp_path_factory):
    """bo's repository, with everything that once made a note of megabytes, graded with the LMS files."""
    base = tmp_path_factory.mktemp("noisy")
    course = class_repos.course_copy(base / "course")
    repo = base / "class" / "bo"
    repo.mkdir(parents=True)
    git = class_repos.git
    git(repo, "init", "-q", "-b", "main")
    class_repos._exercises(repo, "solutions")
    (repo / "notebooks").mkdir()
    (repo / "notebooks" / "chapter01_sequences.ipynb").write_text(CONFLICTED, encoding="utf-8")
    git(repo, "add", "-A")
    blob = subprocess.run(["git", "-C", str(repo), "hash-object", "-w", "--stdin"], input=b"x = 1\n",
                          capture_output=True, check=True).stdout.decode().strip()
    deep = "exercises/" + "/".join(["d" * 200] * 24) + "/mine.py"  # 4,838 characters: no system writes it
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{deep}")
    git(repo, "commit", "-q", "-m", "all", date=class_repos.BEFORE)
    git(repo, "checkout", "-q", "-b", "work")
    git(repo, "commit", "-q", "--allow-empty", "-m", "newer", date=class_repos.JUST_BEFORE)
    tip = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    names = sorted(f"refs/heads/b{i:05d}-{'n' * 200}" for i in range(BRANCHES))  # written at once, not one by one
    (repo / ".git" / "packed-refs").write_text("# pack-refs with: peeled fully-peeled sorted \n"
                                              + "".join(f"{tip} {name}\n" for name in names), encoding="utf-8")
    (base / "class" / "roster.csv").write_text("student,repo,email,sis_login_id,username\n"
                                               "bo,bo,bо@example.invalid,bo01,bo\n", encoding="utf-8")  # Cyrillic о
    out = base / "out"
    proc = tool("grade-class", str(base / "class" / "roster.csv"), "--out", str(out), "--chapters", "1", "--seed", "1",
                "--jobs", "1", "--lms", "canvas", "--lms", "moodle", "--lms", "blackboard", "--allow-unsealed",
                root=course, env={"KATA_NO_SANDBOX": "1"}, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    book = json.loads((out / "gradebook.json").read_text(encoding="utf-8"))
    return {"out": out, "proc": proc, "row": book["rows"][0], "deep": deep}


def test_thousands_of_branches_are_the_first_ten_and_a_count(noisy):
    row = noisy["row"]
    assert row["status"] == "graded" and row["percent"] == 100.0, row["note"]
    branches = row["other_branches"]
    assert len(branches) == submissions.MAX_LISTED + 1 and branches[-1] == f"and {BRANCHES + 1 - 10:,} more newer branches"
    assert all(len(b) < 250 for b in branches), max(branches, key=len)
    assert f"and {BRANCHES - 9:,} more newer branches" in row["note"]


def test_the_gradebook_its_json_the_report_and_the_lms_files_stay_small(noisy):
    out = noisy["out"]
    sizes = {p.name: p.stat().st_size for p in out.iterdir() if p.is_file()}
    assert sizes["gradebook.json"] < 200_000 and sizes["gradebook.csv"] < 20_000, sizes  # were 35 MB and 2.5 MB
    assert sizes["report.html"] < 400_000 and max(sizes[f"{s}.csv"] for s in lms.SYSTEMS) < 2_000, sizes
    assert len(noisy["row"]["note"]) <= gradebook.MAX_NOTE
    for name in ("gradebook.csv", "canvas.csv", "moodle.csv", "blackboard.csv"):
        for cells in csv.reader(io.StringIO((out / name).read_text(encoding="utf-8-sig"))):  # csv's own limit holds
            assert all(len(c.encode("utf-16-le")) // 2 <= gradebook.MAX_CELL for c in cells)


def test_a_path_too_long_for_the_system_is_one_short_line(noisy):
    said = [d for d in noisy["row"]["not_graded"] if "path too long" in d]
    assert len(said) == 1 and len(said[0]) < 250, said
    assert said[0].startswith("exercises/dddd") and f"({len(noisy['deep']):,} characters)" in said[0]


def test_a_notebook_with_conflict_markers_is_in_the_note(noisy):
    assert "notebooks/chapter01_sequences.ipynb: merge-conflict markers (<<<<<<< on line 1)" in noisy["row"]["note"]
    assert noisy["row"]["notebooks"] == []


def test_the_canvas_file_has_one_column_per_chapter_and_no_total_it_would_count_twice(noisy):
    out = noisy["out"]
    canvas = list(csv.reader(io.StringIO((out / "canvas.csv").read_text(encoding="utf-8-sig"))))
    assert canvas[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"] and len(canvas[0]) == 6
    assert canvas[0][5].startswith("Transformer Katas 1: "), canvas[0]
    assert canvas[1][0] == "Points Possible" and len(canvas[1]) == 6 and canvas[2][3] == "bo01"
    for name in ("moodle.csv", "blackboard.csv"):
        header = next(csv.reader(io.StringIO((out / name).read_text(encoding="utf-8"))))
        assert not any("total" in c.lower() for c in header), header


def test_an_lms_identifier_longer_than_a_cell_is_refused_not_cut():
    """a cut identifier would match nobody in the LMS: the roster has to be corrected"""
    with pytest.raises(ValueError, match=r"ada's SIS Login ID \(roster line 2\) is 40,000 characters long"):
        lms.check_identifiers("canvas", ["sis_login_id"], [roster.Learner("ada", "ada", 2, {"sis_login_id": "x" * 40_000})])


def test_a_look_alike_email_is_warned_about_printed_and_in_the_note(noisy):
    warning = "roster.csv, line 2: the email 'bо@example.invalid' mixes Cyrillic and Latin letters ('о': CYRILLIC " \
              "SMALL LETTER O, U+043E)"
    assert f"grade-class: warning: {warning}" in noisy["proc"].stderr, noisy["proc"].stderr[-2000:]
    assert warning in noisy["row"]["note"]


@pytest.mark.parametrize(("value", "column", "said"), [
    ("Sоphie", "student", "mixes Cyrillic and Latin letters"),
    ("ａｎａ", "sis_login_id", "compatibility characters"),
    ("ana\u200b", "username", "invisible characters ('\\u200b': ZERO WIDTH SPACE"),
])
def test_look_alike_characters_are_warned_about(value, column, said):
    warnings = roster.look_alikes({column: value})
    assert len(warnings) == 1 and said in warnings[0], warnings


def test_a_look_alike_warning_is_one_short_line_however_long_the_value():
    warnings = roster.look_alikes({"email": "а" + "x" * 100_000})
    assert len(warnings) == 1 and len(warnings[0]) < 400, len(warnings[0])


@pytest.mark.parametrize("value", ["Ana Müller", "Анна Smith", "山田 たろう", "김 민준", "Zoë", "Mu\u0308ller", "ana.b@x.edu"])
def test_honest_names_in_one_script_a_word_are_not_warned_about(value):
    assert roster.look_alikes({"student": value, "email": "ana@example.invalid"}) == []
