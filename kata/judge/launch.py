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
import glob
import json
import os
import select
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
SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Of /etc, only what Python and NumPy read (the loader's cache, the time zone) and what a Debian or Ubuntu
# Python finds through it (BLAS chosen by update-alternatives, python3.X's sitecustomize): not /etc/shadow,
# not the host's configuration. A file that is missing here is skipped (``--ro-bind-try``).
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime")
SYSTEM_GLOBS = ("/etc/python3*",)
NOBODY = 65534  # the unprivileged user (and group) a worker started by root runs as: "nobody" on Linux
TMP_BYTES = 64 * 1024**2  # the sandbox's /tmp: a tmpfs is host RAM, so it is small and counts against the learner
SANDBOXED = ("bubblewrap: no network, no capabilities, an unprivileged user, only the system and Python visible "
             "(read-only), no other processes")
UNSEALED = "no sandbox: "  # how every protection line of a learner graded unsealed starts, then its cause

_sandbox: list | None | bool = False  # False: not looked for yet; None: none here (or it cannot run)
_cause = ""  # why there is none, for the report


def unsealed(cause: str) -> str:
    """The protection line of a worker that ran without a sandbox that held, with ``cause``."""
    return f"{UNSEALED}{cause} (the learner's code could read and write what the grader's user can)"


def sandbox_command() -> list | None:
    """Bubblewrap's command line when it can seal a worker here, else None (``why_unsealed`` says why).

    Run by root, the worker must also drop to an unprivileged user (``setpriv``, from util-linux): bubblewrap
    started by root keeps every capability inside, and root's own files stay readable to a process whose uid is
    0. A worker that then fails to start in it is started again without it (user namespaces can be off), and
    the report says so with bubblewrap's own words. Root's sandbox needs bubblewrap 0.6 or later (``--perms``);
    an older one fails to start, and says so.

    ``KATA_NO_SANDBOX`` (set by tests that grade unsealed on purpose) switches the sandbox off. It does not
    accept the result: ``grade-class`` still fails for an unsealed learner unless ``--allow-unsealed`` is given,
    so an instructor who left it set does not skip that check by accident.
    """
    global _cause
    bwrap = shutil.which("bwrap")
    if not sys.platform.startswith("linux"):
        _cause = f"bubblewrap runs on Linux only, not on {sys.platform}"
    elif os.environ.get("KATA_NO_SANDBOX"):
        _cause = "KATA_NO_SANDBOX is set"
    elif not bwrap:
        _cause = "bubblewrap is not installed (sudo apt-get install bubblewrap)"
    elif os.geteuid() == 0 and not _setpriv():
        _cause = ("running as root, and setpriv (util-linux) is not in /usr/bin or /bin to drop the learner's "
                  "code to an unprivileged user")
    else:
        return [bwrap, "--size" if _tmpfs_size_supported(bwrap) else None]
    return None


def why_unsealed() -> str:
    """Why workers start without a sandbox here (once ``launch`` has looked)."""
    return _cause or "bubblewrap is not installed (sudo apt-get install bubblewrap)"


def _setpriv() -> str | None:
    """util-linux's ``setpriv``, where the sandbox sees it (a system folder), else None."""
    found = shutil.which("setpriv", path=os.pathsep.join(("/usr/bin", "/bin", "/usr/sbin", "/sbin")))
    return found if found and any(Path(found).is_relative_to(s) for s in SYSTEM_FOLDERS) else None


def tmp_said(launched: Launched) -> str:
    """What bounds the sandbox's ``/tmp``, for the report's protections."""
    if launched.bounded_tmp:
        return f"sandbox /tmp {TMP_BYTES >> 20} MiB"
    return "sandbox /tmp unbounded (this bubblewrap has no --size: install 0.6 or later)"


def _tmpfs_size_supported(bwrap: str) -> bool:
    """Whether this bubblewrap takes ``--size`` (and ``--perms``) before ``--tmpfs`` (0.6 and later)."""
    try:
        said = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--size" in said.stdout + said.stderr


def sandbox_failed(cause: str) -> None:
    """Bubblewrap is installed but cannot run here (``cause``): every later worker starts without it."""
    global _sandbox, _cause
    _sandbox, _cause = None, cause
    drop_spare()


class Launched:
    """One worker process: started, NumPy loaded, waiting for its set-up frame on stdin."""

    def __init__(self, proc: subprocess.Popen, home: Path, sandboxed: bool, bounded_tmp: bool = False, *,
                 user: int | None = None, cause: str = "") -> None:
        self.proc, self.home, self.sandboxed, self.bounded_tmp = proc, home, sandboxed, bounded_tmp
        self.user = user  # the uid and gid it runs as, when root started it (its files must be readable to it)
        self.cause = cause  # why it runs without a sandbox ('' when it has one)
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

    def startup_words(self, wait: float = 2.0) -> str:
        """The first line the process wrote to its stderr before it was ready (bubblewrap's error), or ''.

        Read once, at most 4 KiB and for at most ``wait`` seconds; the pipe is closed after it, so nothing the
        learner's code could write later reaches the judge (the worker sends its stderr to its output file).
        """
        stream, self.proc.stderr = self.proc.stderr, None
        if stream is None:
            return ""
        data = b""
        try:
            if select.select([stream], [], [], wait)[0]:
                data = os.read(stream.fileno(), 4096)
        except (OSError, ValueError):
            pass
        finally:
            stream.close()
        lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
        return lines[0].removeprefix("bwrap: ")[:300] if lines else ""

    def close_pipes(self) -> None:
        """Close this process's ends of its pipes (the worker sees its stdin end when nobody holds it)."""
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
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
    """Start an empty worker in a fresh folder (in bubblewrap where it can seal the worker here)."""
    global _sandbox
    if _sandbox is False:
        _sandbox = sandbox_command()
    home = Path(tempfile.mkdtemp(prefix="kata-worker-"))
    (home / "output.txt").touch(mode=0o600)  # the one file a sandboxed worker may write in its folder
    command = [sys.executable, "-I", "-X", "utf8", str(WORKER),
               json.dumps({"machinery": str(ROOT), "home": str(home)})]
    sandboxed = bool(_sandbox)
    user = NOBODY if sandboxed and os.geteuid() == 0 else None
    if sandboxed:
        command = _sandboxed(_sandbox, command, home, user)
    if user is not None:
        give(home, user)
        os.chown(home / "output.txt", user, user)
        os.chmod(home / "output.txt", 0o600)
    env = worker_limits.environment(str(home))
    if sandboxed:
        env["TMPDIR"] = "/tmp"  # the sandbox's own, bounded /tmp: its folder on the host's disk is read-only
    # stderr is a pipe read once, if the worker does not start (bubblewrap's error), then closed.
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env, cwd=home, start_new_session=hasattr(os, "setsid"),
    )
    return Launched(proc, home, sandboxed, bounded_tmp=sandboxed and bool(_sandbox[1]), user=user,
                    cause="" if sandboxed else why_unsealed())


