"""The child processes the tools start: how one is ended, and how its output is read.

- ``kill_tree``: end a process and everything it started (it is started in a session of its own).
- ``process_tree``, ``tree_cpu_seconds``: a child and everything it started, and the CPU time they have used.
- ``cores``: how many processes the machine lets this one run side by side (the suite's workers, the browsers).
- ``ONE_THREAD``: the environment that keeps NumPy's BLAS (and OpenMP) to one thread in a child.
- ``Drain``: read a child's pipe to its end on a thread, so the child never blocks on a full pipe; keep
  only the last bytes (a flood of prints cannot fill memory) and hand each line to whoever wants it.

Standard library only: the judge's launcher imports this before NumPy.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections import deque
from collections.abc import Callable

KEEP_OUTPUT = 16_384  # bytes of a child's output a drain keeps
# One thread for NumPy's BLAS in the processes the tools start (the judge's pytest, its worker, a trainer, the
# suite's workers). Their matrices are a few rows: a second thread never speeds them up, yet OpenBLAS starts one
# per core when NumPy is imported (0.13 CPU-s an import instead of 0.06 on two cores) and spins it while it
# waits, on cores that the judge, its worker or the suite's other workers need. One thread also gives the same
# sums on every run.
ONE_THREAD = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                     "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")}


def cores() -> int:
    """The cores this process may run on (a container's or ``taskset``'s share, not the machine's count)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def kill_tree(proc: subprocess.Popen, *, wait: bool = True) -> None:
    """End ``proc`` and the processes it started (its session: start it with ``start_new_session=True``).

    Args:
        proc: the child.
        wait: reap it (only its parent can; a fork of the parent cannot).
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            proc.kill()
    if wait:
        proc.wait()


def process_tree(pid: int) -> dict[int, float]:
    """{pid: CPU seconds used so far (user and system)} of process ``pid`` and every process below it.

    Read from ``/proc`` (Linux), which holds every process's parent and CPU ticks; empty where there is no
    ``/proc`` or ``pid`` is gone. Read by hand rather than with psutil: this module is standard library only (the
    judge's launcher imports it before anything else, and a learner's environment needs no compiled extra), and
    a parent link and two tick counts per process are all it needs.
    """
    try:
        names = os.listdir("/proc")
        tick = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):
        return {}
    children: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
            fields = data[data.rindex(b")") + 2:].split()  # after "pid (command) ": state, ppid, ...
            cpu[int(name)] = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
            children.setdefault(int(fields[1]), []).append(int(name))
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile, or not ours to read
    if pid not in cpu:
        return {}
    found, todo = {}, [pid]
    while todo:
        here = todo.pop()
        found[here] = cpu.get(here, 0.0)
        todo += children.get(here, [])
    return found


def tree_cpu_seconds(pid: int) -> float | None:
    """CPU seconds used so far by process ``pid`` and every process below it; ``None`` where ``/proc`` cannot say.

    The judge asks this only when a call has outlived its wall-clock limit, to tell a learner's process that is
    computing on a busy machine from one that is stuck without using the CPU.
    """
    tree = process_tree(pid)
    return sum(tree.values()) if tree else None


class Drain(threading.Thread):
    """Reads a binary pipe to its end; keeps the last ``keep`` bytes; hands every line to ``on_line``.

    ``on_line`` gets each line as text (UTF-8, undecodable bytes replaced, the newline kept), and ``None``
    once the pipe has ended.
    """

    def __init__(self, stream, on_line: Callable[[str | None], None] | None = None,
                 keep: int = KEEP_OUTPUT) -> None:
        super().__init__(daemon=True)
        self.stream, self.on_line, self.keep = stream, on_line, keep
        self.chunks: deque[bytes] = deque()
        self.size = 0

    def run(self) -> None:
        """Read until the pipe ends."""
        read = self.stream.read1 if hasattr(self.stream, "read1") else self.stream.read
        partial = b""
        while True:
            chunk = read(65536)
            if not chunk:
                break
            self.chunks.append(chunk)
            self.size += len(chunk)
            while self.size - len(self.chunks[0]) > self.keep and len(self.chunks) > 1:
                self.size -= len(self.chunks.popleft())
            if self.on_line is not None:
                *lines, partial = (partial + chunk).split(b"\n")
                for line in lines:
                    self.on_line((line + b"\n").decode("utf-8", "replace"))
        if self.on_line is not None:
            if partial:
                self.on_line(partial.decode("utf-8", "replace"))
            self.on_line(None)

    def tail(self) -> str:
        """The last ``keep`` bytes read, as text."""
        return b"".join(self.chunks)[-self.keep:].decode("utf-8", "replace")
