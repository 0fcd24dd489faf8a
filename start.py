"""Set up the course's tools and run nox: `python3 start.py -s chapter1` (Windows: `py start.py -s chapter1`).

Why this file exists: `pip install nox` into a system Python is refused on Debian 12, Ubuntu 24.04, Homebrew
and others ("externally-managed-environment", PEP 668), and `--user` does not help. So the tools, nox and
uv, go into a virtual environment of their own, `.venv-tools/` in this folder, made with the standard
library's `venv`; nothing is installed outside this folder. Then nox runs from there with this script's
arguments (default `-s chapter1`, so `python3 start.py -l` is `nox -l`), and nox's exit code is this
script's. Later runs skip the set-up and start nox at once; delete `.venv-tools/` to set it up afresh.

Standard library only, and no syntax newer than Python 3.6, so that an old Python gets a clear message.
"""

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

MINIMUM = (3, 11)
TOOLS = ["nox==2026.10.20", "uv==0.13.9"]  # exact, like uv.lock; at least noxfile.py's nox.needs_version
ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv-tools"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / "kata-tools.txt"  # what was installed, by which Python: set-up is skipped while it matches

TOO_OLD = """\
Transformer Katas needs Python 3.11 or newer; this is Python {version} ({executable}).
Install a newer one, then run this with it, e.g. `python3.11 start.py` (Windows: `py -3.11 start.py`):
  Ubuntu 22.04:  sudo apt install python3.11 python3.11-venv
  macOS:         brew install python@3.13, or the installer from https://www.python.org/downloads/
  Windows:       the installer from https://www.python.org/downloads/
  any system:    uv python install 3.13  (uv: https://docs.astral.sh/uv/getting-started/installation/)"""

NO_VENV_PACKAGE = "sudo apt install python3-venv  (python3.{minor}-venv if this is not the system's default Python)"


def main(args):
    """Check the Python, set up `.venv-tools/` unless it is ready, then hand over to nox."""
    if sys.version_info < MINIMUM:
        sys.exit(TOO_OLD.format(version=sys.version.split()[0], executable=sys.executable))
    wanted = "\n".join([*TOOLS, sys.version, os.path.realpath(sys.executable)])
    if not (PYTHON.exists() and STAMP.exists() and STAMP.read_text(encoding="utf-8") == wanted):
        set_up()
        STAMP.write_text(wanted, encoding="utf-8")
    run_nox(args or ["-s", "chapter1"])


def have_ensurepip():
    """Whether `venv` can put pip into a new environment (Debian and Ubuntu split it off into python3-venv)."""
    return importlib.util.find_spec("ensurepip") is not None


def set_up():
    """Make `.venv-tools/` afresh and install nox and uv into it with its own pip."""
    print("start.py: setting up nox and uv in .venv-tools/ (the first time only) ...", flush=True)
    shutil.rmtree(VENV, ignore_errors=True)
    with tempfile.TemporaryDirectory() as scratch:
        if have_ensurepip():
            run([sys.executable, "-m", "venv", str(VENV)])
            pip, extra = [str(PYTHON), "-m", "pip"], []
        else:
            print("start.py: this Python has no ensurepip, so pip is fetched from PyPI instead. On Debian and Ubuntu "
                  "this adds it:\n  " + NO_VENV_PACKAGE.format(minor=sys.version_info[1]), flush=True)
            run([sys.executable, "-m", "venv", "--without-pip", str(VENV)])
            wheel = fetch_pip(Path(scratch))
            pip, extra = [str(PYTHON), str(wheel / "pip")], [str(wheel)]  # pip runs from its wheel, installs itself
        run([*pip, "install", "--quiet", "--disable-pip-version-check", *extra, *TOOLS])


def fetch_pip(folder):
    """The newest pip wheel from PyPI, checked against PyPI's sha256 of it."""
    index = "https://pypi.org/pypi/pip/json"
    try:
        with urllib.request.urlopen(index, timeout=60) as response:
            wheel = next(f for f in json.load(response)["urls"] if f["packagetype"] == "bdist_wheel")
        with urllib.request.urlopen(urllib.parse.urljoin(index, wheel["url"]), timeout=60) as response:
            data = response.read()
    except OSError as error:
        sys.exit(f"start.py: could not fetch pip from PyPI ({error}). On Debian and Ubuntu, add ensurepip and run "
                 f"this again:\n  {NO_VENV_PACKAGE.format(minor=sys.version_info[1])}")
    if hashlib.sha256(data).hexdigest() != wheel["digests"]["sha256"]:
        sys.exit("start.py: the pip wheel from PyPI does not match PyPI's sha256 of it; run this again")
    path = folder / wheel["filename"]
    path.write_bytes(data)
    return path


def run(command):
    """Run a set-up step; stop with a plain message (no traceback) when it fails."""
    if subprocess.run(command).returncode != 0:
        sys.exit("start.py: setting up the tools failed (see above); nothing outside .venv-tools/ was changed.\n"
                 f"  the step: {' '.join(command)}")


def run_nox(args):
    """Run nox from `.venv-tools/`, in this folder, with the tools first on PATH; exit with nox's exit code."""
    command = [str(PYTHON), "-m", "nox", *args]
    env = dict(os.environ, PATH=str(BIN) + os.pathsep + os.environ.get("PATH", ""))  # nox and uv, for nested runs
    os.chdir(ROOT)
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name != "nt":
        os.execve(command[0], command, env)  # nox takes this process over: its exit code and Ctrl-C are its own
    process = subprocess.Popen(command, env=env)
    while True:
        try:
            sys.exit(process.wait())
        except KeyboardInterrupt:
            pass  # nox got the Ctrl-C as well and stops by itself; wait for its exit code


if __name__ == "__main__":
    main(sys.argv[1:])
