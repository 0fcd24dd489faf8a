"""`nox -s grade-class` gives no silent zero: what it did not grade, and why, is in the row.

A tiny class (chapters 1 and 2 only, to stay fast): ada (everything right), nia (chapters 1 and 2 answered
in her notebooks, exercises/ untouched), lou (chapter 2 a symbolic link, a newer commit on another branch
and a commit after the deadline made in another time zone). Each learner's note, gradebook columns and the
report say what happened; the roster refuses a repository claimed twice and names equal but for case and
spaces; every results.json says what guarded the learner's code.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kata import project
from kata.grading import gradebook, roster, schema, submissions

from ..conftest import ROOT, tool
from . import class_repos

pytestmark = pytest.mark.slow


CHAPTERS = "1,2"
COMMON = ("--chapters", CHAPTERS, "--deadline", class_repos.DEADLINE, "--seed", "7", "--jobs", "3",
          "--lms", "canvas", "--lms", "moodle", "--lms", "blackboard")
LATE_ELSEWHERE = "2027-03-01T23:30:00-05:00"  # 2027-03-02T05:30:00+01:00: after the deadline, though it reads "23:30"


def notebook(cells: list[str]) -> str:
    """A saved notebook (nbformat 4) with these code cells."""
    return json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                                  "source": c} for c in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def renamed(code: str) -> str:
    """The same program with its locals renamed (what a copier does first)."""
    for old, new in (("ids", "token_list"), ("text", "sentence"), ("A", "left"), ("B", "right"), ("dC", "grad_out"),
                     ("vocab", "words"), ("eps", "step")):
        code = re.sub(rf"\b{old}\b", new, code)
    return code


def build(folder: Path) -> dict[str, dict]:
    made = class_repos.build(folder, ("ada",))
    git = class_repos.git
    # nia: exercises/ as handed out; chapters 1 and 2 finished in their notebooks
    repo = folder / "nia"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    class_repos._exercises(repo, "exercises")
    (repo / "notebooks").mkdir()
    for module in ("chapter01_sequences", "chapter02_matrices"):
        source = (ROOT / "solutions" / f"{module}.py").read_text(encoding="utf-8")
        (repo / "notebooks" / f"{module}.ipynb").write_text(notebook(["CHAPTER = 1", source]), encoding="utf-8")
    made["nia"] = {"repo": repo, "commit": class_repos._commit(repo, "notebooks", class_repos.BEFORE)}
    # lou: chapter 2 a symbolic link; newer work on a branch; a fix after the deadline from another zone
    repo = folder / "lou"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    class_repos._exercises(repo, "solutions")
    (repo / "exercises" / "chapter02_matrices.py").unlink()
    os.symlink("../../ada/exercises/chapter02_matrices.py", repo / "exercises" / "chapter02_matrices.py")
    graded = class_repos._commit(repo, "chapter 2 linked", class_repos.BEFORE)
    git(repo, "checkout", "-q", "-b", "work")
    (repo / "exercises" / "notes.py").write_text("# more\n", encoding="utf-8")
    branch = class_repos._commit(repo, "on a branch", class_repos.JUST_BEFORE)
    git(repo, "checkout", "-q", "main")
    (repo / "README.md").write_text("late\n", encoding="utf-8")
    late = class_repos._commit(repo, "late", LATE_ELSEWHERE)
    made["lou"] = {"repo": repo, "commit": graded, "branch": branch, "late": late}
    # max: ada's code with every local renamed
    repo = folder / "max"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    class_repos._exercises(repo, "solutions")
    for number, path in project.chapter_files(repo / "exercises").items():
        if number > 2:
            continue
        path.write_text(renamed(path.read_text(encoding="utf-8")), encoding="utf-8")
    made["max"] = {"repo": repo, "commit": class_repos._commit(repo, "mine", class_repos.BEFORE)}
    (folder / "roster.csv").write_text(
        "student,repo,section,sis_login_id,email,username\n"
        "ada,ada,S1,ada01,ada@example.invalid,ada\nnia,nia,S2,nia02,nia@example.invalid,nia\n"
        "lou,lou,S1,lou03,lou@example.invalid,lou\nmax,max,S2,max04,max@example.invalid,max\n", encoding="utf-8")
    return made


@pytest.fixture(scope="module")
def trust(tmp_path_factory):
    base = tmp_path_factory.mktemp("trust")
    course = class_repos.course_copy(base / "course")
    made = build(base / "learners")
    out = base / "out"
    proc = tool("grade-class", str(base / "learners" / "roster.csv"), "--out", str(out), *COMMON, root=course,
                timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    book = json.loads((out / "gradebook.json").read_text(encoding="utf-8"))
    return {"base": base, "course": course, "made": made, "out": out, "book": book, "proc": proc,
            "rows": {r["student"]: r for r in book["rows"]}}


def chapter(row: dict, number: int) -> dict:
    return next(c for c in row["results"]["chapters"] if c["chapter"] == number)


def csv_rows(out: Path) -> dict[str, dict]:
    table = list(csv.DictReader(io.StringIO((out / "gradebook.csv").read_text(encoding="utf-8-sig"))))
    return {r["student"]: r for r in table if r["student"] != gradebook.MAX_ROW}


def test_notebook_answers_are_graded_and_said(trust):
    nia = trust["rows"]["nia"]
    assert nia["status"] == "graded" and nia["percent"] == 100.0, nia["note"]
    assert nia["notebooks"] == [1, 2]
    assert "chapters 1, 2 graded with the answers in notebooks/" in nia["note"]
    assert nia["results"]["implementation"] == "exercises and notebooks"
    assert csv_rows(trust["out"])["nia"]["notebooks"] == "1 2"
    assert trust["rows"]["ada"]["notebooks"] == []


def test_a_symbolic_link_is_named_not_an_internal_import_error(trust):
    lou = trust["rows"]["lou"]
    ch2 = chapter(lou, 2)
    assert ch2["points"] == 0
    assert "not graded: exercises/chapter02_matrices.py is a symbolic link" in ch2["error"], ch2["error"]
    text = json.dumps(lou["results"]) + (trust["out"] / "students" / "lou" / "summary.md").read_text(encoding="utf-8")
    assert "graded.chapter02" not in text and "No module named" not in text
    assert lou["not_graded"] == ["exercises/chapter02_matrices.py: symbolic link"]
    assert "exercises/chapter02_matrices.py: symbolic link" in lou["note"]
    assert csv_rows(trust["out"])["lou"]["not_graded"] == "exercises/chapter02_matrices.py: symbolic link"
    assert chapter(lou, 1)["status"] == "passed"


def test_newer_commits_on_another_branch_are_said(trust):
    lou, made = trust["rows"]["lou"], trust["made"]["lou"]
    assert lou["commit"] == made["commit"]
    assert lou["other_branches"] == [f"work ({made['branch'][:7]}, 2027-03-01T22:00:00+01:00)"]
    assert "newer commits on other branches, not graded" in lou["note"] and made["branch"][:7] in lou["note"]
    assert trust["rows"]["ada"]["other_branches"] == []
    summary = (trust["out"] / "students" / "lou" / "summary.md").read_text(encoding="utf-8")
    assert "**Note from the grader:**" in summary and "newer commits on other branches" in summary, summary


def test_times_in_the_late_note_are_in_the_deadlines_zone(trust):
    lou = trust["rows"]["lou"]
    assert lou["late"] == 1 and trust["rows"]["ada"]["late"] == 0
    assert "2027-03-02T05:30:00+01:00" in lou["note"] and "23:30" not in lou["note"]
    assert csv_rows(trust["out"])["lou"]["late"] == "1"


def test_the_console_names_the_learners_whose_note_to_read(trust):
    out = trust["proc"].stdout
    tail = out[out.index("read the note of:"):]
    assert "newer commits on another branch, not graded: lou" in tail
    assert "files not graded (links, submodules, over the size limit): lou" in tail
    assert "graded with answers from their notebooks: nia" in tail


def test_the_sandbox_state_is_in_the_row_the_note_and_the_csv(trust):
    for name, r in trust["rows"].items():
        assert r["sandbox"] == gradebook.sandbox(r["results"]) in ("bubblewrap", "none"), name
        assert ("graded without a sandbox" in r["note"]) == (r["sandbox"] == "none")
        assert csv_rows(trust["out"])[name]["sandbox"] == r["sandbox"]


def test_sandbox_is_read_from_the_protections():
    assert gradebook.sandbox({"protections": ["bubblewrap: no network", "separate process"]}) == "bubblewrap"
    assert gradebook.sandbox({"protections": ["no sandbox: …", "separate process"]}) == "none"
    assert gradebook.sandbox({"protections": ["no learner code ran"]}) is None
    row = gradebook.row(roster.Learner("a", "a", 2), status="graded", repo="a", commit="c", committed_at=None, note="",
                        results={"protections": ["no sandbox: …"], "chapters": []}, chapters=[1])
    assert "graded without a sandbox" in row["note"]


def test_the_gradebook_with_its_new_columns_validates(trust):
    assert schema.errors(trust["book"], gradebook.load_schema()) == []
    header = next(csv.reader(io.StringIO((trust["out"] / "gradebook.csv").read_text(encoding="utf-8-sig"))))
    assert header[header.index("note") + 1:] [:6] == list(gradebook.FLAGS)


def test_the_class_workflow_installs_bubblewrap():
    text = (ROOT / ".github" / "workflows" / "grade-class.yml").read_text(encoding="utf-8")
    assert "apt-get install" in text and "bubblewrap" in text.split("apt-get install", 1)[1].splitlines()[0]


# -- the roster ------------------------------------------------------------------------------------------------
def test_names_equal_but_for_case_and_spaces_are_refused_naming_both(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text("student,repo\nana müller,a\nbo,b\nAna  Müller,c\n", encoding="utf-8")
    with pytest.raises(roster.RosterError) as caught:
        roster.load(path)
    said = str(caught.value)
    assert "line 4" in said and "'Ana  Müller'" in said and "'ana müller' (line 2)" in said


def test_a_repository_claimed_twice_is_refused_or_flagged(trust, tmp_path):
    path = tmp_path / "roster.csv"
    ada = trust["made"]["ada"]["repo"]
    path.write_text(f"student,repo\nada,{ada}\ncopy,{ada}/\n", encoding="utf-8")
    proc = tool("grade-class", str(path), "--out", str(tmp_path / "out"), "--chapters", "1", "--allow-outside-paths",
                root=trust["course"])  # the learners' folder is not the roster's here
    assert proc.returncode == 2
    assert "line 3: 'copy' has the repository of 'ada' (line 2)" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()
    proc = tool("grade-class", str(path), "--out", str(tmp_path / "out"), "--chapters", "1", "--allow-shared",
                "--allow-outside-paths", "--allow-unsealed", root=trust["course"],
                env={"KATA_NO_SANDBOX": "1"})  # and graded unsealed, as without bubblewrap: allowed
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["student"]: r for r in json.loads((tmp_path / "out" / "gradebook.json").read_text())["rows"]}
    assert rows["ada"]["shared_with"] == ["copy"] and rows["copy"]["shared_with"] == ["ada"]
    assert "the same repository as ada" in rows["copy"]["note"]
    assert rows["ada"]["sandbox"] == "none (allowed)" and "graded without a sandbox" in rows["ada"]["note"]
    assert "graded without a sandbox" in (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "graded without a sandbox (the note says why" in proc.stdout  # the console says it too


def test_owner_name_repositories_compare_without_case(tmp_path):
    learners = [roster.Learner("a", "Alice/Katas", 2), roster.Learner("b", "https://github.com/alice/katas.git", 3),
                roster.Learner("c", "carol/katas", 4), roster.Learner("d", "git@github.com:Carol/katas.git", 5)]
    found = roster.shared(learners, lambda repo: submissions.source(repo, tmp_path))
    assert set(found) == {"a", "b", "c", "d"} and [x.student for x in found["c"]] == ["d"]


# -- protections ---------------------------------------------------------------------------------------------------
STALL = '''

import time as _time
_honest_decode = decode


def decode(ids):  # planted: no CPU time, but the budget runs out
    _time.sleep(1.5)
    return _honest_decode(ids)
'''


def test_a_learner_cut_by_the_time_budget_still_says_what_guarded_their_code(tmp_path):
    course = class_repos.course_copy(tmp_path / "course")
    (course / "grading.toml").write_text("[grade]\nbudget = 4\n", encoding="utf-8")
    impl = tmp_path / "stalls"
    from ..conftest import copy_solutions

    copy_solutions(impl, {"chapter01_sequences": STALL})
    out = tmp_path / "out"
    proc = tool("grade", "--impl", str(impl), "--chapters", "1", "--out", str(out), root=course, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    statuses = [t["message"] for c in results["chapters"] for s in c["steps"] for t in s["tests"]]
    assert any("time budget spent" in (m or "") for m in statuses), statuses
    assert "no learner code ran" not in results["protections"]
    assert "separate process" in results["protections"], results["protections"]


def test_git_is_run_without_a_prompt_for_every_branch(tmp_path):
    """fetch lists other branches from a plain local repository with no deadline (the shallow path)"""
    repo = tmp_path / "r"
    repo.mkdir()
    class_repos.git(repo, "init", "-q", "-b", "main")
    class_repos._exercises(repo, "exercises")
    class_repos._commit(repo, "one", class_repos.BEFORE)
    class_repos.git(repo, "checkout", "-q", "-b", "later")
    (repo / "x.txt").write_text("x", encoding="utf-8")
    tip = class_repos._commit(repo, "two", class_repos.AFTER)
    class_repos.git(repo, "checkout", "-q", "main")
    (tmp_path / "t").mkdir()
    sub = submissions.fetch(str(repo), tmp_path / "t", base=tmp_path)
    assert isinstance(sub, submissions.Submission)
    assert sub.late is None and len(sub.branches) == 1 and sub.branches[0].startswith(f"later ({tip[:7]}, ")
    assert subprocess.run(["git", "--version"], capture_output=True, check=False).returncode == 0


def test_a_file_name_with_control_characters_reaches_no_report_raw(tmp_path):
    r"""instructor trial: a link named 'evil\n\x1b[32mALL CHECKS PASSED' printed green text into the console"""
    import os

    repo = tmp_path / "r"
    repo.mkdir()
    class_repos.git(repo, "init", "-q", "-b", "main")
    class_repos._exercises(repo, "exercises")
    os.symlink("/etc/passwd", repo / "exercises" / "evil\n\x1b[32mALL CHECKS PASSED\x1b[0m=1+1.py")
    class_repos._commit(repo, "evil name", class_repos.BEFORE)
    (tmp_path / "t").mkdir()
    sub = submissions.fetch(str(repo), tmp_path / "t", base=tmp_path)
    assert sub.dropped == ["exercises/evil\\n\\x1b[32mALL CHECKS PASSED\\x1b[0m=1+1.py: symbolic link"], sub.dropped
    assert all(c.isprintable() for said in sub.dropped for c in said)


def test_an_oversized_file_is_named_as_not_graded(tmp_path, monkeypatch):
    monkeypatch.setattr(submissions, "MAX_FILE_BYTES", 64 * 1024)
    repo = tmp_path / "r"
    repo.mkdir()
    class_repos.git(repo, "init", "-q", "-b", "main")
    class_repos._exercises(repo, "exercises")
    (repo / "exercises" / "weights.bin").write_bytes(b"0" * (100 * 1024))
    class_repos._commit(repo, "big", class_repos.BEFORE)
    (tmp_path / "t").mkdir()
    sub = submissions.fetch(str(repo), tmp_path / "t", base=tmp_path)
    assert sub.dropped == ["exercises/weights.bin: file over the size limit of 64 KiB (100 KiB)"]
    assert not (sub.exercises / "weights.bin").exists()


# -- the report and the LMS --------------------------------------------------------------------------------------
def test_gradebook_csv_has_a_byte_order_mark_a_row_of_maximum_points_and_a_late_column(trust):
    raw = (trust["out"] / "gradebook.csv").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    table = list(csv.DictReader(io.StringIO(raw.decode("utf-8-sig"))))
    top = table[0]
    ada = trust["rows"]["ada"]
    assert top["student"] == gradebook.MAX_ROW and top["max_points"] == f"{ada['max_points']:g}"
    assert top["ch1"] == f"{chapter(ada, 1)['max_points']:g}"
    # a column per chapter graded (--chapters 1,2), as canvas.csv has, not one per chapter of the course
    assert [c for c in top if c.startswith("ch") and c[2:].isdigit()] == ["ch1", "ch2"], list(top)
    assert "late" in table[0] and {r["student"]: r["late"] for r in table[1:]} == {"ada": "0", "nia": "0", "lou": "1",
                                                                               "max": "0"}


def test_canvas_moodle_and_blackboard_files_have_their_columns(trust):
    out = trust["out"]
    raw = (out / "canvas.csv").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    canvas = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"))))
    assert canvas[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert len(canvas[0]) == 5 + 2  # chapters 1 and 2, no total (Canvas would import it as an assignment)
    assert canvas[1][0] == "Points Possible" and canvas[1][5] == f"{chapter(trust['rows']['ada'], 1)['max_points']:g}"
    lou = next(r for r in canvas if r[0] == "lou")
    assert lou[3] == "lou03" and lou[4] == "S1" and lou[6] == "0"
    moodle = list(csv.reader(io.StringIO((out / "moodle.csv").read_text(encoding="utf-8"))))
    assert moodle[0][:4] == ["Full name", "Email address", "ID number", "Username"] or \
        moodle[0][:3] == ["Full name", "Email address", "Username"]
    assert not (out / "moodle.csv").read_bytes().startswith(b"\xef\xbb\xbf")
    text = (out / "blackboard.csv").read_text(encoding="utf-8")
    assert text.startswith('"Last Name","First Name","Username","Student ID",')
    assert '"nia"' in text


def test_an_lms_file_needs_a_roster_column_that_identifies_learners(trust, tmp_path):
    from kata.grading import lms

    with pytest.raises(ValueError, match="roster column id, sis_user_id or sis_login_id"):
        lms.check("canvas", ["section"])
    path = tmp_path / "roster.csv"
    path.write_text(f"student,repo,section\nada,{trust['made']['ada']['repo']},S1\n", encoding="utf-8")
    proc = tool("grade-class", str(path), "--out", str(tmp_path / "out"), "--lms", "blackboard", root=trust["course"])
    assert proc.returncode == 2 and "a roster column username" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_an_lms_identifier_a_spreadsheet_would_run_is_refused_before_grading(trust, tmp_path):
    """instructor trial: '+kassie' became "'+kassie" in canvas.csv, which Canvas cannot match; now refused, named"""
    path = tmp_path / "roster.csv"
    path.write_text(f"student,repo,section,sis_login_id\nada,{trust['made']['ada']['repo']},S1,+kassie\n",
                    encoding="utf-8")
    proc = tool("grade-class", str(path), "--out", str(tmp_path / "out"), "--lms", "canvas", root=trust["course"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "ada's SIS Login ID (roster line 2) '+kassie' starts with '+'" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def _report(trust) -> str:
    return (trust["out"] / "report.html").read_text(encoding="utf-8")


def test_the_report_filters_by_a_roster_column(trust):
    text = _report(trust)
    assert '<select class="filter" data-i="0" data-column="section">' in text
    assert '<option value="S1">S1</option>' in text and '<option value="S2">S2</option>' in text
    assert 'data-column="sis_login_id"' not in text  # one value per learner: no section
    assert text.count('data-f0="S2"') >= 1 and "<h2>By section</h2>" in text


def test_the_report_separates_chapters_that_do_not_import_and_links_each_summary(trust):
    text = _report(trust)
    section = text[text.index("Chapters that do not import"):]
    section = section[:section.index("</table>")]
    assert ">lou</span>" in section and "2 " in section
    for name in ("ada", "nia", "lou"):
        assert f'href="students/{name}/summary.md"' in text
        assert (trust["out"] / "students" / name / "summary.md").is_file()


def _diagnosed_book() -> dict:
    """Three learners: two whose 4.2 'looks like' no scaling, one whose chapter 4 does not import."""
    def results(message: str | None, error: str | None) -> dict:
        step = {"id": "4.2", "kind": "step", "title": "scores", "status": "failed" if message else "error",
                "message": message, "tests": []}
        ch = {"chapter": 4, "title": "Attention", "points": 0.0, "max_points": 10.0, "percent": 0.0,
              "status": step["status"], "error": error, "steps": [step]}
        return {"total": {"points": 0.0, "max_points": 10.0, "percent": 0.0}, "chapters": [ch], "protections": []}

    said = "wrong\nlooks like: no 1/√d_k scaling"
    rows = [gradebook.row(roster.Learner(name, name, i + 2, {"section": sec}), status="graded", repo=name,
                          commit="a" * 40, committed_at=None, note="", results=res, chapters=[4])
            for i, (name, sec, res) in enumerate([("bo", "S1", results(said, None)), ("cy", "S2", results(said, None)),
                                                  ("di", "S1", results(None, "chapter 4 does not import: SyntaxError"))])]
    return {"rows": rows, "options": {"chapters": [4]}, "chapters": [{"chapter": 4, "title": "Attention"}],
            "summary": gradebook.summary(rows), "course_version": "sha256:x", "seed": 1, "deadline": None,
            "created": "now", "shard": None, "roster": {"extra_columns": ["section"]}}


def test_the_report_names_the_learners_under_each_diagnosis():
    from kata.grading import class_report

    top = class_report.failing_steps(_diagnosed_book()["rows"])
    assert [(e["id"], e["learners"]) for e in top] == [("4.2", ["bo", "cy"])]  # di's chapter does not import
    assert top[0]["by_diagnosis"] == {"no 1/√d_k scaling": ["bo", "cy"]}
    assert [(e["chapter"], e["learners"]) for e in class_report.not_importing(_diagnosed_book()["rows"])] == \
        [(4, ["di"])]
    text = class_report.render(_diagnosed_book())
    row = text[text.index('<table id="failing-steps">'):]
    row = row[:row.index("</table>")]
    assert "no 1/√d_k scaling" in row and '>bo</span>' in row and '>cy</span>' in row and '>di</span>' not in row


def test_the_heat_map_stays_readable_at_200_learners(monkeypatch):
    """every name 8 pt, rows at a fixed pitch, drawn as vector graphics (SVG)"""
    from kata.grading import class_report

    rows = [gradebook.row(roster.Learner(f"learner-{i:03d}", "r", i + 2), status="missing", repo="r", commit=None,
                          committed_at=None, note="", results=None, chapters=[1, 2]) for i in range(200)]
    book = {"rows": rows, "options": {"chapters": [1, 2]}, "chapters": [{"chapter": n, "title": ""} for n in (1, 2)]}
    fig = class_report._heatmap(book)
    labels = fig.axes[0].get_yticklabels()
    assert len(labels) == 200 and min(t.get_fontsize() for t in labels) >= 8
    pitch = fig.get_size_inches()[1] * 72 / 200  # points per learner's row, at least
    assert pitch >= 8 * 1.2, pitch
    svg = class_report._svg(fig)
    assert svg.startswith("data:image/svg+xml;base64,")


# -- copying signals -------------------------------------------------------------------------------------------
def test_each_learners_graded_files_are_kept_at_the_graded_commit(trust):
    out = trust["out"]
    for name in ("ada", "lou", "max"):
        kept = out / "students" / name / "graded" / "exercises" / "chapter01_sequences.py"
        committed = subprocess.run(["git", "-C", str(trust["made"][name]["repo"]), "show",
                                    f"{trust['made'][name]['commit']}:exercises/chapter01_sequences.py"],
                                   capture_output=True, text=True, check=True).stdout
        assert kept.read_text(encoding="utf-8") == committed, name
    assert not (out / "students" / "lou" / "graded" / "exercises" / "chapter02_matrices.py").exists()  # the link
    nia = out / "students" / "nia" / "graded"
    assert (nia / "notebooks" / "chapter01_sequences.ipynb").is_file()
    assert "your answers from notebooks/chapter01_sequences.ipynb" in \
        (nia / "exercises" / "chapter01_sequences.py").read_text(encoding="utf-8")  # what was graded


def test_the_report_gives_the_similarity_signals_and_no_pair_for_the_course_solution(trust):
    """ada and max hand in the course's solutions (max's names changed): boilerplate, not a pair (test_similarity.py)"""
    text = _report(trust)
    section = text[text.index('id="similarity"'):]
    assert "signals to read, not verdicts" in section and "before drawing any conclusion" in section
    assert "No two learners share 60 or more of rare code." in section, section[:3000]


# -- the class workflow ----------------------------------------------------------------------------------------------
def test_a_merge_names_a_shard_that_did_not_finish_and_keeps_the_others(trust, tmp_path):
    roster_file = str(trust["base"] / "learners" / "roster.csv")
    shard = tmp_path / "shard-1"
    proc = tool("grade-class", roster_file, "--out", str(shard), "--shard", "1/2", "--chapters", "1", "--seed", "7",
                root=trust["course"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    graded = {r["student"] for r in json.loads((shard / "gradebook.json").read_text())["rows"]}
    proc = tool("grade-class", "--merge", str(shard), "--out", str(tmp_path / "refused"), root=trust["course"])
    assert proc.returncode == 2 and "no shard graded" in proc.stderr  # without --shards: refused, as before
    merged = tmp_path / "merged"
    proc = tool("grade-class", "--merge", str(shard), "--shards", "2", "--out", str(merged), root=trust["course"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "shard 2/2 did not finish" in proc.stderr
    rows = {r["student"]: r for r in json.loads((merged / "gradebook.json").read_text())["rows"]}
    assert set(rows) == set(trust["made"])
    for name, r in rows.items():
        if name in graded:
            assert r["status"] == "graded"
        else:
            assert r["status"] == "error" and "shard 2/2 did not finish" in r["note"]
    assert "shard 2/2 did not finish" in (merged / "report.html").read_text(encoding="utf-8")


def test_the_class_workflow_merges_after_a_failed_shard_with_locked_tools_and_one_artifact_version():
    import yaml

    text = (ROOT / ".github" / "workflows" / "grade-class.yml").read_text(encoding="utf-8")
    flow = yaml.safe_load(text)
    merge = flow["jobs"]["merge"]
    assert "grade" in merge["needs"] and "!cancelled()" in merge["if"]  # after the shards, also when one failed
    script = "\n".join(step.get("run", "") for step in merge["steps"])
    assert '--shards "$SHARDS"' in script and "did not finish" in script
    assert any("needs.grade.result" in str(step.get("if", "")) and "exit 1" in step.get("run", "")
               for step in merge["steps"])
    assert "pip install" not in text and "python start.py" in text  # nox and uv as start.py pins them
    versions = set(re.findall(r"actions/(?:upload|download)-artifact@(\S+)", text))
    assert len(versions) == 1, versions


def test_the_section_filter_hides_the_other_sections_learners_in_chromium(trust):
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install chromium); .ci/run installs it")
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            problems = []
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto((trust["out"] / "report.html").as_uri())
            page.select_option('select[data-column="section"]', "S2")
            shown = page.evaluate("Array.from(document.querySelectorAll('#learners tr.learner'))"
                                  ".filter(r => !r.hidden).map(r => r.cells[0].textContent)")
            page.select_option('select[data-column="section"]', "")
            every = page.evaluate("Array.from(document.querySelectorAll('#learners tr.learner'))"
                                  ".filter(r => !r.hidden).length")
        finally:
            browser.close()
    assert problems == []
    assert sorted(shown) == ["max", "nia"] and every == 4


def test_a_notebook_that_cannot_be_read_leaves_exercises_graded_and_says_so(tmp_path):
    from kata.grading import classroom

    shutil.copytree(ROOT / "solutions", tmp_path / "exercises")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "chapter01_sequences.ipynb").write_text("[" * 200_000, encoding="utf-8")  # too deep
    sub = submissions.Submission(commit="c" * 40, committed_at="", exercises=tmp_path / "exercises",
                                 notebooks=tmp_path / "notebooks")
    impl, answered = classroom._with_notebooks(sub, ROOT, [1, 2], tmp_path / "work")
    assert impl == tmp_path / "exercises" and answered == []
    assert len(sub.dropped) == 1 and sub.dropped[0].startswith("notebooks/: answers not taken (RecursionError")
