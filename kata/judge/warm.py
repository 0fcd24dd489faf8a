"""The warm judge: ``nox -s chapterN`` answers in a fork of a judge that has already started.

Most of a quick chapter check is starting up: Python, pytest and its plugins, NumPy, the answer key, the
test modules, the worker's own Python and NumPy. The first ``nox -s chapterN`` runs the judge as usual
and starts a warm judge beside it, in the background: one process per course folder and Python that has
done all of that once (``warm_up``) and keeps an empty worker ready (``proxy.prestart``). Each later check
connects to it (``run``, through a Unix socket only its user can open), and the warm judge forks: the
fork takes over the terminal, the folder and the environment of the command that asked, runs pytest
exactly as ``python -m pytest`` would, and its exit code comes back as the command's own. The learner's
code still loads fresh, in a fresh worker, on every check: nothing of it is ever kept.

- It notices when it is out of date (the course's machinery, tests, answer key or installed packages
  changed since it started): it then exits and the check runs the usual way, starting a new one.
- It exits by itself after ``IDLE`` seconds without a check, or when its course folder is gone.
- Ctrl-C reaches the check as it would a plain pytest run.
- Linux only (it passes the terminal over a Unix socket and forks); elsewhere, in CI, or with
  ``KATA_WARM=0``, every check runs the usual way (and ``KATA_WARM=0`` stops those of this course that run). Grading
  never uses it.

A hand-written fork server rather than a library: pytest-xdist and pytest's own tools re-import
everything per process, and what is kept warm here (pytest, NumPy, the course's test modules) is exactly
what they would load again. The client side imports nothing but the standard library (it starts with
``python -S``).

    python -S -m kata.judge.warm run tests/test_chapter04_attention.py --steps   # what nox runs
    python -m kata.judge.warm stop                                                # end this course's
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

from .. import project
from ..project import ROOT

IDLE = 15 * 60  # seconds without a check after which the warm judge exits
MAX_REQUEST = 1 << 20
WAIT = 20.0  # seconds a check waits for a warm judge to take it (it may be warming up) before running cold
WATCHED = ("kata", "tests", "reference", "conftest.py", "pyproject.toml")  # what it loaded, relative to ROOT


def enabled() -> bool:
    """Whether checks may use a warm judge here (Linux, not CI, not switched off)."""
    return (sys.platform.startswith("linux") and hasattr(socket, "send_fds") and hasattr(os, "fork")
            and os.environ.get("KATA_WARM", "1") != "0" and not os.environ.get("CI"))


def _runtime_dir() -> Path:
    """A folder only this user can enter, for the socket and the log."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and os.path.isdir(base) and os.stat(base).st_uid == os.getuid():
        folder = Path(base) / "kata"
    else:
        folder = Path("/tmp") / f"kata-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    st = os.lstat(folder)
    if st.st_uid != os.getuid() or (st.st_mode & 0o077) or not os.path.isdir(folder) or os.path.islink(folder):
        raise OSError(f"{folder} is not a private folder of this user")
    return folder


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value).encode()).hexdigest()[:16]


def address() -> Path:
    """This course folder's socket, for this Python and these packages (and how Python is told to start).

    The chapter sessions' environments hold the same packages (noxfile.py's ``install`` stamps each with
    their digest), so one warm judge serves them all. A notebook's checks start Python another way (the
    runner's PYTHONPATH), so they get a judge of their own; the name begins with the course folder's digest
    (``course_judges``), so that ``stop`` and ``KATA_WARM=0`` end both.
    """
    said = {k: v for k, v in os.environ.items() if k.startswith("PYTHON")}
    try:
        packages = (Path(sys.executable).parent.parent / ".kata-installed").read_text()  # (-S: no sys.prefix)
    except OSError:
        packages = sys.executable
    return _runtime_dir() / f"judge-{_digest(str(ROOT))}-{_digest([sys.version, packages, sorted(said.items())])}.sock"


def course_judges() -> list[Path]:
    """The sockets of every warm judge of this course folder, however Python was started for it."""
    return sorted(_runtime_dir().glob(f"judge-{_digest(str(ROOT))}-*.sock"))


