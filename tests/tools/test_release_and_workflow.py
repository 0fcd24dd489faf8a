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

from kata.grading import release

from .conftest import ROOT, git

pytestmark = pytest.mark.slow
WORKFLOW = ROOT / ".github" / "workflows" / "grade.yml"


def nox_command() -> list[str]:
    found = shutil.which("nox")
    if found is None:
        pytest.fail("nox is not on PATH (the README's first command installs it)")
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
        ["__init__.py", "snapshots", *(p.name for p in (ROOT / "tests").glob("test_chapter*.py"))]
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
