"""The judge's side of the worker: launching the learner's process, and every call the tests make to it.

``ChapterProxy`` looks like the learner's chapter module (``ch.softmax(x)``), but every call travels to
the worker process (``kata/worker/main.py``) as plain data and its answer comes back as plain data
(``kata/wire.py``). Nothing the worker sends is unpickled, executed or taken as a verdict.

- An argument the call changed in place (an array's numbers, a list's or dict's items) fails the call with
  ``ChangedItsInput`` naming it, and a result that *is* an argument comes back as that argument.
- An object that is not plain data (a learner's cache object) stays in the worker behind a ``Handle``.
- A built-in exception comes back as that type (from a fixed list) with the learner's message and
  ``file:line``; anything else is a ``LearnerError`` named after the learner's exception.
- A call that does not return within ``call_timeout`` ends the worker; the function is then marked
  as hanging, so later calls to it (or to anything that calls it) fail at once instead of waiting.

Starting a worker costs a Python and a NumPy import (about 0.15 s), which is most of a quick chapter
check. So a worker is *launched* early, empty (``launch``): Python and NumPy loaded, in its sandbox, waiting
for its first frame. ``Worker`` then takes it, copies the learner's code into its folder and sends the
set-up (which implementation, which limits); only then does the learner's code load. An empty worker
has run nothing of anyone's, so it is as fresh as one started on demand.

- The judge launches one as its plugin is imported, before its own NumPy import, so the two load
  side by side (``prestart``). This module imports no NumPy itself (``kata.wire``, which does, is loaded
  on its first use), so that it can.
- A warm judge (``nox -s watch``, ``kata/judge/warm.py``) keeps one ready between checks; each check is
  a fork of it and takes the spare over (``handed_over``). The fork is then not the worker's parent, so
  the worker's exit status is read from ``/proc`` while the warm judge leaves it unreaped
  (``reap`` waits until the check that took it has ended).
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import glob
import importlib.util
import json
import os
import queue
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..process import kill_tree, tree_cpu_seconds
from ..project import ROOT  # the folder holding the kata package
from ..worker import limits as worker_limits

if TYPE_CHECKING:
    import numpy as np


def _lazy(name: str):  # noqa: ANN202 - a module
    """``name`` imported on its first attribute access (the standard library's ``LazyLoader``), or as loaded."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    setattr(sys.modules[parent], child, module)
    return module


wire = _lazy("kata.wire")  # it imports NumPy: not before the spare worker is on its way

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
    """Whether this bubblewrap takes ``--size`` (and ``--perms``) before ``--tmpfs`` (0.6 and later).

    Its help text is compiled into the program, so the option's own line in its bytes answers without starting
    a process (one less in every check); anything else (a wrapper script) is asked for ``--help``.
    """
    with contextlib.suppress(OSError):
        with open(bwrap, "rb") as program:
            if b"--size BYTES" in program.read(4 << 20):  # bubblewrap is about 70 KB
                return True
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
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()


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
    ``launch`` gives the worker's folder (and its output file to ``user`` alone); ``Worker`` gives the
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


# -- talking to it -------------------------------------------------------------------------------------
GRACE = 2.0  # the judge's own clock: GRACE + 3 × the call timeout, wall time (see ``request``)
BUSY_MACHINE = 10  # while the learner's process computes, the judge waits up to this many times its clock
STARTUP = 30.0  # seconds the worker may take to start (NumPy's import on a cold disk)
REPLAY = (  # exception types re-raised as themselves; any other comes back as a LearnerError
    "ArithmeticError", "AssertionError", "AttributeError", "FloatingPointError", "IndexError", "KeyError",
    "LookupError", "MemoryError", "NameError", "NotImplementedError", "OverflowError", "RecursionError",
    "RuntimeError", "RuntimeWarning", "TypeError", "UnboundLocalError", "UserWarning", "ValueError",
    "ZeroDivisionError", "DeprecationWarning", "UnicodeError", "OSError", "ImportError",
    "ModuleNotFoundError", "StopIteration",
)


class LearnerError(Exception):
    """An exception raised by the learner's code that is not re-raised as a built-in type."""


class DidNotReturn(Exception):  # noqa: N818 - reads as what happened
    """A learner's function ran past its time, now or earlier in this run."""


class ChangedItsInput(AssertionError):  # noqa: N818 - reads as what happened
    """A learner's function edited an argument in place: an array's numbers, or a list's or dict's items.

    The caller's argument is left untouched (the call got a copy).
    """


class OverBudget(Exception):  # noqa: N818 - reads as what happened
    """A counted call ran more lines of the learner's code than its budget; it was stopped there."""

    def __init__(self, message: str, lines: int, where: str) -> None:
        super().__init__(message)
        self.lines, self.where = lines, where


class WorkerCrashed(Exception):  # noqa: N818
    """The learner's process ended in the middle of a call (``os._exit``, a crash, a limit)."""


class Unsealed(WorkerCrashed):
    """The sandbox did not hold where it is required (``SEAL_REQUIRED``): the learner's code was never loaded."""


# Set by ``grade-class`` for each learner's grade unless the instructor passed ``--allow-unsealed``: a worker whose
# sandbox did not hold is then ended before the learner's code loads (the probe runs first), instead of running the
# code unsealed and reporting it afterwards. A learner checking their own code (``nox -s chapterN``) runs it as
# themselves anyway, so nothing else sets it.
SEAL_REQUIRED = "KATA_REQUIRE_SEAL"


class Raised:
    """Mixed into every exception re-raised from the worker: where in the learner's code it happened."""

    frames: list[dict] = []

    @property
    def location(self) -> str:
        """``file:line`` of the innermost learner frame, with its source line, or ''."""
        if not self.frames:
            return ""
        f = self.frames[-1]
        return f"{f['file']}:{f['line']} in {f['function']}\n    {f['line']} | {f['source']}"


_CLASSES: dict[tuple[str, str], type] = {}


def _exception(info: dict) -> BaseException:
    """The judge-side exception for the worker's description of one (no learner code is involved)."""
    name = str(info.get("type", "Exception"))[:80]
    bases = [str(b) for b in info.get("bases", [])]
    base = next((getattr(builtins, b) for b in bases if b in REPLAY), None)
    if name == "AxisError" or "AxisError" in bases:
        base = base or ValueError
    if base is None:
        base = LearnerError
    key = (name, base.__name__)
    if key not in _CLASSES:
        _CLASSES[key] = type(name if name.isidentifier() else "LearnerError", (Raised, base), {
            "__module__": "learner", "__str__": base.__str__})
    err = _CLASSES[key](str(info.get("message", "")))
    err.frames = _frames(info.get("frames"))
    return err


def _frames(raw: Any) -> list[dict]:
    """The worker's description of where an exception happened, checked field by field (it is data)."""
    frames = []
    for f in raw[-12:] if isinstance(raw, list) else []:
        if not isinstance(f, dict):
            continue
        line = f.get("line")
        frames.append({
            "file": str(f.get("file", "?"))[:300],
            "line": line if type(line) is int else 0,
            "function": str(f.get("function", "?"))[:100],
            "source": str(f.get("source", ""))[:300],
        })
    return frames


def regular_files_only(folder: str, names: list[str]) -> set[str]:
    """A ``copytree`` filter: no symbolic links (one could point at the course's reference), no caches."""
    skip = {n for n in names if n in ("__pycache__", ".ipynb_checkpoints") or n.endswith(".pyc")}
    for name in names:
        if os.path.islink(os.path.join(folder, name)):
            skip.add(name)
            print(f"kata: {os.path.join(folder, name)} is a symbolic link; only regular files are graded",
                  file=sys.stderr)
    return skip


def where_text(err: BaseException) -> str:
    """The learner's frames of an exception from the worker, innermost first, for a failure message."""
    frames = getattr(err, "frames", None) or []
    if not frames:
        return ""
    inner = frames[-1]
    lines = [f"  at        {inner['file']}:{inner['line']} in {inner['function']}",
             f"            {inner['line']} | {inner['source']}"]
    for f in reversed(frames[:-1]):
        lines.append(f"  called by {f['file']}:{f['line']} in {f['function']}: {f['source']}")
    return "\n".join(lines)


class Worker:
    """One learner process, kept warm across calls and restarted after a timeout or a crash.

    Args:
        root: the folder on the worker's ``sys.path`` that holds the implementation package.
        impl: the implementation package's name (``exercises``, ``solutions``, …).
        call_timeout: seconds one call may take.
        shown_as: how the learner knows the folders (``{copy: "exercises"}``) in file:line reports.
        limits: resource limits (``kata/worker/limits.py``).
        hide: folders the worker must not see (the course's answer key and tests, another's code).
    """

    def __init__(self, root: Path, impl: str, *, call_timeout: float = 2.0, shown_as: dict | None = None,
                 limits: dict | None = None, hide: list[Path] = ()) -> None:
        self.source_root, self.impl = Path(root), impl
        self.call_timeout = call_timeout
        self.shown_as = shown_as or {}
        self.limits = dict(worker_limits.LIMITS, **(limits or {}))
        self.hide = [Path(h) for h in hide]
        self.hung: dict[tuple[str, str], str] = {}  # (module, qualname) -> what to say
        self.hung_calls: dict[tuple[str, str], str] = {}  # (chapter module, fn) -> what to say
        self.generation = 0
        self.proc: subprocess.Popen | None = None
        self.protections: list[str] = []
        self.calls: list[tuple[str, str]] = []  # every function called, for the points of each test
        self.last_lines: int | None = None  # lines of the learner's code the last counted call ran
        self.last_peak: int | None = None  # bytes the last traced call held at most at once
        self.uses: dict[str, dict[str, str]] = {}  # chapter module -> {function: the earlier chapter's module}
        self.on_call = None  # called with "module.function" the first time a test calls it
        self.functions: dict[str, set[str]] = {}  # chapter module -> its public functions (no round trip)
        self.output: list[str] = []
        self.home: Path | None = None  # the folder of this worker's process, removed by ``close``
        self.launched: Launched | None = None
        self._answers: queue.Queue = queue.Queue()
        self._output_seen = 0
        self.callbacks: dict[int, Any] = {}

    # -- the process ----------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the process (returns at once; the first call waits for it to be ready).

        Takes the spare worker the judge launched early (``prestart``) when there is one: it has loaded
        NumPy and waits, empty, for this set-up. The learner's code is copied into its folder first.
        """
        if self.proc is not None:
            return
        self._remove_home()  # the folder of the process before this one (ended): one copy at a time
        self.launched = take() or launch()
        self.generation += 1
        self.home = self.launched.home
        root = self.home / "code"
        shutil.copytree(self.source_root / self.impl, root / self.impl, ignore=regular_files_only)
        config = {
            "root": str(root), "impl": self.impl,
            "shown_as": {str(root / self.impl): self.shown_as.get(self.impl, self.impl)},
            "hung": [[m, q, said] for (m, q), said in self.hung.items()], "limits": self.limits,
            "generation": self.generation, "call_timeout": self.call_timeout,
        }
        if self.launched.user is not None:  # started by root: readable to the worker's own unprivileged user
            give(root, self.launched.user)
        self.proc = self.launched.proc
        # The sandbox's line comes with the worker's ready frame, once its probe has shown whether it holds.
        self.protections = ["separate process", "plain-data channel", "scrubbed environment", "throwaway copy"]
        self._answers = queue.Queue()
        self._output_seen = 0
        self._frames = FrameReader(self.proc.stdout) if hasattr(select, "poll") else None
        if self._frames is None:  # Windows: select() does not take pipes, so a thread reads them
            threading.Thread(target=self._read_answers, args=(self.proc, self._answers), daemon=True).start()
        with contextlib.suppress(OSError):  # it did not start (bubblewrap that cannot run here): the first call says so
            wire.write_frame(self.proc.stdin, {"setup": config}, [])
        self._ready = False

    def _read_answers(self, proc: subprocess.Popen, answers: queue.Queue) -> None:
        try:
            while True:
                answers.put(wire.read_frame(proc.stdout))
        except (EOFError, wire.WireError, OSError, ValueError) as err:
            answers.put(err)

    def stop(self) -> None:
        """End the process and everything it started."""
        proc, self.proc = self.proc, None
        if proc is not None:
            self.launched.kill()

    def close(self) -> None:
        """Stop the process and remove its throwaway folders."""
        self.stop()
        self._remove_home()

    def _remove_home(self) -> None:
        if self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)

    def _wait(self, timeout: float):
        if self._frames is not None:
            return self._frames.next(timeout)
        try:
            return self._answers.get(timeout=timeout)
        except queue.Empty:
            return None

    def _ensure_ready(self) -> None:
        self.start()
        if self._ready:
            return
        item = self._wait(STARTUP)
        if (not isinstance(item, tuple) or not item[0].get("ready")) and self.launched.sandboxed:
            # bubblewrap is there but cannot run here: start unsealed, and say why in the report
            words = self.launched.startup_words() or self._last_words()
            self.stop()
            sandbox_failed(f"bubblewrap failed to start: {words}")
            self.start()
            item = self._wait(STARTUP)
        if not isinstance(item, tuple) or not item[0].get("ready"):
            words = self.launched.startup_words() if self.launched is not None else ""
            self.stop()
            raise WorkerCrashed(f"the learner's process did not start: {words or self._last_words()}")
        self.launched.startup_words(wait=0)  # closes the pipe: nothing later is read from it
        sandbox = self.sandbox_said(item[0].get("sealed"))
        self.protections += [*sandbox, *item[0].get("protections", [])]
        if os.environ.get(SEAL_REQUIRED) == "1" and SANDBOXED not in sandbox:
            self.stop()  # before the set-up's import of the learner's code: nothing of theirs has run
            raise Unsealed(f"the learner's code was not run: {sandbox[0].removeprefix(UNSEALED)}")
        self._ready = True

    def sandbox_said(self, sealed) -> list[str]:
        """The sandbox's protection lines: ``SANDBOXED`` only when the worker's probe found it held.

        ``sealed`` is the probe's finding (``kata/worker/main.py``), sent before any learner code was loaded.
        Otherwise one line starting ``no sandbox: `` with the cause: why none was started, or what got through.
        """
        if not self.launched.sandboxed:
            return [unsealed(self.launched.cause)]
        if isinstance(sealed, dict) and sealed.get("held") is True:
            return [SANDBOXED, tmp_said(self.launched)]
        failed = sealed.get("failed") if isinstance(sealed, dict) else None
        what = "; ".join(str(f)[:200] for f in failed[:5]) if isinstance(failed, list) and failed else "no probe"
        return [unsealed(f"the sandbox did not hold: {what}")]

    def _last_words(self) -> str:
        text = self.read_output()
        return text.strip().splitlines()[-1] if text.strip() else "(it said nothing)"

    def read_output(self, limit: int = 65536) -> str:
        """What the learner's code printed since the last look (at most ``limit`` bytes of it)."""
        if self.home is None:
            return ""
        path = self.home / "output.txt"
        try:
            size = path.stat().st_size
        except OSError:
            return ""
        if size <= self._output_seen:
            return ""
        with path.open("rb") as f:
            f.seek(self._output_seen)
            data = f.read(min(limit, size - self._output_seen))
        self._output_seen = size
        text = data.decode("utf-8", "replace")
        if size - self._output_seen > 0:
            text += f"\n… ({size - self._output_seen} more bytes of output not shown)"
        return text

    # -- requests -------------------------------------------------------------------------------------
    def request(self, header: dict, blobs: list[bytes] = (), *, what: str, key=None) -> tuple[dict, list]:
        """Send one request and wait for its answer, within the call timeout."""
        self._ensure_ready()
        try:
            wire.write_frame(self.proc.stdin, header, list(blobs))
        except OSError:
            return self._crashed(what)
        started = time.monotonic()
        # The worker's own alarm stops a call after call_timeout seconds of CPU time and says where it was:
        # CPU time, so a slow, busy machine never fails correct code. This wall clock, later, catches what
        # the alarm cannot see or interrupt (sleeping, waiting, a loop in C code, Windows).
        item = self._wait_computing(self.wall_limit)
        judged = 0.0  # time spent in the test's own functions (callbacks), which is not the learner's
        while isinstance(item, tuple) and "callback" in item[0]:  # the learner's code calls a test's function
            if item[0].get("callback") not in self.callbacks:  # not a call this judge handed out: a forgery
                item = EOFError("the learner's process sent a callback nobody gave it")
                break
            before = time.monotonic()
            self._answer_callback(*item)
            judged += time.monotonic() - before
            left = started + judged + self.wall_limit - time.monotonic()  # callbacks never extend the limit
            item = self._wait_computing(left) if left > 0 else None
        printed = self.read_output()
        if printed:
            sys.stdout.write(printed)
        if item is None or (isinstance(item, tuple) and "where" in item[0]):
            self._timed_out(what, key, item[0]["where"] if item else [])
        if not isinstance(item, tuple):
            return self._crashed(what)
        return item

    def _wait_computing(self, seconds: float):
        """The worker's next message, waiting ``seconds`` and then on while its process computes within its time.

        The worker's own alarm counts CPU time, so on a busy machine a call's ``call_timeout`` CPU seconds can
        take longer than the judge's wall clock; killing it then would fail correct code, or lose where an
        endless loop was. Past ``seconds``, the judge looks at the process's CPU time once a second and waits on
        while it grows, until the process has used ``call_timeout + GRACE`` CPU seconds more than it had (its
        alarm has had its due) or ``BUSY_MACHINE`` times the wall clock has passed. A process that stops using the CPU
        (asleep, waiting) is given up at once, as before.
        """
        item = self._wait(seconds)
        if item is not None or self.proc is None:
            return item
        first = before = tree_cpu_seconds(self.proc.pid)
        give_up = time.monotonic() + (BUSY_MACHINE - 1) * self.wall_limit
        while first is not None and time.monotonic() < give_up:
            item = self._wait(1.0)
            now = tree_cpu_seconds(self.proc.pid)
            if item is not None or now is None or now <= before or now - first > self.call_timeout + GRACE:
                return item
            before = now
        return item

    @property
    def wall_limit(self) -> float:
        """Seconds of wall time the judge waits for one call before it stops the worker itself."""
        return GRACE + 3 * self.call_timeout

    def _answer_callback(self, header: dict, blobs: list) -> None:
        fn = self.callbacks.get(header.get("callback"))

        def resolve(tree: dict):
            if tree.get("t") == "h":
                return wire.Handle(tree.get("id"), str(tree.get("type", "object"))[:200], self.generation)
            raise wire.WireError("a reference to nothing")

        encoder = wire.Encoder(self._encode_other)
        try:
            args, kwargs = wire.decode(header.get("args"), blobs, resolve)
            reply = {"ok": encoder.encode(fn(*args, **kwargs))}
        except Exception as err:  # noqa: BLE001 - the test's own function failed: the worker is told
            reply, encoder.blobs = {"error": f"{type(err).__name__}: {err}"}, []
        with contextlib.suppress(OSError):
            wire.write_frame(self.proc.stdin, reply, encoder.blobs)

    def _encode_other(self, value: Any) -> Any:
        """Arguments that are not plain data: a handle goes back as itself, a function as a callback."""
        if isinstance(value, wire.Handle):
            if value.generation != self.generation:
                raise WorkerCrashed(f"{value!r} was made before the learner's process was restarted "
                                    "(an earlier call did not return, or ended it); it is gone")
            return {"t": "h", "id": value.id}
        if callable(value) and not isinstance(value, FunctionProxy):
            number = len(self.callbacks)
            self.callbacks[number] = value
            return {"t": "c", "id": number}
        raise TypeError(f"cannot send a {type(value).__name__} to the learner's code (plain data only)")

    def _crashed(self, what: str):
        code = self.launched.exit_code(wait=1.0) if self.proc is not None else None
        words = self._last_words()
        self.stop()
        how = f"exit code {code}" if code is not None and code >= 0 else f"signal {-code}" if code else "unknown"
        hint = ""
        if code == 0:
            hint = " (os._exit or sys.exit in the learner's code?)"
        elif code is not None and code < 0 and -code in (getattr(signal, "SIGXCPU", 24), getattr(signal, "SIGKILL", 9)):
            hint = " (a resource limit: CPU time or memory?)"
        raise WorkerCrashed(f"{what} ended the learner's process ({how}){hint}; its last output: {words}")

    def _timed_out(self, what: str, key, where: list) -> None:
        stack = [s for s in where if isinstance(s, list) and len(s) == 4] if isinstance(where, list) else []
        self.stop()
        said = f"did not return within {self.call_timeout:g} s"
        if stack:
            module, qualname, file, line = stack[0]
            name = str(qualname).rsplit(".", 1)[-1]
            if name == "<module>":
                said = f"importing {str(module).rsplit('.', 1)[-1]} did not finish within {self.call_timeout:g} s"
                self.hung[(str(module), "<module>")] = f"{said} earlier in this run (an endless loop at module level?)"
                raise DidNotReturn(f"{said}: an endless loop at module level? ({file}:{line})")
            self.hung[(str(module), str(qualname))] = f"{name} {said} earlier in this run"
            spot = f" (it was running {name} at {file}:{line})"
        else:
            spot = ""
        if key is not None:
            self.hung_calls[key] = f"{what} {said} earlier in this run{spot}"
        raise DidNotReturn(f"{what} {said}{spot}: an endless loop? The process running it was stopped from outside.")

    def import_module(self, module: str) -> None:
        """Import a chapter module in the worker; its exception comes back as one."""
        answer, _ = self.request({"op": "import", "module": module}, what=f"importing {module}")
        if "error" in answer:
            raise _exception(answer["error"])
        if "hung" in answer:
            raise DidNotReturn(str(answer["hung"]))
        functions = answer.get("functions") if isinstance(answer.get("functions"), list) else []
        self.functions[module] = {str(f)[:100] for f in functions[:1000]}
        uses = answer.get("uses") if isinstance(answer.get("uses"), dict) else {}
        self.uses[module] = {str(k)[:80]: str(v)[:80] for k, v in list(uses.items())[:100]}

    def call(self, module: str, fn: str, args: tuple, kwargs: dict, *, lines: int | None = None,
             peak: bool = False) -> Any:
        """Call ``module.fn(*args, **kwargs)`` in the worker; return its result as plain data.

        With ``lines``, the worker counts the lines of the learner's code the call runs and stops it past that
        many (``OverBudget``); ``last_lines`` then holds the count of a call that finished. With ``peak``, the
        worker traces the call's memory (``tracemalloc``); ``last_peak`` then holds the most bytes it held at
        once (None when the call stopped the tracing).
        """
        key = (module, fn)
        if key not in self.calls and self.on_call is not None:
            self.on_call(f"{module}.{fn}")  # the grader writes it down at once: a killed test keeps it
        self.calls.append(key)
        if key in self.hung_calls:
            raise DidNotReturn(self.hung_calls[key])
        self._ensure_ready()  # a restarted worker first: handles of the one before are gone
        mine: list = []
        encoder = wire.Encoder(self._encode_other, mine)
        tree_args = encoder.encode(list(args))
        tree_kwargs = encoder.encode(dict(kwargs))
        header = {"op": "call", "module": module, "fn": fn, "args": tree_args, "kwargs": tree_kwargs}
        if lines is not None:
            header["lines"] = int(lines)
        if peak:
            header["peak"] = True
        answer, blobs = self.request(header, encoder.blobs, what=fn, key=key)
        self.last_lines = None
        self.last_peak = answer.get("peak") if peak and type(answer.get("peak")) is int else None
        over = answer.get("over_budget")
        if lines is not None and isinstance(over, dict):
            where = over.get("where") if isinstance(over.get("where"), list) else []
            spot = f"{str(where[0])[:200]}:{where[1]} in {str(where[2])[:100]}" if len(where) == 3 else ""
            count = over.get("lines") if type(over.get("lines")) is int else int(lines) + 1
            raise OverBudget(f"{fn} ran more than {int(lines):,} lines of your code and was stopped"
                             + (f" (at {spot})" if spot else ""), count, spot)
        if lines is not None and type(answer.get("lines")) is int:
            self.last_lines = answer["lines"]
        return self._result(answer, blobs, mine, fn)

    def get(self, module: str, name: str) -> Any:
        """A module attribute: a function comes back as ``FUNCTION``, data as its value."""
        answer, blobs = self.request({"op": "get", "module": module, "name": name}, what=f"{module}.{name}")
        return self._result(answer, blobs, [], name)

    def _result(self, answer: dict, blobs: list, mine: list, what: str) -> Any:
        if "hung" in answer:
            raise DidNotReturn(f"{what} calls {answer['hung']}")
        if "error" in answer:
            raise _exception(answer["error"])
        if "ok" not in answer:
            raise WorkerCrashed(f"{what}: the learner's process sent something that is not an answer")

        def resolve(tree: dict):
            if tree.get("t") == "f":
                return FUNCTION
            if tree.get("t") == "r" and type(tree.get("i")) is int and 0 <= tree["i"] < len(mine):
                return mine[tree["i"]]
            if tree.get("t") == "a":
                return _same_or_view(tree, blobs, mine)
            if tree.get("t") == "h":
                return wire.Handle(tree.get("id"), str(tree.get("type", "object"))[:200], self.generation)
            raise wire.WireError("a reference to nothing")

        changed = answer.get("changed") or {}
        if changed and isinstance(changed, dict):
            names = answer.get("names") if isinstance(answer.get("names"), dict) else {}
            first = str(names.get(next(iter(changed)), "an argument"))[:80]
            raise ChangedItsInput(
                f"{what} changed its argument `{first}` in place and did not leave it as it was; work on a "
                f"new array (`x = x - m`, not `x -= m`; or start from `x = x.copy()`), or put back every "
                "entry you change. The caller's arrays are left as they were.")
        edited = answer.get("edited")
        if edited and isinstance(edited, list) and isinstance(edited[0], list) and len(edited[0]) == 2:
            first, kind = (str(part)[:80] for part in edited[0])
            how = {"list": f"a new list (`out = []`, then `out.append(...)`; or work on `list({first})`)",
                   "dict": f"a new dict (`new = dict({first})`, and a new inner dict or array for anything "
                           "you change inside it)"}.get(kind, "new lists and dicts")
            raise ChangedItsInput(
                f"{what} changed its argument `{first}` in place: an item of the {kind} it was given was added, "
                f"removed or replaced. Build {how}, and leave `{first}` as it came. The caller's `{first}` is "
                "left as it was.")
        try:
            return wire.decode(answer["ok"], blobs, resolve)
        except wire.WireError as err:
            raise WorkerCrashed(f"{what} answered with something that is not plain data: {err}") from None


def _same_or_view(tree: dict, blobs: list, mine: list) -> np.ndarray:
    """An array result: the judge's own argument, a view into it where the learner returned one, or a copy."""
    import numpy as np  # loaded already (``wire`` reads the array with it); not at this module's import

    index = tree.get("b")
    if type(index) is not int or not 0 <= index < len(blobs):
        raise wire.WireError("an array refers to a blob that is not there")
    values = wire.read_array(blobs[index])
    if "r" in tree and type(tree["r"]) is int and 0 <= tree["r"] < len(mine):
        same = mine[tree["r"]]
        return same if same.shape == values.shape and same.dtype == values.dtype else values
    source = mine[tree["v"]] if type(tree.get("v")) is int and 0 <= tree["v"] < len(mine) else None
    if source is None or source.dtype != values.dtype or not source.flags.c_contiguous:
        return values
    try:  # NumPy checks that the view stays inside the argument's memory
        view = np.ndarray(values.shape, values.dtype, buffer=source, offset=int(tree.get("offset", 0)),
                          strides=tuple(int(s) for s in tree.get("strides", ())))
    except (TypeError, ValueError):
        return values
    return view if np.array_equal(view, values, equal_nan=True) else values


class FrameReader:
    """Reads whole frames from the worker's pipe with a time limit (POSIX: ``poll``, no threads).

    A worker that sends half a frame and stops cannot stall the judge: bytes are collected as they
    come, and only a complete frame is parsed.
    """

    def __init__(self, stream) -> None:
        self.fd = stream.fileno()
        self.buffer = bytearray()
        self.poll = select.poll()
        self.poll.register(self.fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        self.closed = False

    def _frame(self):
        if len(self.buffer) < 4:
            return None
        (size,) = wire._LEN.unpack_from(self.buffer)
        if size > wire.MAX_FRAME:
            return wire.WireError(f"a message header of {size} bytes is over the limit")
        if len(self.buffer) < 4 + size:
            return None
        try:
            header = json.loads(bytes(self.buffer[4:4 + size]))
            lengths = header["blobs"]
            assert isinstance(lengths, list) and all(type(n) is int and n >= 0 for n in lengths)
        except Exception as err:  # noqa: BLE001 - anything malformed is the worker's fault
            return wire.WireError(f"a message header is not valid: {err}")
        end = 4 + size + sum(lengths)
        if end - 4 > wire.MAX_FRAME:
            return wire.WireError("a message is over the size limit")
        if len(self.buffer) < end:
            return None
        blobs, at = [], 4 + size
        for n in lengths:
            blobs.append(bytes(self.buffer[at:at + n]))
            at += n
        del self.buffer[:end]
        return header, blobs

    def next(self, timeout: float):
        """The next frame, an exception (closed channel, bad frame), or None when ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        while True:
            found = self._frame()
            if found is not None:
                return found
            if self.closed:
                return EOFError("the learner's process closed the channel")
            left = deadline - time.monotonic()
            if left <= 0 or not self.poll.poll(max(0, int(left * 1000)) + 1):
                if time.monotonic() >= deadline:
                    return None
                continue
            try:
                chunk = os.read(self.fd, 1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                self.closed = True
            self.buffer += chunk


FUNCTION = object()


class FunctionProxy:
    """A learner's function, called in the worker."""

    def __init__(self, worker: Worker, module: str, name: str) -> None:
        self._worker, self._module, self.__name__ = worker, module, name
        self.__qualname__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function in the worker."""
        return self._worker.call(self._module, self.__name__, args, kwargs)

    def counted(self, budget: int, *args: Any, **kwargs: Any) -> tuple[Any, int]:
        """Call the function and count the lines of the learner's code it runs: (its result, the count).

        Work done rather than time: the count is the same on any machine. Past ``budget`` lines the call is
        stopped and ``OverBudget`` raised (its ``lines`` and ``where``).
        """
        value = self._worker.call(self._module, self.__name__, args, kwargs, lines=budget)
        return value, self._worker.last_lines

    def traced(self, *args: Any, **kwargs: Any) -> tuple[Any, int | None]:
        """Call the function and measure its memory: (its result, the most bytes it held at once, or None).

        Memory rather than time: ``tracemalloc``'s peak over the call, to which NumPy reports its arrays, so a
        temporary (seq, seq) array shows whatever the machine's load. None when the call stopped the tracing.
        """
        value = self._worker.call(self._module, self.__name__, args, kwargs, peak=True)
        return value, self._worker.last_peak

    def __repr__(self) -> str:
        return f"<learner's function {self._module}.{self.__name__}>"


class ChapterProxy:
    """Stands in for the learner's chapter module: attribute access and calls go to the worker."""

    def __init__(self, worker: Worker, impl: str, module: str) -> None:
        self._worker, self._module = worker, module
        self.__name__ = f"{impl}.{module}"
        self._values: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name not in self._values and name in self._worker.functions.get(self._module, ()):
            self._values[name] = FunctionProxy(self._worker, self._module, name)
        if name not in self._values:
            value = self._worker.get(self._module, name)
            self._values[name] = FunctionProxy(self._worker, self._module, name) if value is FUNCTION else value
        return self._values[name]

    def __repr__(self) -> str:
        return f"<the learner's {self.__name__}, in its own process>"


def sandbox_here() -> str:
    """The sandbox line of an empty worker started here now: ``SANDBOXED`` when its probe held.

    ``grade-class`` asks before grading anyone (unless ``--allow-unsealed``), so that a machine where the sandbox
    cannot hold (no bubblewrap; Ubuntu 24.04's AppArmor) refuses the run before any learner's code runs. The worker
    gets an empty package: nothing but the worker's own code and its probe run.
    """
    with tempfile.TemporaryDirectory(prefix="kata-seal-") as tmp:
        (Path(tmp) / "empty").mkdir()
        worker = Worker(Path(tmp), "empty")
        try:
            worker._ensure_ready()
        except WorkerCrashed as err:
            return f"{UNSEALED}{err}"
        finally:
            worker.close()
        return next((line for line in worker.protections
                     if line == SANDBOXED or line.startswith(UNSEALED)), f"{UNSEALED}no probe")
