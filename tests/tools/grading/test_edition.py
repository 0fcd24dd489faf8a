"""A fresh student edition speaks only of what it holds: no session, description or page needs `solutions/`.

`nox -s release` writes the edition; then, inside it, a bare `nox`, `nox -l` and every learner session run as a
learner runs them, on the untouched stubs, and none of them may mention `solutions/`, `--impl solutions` or
`selfcheck` (which exist only in the authors' edition), fail to import, or fail for any reason but "not started".

Slow: about 90 s with the environments warm (two cores, shared). They are shared with this repository's `.nox/` (`--envdir`,
`-R`: an environment that exists is reused without installing), so only the first run ever installs anything.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kata import project
from kata.grading import release

from ..conftest import ROOT

pytestmark = pytest.mark.slow
FORBIDDEN = re.compile(r"solutions/|--impl solutions|selfcheck|No module named 'solutions'")
LEARNER_SESSIONS = ["progress", "watch", "hint", "worksheet", "doctor", "grade", "lint", "lab", "bench-serve"]


def nox_command() -> list[str]:
    """nox as the README's first command installs it (`.venv-tools/`), else the one on PATH."""
    tools = ROOT / ".venv-tools" / ("Scripts" if os.name == "nt" else "bin") / "nox"
    found = str(tools) if tools.exists() else shutil.which("nox")
    if found is None:
        pytest.fail("nox is neither in .venv-tools/ nor on PATH (the README's first command installs it)")
    return [found]


def nox(edition: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run nox in the edition with this repository's environments; stdout and stderr together."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTEST_ADDOPTS", "GITHUB_STEP_SUMMARY")}
    (ROOT / ".nox").mkdir(exist_ok=True)
    return subprocess.run([*nox_command(), "--envdir", str(ROOT / ".nox"), "-R", *args], cwd=edition, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout, check=False)


def clean(proc: subprocess.CompletedProcess, what: str) -> str:
    """The output, after checking it says nothing of solutions/ or the authors' sessions."""
    found = FORBIDDEN.search(proc.stdout)
    assert found is None, f"{what} mentions {found.group(0)!r}:\n{proc.stdout[-4000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def edition(tmp_path_factory) -> Path:
    """A fresh student edition."""
    target = tmp_path_factory.mktemp("edition") / "course"
    release.release(ROOT, target)
    assert not (target / "solutions").exists()
    return target


def test_pages_for_authors_and_instructors_say_nothing_of_solutions(edition):
    """CONTRIBUTING.md and every page keep their solutions/ passages only inside authors-only sections"""
    for page in [edition / "README.md", edition / "CONTRIBUTING.md", *sorted((edition / "docs").rglob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        found = FORBIDDEN.search(text)
        assert found is None, f"{page.relative_to(edition)} says {found.group(0)!r} in the student edition"


def test_nox_list_offers_only_what_the_edition_holds(edition):
    """`nox -l`: every chapter and learner session, progress the default, no authors' session or solutions/"""
    out = clean(nox(edition, "-l"), "nox -l")
    sessions = {name: mark for mark, name in re.findall(r"^([*-]) (\S+) ->", out, re.M)}
    assert sessions, out
    chapters = list(project.chapter_files(edition / "reference", ".toml"))
    for name in [f"chapter{n}" for n in chapters] + LEARNER_SESSIONS:
        assert name in sessions, f"nox -l does not list {name}:\n{out}"
    assert [name for name, mark in sessions.items() if mark == "*"] == ["progress"], out
    for authors in ("selfcheck", "bench", "release", "mutation", "docs-browser", "docs-zensical",
                    "notebooks-build"):
        assert authors not in sessions, f"the student edition lists the authors' session {authors}"


def test_bare_nox_shows_the_progress(edition):
    """a bare `nox` runs progress: every chapter not started, the next step named, exit 0"""
    proc = nox(edition)
    out = clean(proc, "nox")
    assert proc.returncode == 0, out[-4000:]
    assert "progress of exercises/" in out and "next: chapter 1, step 1.1" in out, out[-3000:]


def test_every_chapter_session_is_the_expected_start(edition):
    """`nox -s chapter1 … chapterN`: every step not started, nothing fails to import, nox's failure explained"""
    chapters = list(project.chapter_files(edition / "reference", ".toml"))
    proc = nox(edition, "-s", *[f"chapter{n}" for n in chapters])
    out = clean(proc, "the chapter sessions")
    assert proc.returncode != 0
    assert "does not import" not in out and "Traceback" not in out, out[-4000:]
    for n in chapters:
        assert re.search(rf"^chapter {n}: 0/\d+ steps, 0/\d+ checks$", out, re.M), f"chapter {n}:\n{out[-3000:]}"
        assert f"(the expected start: nox now reports 'Session chapter{n} failed'" in out
    assert not re.search(r"^\s+[✓✗!⧗] ", out, re.M), "a step that is neither passed nor not started"


@pytest.mark.parametrize("args", [
    ["hint", "--", "4.3"],
    ["worksheet", "--", "4"],
    ["doctor"],
    ["watch", "--", "1", "--once", "--no-clear"],
    ["grade", "--", "--chapters", "1,4", "--out", "{tmp}/grade"],
    ["lint"],
    ["lab", "--", "--version"],  # JupyterLab itself would start a server: its version proves it is installed
], ids=lambda a: a[0])
def test_learner_sessions_run(edition, args, tmp_path):
    """hint, worksheet, doctor, watch --once, grade, lint and lab run in the edition without solutions/"""
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    proc = nox(edition, "-s", *args)
    out = clean(proc, f"nox -s {' '.join(args)}")
    if args[0] == "watch":
        assert "chapter 1: 0/" in out, out[-3000:]  # --once: one check, exit code as the chapter run's
        return
    assert proc.returncode == 0, out[-4000:]
    if args[0] == "hint":
        link = re.search(r"^docs: (\S+?)(#\S+)?$", out, re.M)
        assert link and (edition / link.group(1)).is_file(), f"the hint's link leads nowhere:\n{out}"
    if args[0] == "grade":
        assert (tmp_path / "grade" / "results.json").is_file()
    if args[0] == "doctor":
        assert "next:" in out


def test_the_edition_tests_run_with_pytest_alone(edition):
    """`python -m pytest` in the edition collects the chapter tests only, with no authors' test left over"""
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                          cwd=edition, capture_output=True, text=True, timeout=300, check=False,
                          env={k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    files = {line.split("::")[0] for line in proc.stdout.splitlines() if "::" in line}
    assert files and all(re.fullmatch(r"tests/test_chapter\d\d_\w+\.py", f) for f in files), files
