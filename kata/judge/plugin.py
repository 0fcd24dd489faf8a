"""The pytest plugin behind every chapter run (loaded by the root ``conftest.py``).

- ``--impl NAME`` picks whose code runs: ``exercises`` (default), ``solutions``, or any importable
  package (or a path to a package folder) with the same layout.
- The learner's code never runs in this process: ``ch`` is a ``proxy.ChapterProxy`` whose calls run in
  a separate worker process (``kata/worker``), so nothing the learner writes can touch a verdict.
- Chapter modules are imported lazily, one per test module, so a broken chapter costs only its checks.
- A stub's ``NotImplementedError`` shows as "not started", with no traceback.
- ``--steps`` prints a chapter as its worksheet; ``--progress`` prints every chapter as a table;
  ``--kata-seed N`` draws the checks' random inputs afresh (the instructor's grading run). The tools read
  the results from ``kata.judge.runner`` (``--kata-stream FILE``), the one result format.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import os
import re
import sys
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .. import learners_code, project
from . import proxy

_NO_TESTS_RUN = {"--collect-only", "--co", "-h", "--help", "--version", "-V", "--fixtures", "--markers"}


def _wants_a_worker(argv: list[str]) -> bool:
    """Whether this process is a pytest run that will call learner code (``python -m pytest ...``)."""
    return bool(argv) and "pytest" in Path(argv[0]).parts[-2:] + (Path(argv[0]).name,) \
        and not _NO_TESTS_RUN.intersection(argv)


if _wants_a_worker(sys.argv):
    proxy.prestart()  # the worker loads Python and NumPy while this judge loads its own (one less wait)

from . import answer_key, snapshots  # noqa: E402 - after the worker's launch, on purpose
from .checks import DOCS, RunSettings, footer  # noqa: E402
from .status import blame, folded, function_status  # noqa: E402

if _wants_a_worker(sys.argv):
    gc.freeze()  # pytest, NumPy and the judge stay loaded to the end: the collector need not scan them again

STATUS_MARK = {"passed": "✓", "failed": "✗", "not started": "·", "error": "!", "timed out": "⧗"}


@dataclass
class Result:
    """What happened to one test, in the course's words."""

    nodeid: str
    chapter: int | None
    step: str | None
    title: str
    status: str  # passed | failed | not started | error | timed out
    message: str = ""
    functions: list[str] = field(default_factory=list)  # the learner's functions the test called


class ChapterDoesNotImport(Exception):
    """Raised in place of every test of a chapter whose module fails to import."""


def call_timeout() -> float:
    """The default of ``--call-timeout``: ``$KATA_CALL_TIMEOUT``, else 2 seconds."""
    return float(os.environ.get("KATA_CALL_TIMEOUT", "2"))


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add --impl, --steps, --progress and the judge's options."""
    group = parser.getgroup("kata", "transformer katas")
    group.addoption("--impl", default=None, help="whose code to check: 'exercises' (your files alone), 'solutions', "
                    "or any importable package or package folder with the same chapterNN_<topic>.py layout; default: "
                    "exercises/ with your saved notebooks' finished functions in place (a notebook's wins; "
                    "kata/learners_code.py)")
    group.addoption("--steps", action="store_true", help="print the run as the chapter's worksheet")
    group.addoption("--progress", action="store_true", help="print one line per chapter: steps passed")
    group.addoption("--call-timeout", type=float, default=call_timeout(), help="seconds one call of a learner's "
                    "function may take before it counts as not returning (default 2)")
    group.addoption("--strict-exact", action="store_true", help="authors: compare worksheet steps at rtol 1e-12 "
                    "(unless the key sets a tolerance) to prove the answer key's exact values are stored to full "
                    "float64 precision")
    group.addoption("--given", action="store_true", help="authors: also run the tests marked given, of the input "
                    "checks the stubs give (a learner's run, the grade and the progress leave them out: they are the "
                    "course's code, not the learner's)")
    group.addoption("--kata-seed", type=int, default=None, help="instructors: reseed each test module's RNG from this "
                    "seed (fresh random inputs for the checks beyond the worksheet; `nox -s grade-class` draws one "
                    "per grading run)")


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    """Leave out the tests marked ``given`` (unless ``--given``); reseed the modules' ``RNG`` (``--kata-seed N``).

    The reseeding is in place: defaults that hold the generator follow it.
    """
    if not config.getoption("given"):
        given = [item for item in items if item.get_closest_marker("given")]
        if given:
            config.hook.pytest_deselected(items=given)
            items[:] = [item for item in items if not item.get_closest_marker("given")]
    seed = config.getoption("kata_seed")
    if seed is None:
        return
    import zlib

    import numpy as np

    seen = set()
    for item in items:
        module = getattr(item, "module", None)
        rng = getattr(module, "RNG", None)
        if isinstance(rng, np.random.Generator) and id(module) not in seen:
            seen.add(id(module))
            fresh = type(rng.bit_generator)(np.random.SeedSequence([seed, zlib.crc32(module.__name__.encode())]))
            rng.bit_generator.state = fresh.state


