"""What an instructor's trial of docs/instructors.md found in what the tools say (issue 30).

The release's summary must be true about folders it ships in part (``kata/`` ships, without its snapshot
builder); a refusal of hundreds of files (a grading run's output left in the repository) names a few and
counts the rest; the roster's refusals come in the roster's line order; and ``gradebook.csv`` has a column
for each chapter graded, not for every chapter of the course. All fast: no learner is graded here (the
gradebook's columns are checked on the class run of test_grade_class_trust.py).
"""

from __future__ import annotations

import argparse

import pytest

from kata.grading import classroom, release, roster

from . import class_repos


def test_the_release_summary_says_which_folders_ship_in_part(tmp_path, capsys):
    assert release.main([str(tmp_path / "edition")]) == 0
    said = capsys.readouterr().out
    lines = said.splitlines()
    assert "  solutions/ (the whole folder)" in lines and "  .ci/ (the whole folder)" in lines, said
    kata = next(line for line in lines if line.startswith("  kata/"))
    assert "(the whole folder)" not in kata and kata.endswith(": kata/authoring/snapshots.py"), kata
    assert (tmp_path / "edition" / "kata" / "grading" / "classroom.py").is_file()  # what the line must not deny
    scripts = next(line for line in lines if line.startswith("  scripts/"))
    assert "scripts/audit_" in scripts and "shipped" in scripts, scripts
    github = next(line for line in lines if line.startswith("  .github/"))
    assert "grade.yml" not in github.replace("grade-class.yml", ""), github  # grade.yml ships, rewritten
    assert not any(line.startswith("left out: ") and "kata" in line for line in lines), said


def test_a_refusal_of_many_files_names_ten_and_counts_the_rest_by_folder():
    paths = ["class/roster.csv", *(f"gradebook-2027/students/s{i:03}/results.json" for i in range(194))]
    said = str(release.Refused(paths))
    assert said.startswith("195 file(s) here are not part of a course") and "class/ or gradebook/" in said, said
    listed = said.split("--include PATH:\n", 1)[1].splitlines()
    assert listed[:2] == ["  class/roster.csv", "  gradebook-2027/students/s000/results.json"], listed
    assert len(listed) == release.SHOWN + 1 and listed[-1] == "  and 185 more, in: gradebook-2027/ (185)", listed
    assert str(release.Refused(["notes.txt"])).endswith("--include PATH:\n  notes.txt")


def test_roster_refusals_come_in_the_rosters_line_order(tmp_path):
    (tmp_path / "class" / "ana").mkdir(parents=True)
    class_repos.git(tmp_path / "class" / "ana", "init", "-q")
    (tmp_path / "elsewhere").mkdir()
    class_repos.git(tmp_path / "elsewhere", "init", "-q")
    path = tmp_path / "class" / "roster.csv"
    path.write_text("student,repo\nana,ana\nbo,../elsewhere\ncy,ana/.git\ndee,../elsewhere/\n", encoding="utf-8")
    args = argparse.Namespace(git_host="github.com", allow_outside_paths=False, allow_shared=False)
    with pytest.raises(roster.RosterError) as caught:
        classroom.checked_repositories(roster.load(path), args)
    lines = [int(line.split(", line ")[1].split(":")[0]) for line in str(caught.value).splitlines()]
    assert lines == sorted(lines) and set(lines) == {3, 4, 5}, str(caught.value)
    assert str(caught.value).count("line 5:") == 2  # outside the folder, and bo's repository: both said, together
    args.allow_outside_paths = True  # one check off: the other's lines alone, still in order
    with pytest.raises(roster.RosterError, match=r"(?s)^roster\.csv, line 4: 'cy' has the repository of 'ana'"):
        classroom.checked_repositories(roster.load(path), args)

