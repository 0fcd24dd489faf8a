"""The child process that imports your chapters and does the work, for either model; ``Child``, this process's handle.

Every call into your code runs under a watchdog (``Guarded``).

Part of ``nox -s train`` (``kata/learner/train/__init__.py`` tells the whole story).
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from ... import project
from ...process import Drain, kill_tree
from .corpus import TrainError
from .gradcheck import check_gradients
from .loop import read_progress, train

STARTUP = 60.0  # seconds the child may take to import NumPy and your chapter on a cold disk


GRACE = 10.0  # seconds past --timeout before the child is ended from here


THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
           "NUMEXPR_NUM_THREADS")


class Guarded:
    """Your chapter module, with a watchdog around every call.

    Past ``timeout`` s the process says where it was and exits (``faulthandler``, which works even while NumPy's
    C code runs). The watchdog is re-armed at most once a second, so a step pays nothing for it.
    """

    def __init__(self, module, timeout: float, log, beat) -> None:
        import faulthandler

        self._module, self._timeout, self._log, self._beat = module, timeout, log, beat
        self._faulthandler = faulthandler
        self._armed = 0.0
        self._functions: dict = {}

    def _arm(self) -> None:
        now = time.monotonic()
        if now - self._armed >= 1.0:
            self._faulthandler.dump_traceback_later(self._timeout, exit=True, file=self._log)
            self._armed = now
            self._beat()

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self._functions:
            function = getattr(self._module, name)

            def call(*args, **kwargs):
                self._arm()
                return function(*args, **kwargs)

            call.__name__ = name
            self._functions[name] = call
        return self._functions[name]


def learner_frames(tb, folder: Path) -> list[traceback.FrameSummary]:
    """The frames of a traceback that are in the learner's folder."""
    return [f for f in traceback.extract_tb(tb) if Path(f.filename).resolve().is_relative_to(folder)]


# What to do once the chapter passes, by what was running.
VERBS = {"generating": "Generate", "serving": "Serve", "measuring": "Measure"}


def describe(err: BaseException, folder: Path, shown_folder: str, doing: str) -> str:
    """A learner's exception as one message: what, where in their file, and what to do."""
    frames = learner_frames(err.__traceback__, folder)
    inner = frames[-1]
    where = f"{shown_folder}/{Path(inner.filename).name}:{inner.lineno} in {inner.name}"
    head = f"{type(err).__name__}: {err}".strip()
    number = project.chapter_number(Path(inner.filename).name) or project.chapter_number(
        Path(frames[0].filename).name) or 10
    if isinstance(err, NotImplementedError):
        return (f"chapter {number} is not finished: {frames[0].name} stops at {where}\n  {head}\n"
                f"{VERBS.get(doing, 'Train')} once `nox -s chapter{number}` passes every step.")
    return (f"{frames[0].name} raised {head}\n  at {where}: {(inner.line or '').strip()}\n"
            f"  while {doing}. `nox -s chapter{number}` checks every function on its own.")


def child_main(work=None) -> int:
    """Run in the child process: read the job from stdin, write one JSON event per line to the original stdout.

    ``work(ch, job, send, status)``: what to do with the chapters instead of training or generating (another tool
    that runs the learner's code the same way, ``nox -s serve`` and ``nox -s align``; ``Child(entry=...)``
    starts it).
    """
    from .chapter10 import Chapter10  # imported here: the parent process needs neither model to start a child
    from .gpt import Gpt

    MODELS = {m.name: m for m in (Chapter10(), Gpt())}

    job = json.loads(sys.stdin.readline())
    events = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)  # what the learner's code prints goes to the log, not into the events

    def send(event: dict) -> None:
        events.write(json.dumps(event) + "\n")

    folder = Path(job["folder"])
    sys.path.insert(0, str(folder.parent))
    log = open(job["log"], "a", encoding="utf-8")  # noqa: SIM115 - open for the life of the process
    model = MODELS.get(job["kind"])
    numbers = list(model.chapters.values()) if model else sorted(int(n) for n in job.get("numbers", [0]))
    status = {"doing": f"importing your chapter {numbers[0]}" if len(numbers) == 1 else "importing your chapters"}
    last_beat = [0.0]

    def beat() -> None:
        if time.monotonic() - last_beat[0] > 1.0:
            last_beat[0] = time.monotonic()
            send({"event": "beat"})

    try:
        import faulthandler
        import importlib

        faulthandler.dump_traceback_later(job["timeout"], exit=True, file=log)
        ch = SimpleNamespace(**{key: Guarded(importlib.import_module(f"{folder.name}.{name}"), job["timeout"], log,
                                             beat) for key, name in job["modules"].items()})
        if work is not None:
            work(ch, job, send, status)
        elif job["mode"] == "generate":
            status["doing"] = "generating"
            model.generate(ch, job, send)
        else:
            train_job(model, ch, job, send, status)
        faulthandler.cancel_dump_traceback_later()
        return 0
    except TrainError as err:
        send({"event": "failed", "message": str(err)})
        return 1
    except Exception as err:  # noqa: BLE001 - the learner's exception becomes a message; ours a traceback
        if err.__traceback__ is not None and learner_frames(err.__traceback__, folder.resolve()):
            send({"event": "failed", "message": describe(err, folder.resolve(), job["shown_folder"],
                                                         status["doing"])})
            return 1
        traceback.print_exc(file=log)
        send({"event": "failed", "message": f"the training tool failed while {status['doing']}: "
                                            f"{type(err).__name__}: {err} (the traceback is above)", "tool": True})
        return 1