def give(folder: Path, user: int) -> None:
    """Make ``folder`` and everything in it readable, but not writable, to ``user`` (a worker started by root).

    Owned by root and the user's group (folders 0750, files 0640), so the worker reads the learner's copy
    however its files came (a 0600 file, a 0700 folder) and changes none of it, even outside the sandbox.
    ``launch`` gives the worker's folder (and its output file to ``user`` alone); ``proxy.Worker`` gives the
    learner's code after it copies it in. Symbolic links are left alone (the copy has none).
    """
    for where, folders, files in os.walk(folder):
        for path in (where, *(os.path.join(where, name) for name in folders + files)):
            if not os.path.islink(path):
                os.chown(path, 0, user, follow_symlinks=False)
                os.chmod(path, 0o750 if os.path.isdir(path) else 0o640)


def _sandboxed(bwrap: list, command: list[str], home: Path, user: int | None) -> list[str]:
    """Bubblewrap around ``command``: nothing but the system, Python and the worker's code, read-only.

    An empty root: the operating system's folders, the few files of ``/etc`` that Python reads, the Python
    installation with its packages, the worker's own code (``kata/``) and its folder (read-only, where the
    learner's code is copied later). No course, no home folders, no other checkout that might hold a reference;
    no network, no other processes, no capabilities.

    Run by an ordinary user, bubblewrap makes a user namespace and the worker holds no capability in it. Run by
    root (``user`` set), a user namespace would map the worker to uid 0 on the host, whose files it could still
    read, so there is none: bubblewrap keeps only the capabilities to change user, and ``setpriv`` runs the
    worker as ``user`` with no capabilities at all, ``no_new_privs`` set, and no way back. An unprivileged uid
    is also what makes the worker's limit on new processes hold (``kata/worker/limits.py``): root is exempt.
    """
    # Without a size a tmpfs may take half the host's RAM: a learner writing /tmp full took 5 GiB of it.
    tmp = ["--size", str(TMP_BYTES), "--perms", "1777"] if bwrap[1] else []
    if user is None:
        args = [bwrap[0], "--unshare-all", "--cap-drop", "ALL"]
    else:
        args = [bwrap[0], "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
    args += ["--die-with-parent", "--new-session", "--dev", "/dev", "--proc", "/proc", *tmp, "--tmpfs", "/tmp"]
    for system in SYSTEM_FOLDERS:
        if os.path.islink(system):
            args += ["--symlink", os.readlink(system), system]
        elif os.path.isdir(system):
            args += ["--ro-bind", system, system]
    files = [p for p in (*SYSTEM_FILES, *sorted(p for pattern in SYSTEM_GLOBS for p in glob.glob(pattern)))
             if os.path.exists(p)]
    keep = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix), Path(sys.base_exec_prefix),
            Path(sys.executable).resolve().parent.parent, ROOT / "kata"}
    keep |= {Path(p) for p in sys.path if p and Path(p).is_dir() and "-packages" in p}
    bound = [f for f in sorted(keep, key=lambda p: len(p.parts))
             if f.exists() and not any(f.is_relative_to(s) for s in SYSTEM_FOLDERS)]
    if user is not None:  # the folders above what is bound, which bubblewrap makes 0700 (root's): open to ``user``
        above = {a for f in [*bound, home, *map(Path, files)] for a in f.parents if a != Path("/")}
        for folder in sorted(above - {Path("/tmp"), *bound}, key=lambda p: len(p.parts)):
            args += ["--perms", "0755", "--dir", str(folder)]
    for system in files:
        args += ["--ro-bind-try", system, system]
    for folder in bound:
        args += ["--ro-bind", str(folder), str(folder)]
    # The worker's folder is on the host's disk: read-only in here (the judge copies the code in from outside),
    # but for its output file, so the learner's code cannot fill the host's disk with files.
    output = str(home / "output.txt")
    args += ["--ro-bind", str(home), str(home), "--bind", output, output, "--chdir", str(home), "--"]
    if user is not None:
        args += [_setpriv(), f"--reuid={user}", f"--regid={user}", "--clear-groups", "--no-new-privs",
                 "--inh-caps=-all", "--bounding-set=-all", "--"]
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
