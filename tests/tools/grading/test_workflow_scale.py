"""A class of 2,000 on `.github/workflows/grade-class.yml`, sealed where it runs, at a deadline nobody can forge.

What the workflow must hold (read from the file, and its shell steps run here with a fake runner), and the
helpers it calls (`kata/grading/shards.py`): the shard count that follows the class's size, the roster from a
secret or from an encrypted file, what a shard uploads, and the scheduled snapshot's wait for the deadline.
All quick, no network.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kata.grading import release, roster, shards

from ..conftest import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "grade-class.yml"
DOCS = ROOT / "docs" / "instructors.md"
# The command docs/instructors.md gives for encrypting a roster (the test encrypts with it too).
ENCRYPT = "gpg --symmetric --cipher-algo AES256 --output .github/roster.csv.gpg class/roster.csv"


def spec() -> dict:
    loaded = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    loaded["on"] = loaded.pop(True, loaded.get("on"))  # YAML 1.1 reads the key `on` as true
    return loaded


def step(job: dict, starts: str) -> dict:
    found = [s for s in job["steps"] if s.get("name", "").startswith(starts)]
    assert len(found) == 1, f"one step named {starts!r}: {[s.get('name') for s in job['steps']]}"
    return found[0]


def run_step(script: str, tmp_path: Path, env: dict[str, str], uid: str = "1001") -> subprocess.CompletedProcess:
    """Run a step's shell as GitHub does (bash -e), in the course checkout, with a fake `id` and `nox`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "id").write_text(f"#!/bin/sh\necho {uid}\n", encoding="utf-8")
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
    for exe in bin_dir.iterdir():
        exe.chmod(0o755)
    full = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT), "RUNNER_TEMP": str(tmp_path),
            "GITHUB_OUTPUT": str(tmp_path / "output"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"), **env}
    return subprocess.run(["bash", "-e", "-c", script], cwd=ROOT, env=full, capture_output=True, text=True,
                          timeout=60, check=False)


def a_roster(path: Path, learners: int) -> Path:
    path.write_text("student,repo\n" + "".join(f"s{i:04d},org/katas-{i}\n" for i in range(learners)),
                    encoding="utf-8")
    return path


# -- the matrix follows the class's size ---------------------------------------------------------------------
@pytest.mark.parametrize(("learners", "want"), [(1, 1), (59, 1), (60, 1), (61, 2), (2000, 34)])
def test_the_number_of_shards_follows_the_class_size(learners, want):
    made = shards.plan(learners, per_shard=60)
    assert made["shards"] == want and made["matrix"] == list(range(1, want + 1))
    assert "note" not in made


def test_the_default_makes_twenty_shards_of_a_class_of_2000_and_never_more_than_256():
    assert shards.plan(2000)["shards"] == 20  # a free plan's 20 jobs at once
    made = shards.plan(30_000, per_shard=60)
    assert made["shards"] == 256 == len(made["matrix"]) and made["per_shard"] == 118
    assert "500 shards" in made["note"] and "up to 118" in made["note"]
    for bad in ((0, 60), (10, 0)):
        with pytest.raises(ValueError, match="no learners|per-shard"):
            shards.plan(*bad)


def test_the_plan_step_writes_the_matrix_for_the_roster(tmp_path):
    """the workflow's own plan step: JSON in $GITHUB_OUTPUT that the grade and merge jobs read with fromJSON"""
    job = spec()["jobs"]["plan"]
    a_roster(tmp_path / "roster.csv", 61)
    proc = run_step(step(job, "Shards")["run"], tmp_path, {"PER_SHARD": "60", "SNAPSHOT_RUN": "", "DEADLINE": ""})
    assert proc.returncode == 0, proc.stderr
    key, _, value = (tmp_path / "output").read_text(encoding="utf-8").strip().partition("=")
    assert key == "plan" == job["outputs"]["plan"].split(".")[-1].rstrip(" }")
    assert json.loads(value) == {"learners": 61, "per_shard": 60, "shards": 2, "matrix": [1, 2]}
    both = run_step(step(job, "Shards")["run"], tmp_path, {"PER_SHARD": "", "SNAPSHOT_RUN": "123",
                                                           "DEADLINE": "2027-03-01T23:59:00+01:00"})
    assert both.returncode == 2 and "snapshot_run or deadline, not both" in both.stdout


def test_the_grade_and_merge_jobs_take_the_shard_count_from_the_plan():
    jobs = spec()["jobs"]
    grade, merge = jobs["grade"], jobs["merge"]
    assert grade["needs"] == "plan" and "plan" in merge["needs"]
    assert grade["strategy"]["matrix"]["shard"] == "${{ fromJSON(needs.plan.outputs.plan).matrix }}"
    assert grade["env"]["SHARDS"] == merge["env"]["SHARDS"] == "${{ fromJSON(needs.plan.outputs.plan).shards }}"
    assert 1 <= grade["strategy"]["max-parallel"] <= 256 and grade["strategy"]["fail-fast"] is False
    assert '--shards "$SHARDS"' in step(merge, "Merge")["run"]
    assert spec()["on"]["workflow_dispatch"]["inputs"]["per_shard"]["default"] == str(shards.PER_SHARD)


# -- sealed on ubuntu-latest, never as root ---------------------------------------------------------------------
def test_bubblewrap_is_made_to_work_on_ubuntu_24_04_and_proved():
    """installed without `|| true`, AppArmor's user-namespace restriction lifted, and bwrap run as the job's user"""
    run = step(spec()["jobs"]["grade"], "Set up: bubblewrap")["run"]
    lines = [line.strip() for line in run.splitlines()]
    assert "sudo apt-get install -y -qq bubblewrap" in lines and "|| true" not in run
    assert "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0" in lines
    probe = [line for line in lines if line.startswith("bwrap ")]
    assert probe and "--unshare-all" in probe[0], "the probe runs bwrap itself, without sudo"


def test_the_grading_step_never_runs_the_grader_as_root(tmp_path):
    """no sudo in it, and as uid 0 it stops before the grader starts (run here as root would run)"""
    grading = step(spec()["jobs"]["grade"], "Grade this shard")
    assert "sudo" not in grading["run"]
    env = {"SHARD": "1", "SHARDS": "2", "SEED": "7", "DEADLINE": "", "SNAPSHOT_RUN": "", "CHAPTERS": ""}
    proc = run_step(grading["run"], tmp_path, env, uid="0")
    assert proc.returncode == 2 and "would run as root" in proc.stdout


# -- a deadline nobody can forge ----------------------------------------------------------------------------------
def test_the_snapshot_is_taken_on_a_schedule_and_kept_90_days():
    s = spec()
    crons = [c["cron"] for c in s["on"]["schedule"]]
    assert len(crons) == 1 and len(crons[0].split()) == 5
    inputs = s["on"]["workflow_dispatch"]["inputs"]
    assert inputs["mode"]["options"] == ["grade", "snapshot"] and "snapshot_run" in inputs and "deadline" in inputs
    job = s["jobs"]["snapshot"]
    assert "github.event_name == 'schedule'" in job["if"] and "inputs.mode == 'snapshot'" in job["if"]
    assert "--snapshot deadline-snapshot/snapshot.json" in step(job, "Record")["run"]
    assert step(job, "Wait")["run"] == 'python -m kata.grading.shards wait-until "$SNAPSHOT_DEADLINE"'
    keep = step(job, "Keep the snapshot")["with"]
    assert keep["name"] == "deadline-snapshot" and keep["path"] == "deadline-snapshot/" and keep["retention-days"] == 90
    assert s["permissions"] == {"contents": "read", "actions": "read"}


def test_grading_a_snapshot_downloads_it_and_grades_those_commits(tmp_path):
    grade = spec()["jobs"]["grade"]
    download = step(grade, "The deadline snapshot")
    assert download["uses"] == "actions/download-artifact@v6"
    assert download["with"] == {"name": "deadline-snapshot", "path": "deadline-snapshot",
                                "run-id": "${{ inputs.snapshot_run }}", "github-token": "${{ github.token }}"}
    run = step(grade, "Grade this shard")["run"]
    assert "--at deadline-snapshot/snapshot.json" in run and '--deadline "$DEADLINE"' in run
    # the grader's command line as the step makes it: a fake nox prints its arguments
    (tmp_path / ".venv-tools" / "bin").mkdir(parents=True)
    nox = tmp_path / ".venv-tools" / "bin" / "nox"
    nox.write_text('#!/bin/sh\necho "$@"\n', encoding="utf-8")
    nox.chmod(0o755)
    script = run.replace(".venv-tools/bin/nox", str(nox))
    env = {"SHARD": "2", "SHARDS": "3", "SEED": "7", "CHAPTERS": "", "DEADLINE": "", "SNAPSHOT_RUN": "9"}
    said = run_step(script, tmp_path, env).stdout.split()
    assert said[said.index("--at") + 1] == "deadline-snapshot/snapshot.json" and "--deadline" not in said
    assert said[said.index("--shard") + 1] == "2/3"
    said = run_step(script, tmp_path, {**env, "SNAPSHOT_RUN": "", "DEADLINE": "2027-03-01T23:59:00Z"}).stdout.split()
    assert said[said.index("--deadline") + 1] == "2027-03-01T23:59:00Z" and "--at" not in said


def test_the_scheduled_snapshot_waits_for_the_deadline_and_says_when_it_is_late():
    deadline = dt.datetime(2027, 3, 1, 22, 59, tzinfo=dt.UTC)
    slept = []
    said = shards.wait_until("2027-03-01T23:59:00+01:00", now=lambda: deadline - dt.timedelta(minutes=30),
                             sleep=slept.append)
    assert slept == [1800.0] and "waited 1800 s" in said
    said = shards.wait_until("2027-03-01T22:59:00Z", now=lambda: deadline + dt.timedelta(seconds=95),
                             sleep=slept.append)
    assert slept == [1800.0] and "95 s after the deadline" in said
    for when, match in ((deadline - dt.timedelta(hours=3), "3.0 h away"), (deadline + dt.timedelta(hours=7),
                                                                            "passed 7.0 h ago"),):
        with pytest.raises(ValueError, match=match):
            shards.wait_until("2027-03-01T22:59:00Z", now=lambda when=when: when, sleep=slept.append)
    with pytest.raises(ValueError, match="no time zone"):
        shards.wait_until("2027-03-01T22:59:00", sleep=slept.append)
    assert spec()["env"]["SNAPSHOT_DEADLINE"].endswith("Z")


# -- a roster bigger than a secret -----------------------------------------------------------------------------------
def test_every_job_that_needs_the_roster_writes_it_into_runner_temp_from_the_secrets():
    for name in ("snapshot", "plan", "grade"):
        got = step(spec()["jobs"][name], "The roster")
        assert got["run"] == 'python -m kata.grading.shards roster --out "$RUNNER_TEMP/roster.csv"', name
        assert got["env"] == {"ROSTER": "${{ inputs.roster }}", "CLASS_ROSTER": "${{ secrets.CLASS_ROSTER }}",
                              "CLASS_ROSTER_KEY": "${{ secrets.CLASS_ROSTER_KEY }}"}, name


def test_the_roster_from_the_secrets_text_is_written_for_this_user_only(tmp_path):
    out = tmp_path / "temp" / "roster.csv"
    source = shards.write_roster(out, text="student,repo\nana,org/ana", encrypted=tmp_path / "none.gpg")
    assert source == "the secret CLASS_ROSTER" and out.read_text(encoding="utf-8") == "student,repo\nana,org/ana\n"
    assert out.stat().st_mode & 0o777 == 0o600
    with pytest.raises(roster.RosterError, match="no roster: set the secret CLASS_ROSTER"):
        shards.write_roster(out, encrypted=tmp_path / "none.gpg")
    with pytest.raises(roster.RosterError, match="two rosters: the secret CLASS_ROSTER and the secret CLASS_ROSTER_KEY"):
        shards.write_roster(out, text="student,repo\n", key="k", encrypted=tmp_path / "none.gpg")


@pytest.fixture
def encrypted(tmp_path):
    """A course checkout with a two-learner roster encrypted as the docs say (gpg's own command line)."""
    if not shutil.which("gpg"):
        pytest.skip("gpg is not installed here (it is on GitHub's runners): apt-get install gnupg")
    course = tmp_path / "course"
    (course / "class").mkdir(parents=True)
    (course / ".github").mkdir()
    a_roster(course / "class" / "roster.csv", 2)
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    command = ENCRYPT.split()
    try:
        proc = subprocess.run([command[0], "--batch", "--homedir", str(home), "--pinentry-mode", "loopback",
                               "--passphrase-fd", "0", *command[1:]], input=b"correct horse", cwd=course,
                              capture_output=True, timeout=60, check=False)
    finally:  # encrypting starts gpg's agent for that home folder: stop it
        subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "gpg-agent"], capture_output=True, timeout=30,
                       check=False)
    assert proc.returncode == 0, proc.stderr
    return course


