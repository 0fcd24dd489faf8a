"""``nox -s watch -- 3``: re-check chapter 3 every time a file of the implementation is saved.

Fast because the watcher stays warm: it imports pytest, NumPy and the kata plugin once, and each
re-check runs in a fork of itself (a fresh child, so your newly saved code is imported from scratch).
Between checks it keeps an empty worker ready (``kata/judge/proxy.py``: Python and NumPy loaded,
nothing of yours), which the next check takes over. Where ``fork`` does not exist (Windows) each
re-check is a new ``python -m pytest`` instead.

Saves are noticed through inotify on Linux (no extra package), and by comparing file times every
``--interval`` seconds everywhere: that polling is the fallback where file events do not arrive
(WSL on a Windows drive, network drives, macOS, Windows). ``--poll`` uses polling alone.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import ctypes.util
import os
import select
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

from .. import project
from ..judge import proxy, warm

CLEAR = "\033[2J\033[H"
TIMEOUT = 10.0  # seconds one check may run before it counts as "timed out"


def parser() -> argparse.ArgumentParser:
    """The command line of ``nox -s watch -- ...``."""
    p = argparse.ArgumentParser(prog="nox -s watch --", description="Re-check a chapter each time you save.")
    p.add_argument("chapter", help="the chapter to check, e.g. 3")
    p.add_argument("--impl", default=None, help="package name or folder to check (default: exercises/ with your "
                   "saved notebooks' answers, as nox -s chapterN runs it)")
    p.add_argument("--poll", action="store_true", help="compare file times only (when saves go unnoticed)")
    p.add_argument("--interval", type=float, default=0.2, help="seconds between two polls (default: 0.2)")
    p.add_argument("--no-clear", action="store_true", help="do not clear the screen before each check")
    p.add_argument("--once", action="store_true", help="check once and stop (what the watcher runs each time)")
    return p


# -- noticing saves -----------------------------------------------------------------------------------
def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """(modification time, size) of every ``.py`` file in ``folder``."""
    found = {}
    for path in folder.rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        try:
            st = path.stat()
        except FileNotFoundError:  # removed while we looked
            continue
        found[str(path)] = (st.st_mtime_ns, st.st_size)
    return found


class Inotify:
    """File events from the Linux kernel through ctypes; ``None`` from :meth:`create` elsewhere."""

    EVENTS = 0x00000008 | 0x00000080 | 0x00000100 | 0x00000200  # close-write, moved-to, create, delete

    def __init__(self, fd: int, libc) -> None:
        self.fd = fd
        self.libc = libc

    @classmethod
    def create(cls, folder: Path) -> Inotify | None:
        """Watch ``folder`` and its sub-folders; None when inotify is not available."""
        if not sys.platform.startswith("linux"):
            return None
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            fd = libc.inotify_init1(os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except (OSError, AttributeError):
            return None
        if fd < 0:
            return None
        watcher = cls(fd, libc)
        for sub in [folder, *[p for p in folder.rglob("*") if p.is_dir() and "__pycache__" not in p.parts]]:
            if libc.inotify_add_watch(fd, os.fsencode(sub), cls.EVENTS) < 0:
                os.close(fd)
                return None
        return watcher

    def wait(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for an event on a ``.py`` file; True when one came."""
        ready, _, _ = select.select([self.fd], [], [], seconds)
        if not ready:
            return False
        hit = self._drain()
        if hit:
            time.sleep(0.02)  # an editor's save can be several events (write, rename): take them all as one
            self._drain()
        return hit

    def _drain(self) -> bool:
        hit = False
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return hit
            offset = 0
            while offset + 16 <= len(data):
                _, _, _, length = struct.unpack_from("iIII", data, offset)
                name = data[offset + 16 : offset + 16 + length].rstrip(b"\0")
                hit = hit or name.endswith(b".py")
                offset += 16 + length

    def close(self) -> None:
        """Stop listening."""
        os.close(self.fd)


SETTLE, SETTLE_LOOKS = 0.05, 20  # a save is over once the folder is unchanged for 50 ms (looking at most 1 s)