def _impl_location(config: pytest.Config) -> tuple[str, Path | None]:
    """(package name, folder holding it) of ``--impl``, found without importing it."""
    value = config.getoption("impl")
    # no --impl: the learner's work, with the saved notebooks' answers put in
    folder = project.impl_location(value if value is not None else learners_code.default_impl())
    if folder is None:
        return value or "exercises", None
    return folder.name, folder.parent


def pytest_configure(config: pytest.Config) -> None:
    """Register the step marker, choose the view, and start collecting results."""
    config.addinivalue_line("markers", "step(id): the worksheet step this test checks, e.g. step('4.3')")
    config.addinivalue_line("markers", "given: checks an input check the stub gives (the course's code, not the "
                            "learner's): run with --given, by the suite, never counted for a learner")
    root = str(answer_key.ROOT)
    if root not in sys.path:
        sys.path.insert(0, root)
    try:  # a malformed answer key: one line naming the file and the step, not a traceback for every test
        asked = _chapters_asked(config.args)
        for number in answer_key.chapter_files() if asked is None else asked & set(answer_key.chapter_files()):
            answer_key.load(number)
    except answer_key.AnswerKeyError as err:
        raise pytest.UsageError(str(err)) from None
    settings(config)  # once, before any test module asks
    if _viewed(config):
        # The worksheet view replaces pytest's own report: no tracebacks, no short summary, no stats line.
        config.option.tbstyle = "no"
        config.option.reportchars = "N"
        config.option.verbose = min(config.option.verbose, -2)
    state = KataState(config)
    config.stash[STATE] = state
    config.pluginmanager.register(state, "kata-state")


def _viewed(config: pytest.Config) -> bool:
    """Whether the run prints a chapter view (``--steps``) or the progress table (``--progress``)."""
    return bool(config.getoption("steps") or config.getoption("progress"))


STATE = pytest.StashKey["KataState"]()
SETTINGS = pytest.StashKey[RunSettings]()
_COLLECTING: ContextVar[RunSettings | None] = ContextVar("kata_collecting", default=None)


def settings(config: pytest.Config) -> RunSettings:
    """How this run judges (``--strict-exact``, ``--kata-seed``, ``--kata-record-values``), built once per config."""
    if SETTINGS not in config.stash:
        config.stash[SETTINGS] = RunSettings(
            strict_exact=bool(config.getoption("strict_exact")),
            fresh_seed=config.getoption("kata_seed"),
            recorded={} if config.getoption("kata_record_values", False) else None,
        )
    return config.stash[SETTINGS]


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):  # noqa: ANN201 - pytest's own report
    """While a test module is collected (imported), ``snapshot`` answers with this run's settings."""
    token = _COLLECTING.set(settings(collector.config))
    try:
        return (yield)
    finally:
        _COLLECTING.reset(token)


def snapshot(chapter: int) -> snapshots.Snapshot:
    """A chapter's snapshot as this run asks for it: the stored one, or drawn afresh with ``--kata-seed``.

    For a test module's ``SNAP = snapshot(CHAPTER)``, run at its import, where no fixture can hand it the run's
    settings: the run collecting the module says them (for that collection only; outside one, the stored file).
    """
    judged = _COLLECTING.get()
    return snapshots.load(chapter, seed=judged.fresh_seed if judged is not None else None)


