"""Starting the learner's process before anyone knows whose code it will run.

Starting a worker costs a Python and a NumPy import (about 0.15 s), which is most of a quick chapter
check. So a worker is *launched* early, empty: Python and NumPy loaded, in its sandbox, waiting for its
first frame. ``proxy.Worker`` then takes it, copies the learner's code into its folder and sends the
set-up (which implementation, which limits); only then does the learner's code load. An empty worker
has run nothing of anyone's, so it is as fresh as one started on demand.

- The judge launches one as its plugin is imported, before its own NumPy import, so the two load
  side by side (``prestart``).
- A warm judge (``nox -s watch``, ``kata/judge/warm.py``) keeps one ready between checks; each check is
  a fork of it and takes the spare over (``handed_over``). The fork is then not the worker's parent, so
  the worker's exit status is read from ``/proc`` while the warm judge leaves it unreaped
  (``reap`` waits until the check that took it has ended).

This module imports no NumPy: it runs before the judge's own imports.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..process import kill_tree
from ..project import ROOT  # the folder holding the kata package
from ..worker import limits as worker_limits

WORKER = ROOT / "kata" / "worker" / "main.py"
SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
TMP_BYTES = 64 * 1024**2  # the sandbox's /tmp: a tmpfs is host RAM, so it is small and counts against the learner
SANDBOXED = "bubblewrap: no network, only the system and Python visible (read-only), no other processes"
UNSANDBOXED = ("no sandbox: the learner's code can read and write what the grader's user can "
               "(install bubblewrap to seal it)")

_sandbox: list | None | bool = False  # False: not looked for yet; None: none here (or it cannot run)


def sandbox_command() -> list[str] | None:
    """Bubblewrap's command line when it is installed, else None.

    A worker that then fails to start in it is started again without it (user namespaces can be off).
    """
    bwrap = shutil.which("bwrap")
    if not bwrap or not sys.platform.startswith("linux") or os.environ.get("KATA_NO_SANDBOX"):
        return None
    return [bwrap, "--size" if _tmpfs_size_supported(bwrap) else None]


def tmp_said(launched: Launched) -> str:
    """What bounds the sandbox's ``/tmp``, for the report's protections."""
    if launched.bounded_tmp:
        return f"sandbox /tmp {TMP_BYTES >> 20} MiB"
    return "sandbox /tmp unbounded (this bubblewrap has no --size: install 0.6 or later)"


def _tmpfs_size_supported(bwrap: str) -> bool:
    """Whether this bubblewrap takes ``--size`` before ``--tmpfs`` (0.6 and later)."""
    try:
        said = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--size" in said.stdout + said.stderr


def sandbox_failed() -> None:
    """Bubblewrap is installed but cannot run here: every later worker starts without it."""
    global _sandbox
    _sandbox = None
    drop_spare()


class Launched:
    """One worker process: started, NumPy loaded, waiting for its set-up frame on stdin."""

    def __init__(self, proc: subprocess.Popen, home: Path, sandboxed: bool, bounded_tmp: bool = False) -> None:
        self.proc, self.home, self.sandboxed, self.bounded_tmp = proc, home, sandboxed, bounded_tmp
        self.owner = os.getpid()  # the process that can wait for it

    @property
    def pid(self) -> int:
        """The process id (bubblewrap's, when sandboxed)."""
        return self.proc.pid

    def exit_code(self, wait: float = 0.0) -> int | None:
        """Its exit code (negative: the signal that ended it), or None while it runs (or when unknown).

        A process forked from the launcher is not the worker's parent and cannot wait for it; it reads
        the status of the ended (not yet reaped) process from ``/proc`` instead (Linux).
        """
        deadline = time.monotonic() + wait
        while True:
            if os.getpid() == self.owner:
                code = self.proc.poll()
            else:
                code = _zombie_status(self.proc.pid)
                if code is not None:
                    self.proc.returncode = code  # its Popen then knows it ended (no "still running" warning)
            if code is not None or time.monotonic() >= deadline:
                return code
            time.sleep(0.01)

    def kill(self) -> None:
        """End it and everything it started; wait for it where this process can."""
        kill_tree(self.proc, wait=os.getpid() == self.owner)
        if os.getpid() != self.owner and self.exit_code(wait=1.0) is None:
            # the launcher reaps it; its Popen here must not warn later
            self.proc.returncode = -9
        self.close_pipes()

    def close_pipes(self) -> None:
        """Close this process's ends of its pipes (the worker sees its stdin end when nobody holds it)."""
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


def _zombie_status(pid: int) -> int | None:
    """The exit code of an ended, unreaped process from ``/proc/PID/stat`` (field 52), else None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] != b"Z" or len(fields) < 50:
        return None
    return os.waitstatus_to_exitcode(int(fields[49]))


def launch() -> Launched:
    """Start an empty worker in a fresh folder (in bubblewrap where it is installed)."""
    global _sandbox
    if _sandbox is False:
        _sandbox = sandbox_command()
    home = Path(tempfile.mkdtemp(prefix="kata-worker-"))
    (home / "output.txt").touch(mode=0o600)  # the one file a sandboxed worker may write in its folder
    command = [sys.executable, "-I", "-X", "utf8", str(WORKER),
               json.dumps({"machinery": str(ROOT), "home": str(home)})]
    sandboxed = bool(_sandbox)
    if sandboxed:
        command = _sandboxed(_sandbox, command, home)
    env = worker_limits.environment(str(home))
    if sandboxed:
        env["TMPDIR"] = "/tmp"  # the sandbox's own, bounded /tmp: its folder on the host's disk is read-only
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=env, cwd=home, start_new_session=hasattr(os, "setsid"),
    )
    return Launched(proc, home, sandboxed, bounded_tmp=sandboxed and bool(_sandbox[1]))


def _sandboxed(bwrap: list, command: list[str], home: Path) -> list[str]:
    """Bubblewrap around ``command``: nothing but the system, Python and the worker's code, read-only.

    An empty root: the operating system's folders, the Python installation with its packages, the
    worker's own code (``kata/``) and its folder (read-only, where the learner's code is copied later). No course,
    no home folders, no other checkout that might hold a reference; no network, no other processes.
    """
    # Without a size a tmpfs may take half the host's RAM: a learner writing /tmp full took 5 GiB of it.
    args = [bwrap[0], "--unshare-all", "--die-with-parent", "--new-session", "--dev", "/dev", "--proc", "/proc",
            *(["--size", str(TMP_BYTES)] if bwrap[1] else []), "--tmpfs", "/tmp"]
    for system in SYSTEM_FOLDERS:
        if os.path.islink(system):
            args += ["--symlink", os.readlink(system), system]
        elif os.path.isdir(system):
            args += ["--ro-bind", system, system]
    keep = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix), Path(sys.base_exec_prefix),
            Path(sys.executable).resolve().parent.parent, ROOT / "kata"}
    keep |= {Path(p) for p in sys.path if p and Path(p).is_dir() and "-packages" in p}
    for folder in sorted(keep, key=lambda p: len(p.parts)):
        if folder.exists() and not any(folder.is_relative_to(s) for s in SYSTEM_FOLDERS):
            args += ["--ro-bind", str(folder), str(folder)]
    # The worker's folder is on the host's disk: read-only in here (the judge copies the code in from outside),
    # but for its output file, so the learner's code cannot fill the host's disk with files.
    output = str(home / "output.txt")
    args += ["--ro-bind", str(home), str(home), "--bind", output, output, "--chdir", str(home)]
    return args + command


# -- the spare ------------------------------------------------------------------------------------------
_spare: Launched | None = None
_handed: list[tuple[int, Launched]] = []  # (the check that took it, the worker), reaped after the check


def prestart() -> None:
    """Launch a spare worker now, unless one is waiting (or this platform cannot pass it on)."""
    global _spare
    if _spare is not None and _spare.exit_code() is None:
        return
    drop_spare()
    try:
        _spare = launch()
    except OSError:  # no Python to start (it will say so when a test asks for the worker)
        _spare = None


def take() -> Launched | None:
    """The spare worker, if one is waiting and alive (it is then this caller's); else None."""
    global _spare
    spare, _spare = _spare, None
    if spare is not None and spare.exit_code() is not None:
        remove(spare)
        return None
    return spare


def handed_over(child: int) -> None:
    """In the warm judge, after a fork: the spare now belongs to ``child``; close our ends of its pipes."""
    global _spare
    if _spare is not None:
        _spare.close_pipes()
        _handed.append((child, _spare))
        _spare = None


def reap(finished: set[int] | None = None) -> None:
    """End and reap the workers of checks that have ended (``finished``: their pids; None: all)."""
    for entry in list(_handed):
        child, launched = entry
        if finished is None or child in finished:
            launched.kill()
            remove(launched)
            _handed.remove(entry)


def drop_spare() -> None:
    """End the waiting spare, if any."""
    global _spare
    spare, _spare = _spare, None
    if spare is not None and spare.owner == os.getpid():
        spare.kill()
        remove(spare)


def remove(launched: Launched) -> None:
    """Remove a worker's folder (once it has ended)."""
    shutil.rmtree(launched.home, ignore_errors=True)


@atexit.register
def _at_exit() -> None:
    if _spare is not None and _spare.owner == os.getpid():
        drop_spare()
    reap()