# -- the client: what `nox -s chapterN` runs -------------------------------------------------------------
def run(args: list[str]) -> int:
    """Run pytest with ``args`` in the warm judge, or the usual way (and start a warm judge for next time)."""
    if not enabled():
        if os.environ.get("KATA_WARM") == "0" and sys.platform.startswith("linux"):
            _stop_quietly()  # switched off: one already running stops too
        _run_cold(args)
    try:
        path = address()
    except OSError:
        _run_cold(args)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(path))
    except OSError:
        conn.close()
        _start_server()
        _run_cold(args)
    request = json.dumps({"argv": args, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    try:
        socket.send_fds(conn, [struct.pack("!I", len(request)) + request], [0, 1, 2])
    except OSError:
        _run_cold(args)

    def forward(number, frame):  # noqa: ANN001, ARG001 - a signal handler's signature
        with contextlib.suppress(OSError):
            conn.sendall(json.dumps({"signal": number}).encode() + b"\n")

    signal.signal(signal.SIGINT, forward)
    signal.signal(signal.SIGTERM, forward)
    answer, started = _read_answer(conn)
    if answer.get("stale"):
        _start_server()
        _run_cold(args)
    if "exit" in answer:
        return int(answer["exit"])
    if not started:  # it did not take the check in time, or went away first
        _run_cold(args)
    print("the warm judge stopped during this check; run it again (KATA_WARM=0 switches it off)", file=sys.stderr)
    return 3


def _read_answer(conn: socket.socket) -> tuple[dict, bool]:
    """The server's last word ({"exit": N}, {"stale": true}, …) and whether the check had started."""
    data, started = b"", False
    conn.settimeout(WAIT)  # a warm judge that does not take the check in time is left alone
    while True:
        try:
            chunk = conn.recv(4096)
        except InterruptedError:
            continue
        except TimeoutError:
            if started:
                continue
            return {"late": True}, False
        except OSError:
            chunk = b""
        if started:
            conn.settimeout(None)
        if not chunk:
            return {}, started
        data += chunk
        while b"\n" in data:
            line, data = data.split(b"\n", 1)
            try:
                message = json.loads(line)
            except ValueError:
                return {}, started
            if message.get("started"):
                started = True
                conn.settimeout(None)
            else:
                return message, started


def fork_check(check) -> int:
    """Run ``check()`` (a chapter check: it returns pytest's exit code) in a fork of this warm process; its pid.

    The fork takes the spare worker over (``proxy.handed_over``), exits with the check's code without running
    any of this process's clean-up, and says what broke if the check raised. The warm judge and the watcher
    (``kata/learner/watch.py``) both check this way.
    """
    from . import proxy

    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            code = int(check())
        except BaseException:  # noqa: BLE001 - say what broke, then leave without running the parent's code
            import traceback

            traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    proxy.handed_over(pid)  # the check took the spare worker (or lets it go when it ends)
    return pid


def _run_cold(args: list[str]):
    """Replace this process with a plain ``python -m pytest`` (site-packages included)."""
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, "-m", "pytest", *args])


def _start_server() -> None:
    """Start a warm judge for this course in the background (it finds out itself if one already runs)."""
    try:
        path = address().with_suffix(".log")
        big = path.exists() and path.stat().st_size > MAX_REQUEST  # start the log afresh past 1 MiB
        written = open(path, "wb" if big else "ab")  # noqa: SIM115 - handed to the child
    except OSError:
        return
    with written:
        subprocess.Popen(
            [sys.executable, "-m", "kata.judge.warm", "serve"], cwd=ROOT, stdin=subprocess.DEVNULL,
            stdout=written, stderr=written, start_new_session=True, close_fds=True,
        )


# -- the server ---------------------------------------------------------------------------------------------
def fingerprint() -> list:
    """What the warm judge has loaded, as (path, mtime, size): the course's machinery and the packages."""
    found = []
    for name in WATCHED:
        top = ROOT / name
        if top.is_file():
            st = top.stat()
            found.append((name, st.st_mtime_ns, st.st_size))
            continue
        for folder, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
            for file in sorted(files):
                if file.endswith((".py", ".toml", ".npz", ".json")):
                    st = os.stat(os.path.join(folder, file))
                    found.append((os.path.join(folder, file), st.st_mtime_ns, st.st_size))
    for entry in sys.path:
        if entry.endswith("-packages") and os.path.isdir(entry):
            found.append((entry, os.stat(entry).st_mtime_ns, 0))  # a package installed or removed
    return found