def _chapters_asked(args: list[str]) -> set[int] | None:
    """The chapters whose test files ``args`` name (``tests/test_chapter04_attention.py[::test]``); None: any.

    A chapter check reads one answer key, not all sixteen (most of a quick check's start-up after NumPy); a run
    given a folder, or any other file, may reach every chapter, so every key is read and checked first.
    """
    found = set()
    for arg in args:
        number = project.chapter_number(Path(arg.split("::", 1)[0]).name)
        if number is None:
            return None
        found.add(number)
    return found or None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> pytest.TestReport | None:
    """A stub's "not started", or a chapter that does not import, without drawing a traceback first.

    With pytest's tracebacks off (``--tb=no``: the chapter views and the grader) nobody sees one, and
    ``KataState``'s report replaces it with the one-line message anyway; drawing it is most of a stub
    test's time (about 2 ms each, 80 tests in chapter 10). Every other outcome is pytest's own report.
    """
    excinfo = call.excinfo
    if excinfo is None or item.config.option.tbstyle != "no" \
            or not excinfo.errisinstance((NotImplementedError, ChapterDoesNotImport)):
        return None
    sections = [(f"Captured {key} {when}", content) for when, key, content in getattr(item, "_report_sections", [])]
    return pytest.TestReport(item.nodeid, item.location, dict.fromkeys(item.keywords, 1), "failed",
                             str(excinfo.value) or excinfo.typename, call.when, sections, call.duration,
                             call.start, call.stop, user_properties=item.user_properties)


