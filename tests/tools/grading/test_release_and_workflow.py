"""`nox -s release` and `.github/workflows/grade.yml`, end to end, without GitHub.

The student edition is written, committed and tagged as a course repository; a learner's repository is
made from its files (as GitHub's "use this template" does: no history, no tags), a chapter is solved and
a test is tampered with. Then the edition's `nox -s chapter1` runs, and every `run:` step of the grading
workflow runs as GitHub would run it, with $GITHUB_STEP_SUMMARY pointing at a file.

Slow (nox sessions and their environments); the environments are shared with this repository's .nox/
so that only the first run ever installs anything.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from kata import project
from kata.grading import release

from ..conftest import ROOT, copy_repository, git, tool

pytestmark = pytest.mark.slow
WORKFLOW = ROOT / ".github" / "workflows" / "grade.yml"


def nox_command() -> list[str]:
    found = shutil.which("nox")
    if found is None:
        pytest.fail("nox is not on PATH: run the suite as the README does (python3 start.py -s selfcheck puts "
                    ".venv-tools/bin first on PATH), or put .venv-tools/bin on PATH yourself")
    return [found]


def run(cmd: list[str] | str, cwd, env=None, timeout=600) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTEST_ADDOPTS", "GITHUB_STEP_SUMMARY")}
    return subprocess.run(
        cmd, cwd=cwd, env={**base, **(env or {})}, capture_output=True, text=True, timeout=timeout, check=False,
        shell=isinstance(cmd, str), executable="/bin/bash" if isinstance(cmd, str) else None,
    )


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The edition, committed and tagged v1, as the course's public repository."""
    base = tmp_path_factory.mktemp("course")
    edition = base / "course"
    done = release.release(ROOT, edition, course_repo=str(edition), tag="v1")
    assert done["written"] > 20
    git(edition, "init", "-q", "-b", "main")
    git(edition, "add", "-A")
    git(edition, "commit", "-q", "-m", "Transformer Katas, student edition")
    git(edition, "tag", "v1")
    return edition


