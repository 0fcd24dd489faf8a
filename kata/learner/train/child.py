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

from ... import learners_code, project
from ...process import ONE_THREAD, Drain, kill_tree
from .corpus import TrainError
from .gradcheck import check_gradients
from .loop import read_progress, train

TIMEOUT = 30.0  # seconds of CPU one call into your code may use (--timeout's default: train, generate, serve)


STARTUP = 60.0  # seconds the child may take to import NumPy and your chapter on a cold disk


GRACE = 10.0  # seconds past the wall-clock backstop before the child is ended from here


BACKSTOP = 20  # the wall-clock limit of one call, in multiples of --timeout: for a call that sleeps or blocks


POLL = 0.2  # seconds between two looks of the watchdog at the process's CPU time


def backstop(timeout: float) -> float:
    """The wall-clock seconds one call may take whatever its CPU time: ``BACKSTOP`` times ``--timeout``."""
    return BACKSTOP * timeout


class Watchdog:
    """Stops this process when one call into your code has used more than ``limit`` seconds of CPU.

    The limit is CPU time, not time on the clock: on a busy machine a correct call may wait for a core far
    longer than it computes (11 s of CPU took 70 s at a load of 23), and must not be stopped for it. A thread
    reads the process's CPU time (``time.process_time``: every thread's, NumPy's one BLAS thread included)
    every ``POLL`` s; past ``limit`` s since the call began it writes ``Timeout (used N s of CPU, the limit is
    L s)!`` and every thread's stack to ``log`` (``faulthandler.dump_traceback``) and ends the process, exit
    code 1. A call that sleeps or waits uses no CPU: ``faulthandler``'s own watchdog, which runs even while C
    code holds the interpreter, stops it after ``backstop(limit)`` s on the clock (``Timeout (0:10:00)!``).
    ``cpu`` reads the CPU time (a test gives its own clock; nothing here reads the machine's load).
    """

    def __init__(self, limit: float, log, cpu=time.process_time, poll: float = POLL) -> None:
        import faulthandler
        import threading

        self.limit, self.log, self.cpu, self.poll = limit, log, cpu, poll
        self._faulthandler = faulthandler
        self._began = cpu()
        self._rearmed = float("-inf")
        self.arm()
        threading.Thread(target=self._watch, name="kata-watchdog", daemon=True).start()

    def arm(self) -> None:
        """A call into your code begins: its CPU time counts from now (the clock's backstop re-armed once a second)."""
        self._began = self.cpu()
        now = time.monotonic()
        if now - self._rearmed >= 1.0:
            self._faulthandler.dump_traceback_later(backstop(self.limit), exit=True, file=self.log)
            self._rearmed = now

    def used(self) -> float:
        """CPU seconds since the current call began."""
        return self.cpu() - self._began

    def _watch(self) -> None:
        while True:
            time.sleep(self.poll)
            used = self.used()
            if used > self.limit:
                self.log.write(f"Timeout (used {used:.1f} s of CPU, the limit is {self.limit:g} s)!\n")
                self.log.flush()
                self._faulthandler.dump_traceback(file=self.log, all_threads=True)
                self.log.flush()
                os._exit(1)

    def cancel(self) -> None:
        """The work is done: no backstop left to fire while the process ends."""
        self._faulthandler.cancel_dump_traceback_later()


class Guarded:
    """Your chapter module, with the watchdog (``Watchdog``) armed at every call into it.

    Arming costs a read of the CPU clock; the heartbeat the parent waits for goes at most once a second.
    """

    def __init__(self, module, watchdog: Watchdog, beat) -> None:
        self._module, self._watchdog, self._beat = module, watchdog, beat
        self._functions: dict = {}

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self._functions:
            function = getattr(self._module, name)

            def call(*args, **kwargs):
                self._watchdog.arm()
                self._beat()
                return function(*args, **kwargs)

            call.__name__ = name
            self._functions[name] = call
        return self._functions[name]


def learner_frames(tb, folder: Path) -> list[traceback.FrameSummary]:
    """The frames of a traceback that are in the learner's folder."""
    return [f for f in traceback.extract_tb(tb) if Path(f.filename).resolve().is_relative_to(folder)]


def place(filename: str, line: int, shown_folder: str) -> str:
    """A line of the learner's code as they know it: ``exercises/chapter10_transformer.py:42``, or its notebook.

    For a function a saved notebook answered: the notebook, the function and the cell's line
    (``learners_code.notebook_place``), since the staged copy's line numbers are no line the learner wrote.
    """
    return (learners_code.notebook_place(Path(filename), line, project.ROOT)
            or f"{shown_folder}/{Path(filename).name}:{line}")


# What to do once the chapter passes, by what was running.
VERBS = {"generating": "Generate", "serving": "Serve", "measuring": "Measure"}


def describe(err: BaseException, folder: Path, shown_folder: str, doing: str) -> str:
    """A learner's exception as one message: what, where in their file, and what to do."""
    frames = learner_frames(err.__traceback__, folder)
    inner = frames[-1]
    where = place(inner.filename, inner.lineno, shown_folder)
    where += "" if ", in " in where else f" in {inner.name}"
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
        import importlib

        watchdog = Watchdog(job["timeout"], log)  # importing your chapters counts as a call
        ch = SimpleNamespace(**{key: Guarded(importlib.import_module(f"{folder.name}.{name}"), watchdog, beat)
                                for key, name in job["modules"].items()})
        if work is not None:
            work(ch, job, send, status)
        elif job["mode"] == "generate":
            status["doing"] = "generating"
            model.generate(ch, job, send)
        else:
            train_job(model, ch, job, send, status)
        watchdog.cancel()
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
                   PYTHONIOENCODING="utf-8", PYTHONFAULTHANDLER="1", **ONE_THREAD)
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
            event = self.events.get(timeout=backstop(self.timeout) + (GRACE if started else STARTUP))
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
            said = text.split("Timeout (", 1)[1]
            cpu = re.match(r"used ([\d.]+) s of CPU", said)
            frames = re.findall(r'File "(.+?)", line (\d+) in (\S+)', said)
            mine = [(f, line, fn) for f, line, fn in frames if Path(f).resolve().is_relative_to(folder)]
            what = (f"a call into your code used {cpu.group(1)} s of CPU without returning (--timeout: "
                    f"{self.timeout:g} s of CPU)" if cpu else
                    f"a call into your code did not return within {backstop(self.timeout):g} s on the clock, using "
                    f"little CPU: is it waiting for something? (the limit is {BACKSTOP} times --timeout)")
            if mine:
                inner, outer = mine[0], mine[-1]
                where = place(inner[0], int(inner[1]), self.job["shown_folder"])
                where += "" if ", in " in where else f" in {inner[2]}"
                called = f" (called as {outer[2]})" if outer[2] != inner[2] else ""
                return (f"{what}: an endless loop, or far more work than needed? It was running {where}{called}. "
                        "The run was stopped.")
            return f"{what}; the run was stopped.\n{text[-2000:]}"
        if silent:
            return f"the training process said nothing for {backstop(self.timeout) + GRACE:g} s and was stopped."
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