class KataState:
    """Holds the implementation, the imported chapters, and every result of the run."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.impl, self.folder = _impl_location(config)
        self.modules: dict[str, proxy.ChapterProxy | str] = {}
        self.results: list[Result] = []
        self.printed: dict[str, str] = {}  # nodeid -> what the learner's code printed in a test that did not pass
        self.chapters_seen: dict[int, str] = {}  # chapter -> import error ('' when it imports)
        self.worker: proxy.Worker | None = None
        if self.folder is not None:
            hide = [answer_key.ROOT, Path(str(config.rootpath))]  # the course: its key, tests and solutions
            hide += [Path(p) for p in os.environ.get("KATA_HIDE", "").split(os.pathsep) if p]
            self.worker = proxy.Worker(self.folder, self.impl, call_timeout=config.getoption("call_timeout"),
                                       hide=hide, shown_as=_shown_as(self.folder, self.impl))
            if not config.getoption("collectonly"):
                self.worker.start()  # NumPy loads in the worker while pytest collects

    # -- importing -----------------------------------------------------------------------------
    def chapter_module(self, number: int) -> proxy.ChapterProxy:
        """Import chapter ``number`` of the chosen implementation once, in the worker; a failure is one line."""
        chapter = answer_key.load(number)
        name = f"{self.impl}.{chapter.module}"
        if self.worker is None:
            raise ChapterDoesNotImport(f"chapter {number} does not import: there is no implementation "
                                       f"{self.impl!r} (a package name such as 'exercises' or a folder)")
        if name not in self.modules:
            try:
                self.worker.import_module(chapter.module)
                self.modules[name] = proxy.ChapterProxy(self.worker, self.impl, chapter.module)
            except NotImplementedError:
                raise
            except proxy.DidNotReturn as err:  # this test timed out; the chapter's others say why at once
                self.modules[name] = _one_line_import_error(err, chapter)
                self.chapters_seen[number] = self.modules[name]
                raise
            except Exception as err:  # noqa: BLE001 - any failure to import is reported in one line
                self.modules[name] = _one_line_import_error(err, chapter)
        module = self.modules[name]
        if isinstance(module, str):
            self.chapters_seen[number] = module
            raise ChapterDoesNotImport(module)
        self.chapters_seen.setdefault(number, "")
        return module

    # -- hooks -----------------------------------------------------------------------------------
    def pytest_report_header(self, config: pytest.Config) -> str:
        """Say whose code runs."""
        where = self.folder / self.impl if self.folder else "not found"
        return f"implementation: {self.impl} ({where}), run in a separate worker process"

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Start each test with an empty list of the learner's functions it called."""
        if self.worker is not None:
            self.worker.calls.clear()

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """Stop the worker."""
        if self.worker is not None:
            self.worker.close()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        """Record each test's result in the course's words; "not started" and import errors lose the traceback."""
        report = yield
        if report.when == "call" or (report.when == "setup" and not report.passed):
            try:
                result = _result_for(item, call, report)
                if self.worker is not None and result.status in ("failed", "error", "timed out") \
                        and result.chapter is not None:
                    result.message += self.blame(result.chapter)
            except Exception as err:  # noqa: BLE001 - nothing from the worker may stop the judge
                result = Result(nodeid=item.nodeid, chapter=_chapter_of(item), step=None, title=item.name,
                                status="error", message=f"the judge could not describe this result: {err!r}")
                report.outcome = "failed"
            if self.worker is not None:
                result.functions = sorted({f"{m}.{f}" for m, f in self.worker.calls})
            report.user_properties.append(("kata_status", result.status))
            if result.step:
                report.user_properties.append(("kata_step", result.step))
            if result.status in ("not started", "error"):
                report.longrepr = result.message
            self.results.append(result)
            if result.status != "passed" and report.capstdout.strip():
                self.printed[item.nodeid] = report.capstdout[:20000]
        return report

    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config):
        """In the worksheet and progress views, print nothing per test."""
        return (report.outcome, "", "") if _viewed(config) and (report.when == "call" or report.failed) else None

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config: pytest.Config) -> None:
        """Print the chapter or progress view."""
        tr = terminalreporter
        if config.getoption("steps"):
            files = answered_in(self.folder, self.impl, {r.chapter for r in self.results if r.chapter is not None})
            for line in chapter_view(self.results, self.impl, self.chapters_seen, self.printed, files):
                tr.write_line(line)
        elif config.getoption("progress"):
            for line in progress_view(self.results, self.impl, self.chapters_seen):
                tr.write_line(line)
        if _viewed(config) and exitstatus == pytest.ExitCode.INTERRUPTED:
            tr.write_line("")
            tr.write_line(f"interrupted (Ctrl-C) after {len(self.results)} tests: the counts above are of the "
                          "tests that ran; run it again for the whole chapter")

    # -- which earlier chapter is to blame --------------------------------------------------------------
    def function_status(self) -> dict[str, str]:
        """Each learner function this run called: 'passes', 'fails' (one of its tests did) or 'not started'."""
        return function_status((r.status, r.functions) for r in self.results)

    def blame(self, number: int) -> str:
        """A note when the chapter's code uses an earlier chapter's function that fails its own checks."""
        uses = self.worker.uses.get(answer_key.load(number).module, {}) if self.worker else {}
        if not uses:
            return ""
        return blame(uses, {**self.remembered(), **self.function_status()})

    def _source_digest(self, module: str) -> str | None:
        """The digest of this implementation's file of ``module``: what a remembered status is valid for."""
        try:
            return hashlib.sha256((self.folder / self.impl / f"{module}.py").read_bytes()).hexdigest()
        except (OSError, TypeError):
            return None

    def remembered(self) -> dict[str, str]:
        """What earlier runs learned of each function, kept only where its file is still the one they ran.

        Keyed by the file's content, not by chapter: a run on another implementation (``--impl``), or after an
        edit, never reuses a status that was true of other code.
        """
        cache = getattr(self.config, "cache", None)
        stored = cache.get("kata/functions", {}) if cache is not None else {}
        found = {}
        for key, entry in stored.items() if isinstance(stored, dict) else ():
            if isinstance(entry, dict) and entry.get("source") == self._source_digest(key.rsplit(".", 1)[0]):
                found[key] = entry.get("status")
        return found

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Remember which functions pass, with the file they were in (for the notes above)."""
        cache = getattr(self.config, "cache", None)
        if cache is not None and self.worker is not None:
            stored = cache.get("kata/functions", {})
            stored = dict(stored) if isinstance(stored, dict) else {}
            for key, status in self.function_status().items():
                stored[key] = {"status": status, "source": self._source_digest(key.rsplit(".", 1)[0])}
            cache.set("kata/functions", stored)


def _shown_as(folder: Path, impl: str) -> dict[str, str]:
    """How the learner knows the implementation's folder, for file:line in messages."""
    said = os.environ.get("KATA_SHOWN_AS")  # set by the grader, which copies the learner's folder
    if said:
        return {impl: said}
    if folder.parent.parent == answer_key.ROOT / learners_code.STAGED:  # exercises/ with the notebooks' answers
        return {impl: impl}
    try:
        return {impl: (folder / impl).relative_to(Path.cwd()).as_posix()}
    except ValueError:
        return {impl: impl}


