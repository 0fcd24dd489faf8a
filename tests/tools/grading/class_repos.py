"""A class of learners' git repositories, built from ``solutions/`` and ``exercises/`` for ``grade-class``.

Used by ``tests/tools/grading/test_grade_class.py``, ``benchmarks/bench_grade_class.py`` and
``benchmarks/bench_class_scale.py`` (``scratch``: their temporary folder). Every repository is a
real local git repository with ``exercises/`` (and, for one learner, edited tests, ``conftest.py`` and
``grading.toml``), committed at fixed committer dates around ``DEADLINE``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from kata import project

ROOT = Path(__file__).resolve().parents[3]
DEADLINE = "2027-03-01T23:59:00+01:00"
BEFORE = "2027-02-20T10:00:00+01:00"
JUST_BEFORE = "2027-03-01T22:00:00+01:00"
AFTER = "2027-03-02T09:30:00+01:00"

CH4_WRONG = '''

def attention_scores(Q, K):  # planted: the classic mistake, no 1/sqrt(d_k)
    return raw_scores(Q, K)
'''
SOFTMAX_FOREVER = '''

def softmax(x, axis=-1):  # planted: never returns
    while True:
        pass
'''
SYNTAX_ERROR = '''

def broken(:  # planted: a syntax error
    pass
'''
TAMPERED_TEST = '''"""Every check passes, whatever the code does (a learner's edit)."""

CHAPTER = 4


def test_everything_is_fine():
    assert True
'''
TAMPERED_CONFTEST = '''"""A learner's conftest.py: reports every test as passed."""

import pytest


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    report.outcome = "passed"
    return report
'''


def git(repo: Path, *args: str, date: str = BEFORE) -> str:
    """Run git in ``repo`` as a throwaway identity with fixed author and committer dates."""
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="learner", GIT_AUTHOR_EMAIL="learner@example.invalid",
        GIT_COMMITTER_NAME="learner", GIT_COMMITTER_EMAIL="learner@example.invalid",
        GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date, GIT_CONFIG_NOSYSTEM="1", HOME=str(repo.parent),
    )
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, f"git {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _exercises(repo: Path, source: str, edits: dict[str, str] | None = None) -> None:
    target = repo / "exercises"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(ROOT / source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for module, code in (edits or {}).items():
        path = target / f"{module}.py"
        path.write_text(path.read_text(encoding="utf-8") + code, encoding="utf-8")


def _commit(repo: Path, message: str, date: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message, date=date)
    return git(repo, "rev-parse", "HEAD").strip()


def _new(repo: Path) -> Path:
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("my katas\n", encoding="utf-8")
    return repo


def build(folder: Path, which: tuple[str, ...] | None = None) -> dict[str, dict]:
    """Build the class under ``folder``; return ``{student: {"repo": path, ...facts}}`` and write roster.csv.

    Learners: ada (everything right), brian (chapter 4 wrong), chen (softmax never returns), dana (a syntax
    error in chapter 2), eve (untouched stubs, with tests, conftest.py and grading.toml edited to pass),
    finn (chapter 4 wrong before the deadline, everything right after it), and three with nothing to grade:
    gus (no such repository), hana (an empty repository), ivan (no exercises/ folder).
    """
    made: dict[str, dict] = {}

    def want(name: str) -> bool:
        return which is None or name in which

    one_commit = {  # the solutions with one chapter replaced (or none), committed once before the deadline
        "ada": ({}, "all done"),
        "brian": ({"chapter04_attention": CH4_WRONG}, "chapter 4"),
        "chen": ({"chapter04_attention": SOFTMAX_FOREVER}, "softmax"),
        "dana": ({"chapter02_matrices": SYNTAX_ERROR}, "chapter 2"),
    }
    for name, (replaced, message) in one_commit.items():
        if want(name):
            repo = _new(folder / name)
            _exercises(repo, "solutions", replaced)
            made[name] = {"repo": repo, "commit": _commit(repo, message, BEFORE)}
    if want("eve"):
        repo = _new(folder / "eve")
        _exercises(repo, "exercises")
        (repo / "tests").mkdir()
        for test in project.chapter_files(ROOT / "tests", prefix="test_").values():
            (repo / "tests" / test.name).write_text(TAMPERED_TEST.replace("CHAPTER = 4", f"CHAPTER = {project.chapter_number(test.name)}"),
                                                    encoding="utf-8")
        (repo / "conftest.py").write_text(TAMPERED_CONFTEST, encoding="utf-8")
        (repo / "grading.toml").write_text("[grade]\nstep_points = 100\n", encoding="utf-8")
        made["eve"] = {"repo": repo, "commit": _commit(repo, "make the checks pass", BEFORE)}
    if want("finn"):
        repo = _new(folder / "finn")
        _exercises(repo, "solutions", {"chapter04_attention": CH4_WRONG})
        on_time = _commit(repo, "before the deadline", JUST_BEFORE)
        _exercises(repo, "solutions")
        late = _commit(repo, "fixed, a day late", AFTER)
        made["finn"] = {"repo": repo, "commit": on_time, "late": late}
    if want("gus"):
        made["gus"] = {"repo": folder / "gus-never-made"}
    if want("hana"):
        repo = folder / "hana"
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        made["hana"] = {"repo": repo}
    if want("ivan"):
        repo = _new(folder / "ivan")
        made["ivan"] = {"repo": repo, "commit": _commit(repo, "just a readme", BEFORE)}
    lines = ["student,repo,section"]
    for i, (name, facts) in enumerate(made.items()):
        lines.append(f"{name},{facts['repo'].relative_to(folder) if facts['repo'].is_relative_to(folder) else facts['repo']},"
                     f"S{1 + i % 2}")
    (folder / "roster.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return made


COURSE_PARTS = ("kata", "tests", "reference", "solutions", "exercises", "conftest.py", "pyproject.toml", "grading.toml")


def course_copy(target: Path) -> Path:
    """A snapshot of the instructor's course copy (what grading reads), so edits elsewhere change nothing."""
    target.mkdir(parents=True)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "tools")
    for part in COURSE_PARTS:
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, target / part, ignore=skip)
        elif source.is_file():
            shutil.copy2(source, target / part)
    return target


@contextlib.contextmanager
def scratch(prefix: str, keep: bool) -> Iterator[Path]:
    """A benchmark's temporary folder: removed at the end, or with ``keep`` (``--keep``) kept and named."""
    base = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield base
    finally:
        if keep:
            print(f"kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