@pytest.fixture(scope="module")
def learner(course, tmp_path_factory):
    """A learner's repository made from the template, chapter 1 solved, a chapter 2 test tampered with."""
    repo = tmp_path_factory.mktemp("learner") / "repo"
    shutil.copytree(course, repo, ignore=shutil.ignore_patterns(".git"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Initial commit")
    (ROOT / ".nox").mkdir(exist_ok=True)
    (repo / ".nox").symlink_to(ROOT / ".nox", target_is_directory=True)  # reuse this repository's environments
    shutil.copy2(ROOT / "solutions" / "chapter01_sequences.py", repo / "exercises" / "chapter01_sequences.py")
    test2 = repo / "tests" / "test_chapter02_matrices.py"
    test2.write_text('CHAPTER = 2\n\n\ndef test_all_good():\n    """fine"""\n', encoding="utf-8")
    git(repo, "commit", "-q", "-am", "chapter 1, and chapter 2's tests made easier")
    return repo


def test_the_edition_has_no_solutions_and_the_grading_workflow(course):
    """no solutions/, no authors' meta tests, no solution sections; the workflow set to the course and tag"""
    assert not (course / "solutions").exists()
    assert not list((course / "scripts").glob("audit_*")), "an audit script recomputes a worksheet: a solution"
    assert sorted(p.name for p in (course / "tests").iterdir()) == sorted(
        ["__init__.py", "snapshots", *(p.name for p in project.chapter_files(ROOT / "tests", prefix="test_").values())]
    )
    assert sorted(p.name for p in (course / "tests" / "snapshots").iterdir()) == sorted(
        p.name for p in (ROOT / "tests" / "snapshots").glob("chapter*.npz"))
    for page in course.rglob("*.md"):
        for line in page.read_text(encoding="utf-8").splitlines():
            assert not line.strip().startswith(("<!-- kata:solution", "<!-- kata:authors-only")), page
    instructors = (course / "docs" / "instructors.md").read_text(encoding="utf-8")
    expected, _ = release.strip_sections((ROOT / "docs" / "instructors.md").read_text(encoding="utf-8"), "")
    assert instructors == expected and "## The student edition" not in instructors  # only the marked sections go
    workflow = (course / ".github" / "workflows" / "grade.yml").read_text(encoding="utf-8")
    assert f'COURSE_REPO: "{course}"' in workflow and 'COURSE_TAG: "v1"' in workflow
    assert (course / "kata" / "grading" / "grade.py").exists() and (course / "grading.toml").exists()


def test_solution_sections_are_cut_and_unclosed_markers_refused():
    """the marked sections go, the rest stays; an unclosed marker is an error, not a leak"""
    text = "intro\n<!-- kata:solution -->\nthe answer\n<!-- /kata:solution -->\noutro\n"
    assert release.strip_sections(text, "page.md") == ("intro\noutro\n", 1)
    quoted = "mark it with `<!-- kata:solution -->` and `<!-- /kata:solution -->`\n"
    assert release.strip_sections(quoted, "page.md") == (quoted, 0)
    with pytest.raises(ValueError, match="page.md"):
        release.strip_sections("a\n<!-- kata:solution -->\nthe answer\n", "page.md")


def test_the_editions_chapter_session_runs(learner):
    """nox -s chapter1 in the learner's repository checks chapter 1 (solved there)"""
    proc = run([*nox_command(), "-s", "chapter1"], cwd=learner)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "chapter 1: " in proc.stdout


def test_the_workflow_grades_with_the_course_tests(course, learner, tmp_path):
    """every run: step of grade.yml, run locally: the course's tests are used, the report names the tampered file"""
    yaml = pytest.importorskip("yaml")
    spec = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert spec["permissions"] == {"contents": "read"}
    assert "secrets." not in WORKFLOW.read_text(encoding="utf-8")
    env = {k: str(v) for k, v in spec["env"].items()}
    env.update(COURSE_REPO=str(course), COURSE_TAG="v1", GITHUB_STEP_SUMMARY=str(tmp_path / "step_summary.md"))
    steps = spec["jobs"]["grade"]["steps"]
    uses = [s["uses"].split("@")[0] for s in steps if "uses" in s]
    assert uses == ["actions/checkout", "actions/setup-python", "actions/upload-artifact"]
    for step in steps:
        if "run" not in step:
            continue
        if step.get("name", "").startswith("Set up:"):
            assert step["run"].strip().startswith(("python -m pip install", "sudo apt-get install")), step  # tools only
            continue
        proc = run(f"set -eo pipefail\n{step['run']}", cwd=learner, env=env)
        assert proc.returncode == 0, f"{step['name']}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    results = json.loads((learner / "grade" / "results.json").read_text(encoding="utf-8"))
    by_number = {c["chapter"]: c for c in results["chapters"]}
    assert by_number[1]["status"] == "passed"
    assert by_number[2]["status"] == "not started" and by_number[2]["total"] > 1
    differed = [d["path"] for d in results["pristine"]["differed"]]
    assert differed == ["tests/test_chapter02_matrices.py"]
    summary = (tmp_path / "step_summary.md").read_text(encoding="utf-8")
    assert "`tests/test_chapter02_matrices.py` (modified)" in summary
    for name in ("results.json", "junit.xml", "summary.md"):
        assert (learner / "grade" / name).exists()


def test_a_release_after_grading_refuses_the_roster_and_the_gradebook(tmp_path):
    """a roster, a gradebook and its cache never reach the edition; an unlisted file stops it, named, unwritten"""
    course = copy_repository(tmp_path / "course")
    git(course, "init", "-q", "-b", "main")
    private = {"class/roster.csv": "student,repo,email\nana,ana/katas,ana@example.invalid\n",
               "gradebook/gradebook.csv": "student,percent\nana,80\n",
               "gradebook/.cache/ab/abcdef/results.json": "{}",
               "gradebook/students/ana/summary.md": "## ana\n",
               "notes/marks-2027.xlsx": "marks"}
    for name, text in private.items():
        (course / name).parent.mkdir(parents=True, exist_ok=True)
        (course / name).write_text(text, encoding="utf-8")
    git(course, "add", "-A")
    git(course, "add", "-f", "class/roster.csv")  # committed, as the docs once advised
    git(course, "commit", "-q", "-m", "course with a graded class")
    edition = tmp_path / "edition"
    proc = tool("release", str(edition), root=course)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "class/roster.csv" in proc.stdout and "notes/marks-2027.xlsx" in proc.stdout, proc.stdout
    assert "gradebook/gradebook.csv" not in proc.stdout  # ignored by git: not even a candidate
    assert not edition.exists() or not any(edition.iterdir()), "a refused release wrote files"

    proc = tool("release", str(edition), "--include", "notes", root=course)
    assert proc.returncode == 2 and "class/roster.csv" in proc.stdout and "notes/" not in proc.stdout.split(
        "--include PATH", 1)[1], proc.stdout

    git(course, "rm", "-q", "--cached", "class/roster.csv")
    proc = tool("release", str(edition), "--include", "notes", root=course)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    written = {p.relative_to(edition).as_posix() for p in edition.rglob("*") if p.is_file()}
    assert "notes/marks-2027.xlsx" in written and "included (--include): notes/marks-2027.xlsx" in proc.stdout
    assert not [p for p in written if p.startswith(("class/", "gradebook/")) or ".cache" in p], written

    # an instructor's trial: copies of the gradebook and the roster saved inside the course's own folders
    for name in ("data/grades-2027.csv", "exercises/class_list.csv", "docs/class-notes.md"):
        (course / name).parent.mkdir(parents=True, exist_ok=True)
        (course / name).write_text("ana,ana@example.invalid,80\n", encoding="utf-8")
    proc = tool("release", str(tmp_path / "edition3"), "--include", "notes", root=course)
    assert proc.returncode == 2 and "not committed to git" in proc.stdout, proc.stdout + proc.stderr
    for name in ("data/grades-2027.csv", "exercises/class_list.csv", "docs/class-notes.md"):
        assert name in proc.stdout, (name, proc.stdout)
    assert not (tmp_path / "edition3").exists() or not any((tmp_path / "edition3").iterdir())
    proc = tool("release", str(tmp_path / "edition3"), "--include", "notes", "--include", "docs/class-notes.md",
                root=course)
    assert proc.returncode == 2 and "docs/class-notes.md" not in proc.stdout.split("--include PATH", 1)[1], proc.stdout
    for name in ("data/grades-2027.csv", "exercises/class_list.csv", "docs/class-notes.md"):
        (course / name).unlink()

    shutil.rmtree(course / ".git")  # no git: every file is a candidate, the gradebook and its cache too
    proc = tool("release", str(tmp_path / "edition2"), root=course)
    assert proc.returncode == 2, proc.stdout
    for name in ("class/roster.csv", "gradebook/gradebook.csv", "gradebook/.cache/ab/abcdef/results.json"):
        assert name in proc.stdout, (name, proc.stdout)
    assert not (tmp_path / "edition2").exists()