def warm_up(args: list[str] | None = None) -> None:
    """Load once what every check needs: pytest, its plugins, NumPy, the answer key, the test modules.

    ``args``: the pytest arguments whose tests to collect (default: every chapter's). The watcher
    (``kata/learner/watch.py``) warms up with this too. Nothing here imports the learner's code (the kata
    plugin imports a chapter only when a test asks for it), so a fork still sees every save.
    """
    import gc

    import pytest

    if args is None:
        tests = [str(p.relative_to(ROOT)) for p in project.chapter_files(ROOT / "tests", prefix="test_").values()]
        args = [*tests, "-p", "no:cacheprovider"]
    os.chdir(ROOT)
    with open(os.devnull, "w") as devnull:
        saved = sys.stdout
        sys.stdout = devnull
        try:
            pytest.main([*args, "--collect-only", "-q"])
        finally:
            sys.stdout = saved
    from . import answer_key

    answer_key.chapters()  # every answer key, read once
    gc.collect()
    gc.freeze()  # the forks neither scan nor copy what is loaded here


class Server:
    """Accepts checks on the socket and runs each in a fork (``serve``)."""

    def __init__(self, listener: socket.socket, path: Path) -> None:
        self.listener, self.path = listener, path
        self.inode = os.stat(path).st_ino
        self.loaded = fingerprint()
        self.checks: dict[int, socket.socket] = {}  # fork pid -> the connection of the command that asked
        self.last = time.monotonic()
        self.stale = False  # out of date: finish the running checks, take no more
        self.wake_r, self.wake_w = os.pipe()  # a check that ends wakes the loop at once (SIGCHLD)
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda number, frame: None)

    def loop(self) -> None:
        """Serve until idle, out of date, or no longer reachable."""
        from . import proxy

        proxy.prestart()
        while True:
            listening = [] if self.stale else [self.listener]
            ready, _, _ = select.select([self.wake_r, *listening, *self.checks.values()], [], [], 1.0)
            for conn in ready:
                if conn is self.wake_r:
                    os.read(self.wake_r, 512)
                elif conn is self.listener:
                    self.accept()
                else:
                    self.from_client(conn)
            self.reap()
            if self.checks:
                self.last = time.monotonic()
            elif self.stale or time.monotonic() - self.last > IDLE or not self.reachable():
                return

    def reachable(self) -> bool:
        """Whether the course folder and this server's socket are still there."""
        try:
            return (ROOT / "kata").is_dir() and os.stat(self.path).st_ino == self.inode
        except OSError:
            return False

    def accept(self) -> None:
        """Take one check: read its request and the command's terminal, then fork."""
        conn, _ = self.listener.accept()
        try:
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            if struct.unpack("3i", creds)[1] != os.getuid():
                raise OSError("another user")
            request, fds = _receive(conn)
        except (OSError, ValueError):
            conn.close()
            return
        try:
            if _gone(conn):  # it gave up waiting (and ran the usual way)
                raise OSError("the command went away")
            if fingerprint() != self.loaded:  # out of date: the command runs the usual way, starting a new one
                log("out of date: the course's machinery, tests, answer key or packages changed; stepping aside")
                self.stale = True
                self.forget_socket()
                conn.sendall(b'{"stale": true}\n')
                conn.close()
            else:
                self.fork(conn, request, fds)
        except OSError:
            conn.close()
        finally:
            for fd in fds:
                os.close(fd)

    def fork(self, conn: socket.socket, request: dict, fds: list[int]) -> None:
        """Run the check in a child that has the command's terminal, folder and environment."""
        def check() -> int:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for fd in (self.wake_r, self.wake_w):
                os.close(fd)
            self.listener.close()
            for other in self.checks.values():
                other.close()
            conn.close()
            return _child(request, fds)

        pid = fork_check(check)
        self.checks[pid] = conn
        log(f"check {pid}: pytest {' '.join(map(str, request['argv']))}"[:500])
        with contextlib.suppress(OSError):
            conn.sendall(b'{"started": true}\n')

    def from_client(self, conn: socket.socket) -> None:
        """A signal to pass on (Ctrl-C), or the command went away (then the check is ended)."""
        pid = next(p for p, c in self.checks.items() if c is conn)
        try:
            data = conn.recv(4096)
        except OSError:
            data = b""
        if not data:
            _signal(pid, signal.SIGKILL)
            return
        for line in data.splitlines():
            try:
                number = int(json.loads(line).get("signal"))
            except (ValueError, TypeError, AttributeError):
                continue
            if number in (signal.SIGINT, signal.SIGTERM):
                _signal(pid, number)

    def reap(self) -> None:
        """Send each ended check's exit code to its command; end its worker; keep a spare ready."""
        from . import proxy

        finished = set()
        for pid, conn in list(self.checks.items()):
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done, status = pid, 3 << 8
            if done == 0:
                continue
            finished.add(pid)
            del self.checks[pid]
            code = os.waitstatus_to_exitcode(status)
            log(f"check {pid} ended: exit code {code}")
            with contextlib.suppress(OSError):
                conn.sendall(json.dumps({"exit": code if code >= 0 else 128 - code}).encode() + b"\n")
            conn.close()
        if finished:
            proxy.reap(finished)
            proxy.prestart()

    def forget_socket(self) -> None:
        """Remove the socket, if it is still ours: the next command starts a new warm judge."""
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self.inode:
                os.unlink(self.path)

    def close(self) -> None:
        """Remove the socket and end the spare worker."""
        from . import proxy

        self.listener.close()
        self.forget_socket()
        proxy.drop_spare()


