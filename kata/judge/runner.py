"""The judge's result stream, both ends: the child pytest writes it, the tools read it.

The one child runner of the tools that need the results (the grade, the worksheet, a notebook's check);
the chapter views on a terminal (``nox -s chapterN``, the watcher) run pytest in the foreground instead.

The writing end is a pytest plugin (``Stream``, loaded with ``-p kata.judge.runner --kata-stream FILE`` next
to the kata plugin, which decides each test's status): it writes every result down the moment it is known,
one JSON object per line, flushed at once, so that a run which has to be killed (an endless loop that ignores
the timeout, a crash) still leaves every result it reached, and the tool that started the run knows which
test was running. Events, one per line:

- ``{"event": "collected", "tests": [{"nodeid", "chapter", "step", "check", "title"}, ...]}``
- ``{"event": "collect-error", "nodeid", "message"}``: a test file that does not import.
- ``{"event": "start", "nodeid"}``: a test begins.
- ``{"event": "result", "nodeid", "chapter", "step", "title", "status", "message", "got", "functions"}``.
- ``{"event": "call", "nodeid", "function"}``: a test calls a learner's function (first time only).
- ``{"event": "protections", "protections": [...]}``: what guarded the learner's process.
- ``{"event": "uses", "uses": {module: {function: earlier module}}}``: what each chapter uses of earlier ones.
- ``{"event": "not-importing", "chapters": {chapter: message}}``: the chapters whose module does not import.

The reading end (``run_tests``, ``read``):

- Every result streams to a file, so nothing is lost if the child dies.
- The child is the judge: the learner's code runs in its worker (``kata/worker``), where each call has
  ``timeout`` seconds; a function that does not return is stopped there and named. A per-test guard
  (pytest-timeout) and a watchdog here catch anything else that stalls a test (a loop that swallows the
  interrupt, a hang in C code), mark the test "timed out" and run the rest; a repository's whole run has a
  ``deadline`` after which what is left is "not run: time budget spent".
- The child's stdout and stderr go through a pipe that is drained and thrown away except for the
  last few kilobytes, so a flood of prints cannot fill memory, a disk, or the report.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..process import ONE_THREAD, Drain, kill_tree
from ..project import ROOT  # the folder that holds the kata package

if TYPE_CHECKING:  # the tools that read a stream never load pytest for it
    import pytest

GRACE = 2.0  # seconds past the per-test guard before the watchdog steps in (at most)
BUDGET_SPENT = "not run: time budget spent"


def test_guard(call_timeout: float) -> float:
    """Seconds one test may take in the judge: several calls that each ran out of time, and the checks."""
    return 30.0 + 4 * call_timeout


@dataclass
class RunResult:
    """Everything one run learned: the tests it found, their results, and what went wrong around them."""

    tests: list[dict] = field(default_factory=list)
    results: dict[str, dict] = field(default_factory=dict)
    collect_errors: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    output_tail: str = ""
    seconds: float = 0.0
    protections: list[str] = field(default_factory=list)
    uses: dict[str, dict[str, str]] = field(default_factory=dict)  # chapter module -> earlier functions it uses
    calls: dict[str, set[str]] = field(default_factory=dict)  # nodeid -> learner functions it called
    not_importing: dict[int, str] = field(default_factory=dict)  # chapter -> why its module does not import
    running: str | None = None  # the test that started and has not finished, in the latest child's stream


def child_env(root: Path, extra_paths: list[Path] = (), hide: list[Path] = (), shown_as: str = "") -> dict[str, str]:
    """The environment of a child run: the tools importable, nothing from outside changing pytest.

    The tools come from ``root/tools`` when it has them (so ``--pristine`` restores them too).
    """
    env = dict(os.environ)
    for name in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_TIMEOUT", "PYTHONSTARTUP"):
        env.pop(name, None)
    tools = root if (root / "kata" / "__init__.py").is_file() else ROOT
    paths = [str(p) for p in (*extra_paths, tools)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PYTHONUNBUFFERED"] = "1"
    env["KATA_HIDE"] = os.pathsep.join(str(p) for p in hide)  # what the sandboxed worker must not see
    if shown_as:
        env["KATA_SHOWN_AS"] = shown_as  # the learner's folder as they know it, for file:line
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(ONE_THREAD)
    return env


def run_tests(root: Path, files: list[str], *, impl: str, timeout: float, stream_dir: Path,
              extra_paths: list[Path] = (), record_values: bool = False, extra_args: list[str] = (),
              collect_budget: float = 60.0, deadline: float | None = None, hide: list[Path] = (),
              shown_as: str = "", warm: bool = False) -> RunResult:
    """Run the tests in ``files`` (relative to ``root``) against ``impl`` until every one has a result.

    Args:
        root: the repository (or grading workspace) whose ``conftest.py`` and ``pyproject.toml`` apply.
        files: test files or node ids, relative to ``root``.
        impl: the implementation package name (or folder) handed to ``--impl``.
        timeout: seconds one call of a learner's function may take before it counts as "timed out".
        stream_dir: a folder for the result stream files.
        extra_paths: folders put on the child's ``PYTHONPATH`` (implementation packages built elsewhere).
        record_values: also record the value each worksheet step returned.
        extra_args: more pytest options (e.g. ``["-m", "step"]`` for the worksheet steps only).
        collect_budget: seconds the child may take to start and collect the tests.
        deadline: a ``time.monotonic()`` after which the run stops and what is left is not run.
        hide: folders the sandboxed worker must not see (the course the grade was started from).
        shown_as: how the learner names the implementation's folder in file:line (``exercises``).
        warm: ask the warm judge (``kata/judge/warm.py``) to run it, which starts one for the next run when
            none answers; it runs the usual way where the warm judge is off. For the learner's own checks (a
            notebook's check cells), never for grading.

    Returns:
        The tests found and the result of every one of them.
    """
    run = RunResult()
    started = time.monotonic()
    skip: list[str] = []  # tests already settled by an earlier attempt (killed or crashed child)
    for attempt in range(1, 1000):
        stream = stream_dir / f"stream-{os.getpid()}-{id(run)}-{attempt}.jsonl"
        stream.write_text("", encoding="utf-8")
        cmd = [
            *([sys.executable, "-S", "-m", "kata.judge.warm", "run"] if warm else [sys.executable, "-m", "pytest"]),
            "-c", str(root / "pyproject.toml"), "--rootdir", str(root),
            "-p", "no:cacheprovider", *stream_options(stream),
            "--capture=no", "-q", "--no-header", "-o", "console_output_style=classic", "--tb=no",
            f"--timeout={test_guard(timeout):g}", f"--call-timeout={timeout:g}",
            f"--timeout-method={'signal' if hasattr(signal, 'SIGALRM') else 'thread'}",
            f"--impl={impl}",
        ]
        if record_values:
            cmd.append("--kata-record-values")
        cmd += list(extra_args)
        for nodeid in skip:
            cmd += ["--deselect", nodeid]
        cmd += files
        proc = subprocess.Popen(cmd, cwd=root, env=child_env(root, list(extra_paths), list(hide), shown_as),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        drain = Drain(proc.stdout)
        drain.start()
        run.running = None
        killed = _watch(proc, stream, run, test_guard(timeout), collect_budget, attempt == 1, deadline)
        drain.join(timeout=5)
        proc.stdout.close()
        run.output_tail = drain.tail()
        _read(stream, run)  # whatever arrived after the last look; ``running``: the test the child stopped in
        expected = {t["nodeid"] for t in run.tests}
        missing = [n for n in expected if n not in run.results and n not in skip]
        if killed == BUDGET_SPENT:
            for nodeid in [n for n in expected if n not in run.results]:
                run.results[nodeid] = _made_up(run, nodeid, "timed out", BUDGET_SPENT)
            if not run.tests:
                run.problems.append(BUDGET_SPENT)
            break
        if not run.tests:
            if killed:
                run.problems.append(killed)
            elif proc.returncode not in (0, 1, 5) and not run.collect_errors:
                run.problems.append(f"pytest ended with exit code {proc.returncode} before collecting any test")
            break
        if not missing:
            break
        current = run.running
        if killed and current is None:
            run.problems.append(killed)
            break
        if current is None or current not in missing:
            # the child ended without a word about the rest: nothing more to learn by trying again
            for nodeid in missing:
                run.results[nodeid] = _made_up(run, nodeid, "error", _ended(proc.returncode, run.output_tail))
            break
        status = "timed out" if killed else "error"
        message = killed or _ended(proc.returncode, run.output_tail)
        run.results[current] = _made_up(run, current, status, message)
        skip = [n for n in expected if n in run.results]
    run.seconds = time.monotonic() - started
    return run


def part(run: RunResult, files: list[str]) -> RunResult:
    """The share of ``run`` that belongs to the test files ``files`` (a run may hold several chapters)."""
    def mine(nodeid: str) -> bool:
        return any(nodeid == f or nodeid.startswith(f + "::") for f in files)

    tests = [t for t in run.tests if mine(t["nodeid"])]
    return RunResult(tests=tests, results={n: r for n, r in run.results.items() if mine(n)},
                     collect_errors=[e for e in run.collect_errors if mine(e["nodeid"])],
                     problems=list(run.problems) if not tests else [], output_tail=run.output_tail,
                     seconds=run.seconds, protections=run.protections, uses=run.uses,
                     calls={n: c for n, c in run.calls.items() if mine(n)}, not_importing=run.not_importing)


def _watch(proc, stream: Path, run: RunResult, timeout: float, collect_budget: float, first: bool,
           deadline: float | None = None) -> str:
    """Wait for ``proc``; kill it when a test or the collection runs too long. Returns why it was killed."""
    offset, since = 0, time.monotonic()
    collected = not first or bool(run.tests)
    born = time.monotonic()
    while proc.poll() is None:
        time.sleep(0.05)
        offset, events = _events(stream, offset)
        for event in events:
            _apply(event, run)
            if event["event"] == "start":
                since = time.monotonic()
            elif event["event"] == "collected":
                collected = True
        now = time.monotonic()
        if deadline is not None and now > deadline:
            kill_tree(proc)
            return BUDGET_SPENT
        if run.running is not None and now - since > timeout + min(GRACE, max(0.5, timeout)):
            kill_tree(proc)
            return f"timed out: still running after {timeout:g} s (the test was stopped from outside)"
        if not collected and now - born > collect_budget:
            kill_tree(proc)
            return f"timed out: loading the tests took more than {collect_budget:g} s"
    return ""


def _events(stream: Path, offset: int) -> tuple[int, list[dict]]:
    with stream.open("rb") as f:
        f.seek(offset)
        data = f.read()
    end = data.rfind(b"\n") + 1
    events = [json.loads(line) for line in data[:end].splitlines() if line.strip()]
    return offset + end, events


def stream_options(stream: Path) -> list[str]:
    """The pytest options that stream every result to ``stream`` (read it back with ``read``)."""
    return ["-p", "kata.judge.runner", f"--kata-stream={stream}"]


def read(stream: Path) -> RunResult:
    """What a finished run streamed to ``stream`` (``--kata-stream``): its tests and their results.

    For a tool that starts pytest itself because it needs pytest's own options (a cache folder, ``--junitxml``,
    a plugin of its own); everything else calls ``run_tests``.
    """
    run = RunResult()
    _read(stream, run)
    return run


def _read(stream: Path, run: RunResult) -> None:
    _, events = _events(stream, 0)
    for event in events:
        _apply(event, run)


def _apply(event: dict, run: RunResult) -> None:
    kind = event["event"]
    body = {k: v for k, v in event.items() if k != "event"}
    if kind == "collected":
        if not run.tests:
            run.tests = body["tests"]
    elif kind == "collect-error":
        if body not in run.collect_errors:
            run.collect_errors.append(body)
    elif kind == "start":
        run.running = body["nodeid"]
    elif kind == "result":
        run.results[body["nodeid"]] = body
        if body["nodeid"] == run.running:
            run.running = None
    elif kind == "protections":
        run.protections = [p for p in body.get("protections", []) if isinstance(p, str)]
    elif kind == "call":
        run.calls.setdefault(str(body.get("nodeid")), set()).add(str(body.get("function")))
    elif kind == "uses" and isinstance(body.get("uses"), dict):
        run.uses.update(body["uses"])
    elif kind == "not-importing" and isinstance(body.get("chapters"), dict):
        run.not_importing.update({int(k): str(v) for k, v in body["chapters"].items()})


def _made_up(run: RunResult, nodeid: str, status: str, message: str) -> dict:
    test = next((t for t in run.tests if t["nodeid"] == nodeid), {"nodeid": nodeid})
    return {"nodeid": nodeid, "chapter": test.get("chapter"), "step": test.get("step"),
            "title": test.get("title", nodeid), "status": status, "message": message,
            "functions": sorted(run.calls.get(nodeid, ()))}


def _ended(code: int | None, tail: str) -> str:
    last = [line for line in tail.splitlines() if line.strip()][-5:]
    said = ("; its last words: " + " | ".join(last)) if last else ""
    return f"the test process ended (exit code {code}) while this test ran{said}"


# -- the writing end: a pytest plugin in the child ----------------------------------------------------------
MAX_MESSAGE = 4000


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--kata-stream`` and ``--kata-record-values``."""
    group = parser.getgroup("kata-tools", "transformer katas: grading and learner tools")
    group.addoption("--kata-stream", metavar="FILE", help="append every result to FILE as one JSON line")
    group.addoption("--kata-record-values", action="store_true",
                    help="also record the value each worksheet step's code returned (for `nox -s worksheet`)")


