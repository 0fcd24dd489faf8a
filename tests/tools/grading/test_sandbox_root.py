"""The sandbox holds where the grader really runs, as root too, and a learner graded unsealed fails the class run.

Run by root, bubblewrap used to keep every capability inside the sandbox: a learner's code remounted the read-only
binds, wrote a ``.pth`` file into the grader's own site-packages (run from then on by every later Python of that
environment), read ``/etc/shadow``, and forked children that multiplied its memory (``RLIMIT_NPROC`` does not hold
for root). Here that learner is run for real, in the real bubblewrap, and nothing gets through. A bubblewrap that
cannot start (as on Ubuntu 24.04: "setting up uid map: Permission denied") fails the class run, naming it, unless
the instructor says ``--allow-unsealed``; a "sandbox" that does not seal is found by the worker's probe, not
presumed from the binary.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from kata.grading import gradebook
from kata.judge import proxy

from ..conftest import tool
from . import class_repos

pytestmark = pytest.mark.slow
NEEDS_BWRAP = pytest.mark.skipif(not shutil.which("bwrap") or not sys.platform.startswith("linux"),
                                 reason="about bubblewrap's sandbox: bubblewrap is not installed (CI installs it)")

# The learner: everything the issue found, tried at import; what it got is the message of the error it raises.
ESCAPE = '''
import ctypes, json, os, sys, time

def _escape():
    found = {"uid": os.geteuid()}
    with open("/proc/self/status") as f:
        found["capeff"] = next(line.split()[1] for line in f if line.startswith("CapEff"))
    libc = ctypes.CDLL(None, use_errno=True)
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    found["remounted"] = [p for p in points if libc.mount(None, p.encode(), None, 32 | 4096, None) == 0]
    found["written"] = []
    sites = [p for p in sys.path if p.endswith("-packages") and os.path.isdir(p)]
    for folder in [*sites, os.path.dirname(sys.modules["kata"].__file__), os.getcwd()]:
        try:
            with open(os.path.join(folder, "PLANTED"), "w") as f:
                f.write("# written by a learner's code\\n")
            found["written"].append(folder)
        except OSError:
            pass
    try:
        with open("/etc/shadow") as f:
            found["shadow"] = f.readline()[:12]
    except OSError as err:
        found["shadow"] = None
    children = []
    for _ in range(3):
        try:
            pid = os.fork()
        except OSError as err:
            found["fork"] = str(err)
            break
        if pid == 0:
            try:
                block = b"\\x01" * (256 * 2**20)
                time.sleep(1)
            finally:
                os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)
    found["children"] = len(children)
    raise ImportError("FOUND " + json.dumps(found))

_escape()
'''

FAILING_BWRAP = '''#!/bin/sh
# Bubblewrap as Ubuntu 24.04 runs it for an ordinary user: AppArmor refuses the user namespace.
echo "bwrap: setting up uid map: Permission denied" >&2
exit 1
'''

# A "bubblewrap" that seals nothing: it runs the worker's Python (its command from there on) as it is.
EXEC_BWRAP = '''#!{python}
import os, sys
args = sys.argv[1:]
if {python!r} not in args:  # --help
    sys.exit(0)
command = args[args.index({python!r}):]
os.execv(command[0], command)
'''


def _fake_bwrap(folder: Path, text: str) -> dict[str, str]:
    """A folder holding ``bwrap`` with ``text``, first on PATH: the environment that finds it."""
    folder.mkdir(parents=True, exist_ok=True)
    fake = folder / "bwrap"
    fake.write_text(text, encoding="utf-8")
    fake.chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', os.defpath)}"}


@pytest.fixture
def fresh_launcher(monkeypatch):
    """The launcher as in a new judge: no spare worker, the sandbox not looked for yet (restored after)."""
    proxy.drop_spare()
    monkeypatch.setattr(proxy, "_sandbox", False)
    monkeypatch.setattr(proxy, "_cause", "", raising=False)
    yield monkeypatch
    proxy.drop_spare()


def _package(root: Path, code: str) -> Path:
    package = root / "learner"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "chapter99_escape.py").write_text(textwrap.dedent(code), encoding="utf-8")
    return root


@NEEDS_BWRAP
def test_a_learner_trying_every_way_out_changes_nothing_on_the_host(tmp_path, fresh_launcher):
    """remount, a .pth in the grader's site-packages, kata/, /etc/shadow, forked children: none gets through"""
    fresh_launcher.delenv("KATA_NO_SANDBOX", raising=False)
    sites = [Path(p) for p in sys.path if p.endswith("-packages") and Path(p).is_dir()]
    planted = [*(s / "PLANTED" for s in sites), proxy.ROOT / "kata" / "PLANTED"]
    worker = proxy.Worker(_package(tmp_path / "impl", ESCAPE), "learner", call_timeout=10.0)
    try:
        with pytest.raises(ImportError, match="FOUND") as caught:
            worker.import_module("chapter99_escape")
        protections = worker.protections
    finally:
        worker.close()
        leaked = [p for p in planted if p.exists()]
        for path in leaked:  # a .pth in the grader's own environment would outlive this test: take it away
            path.unlink()
    found = json.loads(str(caught.value).split("FOUND ", 1)[1])
    print(f"inside the sandbox: uid {found['uid']}, CapEff {found['capeff']}; {found.get('fork')}")
    assert proxy.SANDBOXED in protections, protections
    assert not leaked, f"learner's files on the host: {leaked}"
    assert found["remounted"] == [] and found["written"] == [], found
    assert found["uid"] != 0 and int(found["capeff"], 16) == 0, found
    assert found["shadow"] is None, found
    assert found["children"] == 0 and "fork" in found, found  # no new process: its memory is bounded as one
    assert any(p.startswith("no new processes") for p in protections), protections