def log(message: str) -> None:
    """One line in the warm judge's log (its socket's name with ``.log``)."""
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} [{os.getpid()}] {message}", flush=True)


def _gone(conn: socket.socket) -> bool:
    """Whether the command at the other end has closed its connection."""
    try:
        return conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def _signal(pid: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, number)


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    """The request (length-prefixed JSON) and the three file descriptors sent with it."""
    conn.settimeout(5)
    data, fds, _, _ = socket.recv_fds(conn, 65536, 3)
    try:
        if len(fds) != 3 or len(data) < 4:
            raise ValueError("a request without its terminal")
        size = struct.unpack("!I", data[:4])[0]
        if size > MAX_REQUEST:
            raise ValueError("a request too large")
        data = data[4:]
        while len(data) < size:
            chunk = conn.recv(size - len(data))
            if not chunk:
                raise ValueError("a request cut short")
            data += chunk
        request = json.loads(data)
        if not isinstance(request.get("argv"), list) or not isinstance(request.get("env"), dict):
            raise ValueError("a request without argv or env")
    except (ValueError, OSError):
        for fd in fds:
            os.close(fd)
        raise
    conn.settimeout(None)
    return request, fds


def _child(request: dict, fds: list[int]) -> int:
    """In the fork: become the command (terminal, folder, environment, Ctrl-C), then run pytest."""
    import io

    import pytest

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    os.chdir(request.get("cwd") or ROOT)
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in request["env"].items()})
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    encoding = sys.stdout.encoding or "utf-8"
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding=encoding)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding=encoding, errors="backslashreplace",
                                  line_buffering=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding=encoding, errors="backslashreplace",
                                  line_buffering=True)
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
    args = [str(a) for a in request["argv"]]
    sys.argv = ["pytest", *args]
    # The plugins and test modules were imported (their asserts rewritten) by the warm-up; pytest would
    # otherwise warn that it cannot rewrite them again.
    return int(pytest.main([*args, "-W", "ignore::pytest.PytestAssertRewriteWarning"]))


def serve() -> int:
    """Become this course's warm judge, unless one already answers on the socket."""
    path = address()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(path))
    except OSError:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(path))
            return 0  # one already runs
        except OSError:
            os.unlink(path)  # left by one that ended without cleaning up
            listener.bind(str(path))
        finally:
            probe.close()
    os.chmod(path, 0o600)
    listener.listen(16)  # checks that arrive during the warm-up wait for it
    server = Server(listener, path)
    log(f"warm judge for {ROOT} ({sys.executable}) starting")
    try:
        warm_up()
        server.loaded = server.loaded if fingerprint() == server.loaded else []  # changed during the warm-up
        log("warm: pytest, NumPy, the answer key and the test modules are loaded")
        server.loop()
    finally:
        server.close()
        log("stopped")
    return 0


def _stop_all() -> int:
    """Remove the sockets of this course's warm judges (each stops within a second); how many there were."""
    stopped = 0
    for path in course_judges():
        with contextlib.suppress(OSError):
            os.unlink(path)
            stopped += 1
    return stopped


def _stop_quietly() -> None:
    with contextlib.suppress(OSError):
        _stop_all()


def stop() -> int:
    """End this course's warm judges, if any run (the next check starts as usual)."""
    try:
        stopped = _stop_all()
    except OSError as err:
        print(f"no warm judge can run here: {err}")
        return 0
    print(f"{stopped} warm judge(s) of this course will stop within a second" if stopped
          else "no warm judge runs for this course")
    return 0


def main(argv: list[str]) -> int:
    """``run ARGS...``, ``serve`` or ``stop``."""
    if argv[:1] == ["run"]:
        return run(argv[1:])
    if argv[:1] == ["serve"]:
        return serve()
    if argv[:1] == ["stop"]:
        return stop()
    print(__doc__.strip().splitlines()[-2].strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