def test_an_encrypted_roster_is_decrypted_with_its_passphrase_into_runner_temp(encrypted, tmp_path):
    """the workflow's own roster step, with the secret CLASS_ROSTER_KEY, run in a checkout holding the file"""
    assert ENCRYPT in DOCS.read_text(encoding="utf-8")
    script = step(spec()["jobs"]["grade"], "The roster")["run"]
    env = {"PYTHONPATH": str(ROOT), "ROSTER": "", "CLASS_ROSTER": "", "CLASS_ROSTER_KEY": "correct horse"}
    proc = subprocess.run(["bash", "-e", "-c", script.replace("python ", f"{sys.executable} ", 1)], cwd=encrypted,
                          env={**os.environ, **env, "RUNNER_TEMP": str(tmp_path)}, capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "2 learners, from .github/roster.csv.gpg, decrypted" in proc.stderr
    assert (tmp_path / "roster.csv").read_text() == (encrypted / "class" / "roster.csv").read_text()
    assert sorted(p.name for p in encrypted.rglob("*") if p.is_file()) == ["roster.csv", "roster.csv.gpg"], \
        "nothing decrypted into the checkout"
    wrong = subprocess.run([sys.executable, "-m", "kata.grading.shards", "roster", "--out", str(tmp_path / "w.csv")],
                           cwd=encrypted, env={**os.environ, **env, "CLASS_ROSTER_KEY": "wrong"},
                           capture_output=True, text=True, timeout=60, check=False)
    assert wrong.returncode == 2 and not (tmp_path / "w.csv").exists()
    assert "roster.csv.gpg: gpg cannot decrypt it" in wrong.stderr and "wrong passphrase" in wrong.stderr


def test_the_encrypted_roster_is_committed_and_never_in_a_student_edition(tmp_path):
    """.github/roster.csv.gpg: not ignored by git (it is committed), and left out of every edition"""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / ".github", repo / ".github", ignore=shutil.ignore_patterns("*.gpg"))
    shutil.copy2(ROOT / ".gitignore", repo / ".gitignore")
    (repo / ".github" / "roster.csv.gpg").write_bytes(b"\x8c\x0d")
    subprocess.run(["git", "init", "-q", str(repo)], check=True, capture_output=True)
    ignored = subprocess.run(["git", "-C", str(repo), "check-ignore", "-q", ".github/roster.csv.gpg"], check=False)
    assert ignored.returncode == 1, "git ignores .github/roster.csv.gpg: it could not be committed"
    assert str(shards.ENCRYPTED) == ".github/roster.csv.gpg"
    assert not release.belongs(".github/roster.csv.gpg") and release.listed(".github/roster.csv.gpg",
                                                                           release.AUTHORS_ONLY)


