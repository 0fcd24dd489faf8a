"""The README's first command works on a Debian-12-like machine that has only the system Python (PEP 668).

The working tree (what git lists) is copied to a temporary folder and the README's first command runs there,
exactly as written, with PATH=/usr/bin:/bin: `python3` is then /usr/bin/python3, which on Debian 12 and
Ubuntu 24.04 refuses `pip install` ("externally-managed-environment"). It must set up `.venv-tools/`, run
chapter 1 on the untouched stubs and end as the README says: every step "not started", nox's "Session
chapter1 failed". A second run skips the set-up.

About 20 s in all with warm pip and uv caches (this machine: 12 s for the first command, 1.5 s for a re-run);
the first run on a new machine downloads nox, uv, NumPy and pytest from PyPI. Only PyPI is contacted.
Skipped where /usr/bin/python3 is missing or older than 3.11.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_readme import _fresh_machine_commands, _fresh_machine_section

ROOT = Path(__file__).resolve().parents[1]
SYSTEM_PYTHON = "/usr/bin/python3"
pytestmark = pytest.mark.slow



def _system_python_ok() -> bool:
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return False
    probe = [SYSTEM_PYTHON, "-c", "import sys; sys.exit(sys.version_info < (3, 11))"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


needs_system_python = pytest.mark.skipif(not _system_python_ok(), reason=f"no {SYSTEM_PYTHON} 3.11 or newer")


def _system_env() -> dict:
    """This process's environment without any virtual environment, pyenv or nox in it; only the system's PATH."""
    drop = {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTEST_ADDOPTS", "PYENV_VERSION", "CONDA_PREFIX"}
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("NOX_")}
    env["PATH"] = "/usr/bin:/bin"
    return env


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(command, shell=True, executable="/bin/bash", cwd=cwd, env=_system_env(),
                          capture_output=True, text=True, timeout=900, check=False)


@pytest.fixture(scope="module")
def fresh_copy(tmp_path_factory) -> Path:
    """The working tree as a learner's fresh clone would have it: no .venv-tools/, no .nox/."""
    if shutil.which("git") is None:
        pytest.skip("git is needed to list the repository's files")
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, text=True, check=True).stdout
    copy = tmp_path_factory.mktemp("fresh") / "transformer-katas"
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    return copy


@needs_system_python
def test_the_first_command_starts_chapter_1_with_only_the_system_python(fresh_copy):
    """the README's first command sets up the tools and ends as the README says: chapter 1 not started"""
    command = _fresh_machine_commands()[0]
    first = _run(command, fresh_copy)
    out = first.stdout + first.stderr
    assert "externally-managed-environment" not in out, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    assert "start.py: setting up nox and uv" in out, out[-3000:]
    assert first.returncode == 1, f"nox should report the not-started chapter as failed:\n{out[-3000:]}"
    shown = _fresh_machine_section().split("```text\n", 1)[1].split("```", 1)[0]
    for line in shown.splitlines():
        if line.strip() != "...":
            assert line in out.splitlines(), f"the README shows {line!r}; the run printed:\n{out[-3000:]}"
    steps = [line for line in first.stdout.splitlines() if line.lstrip().startswith(("·", "✓", "✗"))]
    assert steps and all(line.startswith("  · ") and line.endswith("not started") for line in steps), steps

    again = _run(command, fresh_copy)
    assert again.returncode == 1 and "Session chapter1 failed." in again.stdout + again.stderr
    assert "setting up" not in again.stdout + again.stderr, "a second run should reuse .venv-tools/"


@needs_system_python
def test_nox_called_by_its_path_finds_the_uv_installed_beside_it(fresh_copy, tmp_path):
    """`.venv-tools/bin/nox -s chapter1` without start.py makes the course's environment with uv

    start.py puts .venv-tools/bin first on PATH; the sessions run uv by name, and an author who called nox by its
    path, with no course environment yet, got "Program uv not found".
    """
    if not (fresh_copy / ".venv-tools").is_dir():
        _run(_fresh_machine_commands()[0], fresh_copy)
    envs = tmp_path / "nox"  # no course environment there yet: the session makes it with uv
    direct = _run(f".venv-tools/bin/nox --envdir {envs} -s chapter1 --install-only", fresh_copy)
    out = direct.stdout + direct.stderr
    assert "not found" not in out and "Traceback" not in out, out[-3000:]
    assert direct.returncode == 0 and (envs / "course" / "bin" / "python").exists(), out[-3000:]


@needs_system_python
def test_the_old_command_is_refused_here():
    """control: where the system Python is externally managed, `python3 -m pip install` is refused"""
    probe = "import pathlib, sysconfig; print(pathlib.Path(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED').exists())"
    managed = subprocess.run([SYSTEM_PYTHON, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    if managed != "True":
        pytest.skip(f"{SYSTEM_PYTHON} is not externally managed here")
    refused = _run("python3 -m pip install --dry-run nox", ROOT)
    if "No module named pip" in refused.stderr:
        pytest.skip(f"{SYSTEM_PYTHON} has no pip")
    assert refused.returncode != 0 and "externally-managed-environment" in refused.stdout + refused.stderr


@needs_system_python
def test_without_ensurepip_start_fetches_pip_from_pypi(tmp_path):
    """Debian/Ubuntu without python3-venv: start.py still sets up the tools, and names the package to install"""
    shutil.copy2(ROOT / "start.py", tmp_path / "start.py")
    code = "import start; start.have_ensurepip = lambda: False; start.main(['--version'])"
    proc = subprocess.run([SYSTEM_PYTHON, "-c", code], cwd=tmp_path, env=_system_env(),
                          capture_output=True, text=True, timeout=600, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "sudo apt install python3-venv" in out
    assert (tmp_path / ".venv-tools" / "bin" / "nox").exists() and (tmp_path / ".venv-tools" / "bin" / "uv").exists()


def test_an_old_python_gets_told_what_to_install(tmp_path):
    """below 3.11, start.py names what to install instead of failing somewhere inside pip or nox"""
    shutil.copy2(ROOT / "start.py", tmp_path / "start.py")
    code = "import sys; sys.version_info = (3, 10, 12); import start; start.main([])"
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert proc.returncode == 1
    assert "needs Python 3.11 or newer" in proc.stderr and "python.org" in proc.stderr, proc.stderr
    assert not (tmp_path / ".venv-tools").exists()