def answered_in(folder: Path | None, impl: str, numbers: set[int]) -> dict[int, str]:
    """{chapter: the file to name as checked} for each chapter whose functions came from its saved notebook.

    Without ``--impl`` the learner's work is exercises/ staged with the saved notebooks' finished functions in
    place (kata/learners_code.py); a chapter answered there names its notebook, and the functions it took from it
    when exercises/ gave the others: "notebooks/chapter14_bpe.ipynb" or "notebooks/….ipynb: f, g; the rest:
    exercises/….py".
    """
    if folder is None or not folder.resolve().is_relative_to((answer_key.ROOT / learners_code.STAGED).resolve()):
        return {}
    files = {}
    for number in sorted(numbers):
        module = answer_key.load(number).module
        found = learners_code.answered_in_notebook(folder / impl / f"{module}.py")
        if found is None:
            continue
        notebook, names = found
        rest = [n for n in learners_code.functions_of(answer_key.load(number)) if n not in names]
        files[number] = notebook + (f": {', '.join(names)}; the rest: {impl}/{module}.py" if names and rest else "")
    return files


def _one_line_import_error(err: Exception, chapter: answer_key.Chapter) -> str:
    frames = getattr(err, "frames", None) or []
    where = f" ({frames[-1]['file']}, line {frames[-1]['line']})" if frames else ""
    if isinstance(err, proxy.DidNotReturn):
        return f"chapter {chapter.number} does not import: {err}"
    return f"chapter {chapter.number} does not import: {type(err).__name__}: {err}{where}"


def _title(item: pytest.Item) -> str:
    func = getattr(item, "function", None)
    doc = (func.__doc__ or "").strip().splitlines() if func else []
    if doc:
        return doc[0].rstrip(".")
    return item.name.removeprefix("test_").replace("_", " ")


def _chapter_of(item: pytest.Item) -> int | None:
    return getattr(item.module, "CHAPTER", None) if hasattr(item, "module") else None


def _result_for(item: pytest.Item, call: pytest.CallInfo, report: pytest.TestReport) -> Result:
    """A test's result in the course's words; a failed step ends with its hint and page (``checks.footer``)."""
    result = _described(item, call, report)
    if result.status == "failed" and result.step and result.chapter is not None and DOCS not in result.message:
        step = answer_key.load(result.chapter).step(result.step)
        said = result.message.rstrip("\n").splitlines()
        result.message = "\n".join([*said, *(line for line in footer(step, said) if line not in said)])
    return result