def clip(text: str, limit: int = MAX_MESSAGE) -> str:
    """Shorten ``text`` to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… ({len(text) - limit} more characters cut)"


def pytest_configure(config: pytest.Config) -> None:
    """Start streaming when ``--kata-stream`` is given."""
    path = config.getoption("kata_stream")
    if path:
        config.pluginmanager.register(Stream(config, Path(path)), "kata-tools-stream")


class Stream:
    """Writes the kata plugin's results to a file as they happen."""

    def __init__(self, config: pytest.Config, path: Path) -> None:
        from kata.judge import plugin as kata_plugin  # the foundation's runner: statuses are decided there

        self.kata = kata_plugin
        self.config = config
        self.file = path.open("a", encoding="utf-8")
        self.seen = 0  # results of the kata plugin already written
        self.got: dict[str, Any] = {}
        self.started: dict[str, float] = {}
        self._protections_said: list[str] = []
        recorded = kata_plugin.settings(config).recorded  # ``expect`` keeps each worksheet step's value there
        if recorded is not None:
            self.got = recorded

    def emit(self, **event: Any) -> None:
        """Write one event as a JSON line, at once."""
        self.file.write(json.dumps(event, ensure_ascii=False, default=str) + "\n")
        self.file.flush()

    # -- what the tests are ------------------------------------------------------------------------
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Say which tests there are: chapter, step (or check) and title of each."""
        tests = []
        for item in session.items:
            marker = item.get_closest_marker("step")
            step = marker.args[0] if marker else None
            chapter = getattr(getattr(item, "module", None), "CHAPTER", None)
            title = self.kata._title(item)
            if step and chapter is not None:
                with contextlib.suppress(KeyError):
                    title = self.kata.answer_key.load(chapter).step(step).title
            check = None if step else getattr(item, "originalname", item.name)
            tests.append({"nodeid": item.nodeid, "chapter": chapter, "step": step, "check": check, "title": title})
        self.emit(event="collected", tests=tests)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Report a test file that does not load."""
        if report.failed:
            self.emit(event="collect-error", nodeid=report.nodeid, message=clip(str(report.longreprtext)))

    # -- what happens to them ----------------------------------------------------------------------
    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        """Say that a test starts (so a run killed mid-test knows which one)."""
        self.started[nodeid] = time.monotonic()
        self.emit(event="start", nodeid=nodeid)
        worker = self.config.stash[self.kata.STATE].worker
        if worker is not None:
            worker.on_call = lambda name, nodeid=nodeid: self.emit(event="call", nodeid=nodeid, function=name)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Write every result the kata plugin decided since the last report."""
        state = self.config.stash[self.kata.STATE]
        for result in state.results[self.seen :]:
            if result.status == "timed out" and report.when == "setup":
                self._remember_hanging_import(state, result)
            event = dict(result.__dict__)
            event["message"] = clip(event.get("message") or "")
            event["seconds"] = round(time.monotonic() - self.started.get(result.nodeid, time.monotonic()), 4)
            if result.step in self.got:
                event["got"] = self.got.pop(result.step)
            self.emit(event="result", **event)
        self.seen = len(state.results)
        self._say_protections(state.worker)

    def _say_protections(self, worker) -> None:  # noqa: ANN001 - the judge's worker proxy, or None
        """Say the protections as soon as the learner's process has them (a run cut short still has them)."""
        said = list(worker.protections) if worker is not None and worker.protections else []
        if said and said != self._protections_said:
            self._protections_said = said
            self.emit(event="protections", protections=said)

    def _remember_hanging_import(self, state: Any, result: Any) -> None:
        """A chapter whose import timed out would time out again in every test: say so once."""
        if result.chapter is None:
            return
        chapter = self.kata.answer_key.load(result.chapter)
        name = f"{state.impl}.{chapter.module}"
        if name not in state.modules:
            state.modules[name] = (f"chapter {result.chapter} does not import: importing {chapter.module} did not "
                                   "finish (an endless loop at module level?)")

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Say which protections applied to the learner's process."""
        worker = self.config.stash[self.kata.STATE].worker
        self._say_protections(worker)
        if worker is not None and worker.uses:
            self.emit(event="uses", uses=worker.uses)
        state = self.config.stash[self.kata.STATE]
        broken = {str(k): v for k, v in state.chapters_seen.items() if v}
        if broken:
            self.emit(event="not-importing", chapters=broken)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """Close the stream."""
        self.file.close()