def test_a_sandbox_that_does_not_seal_is_reported_unsealed(tmp_path, fresh_launcher):
    """a bubblewrap that runs the worker as it is: the worker's probe finds a way out, the bubblewrap line is not said"""
    fresh_launcher.delenv("KATA_NO_SANDBOX", raising=False)
    fresh_launcher.setenv("PATH", _fake_bwrap(tmp_path / "bin", EXEC_BWRAP.format(python=sys.executable))["PATH"])
    worker = proxy.Worker(_package(tmp_path / "impl", "def one():\n    return 1\n"), "learner")
    try:
        assert worker.call("chapter99_escape", "one", (), {}) == 1
        protections = worker.protections
    finally:
        worker.close()
    assert proxy.SANDBOXED not in protections, protections
    said = [p for p in protections if p.startswith("no sandbox")]
    assert len(said) == 1 and said[0].startswith("no sandbox: the sandbox did not hold: "), protections
    assert ("it runs as root (uid 0)" in said[0]) == (os.geteuid() == 0), said
    assert "a write in " in said[0], said


def test_a_class_graded_unsealed_fails_unless_allowed(tmp_path):
    """Bubblewrap that cannot start, as on Ubuntu 24.04, stops the class run (exit 3) unless allowed.

    Nothing is graded and no learner's code runs; the sandbox and its fix are named. With --allow-unsealed the class
    is graded, every row and the report saying so.
    """
    course = class_repos.course_copy(tmp_path / "course")
    class_repos.build(tmp_path / "learners", ("ada",))
    env = _fake_bwrap(tmp_path / "bin", FAILING_BWRAP)
    roster, out = str(tmp_path / "learners" / "roster.csv"), tmp_path / "out"
    proc = tool("grade-class", roster, "--out", str(out), "--chapters", "1", "--seed", "1", root=course, env=env,
                timeout=300)
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-3000:]
    said = proc.stderr
    assert "nothing graded: the sandbox does not hold on this machine: bubblewrap failed to start: setting up uid " \
           "map: Permission denied" in said, said
    assert "sudo apt-get install bubblewrap" in said and "Ubuntu 24.04" in said and "--allow-unsealed" in said, said
    assert not (out / "gradebook.json").exists() and not (out / "students" / "ada").exists()  # nobody was graded

    proc = tool("grade-class", roster, "--out", str(out), "--chapters", "1", "--seed", "1", "--allow-unsealed",
                root=course, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    row = json.loads((out / "gradebook.json").read_text(encoding="utf-8"))["rows"][0]
    assert row["status"] == "graded" and row["sandbox"] == "none (allowed)", row["sandbox"]
    assert "graded without a sandbox (allowed: --allow-unsealed): bubblewrap failed to start" in row["note"]
    assert "graded unsealed (allowed)" in (out / "report.html").read_text(encoding="utf-8")
    assert "graded without a sandbox (the note says why" in proc.stdout  # the console's "read the note of"
    assert "install bubblewrap" not in proc.stdout  # it is installed: it could not start (the note's cause)


def test_where_sealing_is_required_an_unsealed_worker_never_loads_the_learners_code(tmp_path, fresh_launcher):
    """grade-class's learners (proxy.SEAL_REQUIRED): a sandbox whose probe fails is ended before the learner's import"""
    fresh_launcher.delenv("KATA_NO_SANDBOX", raising=False)
    fresh_launcher.setenv("PATH", _fake_bwrap(tmp_path / "bin", EXEC_BWRAP.format(python=sys.executable))["PATH"])
    fresh_launcher.setenv(proxy.SEAL_REQUIRED, "1")
    marker = tmp_path / "RAN"
    worker = proxy.Worker(_package(tmp_path / "impl", f"open({str(marker)!r}, 'w').close()\n"), "learner")
    try:
        with pytest.raises(proxy.Unsealed, match="the learner's code was not run: the sandbox did not hold"):
            worker.import_module("chapter99_escape")
        assert any(p.startswith(proxy.UNSEALED) for p in worker.protections), worker.protections
    finally:
        worker.close()
    assert not marker.exists(), "the learner's code ran unsealed"


def test_one_unsealed_worker_makes_the_learner_unsealed():
    """a learner whose workers were sealed but once (a restart that fell back) is graded unsealed, with the cause"""
    results = {"protections": [proxy.SANDBOXED, proxy.unsealed("bubblewrap failed to start: out of memory")]}
    assert gradebook.sandbox(results) == "none"
    assert gradebook.sandbox(results, allow_unsealed=True) == "none (allowed)"
    assert gradebook.unsealed_cause(results) == "bubblewrap failed to start: out of memory"