# -- a shard uploads what the merge needs -----------------------------------------------------------------------
def test_a_shard_packs_its_gradebook_and_each_learners_folder_but_not_what_the_merge_writes_again(tmp_path):
    shard = tmp_path / "shard-1"
    learner = shard / "students" / "ana"
    (learner / "graded" / "exercises").mkdir(parents=True)
    for name in ("gradebook.json", "gradebook.csv", "report.html", "canvas.csv", ".cache/x/results.json",
                 "students/ana/results.json", "students/ana/junit.xml", "students/ana/summary.md",
                 "students/ana/graded/exercises/chapter01_sequences.py",
                 "students/ana/graded/exercises/results.json"):
        (shard / name).parent.mkdir(parents=True, exist_ok=True)
        (shard / name).write_text(name, encoding="utf-8")
    kept = {p.relative_to(shard).as_posix() for p in shards.upload_files(shard)}
    assert kept == {"gradebook.json", "students/ana/summary.md", "students/ana/graded/exercises/chapter01_sequences.py",
                    "students/ana/graded/exercises/results.json"}
    assert shards.pack(shard, tmp_path / "upload") == 4
    assert {p.relative_to(tmp_path / "upload").as_posix() for p in (tmp_path / "upload").rglob("*")
            if p.is_file()} == kept
    with pytest.raises(ValueError, match="no gradebook.json"):
        shards.pack(tmp_path / "upload" / "students", tmp_path / "again")
    job = spec()["jobs"]["grade"]
    assert step(job, "Keep what the merge needs")["run"] == \
        'python -m kata.grading.shards pack "shard-$SHARD" "upload/shard-$SHARD"'
    assert step(job, "Upload this shard")["with"]["path"] == "upload/shard-${{ matrix.shard }}/"