class Saves:
    """Tells when a ``.py`` file under a folder was saved: inotify when it works, polling always."""

    def __init__(self, folder: Path, *, poll_only: bool, interval: float) -> None:
        self.folder = folder
        self.interval = interval
        self.events = None if poll_only or _on_windows_drive(folder) else Inotify.create(folder)
        self.seen = snapshot(folder)
        self.last_poll = time.monotonic()

    @property
    def how(self) -> str:
        """How saves are noticed, in words."""
        if self.events:
            return f"file events, and polling every {max(self.interval, 1.0):g} s as a fallback"
        return f"polling every {self.interval:g} s"

    def close(self) -> None:
        """Stop listening for file events."""
        if self.events is not None:
            self.events.close()
            self.events = None

    def wait(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for a save; True when a file changed (or was added or removed)."""
        deadline = time.monotonic() + seconds
        poll_every = max(self.interval, 1.0) if self.events else self.interval
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            step = min(left, poll_every)
            if self.events is not None:
                if self.events.wait(step):
                    self.seen = self._settled(snapshot(self.folder))
                    return True
            else:
                time.sleep(step)
            if time.monotonic() - self.last_poll >= poll_every - 1e-3:
                self.last_poll = time.monotonic()
                now = snapshot(self.folder)
                if now != self.seen:
                    self.seen = self._settled(now)
                    return True

    def _settled(self, now: dict) -> dict:
        """The folder once it holds still (unchanged for ``SETTLE`` seconds).

        A save can be more than one write (emptied, then written; an editor's write, then rename): a look between
        them would report one save twice, the first time half done.
        """
        for _ in range(SETTLE_LOOKS):
            time.sleep(SETTLE)
            again = snapshot(self.folder)
            if again == now:
                break
            now = again
        return now


def _on_windows_drive(folder: Path) -> bool:
    """WSL on /mnt/c: inotify does not see saves made by Windows programs."""
    try:
        release = Path("/proc/sys/kernel/osrelease").read_text().lower()
    except OSError:
        return False
    return "microsoft" in release and str(folder.resolve()).startswith("/mnt/")


# -- checking -----------------------------------------------------------------------------------------
def pytest_args(chapter, impl: str) -> list[str]:
    """What a chapter check runs: the chapter's tests, as its worksheet, against ``impl``.

    The warning filter is for the warm watcher: the plugins and test modules were imported (and their
    asserts rewritten) by the warm-up, and pytest would otherwise warn that it cannot rewrite them again.
    Without pytest's unraisable-exception plugin a check skips its closing full garbage collection (a
    third of a check's time in chapter 10); that plugin reports ``__del__`` errors, and none of the
    learner's objects live in the judge (they stay in the worker).
    """
    return [
        chapter.test_file, "--steps", *([f"--impl={impl}"] if impl else []), "-p", "no:cacheprovider",
        f"--timeout={TIMEOUT:g}",
        "-W", "ignore::pytest.PytestAssertRewriteWarning", "-p", "no:unraisableexception",
    ]


def warm_up(chapter, impl: str) -> None:
    """Do once, in the watcher, everything a check repeats (each check is a fork of this process).

    Importing pytest and NumPy, loading pytest's plugins and collecting the chapter's tests costs most
    of a check; none of it imports the learner's code (the kata plugin imports a chapter only when a
    test asks for it), so a fork of the warmed-up watcher still sees every save.
    """
    warm.warm_up(pytest_args(chapter, impl))
    if hasattr(os, "fork"):
        proxy.prestart()  # the first check's worker


def start_check(chapter, impl: str):
    """Start one check; return something ``finish`` and ``stop`` understand (a pid or a Popen)."""
    args = pytest_args(chapter, impl)
    sys.stdout.flush()
    if hasattr(os, "fork"):  # a fresh import of the learner's code in a fork, everything else already warm
        def check() -> int:
            import pytest

            os.chdir(project.ROOT)
            return pytest.main(args)

        return warm.fork_check(check)
    return subprocess.Popen([sys.executable, "-m", "pytest", *args], cwd=project.ROOT)


def running(check) -> bool:
    """Whether a check is still running (once it has ended, its worker is ended too)."""
    if isinstance(check, int):
        pid, _ = os.waitpid(check, os.WNOHANG)
        if pid == 0:
            return True
        proxy.reap({check})
        return False
    return check.poll() is None


def stop(check) -> None:
    """Stop a check that a newer save made pointless."""
    if isinstance(check, int):
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(check, signal.SIGKILL)
            os.waitpid(check, 0)
        proxy.reap({check})
    else:
        check.kill()
        check.wait()


def main(argv: list[str] | None = None) -> int:
    """Watch and re-check until Ctrl-C."""
    args = parser().parse_args(argv)
    chapter = project.chapter(project.parse_chapter(args.chapter))
    folder = project.impl_folder(args.impl or "exercises")
    impl = args.impl  # None: the plugin's default, exercises/ with the saved notebooks' answers, as it is now
    warm_up(chapter, impl)
    if args.once:
        check = start_check(chapter, impl)
        while running(check):
            time.sleep(0.01)
        return 0
    saves = Saves(folder, poll_only=args.poll, interval=args.interval)
    headline = f"watching {folder} ({saves.how}); chapter {chapter.number}: {chapter.title}. Ctrl-C stops."
    check = None
    parent = os.getppid()
    try:
        while True:
            if not args.no_clear:
                print(CLEAR, end="")
            print(f"{time.strftime('%H:%M:%S')}  {headline}", flush=True)
            check = start_check(chapter, impl)
            while True:
                if os.getppid() != parent:  # nox (or the terminal) went away: do not linger as an orphan
                    raise KeyboardInterrupt
                if saves.wait(0.05):
                    if check is not None and running(check):
                        stop(check)
                    break
                if check is not None and not running(check):
                    check = None
                    if hasattr(os, "fork"):
                        proxy.prestart()  # an empty worker, ready for the next save
    except KeyboardInterrupt:
        if check is not None and running(check):
            stop(check)
        print("\nstopped watching.")
        return 0
    finally:
        saves.close()