def _described(item: pytest.Item, call: pytest.CallInfo, report: pytest.TestReport) -> Result:
    marker = item.get_closest_marker("step")
    step_id = marker.args[0] if marker else None
    chapter = _chapter_of(item)
    title = _title(item)
    if step_id and chapter is not None:
        title = answer_key.load(chapter).step(step_id).title
    base = dict(nodeid=item.nodeid, chapter=chapter, step=step_id, title=title)
    if report.passed:
        return Result(status="passed", **base)
    excinfo = call.excinfo
    if excinfo is not None and excinfo.errisinstance(NotImplementedError):
        said = str(excinfo.value).strip()
        return Result(status="not started", message=f"not started: {said}" if said else "not started", **base)
    for kind, status, say in ((ChapterDoesNotImport, "error", str), (proxy.DidNotReturn, "timed out", _timed_out),
                              (proxy.ChangedItsInput, "failed", str), (proxy.WorkerCrashed, "error", str),
                              (proxy.Raised, "failed", crash_message)):
        if excinfo is not None and excinfo.errisinstance(kind):
            return Result(status=status, message=say(excinfo.value), **base)
    text = str(report.longreprtext) if hasattr(report, "longreprtext") else str(report.longrepr)
    pytest_timeout = excinfo is not None and excinfo.typename == "Failed" and str(excinfo.value).startswith("Timeout")
    if pytest_timeout or "Timeout" in text and (
            "pytest_timeout" in text or "+++++ Timeout" in text or "Failed: Timeout" in text):
        return Result(status="timed out", message="timed out (an endless loop?)", **base)
    if excinfo is not None and excinfo.typename == "Failed":
        message = str(excinfo.value)
    elif excinfo is not None and excinfo.typename == "AssertionError" and _CHECK_FAILED in text:
        message = _checks_failed(text)
    elif excinfo is not None and item.config.option.tbstyle == "no":  # the grader: pytest drew no traceback
        message = str(excinfo.getrepr(style="short", chain=False))
    else:
        message = text
    return Result(status="failed", message=message, **base)


def _timed_out(err: BaseException) -> str:
    return f"timed out: {err}"


_CHECK_FAILED = "FAILURE: "  # how pytest-check starts the message of each failed ``with check:``
_RAISED = "the code raised "  # how a failure by an exception from the learner's code starts (_result_for)
_FRAME = re.compile(r"\s+(?:at|called by)\s+.*?:\d+ in (\S+?)(?::|$)")  # a line of proxy.where_text


def crash_message(err: BaseException) -> str:
    """A failure by an exception from the learner's code: "the code raised <Type>: <what>", then where."""
    where = proxy.where_text(err)
    return f"{_RAISED}{type(err).__name__}: {err}" + (f"\n{where}" if where else "")


def _raised(message: str) -> str:
    """"lora_merge raised ValueError" for a failure by a crash, else "": what its line in the chapter view says.

    Such a message is "the code raised <Type>: <what>" and then the learner's frames, innermost first
    (``proxy.where_text``): the last one is the function the check called. A check whose claim is about
    something else ("... leave their inputs as they were") must not read as that claim broken.
    """
    if not message.startswith(_RAISED):
        return ""
    kind = message[len(_RAISED):].split(":", 1)[0].strip() or "an exception"
    called = [m.group(1) for line in message.splitlines()[1:] if (m := _FRAME.match(line))]
    return f"{called[-1] if called else 'the code'} raised {kind}"


def _crashes(group: list[Result]) -> str:
    """"  — f raised E" when every failed case of a check (or step) failed by a crash, else ""."""
    said = [_raised(r.message) for r in group if r.status == "failed"]
    if not said or not all(said):
        return ""
    return "  — " + ", ".join(dict.fromkeys(said))


def _checks_failed(text: str) -> str:
    """The messages of a test's failed ``with check:`` blocks, as the test wrote them.

    pytest-check reports them all at once from its own hook: its file and line come first, then each message
    followed by pytest's rewriting of the assertion (``assert (True and dtype('float32') == …)``, ``+ where
    …``), then a rule and a count. The learner needs the messages only.
    """
    kept: list[str] = []
    inside = False
    for line in text.splitlines():
        body = line[4:] if line.startswith("E   ") else line
        body = body.removeprefix("AssertionError: ")
        if body.startswith(_CHECK_FAILED):
            kept.append(body)
            inside = True
        elif inside and not body.startswith("assert ") and not body.startswith("-" * 10) \
                and not body.startswith("Failed Checks:") and body.strip():
            kept.append(body)
        else:
            inside = False
    return "\n".join(kept) if kept else text


def _step_order(results: list[Result]) -> list[Result]:
    def key(r: Result):
        if r.step is None:
            return (1, 0, 0)
        parts = [int(p) if p.isdigit() else p for p in r.step.split(".")]
        return (0, *parts)

    steps = sorted((r for r in results if r.step), key=key)
    return steps + [r for r in results if not r.step]


