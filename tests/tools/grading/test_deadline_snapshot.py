"""A deadline nobody can forge: `--snapshot FILE` at the deadline, `--at FILE` to grade it later.

A tiny class, chapters 1 and 2 (graded unsealed, `KATA_NO_SANDBOX=1`, to stay quick): fay has chapter 1 done
at the deadline, then finishes chapter 2 and commits it with a committer date forged to before the
deadline; rex has everything done at the deadline, then force-pushes a new history of untouched stubs;
gus has no repository at the deadline and makes one afterwards. `--deadline` alone grades fay's forged
commit (it trusts committer dates, and says so); `--at` grades what the snapshot recorded, whatever
was pushed, rewritten or deleted since. A snapshot for another roster, or one changed after it was taken,
is refused naming why; hostile student, branch and file names stay data inside the snapshot folder.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from pathlib import Path

import pytest

from kata.grading import classroom, deadline, gradebook, roster, schema

from ..conftest import ROOT, tool
from . import class_repos

pytestmark = pytest.mark.slow

CHAPTERS = ("--chapters", "1,2", "--seed", "7", "--jobs", "2")
FORGED = "2027-03-01T23:58:00+01:00"  # written on 5 March, dated two minutes before the deadline
UNSEALED = {"KATA_NO_SANDBOX": "1"}


def run(course: Path, *args: str) -> object:
    """grade-class unsealed; a grading run accepts it (``--allow-unsealed``), a snapshot grades nothing."""
    allowed = () if "--snapshot" in args else ("--allow-unsealed",)
    return tool("grade-class", *args, *allowed, root=course, env=UNSEALED, timeout=300)


def half_done(repo: Path) -> None:
    """The handed-out stubs with chapter 1 finished (chapter 2 not started)."""
    class_repos._exercises(repo, "exercises")
    shutil.copy2(ROOT / "solutions" / "chapter01_sequences.py", repo / "exercises" / "chapter01_sequences.py")


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    """The class, its snapshot, what was pushed after it, and the --deadline and --at runs."""
    base = tmp_path_factory.mktemp("deadline")
    course = class_repos.course_copy(base / "course")
    learners = base / "learners"
    learners.mkdir()
    git = class_repos.git
    fay = class_repos._new(learners / "fay")
    half_done(fay)
    fay_on_time = class_repos._commit(fay, "chapter 1", class_repos.JUST_BEFORE)
    rex = class_repos._new(learners / "rex")
    class_repos._exercises(rex, "solutions")
    rex_on_time = class_repos._commit(rex, "all done", class_repos.BEFORE)
    (learners / "roster.csv").write_text("student,repo\nfay,fay\nrex,rex\ngus,gus\n", encoding="utf-8")
    record = base / "snapshots" / "snapshot.json"
    taken = run(course, str(learners / "roster.csv"), "--snapshot", str(record))
    # after the deadline: fay's forged commit, rex's rewritten history, gus's first repository
    class_repos._exercises(fay, "solutions")
    fay_forged = class_repos._commit(fay, "chapter 2, on 5 March", FORGED)
    git(rex, "checkout", "-q", "--orphan", "rewritten")
    class_repos._exercises(rex, "exercises")
    class_repos._commit(rex, "start again", class_repos.BEFORE)
    git(rex, "branch", "-q", "-M", "rewritten", "main")
    git(rex, "reflog", "expire", "--expire=now", "--all")
    git(rex, "gc", "-q", "--prune=now")
    gus = class_repos._new(learners / "gus")
    class_repos._exercises(gus, "solutions")
    class_repos._commit(gus, "late start", class_repos.BEFORE)
    # --deadline alone, for fay: her forged date is believed
    (learners / "fay.csv").write_text("student,repo\nfay,fay\n", encoding="utf-8")
    by_date = run(course, str(learners / "fay.csv"), "--out", str(base / "by-date"), "--deadline",
                  class_repos.DEADLINE, *CHAPTERS)
    shutil.rmtree(fay)  # and then she deletes her repository
    at = run(course, str(learners / "roster.csv"), "--out", str(base / "at"), "--at", str(record), *CHAPTERS)
    return {"base": base, "course": course, "learners": learners, "record": record, "taken": taken,
            "by_date": by_date, "at": at, "fay_on_time": fay_on_time, "fay_forged": fay_forged,
            "rex_on_time": rex_on_time}


def book(klass, name: str) -> dict:
    proc = klass[name]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads((klass["base"] / name.replace("_", "-") / "gradebook.json").read_text(encoding="utf-8"))


def rows(klass, name: str) -> dict[str, dict]:
    return {r["student"]: r for r in book(klass, name)["rows"]}


def ch(row: dict, number: int) -> dict:
    return next(c for c in row["chapters"] if c["chapter"] == number)


# -- the hole, and what closes it ---------------------------------------------------------------------
def test_a_forged_committer_date_earns_full_marks_under_deadline_which_says_it_trusts_dates(klass):
    fay = rows(klass, "by_date")["fay"]
    assert fay["commit"] == klass["fay_forged"] and fay["percent"] == 100.0 and fay["late"] == 0
    said = book(klass, "by_date")["deadline"]
    assert said["mode"] == "committer dates" and said["time"] == class_repos.DEADLINE
    assert "forge" in said["trusts"] and "--snapshot" in said["trusts"] and "--at" in said["trusts"]
    assert "by committer dates" in klass["by_date"].stdout and "--snapshot FILE" in klass["by_date"].stdout
    page = (klass["base"] / "by-date" / "report.html").read_text(encoding="utf-8")
    assert "a learner can forge" in page


def test_the_snapshot_grades_what_was_there_at_the_deadline_not_the_forged_push(klass):
    fay = rows(klass, "at")["fay"]
    assert fay["status"] == "graded" and fay["commit"] == klass["fay_on_time"] != klass["fay_forged"]
    assert ch(fay, 1)["percent"] == 100.0 and ch(fay, 2)["points"] == 0 and fay["percent"] < 100
    assert fay["results"]["commit"] == klass["fay_on_time"]
    assert fay["committed_at"] == class_repos.JUST_BEFORE


def test_a_deleted_repository_is_graded_from_the_snapshot_alone(klass):
    assert not (klass["learners"] / "fay").exists()
    assert rows(klass, "at")["fay"]["status"] == "graded"


def test_a_force_push_rewriting_history_after_the_snapshot_changes_nothing(klass):
    rex = rows(klass, "at")["rex"]
    assert rex["commit"] == klass["rex_on_time"] and rex["percent"] == 100.0


def test_a_learner_missing_at_the_snapshot_stays_missing(klass):
    gus = rows(klass, "at")["gus"]
    assert gus["status"] == "missing" and gus["commit"] is None
    taken = book(klass, "at")["deadline"]["taken"]
    assert gus["note"].startswith(f"at the deadline snapshot of {taken}: unreachable")


def test_the_gradebook_of_at_records_the_snapshot_and_late_is_zero(klass):
    graded = book(klass, "at")
    record = json.loads(klass["record"].read_text(encoding="utf-8"))
    assert graded["deadline"] == {"mode": "snapshot", "time": None, "taken": record["taken"],
                                  "file": "snapshot.json", "digest": record["digest"],
                                  "trusts": graded["deadline"]["trusts"]}
    assert "clock" in graded["deadline"]["trusts"]
    assert schema.errors(graded, gradebook.load_schema()) == []
    for name in ("fay", "rex"):
        row = rows(klass, "at")[name]
        assert row["late"] == 0 and row["note"].startswith(f"graded at the deadline snapshot of {record['taken']}")
    said = f"graded at the deadline snapshot of {record['taken']} (snapshot.json)"
    assert said in klass["at"].stdout
    assert said in (klass["base"] / "at" / "report.html").read_text(encoding="utf-8")


def test_the_snapshot_records_each_head_and_grades_nothing(klass):
    proc = klass["taken"]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    record = json.loads(klass["record"].read_text(encoding="utf-8"))
    assert proc.stdout.strip().splitlines()[-1].startswith("snapshot of 3 learners taken at ")
    assert "2 heads recorded, 1 missing" in proc.stdout
    assert record["roster"]["digest"] == roster.load(klass["learners"] / "roster.csv").digest
    fay, rex, gus = record["learners"]
    assert (fay["commit"], fay["branch"], fay["committed_at"]) == (klass["fay_on_time"], "main",
                                                                   class_repos.JUST_BEFORE)
    assert fay["source"] == str((klass["learners"] / "fay").resolve()) and fay["fetched_at"].endswith("Z")
    assert "exercises/chapter01_sequences.py" in {f["path"] for f in fay["files"]}
    assert rex["commit"] == klass["rex_on_time"]
    assert gus["status"] == "missing" and gus["reason"].startswith("unreachable")
    stored = deadline.files_folder(klass["record"]) / fay["folder"] / "exercises" / "chapter01_sequences.py"
    assert stored.read_bytes() == (ROOT / "solutions" / "chapter01_sequences.py").read_bytes()
    assert not (klass["course"] / "gradebook").exists()  # nothing graded, nothing written but the snapshot
    assert sorted(p.name for p in klass["record"].parent.iterdir()) == ["snapshot.files", "snapshot.json"]


# -- refused, naming why ----------------------------------------------------------------------------------
def test_a_snapshot_of_another_roster_is_refused_naming_the_learners(klass, tmp_path):
    other = klass["learners"] / "other.csv"
    other.write_text("student,repo\nfay,fay\nrex,rex-two\nzoe,zoe\n", encoding="utf-8")
    proc = run(klass["course"], str(other), "--out", str(tmp_path / "out"), "--at", str(klass["record"]), *CHAPTERS)
    assert proc.returncode == 2 and not (tmp_path / "out" / "gradebook.json").exists()
    assert "was taken for another roster" in proc.stderr
    assert "added since: zoe" in proc.stderr and "not in this roster: gus" in proc.stderr
    assert "another repository: rex" in proc.stderr


@pytest.fixture
def copied(klass, tmp_path) -> Path:
    """A copy of the snapshot (record and files), to damage."""
    record = tmp_path / "snapshot.json"
    shutil.copy2(klass["record"], record)
    shutil.copytree(deadline.files_folder(klass["record"]), deadline.files_folder(record), symlinks=True)
    return record


def _fay_file(record: Path) -> Path:
    return deadline.files_folder(record) / deadline.learner_folder("fay") / "exercises" / "chapter01_sequences.py"


def _rewrite(record: Path, change) -> None:
    body = json.loads(record.read_text(encoding="utf-8"))
    change(body)
    record.write_text(json.dumps(body), encoding="utf-8")


DAMAGE = {
    "a stored file edited": (lambda r: _fay_file(r).write_text("def f(): return 1\n", encoding="utf-8"),
                             "fay: exercises/chapter01_sequences.py: changed"),
    "a file added": (lambda r: _fay_file(r).with_name("chapter02_helper.py").write_text("", encoding="utf-8"),
                     "fay: exercises/chapter02_helper.py: not in the snapshot's record (added)"),
    "a file removed": (lambda r: _fay_file(r).unlink(), "fay: exercises/chapter01_sequences.py: missing"),
    "a file made a link": (lambda r: (_fay_file(r).unlink(), os.symlink("/etc/hostname", _fay_file(r))),
                           "fay: exercises/chapter01_sequences.py: a symbolic link"),
    "the record edited": (lambda r: _rewrite(r, lambda b: b["learners"][0].update(commit="0" * 40)),
                          "snapshot.json was changed after it was taken"),
    "the record cut short": (lambda r: r.write_text(r.read_text(encoding="utf-8")[:200], encoding="utf-8"),
                             "snapshot.json is not a snapshot's record (not JSON"),
    "the record nested too deep": (lambda r: r.write_text("[" * 100_000, encoding="utf-8"),
                                   "snapshot.json is not a snapshot's record (not JSON: maximum recursion depth"),
    "the files folder gone": (lambda r: shutil.rmtree(deadline.files_folder(r)), "snapshot.files is missing"),
    "a folder elsewhere, digest recomputed": (
        lambda r: _rewrite(r, lambda b: (b["learners"][0].update(folder="../../etc"),
                                         b.update(digest=deadline.digest(b)))),
        "the entry of 'fay' is not one --snapshot writes"),
    "a commit not text, digest recomputed": (
        lambda r: _rewrite(r, lambda b: (b["learners"][0].update(commit=["0" * 40]), b.update(digest=deadline.digest(b)))),
        "snapshot.json is not laid out as a snapshot: $.learners[0].commit: ['0000"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_or_changed_snapshot_is_refused_naming_why(klass, copied, damage):
    do, said = DAMAGE[damage]
    do(copied)
    class_roster = roster.load(klass["learners"] / "roster.csv")
    with pytest.raises(deadline.SnapshotError) as caught:
        deadline.load(copied, class_roster, ["fay", "rex", "gus"])
    assert said in str(caught.value)


def test_files_changed_while_the_class_is_graded_are_not_graded(klass, copied, tmp_path):
    loaded = deadline.load(copied, roster.load(klass["learners"] / "roster.csv"), ["fay"])
    _fay_file(copied).write_text("def f(): return 1\n", encoding="utf-8")
    with pytest.raises(deadline.SnapshotError, match="changed while the class was graded"):
        deadline.submission(loaded, "fay", tmp_path)


def test_the_at_run_refuses_a_damaged_snapshot_before_grading_anything(klass, copied, tmp_path):
    _fay_file(copied).write_text("def f(): return 1\n", encoding="utf-8")
    proc = run(klass["course"], str(klass["learners"] / "roster.csv"), "--out", str(tmp_path / "out"), "--at",
               str(copied), *CHAPTERS)
    assert proc.returncode == 2 and "fay: exercises/chapter01_sequences.py: changed" in proc.stderr
    assert not (tmp_path / "out" / "gradebook.json").exists()


@pytest.mark.parametrize(("args", "said"), [
    (["--at", "s.json", "--deadline", class_repos.DEADLINE], "give one of them, not both"),
    (["--snapshot", "s.json", "--deadline", class_repos.DEADLINE], "--snapshot grades nothing: --deadline"),
    (["--snapshot", "s.json", "--chapters", "1", "--lms", "canvas"], "--chapters, --lms have no use with it"),
    (["--snapshot", "s.files"], "give a name ending in .json"),
])
def test_options_that_cannot_go_together_are_refused(klass, capsys, args, said):
    assert classroom.main([str(klass["learners"] / "roster.csv"), *args]) == 2
    assert said in capsys.readouterr().err


def test_a_snapshot_is_never_overwritten(klass, capsys):
    before = klass["record"].read_bytes()
    assert classroom.main([str(klass["learners"] / "roster.csv"), "--snapshot", str(klass["record"])]) == 2
    assert "exists already; a snapshot is never overwritten" in capsys.readouterr().err
    assert klass["record"].read_bytes() == before


# -- hostile names ------------------------------------------------------------------------------------------
STUDENT = "Zoë $(touch pwned) \u202eevil"
BRANCH = "ma$(id)in\u202ex\udcff"  # \udcff: the byte 0xff, not UTF-8, in the branch's name
FILES = ("exercises/\x1b[2Jcls.py", "exercises/ok\nnl.py", "notebooks/..ipynb")


def test_hostile_names_are_data_inside_the_snapshot_folder(tmp_path, capsys):
    repo = tmp_path / "learners" / "odd"
    repo.mkdir(parents=True)
    class_repos.git(repo, "init", "-q", "-b", BRANCH)
    half_done(repo)
    (repo / "notebooks").mkdir()
    for name in FILES:
        (repo / name).write_text("x = 1\n", encoding="utf-8")
    commit = class_repos._commit(repo, "odd names", class_repos.BEFORE)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([["student", "repo"], [STUDENT, "odd"]])
    (tmp_path / "learners" / "roster.csv").write_text(buf.getvalue(), encoding="utf-8")
    record = tmp_path / "snap" / "s.json"
    outside = sorted(p for p in tmp_path.rglob("*"))
    assert classroom.main([str(tmp_path / "learners" / "roster.csv"), "--snapshot", str(record)]) == 0
    entry = json.loads(record.read_text(encoding="utf-8"))["learners"][0]
    assert (entry["student"], entry["branch"], entry["commit"]) == (STUDENT, "ma$(id)in\u202ex\ufffd", commit)
    assert {f["path"] for f in entry["files"]} >= set(FILES)
    folder = deadline.files_folder(record)
    for path in folder.rglob("*"):
        assert path.resolve().is_relative_to(folder.resolve()) and not path.is_symlink()
    for name in FILES:
        assert (folder / entry["folder"] / name).read_text(encoding="utf-8") == "x = 1\n"
    new = set(tmp_path.rglob("*")) - set(outside)
    assert all(p == record.parent or p == record or p.is_relative_to(folder) for p in new)
    assert "\x1b" not in capsys.readouterr().err  # the progress line shows names, never obeys them


def test_a_commit_dated_before_the_deadline_after_a_later_dated_one_is_named_not_left_out(tmp_path):
    """A commit dated before the deadline that follows a later-dated one is named, not left out silently.

    --deadline grades the latest date at or before it; a head that follows a later-dated commit (a clock behind, or
    a forged date) is not graded, and the note says so (the instructor trial found it left out without a word).
    """
    import datetime as dt

    from kata.grading import submissions

    repo = class_repos._new(tmp_path / "dee")
    (repo / "exercises").mkdir()
    (repo / "exercises" / "chapter01_sequences.py").write_text("x = 1\n", encoding="utf-8")
    graded = class_repos._commit(repo, "chapter 1", "2027-03-01T23:50:00+00:00")
    (repo / "exercises" / "chapter01_sequences.py").write_text("x = 2\n", encoding="utf-8")
    head = class_repos._commit(repo, "chapter 2, its date set back", "2027-03-01T23:00:00+00:00")
    (tmp_path / "work").mkdir()
    sub = submissions.fetch(str(repo), tmp_path / "work", base=tmp_path,
                            deadline=dt.datetime(2027, 3, 1, 23, 59, tzinfo=dt.UTC))
    assert isinstance(sub, submissions.Submission), sub
    assert sub.commit == graded
    assert "1 commit after the graded one in history is dated before the deadline" in sub.note, sub.note
    assert head[:7] in sub.note and "dates out of order" in sub.note, sub.note