# -- the merge of 2,000 fits a runner's memory -----------------------------------------------------------------
WRITE_A_BIG_GRADEBOOK = '''
import resource, sys
from pathlib import Path
from kata.grading import gradebook
from kata.grading.roster import Learner

results = {"chapters": [], "total": None, "checks": "public", "protections": [],
           "tests": [f"tests/test_chapter01.py::test_{i}" for i in range(600_000)]}  # like many learners' results
row = gradebook.row(Learner("ana", "org/ana", 2), status="graded", repo="org/ana", commit="c", committed_at=None,
                    note="", results=results, chapters=[1])
book = {"columns": gradebook.columns([1], [], False), "rows": [row]}
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
gradebook.write(book, Path(sys.argv[1]))
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)
'''


def test_the_gradebook_json_is_written_without_holding_it_whole_in_memory(tmp_path):
    """a merge of 2,000 learners writes ~1.6 GB of gradebook.json: as one string it tripled the merge's memory"""
    proc = subprocess.run([sys.executable, "-c", WRITE_A_BIG_GRADEBOOK, str(tmp_path)], env={**os.environ,
                          "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    size = (tmp_path / "gradebook.json").stat().st_size / 2**20
    assert size > 20, "the file is big enough to show it"
    assert float(proc.stdout) < size / 2, f"writing {size:.0f} MiB took {float(proc.stdout):.0f} MiB more memory"


def test_the_merge_holds_a_text_that_every_learner_repeats_once(tmp_path):
    """2,000 learners' results repeat the same test names and messages: read once each, they halve the memory"""
    from kata.grading import gradebook
    from kata.grading.roster import Learner

    folders = []
    for i, student in enumerate(("ana", "ben"), start=1):
        results = {"chapters": [], "total": None, "checks": "public", "protections": [],
                   "message": "expected shape (2, 3)"}  # equal texts, read from two files
        row = gradebook.row(Learner(student, f"org/{student}", 2), status="graded", repo=f"org/{student}",
                            commit="c", committed_at=None, note="", results=results, chapters=[1])
        book = {"roster": {"students": ["ana", "ben"]}, "course_version": "v", "seed": 7, "deadline": None,
                "columns": gradebook.columns([1], [], False), "rows": [row], "created": "2027-03-02T00:00:00Z",
                "shard": f"{i}/2", "chapters": [{"chapter": 1, "title": "t"}]}
        folders.append(tmp_path / f"shard-{i}")
        folders[-1].mkdir()
        (folders[-1] / "gradebook.json").write_text(json.dumps(book), encoding="utf-8")
    merged = gradebook.merge(folders, tmp_path / "out", shards=2)
    ana, ben = (r["results"]["message"] for r in merged["rows"])
    assert ana == ben == "expected shape (2, 3)" and ana is ben