def _grouped(results: list[Result]) -> list[tuple[str, list[Result]]]:
    """Parametrized cases of one check, together, in first-seen order."""
    groups: dict[str, list[Result]] = {}
    for r in results:
        groups.setdefault(r.title, []).append(r)
    return list(groups.items())


PRINTED_LINES = 12  # of what the learner's code printed, under the first failing check


def _waiting_for(group: list[Result]) -> str:
    """The stubs a check's not-started cases stopped at, from their messages ("12.7 rope_backward")."""
    names = []
    for r in group:
        said = r.message.removeprefix("not started:").split()
        name = " ".join(said[:2]) if len(said) >= 2 and said[1].rstrip(":").isidentifier() else ""
        if r.status == "not started" and name and name.rstrip(":") not in names:
            names.append(name.rstrip(":"))
    return ", ".join(names) or "a function"


WAITS = "waits for"  # a not-started message holding these words says what the step waits for (a test wrote it)


def _not_started(r: Result) -> str:
    """A not-started step's note: "  not started", or what its test says it waits for.

    A test whose function is written but calls another that fails on its own step raises NotImplementedError
    saying what it waits for (chapter 7's backward_trace waits for linear_backward): the step is not blamed, and
    the line says why instead of "not started", which would read as code not yet written.
    """
    said = r.message.removeprefix("not started:").strip()
    return f"  — {said}" if WAITS in said else "  not started"


def chapter_view(results: list[Result], impl: str, broken: dict[int, str],
                 printed: dict[str, str] | None = None, files: dict[int, str] | None = None) -> list[str]:
    """The chapter run as its worksheet: a line per step, the first failure in full, a closing count.

    ``printed``: what the learner's code printed in each test that did not pass (by node id); the first
    failure shows its first lines. ``files``: what to name as a chapter's checked file, where it is not
    ``impl/<module>.py`` (a chapter answered in its notebook, ``answered_in``).
    """
    lines: list[str] = []
    by_chapter: dict[int | None, list[Result]] = {}
    for r in results:
        by_chapter.setdefault(r.chapter, []).append(r)
    for number in sorted(by_chapter, key=lambda n: (n is None, n or 0)):
        rs = _step_order(by_chapter[number])
        steps = [r for r in rs if r.step]
        checks = [r for r in rs if not r.step]
        if number is not None:
            ch = answer_key.load(number)
            lines.append("")
            lines.append(f"chapter {number}: {ch.title}  ({(files or {}).get(number, f'{impl}/{ch.module}.py')})")
        if number is not None and broken.get(number):
            lines.append(f"  ! {broken[number]}")
        for r in steps:
            extra = _not_started(r) if r.status == "not started" else ""
            extra = "  timed out" if r.status == "timed out" else extra
            extra += _crashes([r])
            lines.append(f"  {STATUS_MARK[r.status]} {r.step:<5} {r.title}{extra}")
        if checks:
            lines.append("  checks beyond the worksheet:")
            for title, group in _grouped(checks):
                worst = folded([r.status for r in group])
                extra = "  not started" if worst == "not started" else ""
                if len(group) > 1 and worst != "not started":
                    extra += f"  ({sum(r.status == 'passed' for r in group)}/{len(group)} cases)"
                if worst == "failed" and not any(r.status == "failed" for r in group):
                    extra += f"  — the rest waits for {_waiting_for(group)}, not started yet"
                if worst == "failed":
                    extra += _crashes(group)
                lines.append(f"  {STATUS_MARK[worst]}       {title}{extra}")
        shown = ("failed", "timed out", "error")
        if number is not None and broken.get(number):
            shown = ("failed", "timed out")  # a chapter that does not import said so above
        first = next((r for r in rs if r.status in shown), None)
        if first is not None:
            lines.append("")
            lines.append("first failing check, in full:")
            if not first.step or not first.message.startswith(first.step):  # name the step or check first
                lines.append(f"  {first.step + ' ' if first.step else ''}{first.title}")
            lines.extend(("    " if not first.step else "  ") + line for line in first.message.splitlines())
            said = (printed or {}).get(first.nodeid, "").strip().splitlines()
            if said:
                lines.append("  your code printed:")
                lines.extend(f"    {line}" for line in said[:PRINTED_LINES])
                if len(said) > PRINTED_LINES:
                    lines.append(f"    … ({len(said) - PRINTED_LINES} more lines)")
        elif steps and all(r.status == "not started" for r in rs) and number is not None:
            ch = answer_key.load(number)
            lines.append("")
            lines.append(f"nothing started yet: read {ch.page} (its 'Your turn' section says where to begin),")
            lines.append(f"then fill in {ch.exercise_file} and run this again.")
        label = f"chapter {number}" if number is not None else "other tests"
        s, c = _tally(steps, checks)
        tail = f"{label}: {s} steps, {c} checks"
        if number is not None and broken.get(number):
            tail += " (does not import)"
        lines.append("")
        lines.append(tail)
        if number is not None and rs and all(r.status == "not started" for r in rs):
            lines.append(f"(the expected start: nox now reports 'Session chapter{number} failed' because no step "
                         "passes yet — nothing is broken)")
    return lines


