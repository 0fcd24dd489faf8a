"""What the learner's process may use, applied in the worker before any learner import.

Soft and hard limits are equal, so the learner's code cannot raise them again. Where the operating
system has no ``resource`` module (Windows) nothing is applied here and the judge's report says so.

The whole of one learner's code is bounded by two of them together: ``RLIMIT_NPROC`` of 1 lets the worker start
no process or thread, so the address-space limit of that one process is the bound of everything the learner
runs. It holds only for an unprivileged uid, which the sandbox gives a worker even when root grades
(``kata/judge/proxy.py``). A cgroup (memory.max, pids.max) would bound a tree of processes instead, but it needs
root or a systemd user session, and cgroup v1 or v2 each their own way; with no new processes at all there is
no tree to bound, so none is used.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

# Defaults; the judge may pass others (``grading.toml``).
LIMITS = {
    "cpu_seconds": 300,  # CPU time over the worker's whole life (the judge's clocks are the main guard)
    "memory_bytes": 4 * 1024**3,  # address space: a 10 GB allocation fails with MemoryError
    "open_files": 64,
    "output_bytes": 4 * 1024**2,  # what prints (and files written) may add up to
}


def apply(limits: dict) -> list[str]:
    """Apply ``limits`` to this process; return the names of the protections that took effect."""
    try:
        import resource
    except ImportError:  # Windows
        return []
    applied = []

    def limit(which: int, value: int, name: str) -> None:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(which, (value, value))
            applied.append(name)

    limit(resource.RLIMIT_CPU, int(limits["cpu_seconds"]), f"cpu {int(limits['cpu_seconds'])} s")
    limit(resource.RLIMIT_AS, int(limits["memory_bytes"]), f"memory {int(limits['memory_bytes']) >> 20} MiB")
    limit(resource.RLIMIT_NOFILE, int(limits["open_files"]), f"open files {int(limits['open_files'])}")
    limit(resource.RLIMIT_FSIZE, int(limits["output_bytes"]), f"output {int(limits['output_bytes']) >> 10} KiB")
    limit(resource.RLIMIT_CORE, 0, "no core dumps")
    if hasattr(resource, "RLIMIT_NPROC"):
        if os.geteuid() != 0:
            # Counted per user: with the user's processes already over it, every fork fails at once. So the worker
            # is the learner's only process, and the memory limit (per process) bounds all of the learner's code.
            limit(resource.RLIMIT_NPROC, 1, "no new processes (the memory limit bounds all of the learner's code)")
        else:  # root is exempt from RLIMIT_NPROC: only the sandbox's unprivileged user makes it hold
            applied.append("new processes not bounded (running as root): the memory limit is per process")
    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the output limit a write fails instead
    return applied


def environment(home: str) -> dict[str, str]:
    """The worker's whole environment: no tokens, no ``GITHUB_*``, nothing of the grader's."""
    env = {
        "PATH": os.defpath,
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
    }
    from ..process import ONE_THREAD  # the judge's side only: the worker itself never imports it

    env.update(ONE_THREAD)  # and so an address-space limit does not break NumPy's thread pool
    if sys.platform == "win32":  # Python and NumPy do not start on Windows without these
        for name in ("SYSTEMROOT", "WINDIR", "TEMP", "TMP", "COMSPEC"):
            if name in os.environ:
                env[name] = os.environ[name]
        env["TEMP"] = env["TMP"] = home
    return env
