"""A pytest plugin for the tools: streams every result to a file the moment it is known.

Loaded with ``-p kata.judge.stream --kata-stream FILE`` next to the kata plugin (root
``conftest.py``), which decides each test's status (passed, failed, not started, error, timed out).
This plugin only writes those results down, one JSON object per line, flushed at once, so that a
run which has to be killed (an endless loop that ignores the timeout, a crash) still leaves every
result it reached, and the tool that started the run knows which test was running.

Events, one per line:

- ``{"event": "collected", "tests": [{"nodeid", "chapter", "step", "check", "title"}, ...]}``
- ``{"event": "collect-error", "nodeid", "message"}``: a test file that does not import.
- ``{"event": "start", "nodeid"}``: a test begins.
- ``{"event": "result", "nodeid", "chapter", "step", "title", "status", "message", "got", "functions"}``.
- ``{"event": "call", "nodeid", "function"}``: a test calls a learner's function (first time only).
- ``{"event": "protections", "protections": [...]}``: what guarded the learner's process.
- ``{"event": "uses", "uses": {module: {function: earlier module}}}``: what each chapter uses of earlier ones.
- ``{"event": "not-importing", "chapters": {chapter: message}}``: the chapters whose module does not import.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

MAX_MESSAGE = 4000


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--kata-stream`` and ``--kata-record-values``."""
    group = parser.getgroup("kata-tools", "transformer katas: grading and learner tools")
    group.addoption("--kata-stream", metavar="FILE", help="append every result to FILE as one JSON line")
    group.addoption(
        "--kata-record-values",
        action="store_true",
        help="also record the value each worksheet step's code returned (for `nox -s worksheet`)",
    )


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
        if config.getoption("kata_record_values"):
            from . import checks

            checks.RECORDED = self.got  # ``expect`` keeps each worksheet step's value there

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
                try:
                    title = self.kata.answer_key.load(chapter).step(step).title
                except KeyError:
                    pass
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
            state.modules[name] = (
                f"chapter {result.chapter} does not import: importing {chapter.module} did not finish "
                "(an endless loop at module level?)"
            )

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