def train_job(model, ch, job: dict, send, status: dict) -> None:
    """Check the gradients, prepare the data, train (or resume), write model.npz: every step told to the parent."""
    out = Path(job["out"])
    resume = read_progress(model, out) if job.get("resume") else None
    s = resume["settings"] if resume else model.settings(job["settings"])

    def phase(doing: str) -> None:
        status["doing"] = doing
        send({"event": "phase", "what": doing})

    phase("checking your gradients on a tiny model")
    began = time.perf_counter()
    checked = check_gradients(ch, model)
    send({"event": "checked", **checked, "seconds": time.perf_counter() - began})
    data, ready = model.prepare(ch, job, s, resume, phase)
    send({"event": "ready", **ready, "settings": s.as_dict()})
    status["doing"] = "training"

    def report(event: dict) -> None:
        if event["event"] == "step":
            status["doing"] = f"training (step {event['step'] + 1})"
        send(event)

    run = train(model, ch, s, data, report, out, resume, job.get("stop_at"))
    out.mkdir(parents=True, exist_ok=True)
    np.savez(out / "model.npz", **model.arrays(run["params"], s, data))
    send({"event": "done", **{k: v for k, v in run.items() if k not in ("params", "losses")},
          "cpu_seconds": time.process_time()})


@dataclass
class Child:
    """The child process running a job, and what it says."""

    job: dict
    timeout: float
    events: queue.Queue = field(default_factory=queue.Queue)
    entry: str = "kata.learner.train"  # the module whose ``main(["--child"])`` the child runs

    def __post_init__(self) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="kata-train-")
        self.log_path = Path(self.tmp.name) / "child.log"
        self.log_path.touch()
        self.job = dict(self.job, log=str(self.log_path))
        path = [str(project.ROOT), *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(path),
                   PYTHONIOENCODING="utf-8", PYTHONFAULTHANDLER="1")
        env.update({name: "1" for name in THREADS})  # one thread: faster at this size, and the same sums each run
        self.log = self.log_path.open("a", encoding="utf-8")
        self.proc = subprocess.Popen(
            [sys.executable, "-X", "utf8", "-m", self.entry, "--child"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self.log, env=env, cwd=os.getcwd(),
            start_new_session=hasattr(os, "setsid"))
        self.proc.stdin.write(json.dumps(self.job).encode("utf-8") + b"\n")
        self.proc.stdin.close()
        Drain(self.proc.stdout, self._event).start()

    def _event(self, line: str | None) -> None:
        """One line from the child: an event (None once it has ended)."""
        if line is None:
            self.events.put(None)
            return
        try:
            self.events.put(json.loads(line))
        except ValueError:
            pass

    def next(self, started: bool) -> dict:
        """The next event; TrainError if the child hung, crashed or fell silent."""
        try:
            event = self.events.get(timeout=(self.timeout + GRACE) if started else STARTUP + self.timeout)
        except queue.Empty:
            self.stop()
            raise TrainError(self.hung(silent=True)) from None
        if event is None:
            self.proc.wait()
            raise TrainError(self.hung(silent=False))
        return event

    def follow(self, label: str, on_event):
        """Show the child's progress until it is done; return what ``on_event`` returns for its ``done`` event.

        The events every run sends are handled here (a heartbeat, a phase, the passed gradient check of the tiny
        model, ``label``, a failure); every other event, and ``checked`` after it is shown, goes to ``on_event``.
        """
        started = False
        while True:
            event = self.next(started)
            kind = event.get("event")
            if kind in ("beat", "phase"):
                started = True
                if kind == "phase":
                    print(f"  {event['what']} …", flush=True)
                continue
            if kind == "checked":
                print(f"  ✓ all {event['parameters']} gradient numbers of a tiny {label} match central differences "
                      f"(largest difference {event['largest_difference']:.0e}); no position sees a later one",
                      flush=True)
            elif kind == "failed":
                raise TrainError(event["message"])
            result = on_event(event)
            if kind == "done":
                return result

    def hung(self, silent: bool) -> str:
        """What to say when the child stopped without an answer."""
        self.log.flush()
        text = self.log_path.read_text(encoding="utf-8", errors="replace")
        folder = Path(self.job["folder"]).resolve()
        if "Timeout (" in text:
            frames = re.findall(r'File "(.+?)", line (\d+) in (\S+)', text.split("Timeout (", 1)[1])
            mine = [(f, line, fn) for f, line, fn in frames if Path(f).resolve().is_relative_to(folder)]
            if mine:
                inner, outer = mine[0], mine[-1]
                where = f"{self.job['shown_folder']}/{Path(inner[0]).name}:{inner[1]} in {inner[2]}"
                called = f" (called as {outer[2]})" if outer[2] != inner[2] else ""
                return (f"your code did not return within {self.timeout:g} s: an endless loop? It was running "
                        f"{where}{called}. The run was stopped (--timeout sets the limit).")
            return f"a call did not return within {self.timeout:g} s; the run was stopped.\n{text[-2000:]}"
        if silent:
            return f"the training process said nothing for {self.timeout + GRACE:g} s and was stopped."
        tail = "\n".join(text.strip().splitlines()[-15:])
        return f"the training process ended unexpectedly (exit code {self.proc.returncode}):\n{tail}"

    def printed(self) -> str:
        """What the learner's code printed (the log without a traceback of ours)."""
        self.log.flush()
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        """End the child (and anything it started)."""
        if self.proc.poll() is None:
            kill_tree(self.proc)

    def close(self) -> None:
        """Stop the child and remove its folder."""
        self.stop()
        self.log.close()
        self.tmp.cleanup()