def _tally(steps: list[Result], checks: list[Result]) -> tuple[str, str]:
    """"passed/all" of the steps, and of the checks (a check with several cases passes when all of them do)."""
    groups = _grouped(checks)
    return (f"{sum(r.status == 'passed' for r in steps)}/{len(steps)}",
            f"{sum(all(r.status == 'passed' for r in g) for _, g in groups)}/{len(groups)}")


def chapter_status(rs: list[Result], broken: str = "") -> str:
    """One word for a chapter: done, in progress, not started, or does not import."""
    if broken:
        return "does not import"
    if rs and all(r.status == "passed" for r in rs):
        return "done"
    if all(r.status == "not started" for r in rs):
        return "not started"
    return "in progress"


def progress_view(results: list[Result], impl: str, broken: dict[int, str]) -> list[str]:
    """Every chapter in one table, then the next step to work on."""
    by_chapter: dict[int, list[Result]] = {}
    for r in results:
        if r.chapter is not None:
            by_chapter.setdefault(r.chapter, []).append(r)
    lines = ["", f"progress of {impl}/", ""]
    lines.append(f"  {'chapter':<8} {'title':<34} {'steps':>7} {'checks':>7}  status")
    next_step = None
    for number in sorted(by_chapter):
        rs = _step_order(by_chapter[number])
        ch = answer_key.load(number)
        s, c = _tally([r for r in rs if r.step], [r for r in rs if not r.step])
        status = chapter_status(rs, broken.get(number, ""))
        title = ch.title if len(ch.title) <= 34 else ch.title[:33].rstrip(" ,") + "…"  # cut where it shows
        lines.append(f"  {number:<8} {title:<34} {s:>7} {c:>7}  {status}")
        if next_step is None and status != "done":
            todo = next((r for r in rs if r.status != "passed"), None)
            next_step = (number, todo)
    lines.append("")
    if next_step is None:
        lines.append("every chapter passes. Well done.")
    else:
        number, todo = next_step
        what = f"step {todo.step} ({todo.title})" if todo and todo.step else f"'{todo.title}'" if todo else ""
        lines.append(f"next: chapter {number}, {what}: nox -s chapter{number}")
    return lines


# -- fixtures ----------------------------------------------------------------------------------------
@pytest.fixture
def ch(request: pytest.FixtureRequest) -> proxy.ChapterProxy:
    """The chapter module under test (``CHAPTER`` in the test module), from the chosen implementation."""
    number = getattr(request.module, "CHAPTER", None)
    if number is None:
        raise RuntimeError(f"{request.module.__name__} must set CHAPTER = <chapter number>")
    state: KataState = request.config.stash[STATE]
    return state.chapter_module(number)


@pytest.fixture
def ws(request: pytest.FixtureRequest) -> answer_key.Step:
    """The worksheet step this test checks (from its ``@pytest.mark.step(...)``), from ``reference/``."""
    marker = request.node.get_closest_marker("step")
    if marker is None:
        raise RuntimeError(f"{request.node.name} uses `ws` but has no @pytest.mark.step(...)")
    step = answer_key.load(request.module.CHAPTER).step(marker.args[0])
    return dataclasses.replace(step, settings=settings(request.config))  # how ``expect`` judges it in this run
