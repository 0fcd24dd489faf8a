"""Mutation testing of the reference solutions against each chapter's tests: ``nox -s mutation -- 4``.

mutmut (3.8 or newer) makes the mutants: its own mutation operators, applied by ``create_mutations`` to
``solutions/chapterNN_*.py`` (configured in ``[tool.mutmut]`` of pyproject.toml), named as ``mutmut`` names
them (``solutions.chapter04_attention.x_softmax__mutmut_3``: the third mutant of ``softmax``).

This script runs them, not ``mutmut run``: mutmut 3 switches mutants inside the test process (a trampoline
reads ``MUTANT_UNDER_TEST`` at every call and records which test reached which function in that process),
but the tests here never run the code under test in their own process. Every call goes to the worker
(``kata/worker``), a separate, sandboxed process with a scrubbed environment and a throwaway copy of the
implementation, so the trampoline would see no variable, record nothing and leave every mutant "no tests".
Instead each mutant is written out as plain source into a copy of ``solutions/`` and the chapter's tests
run against it with ``--impl`` exactly as a learner's code would be checked, in a fresh pytest process:

- only the tests that reach the mutated function (the functions each test calls, recorded by the judge in
  a clean run, followed through a static call graph of ``solutions/``), fastest first, stopping at the
  first failure (``-x``);
- a mutant is killed when some test fails (a timeout counts: the judge stops a call after 2 s), survives
  when every selected test passes;
- survivors listed as ``[[equivalent]]`` in ``tests/mutants/chapterNN.toml`` (they cannot change behaviour;
  each has its reason) are reported apart and left out of the score.

Prints killed / survived per chapter and a line per survivor; ``--json FILE`` writes every mutant's result;
``--record`` writes each chapter's figures into ``tests/mutants/chapterNN.toml`` and CONTRIBUTING.md's table.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kata import project  # noqa: E402
from kata.judge import answer_key, runner  # noqa: E402
from tests import mutants as chapter_files  # noqa: E402 - tests/mutants/chapterNN.toml, a chapter's mutants


@dataclass
class Mutant:
    """One mutant of one function of a solution file."""

    name: str  # mutmut's name: solutions.<module>.x_<function>__mutmut_<n>
    chapter: int
    module: str
    function: str
    line: int  # first changed line in the solution file
    original: str  # the changed lines before the mutation, stripped and joined by " / "
    mutated: str  # the same lines after it
    source: str = field(repr=False, default="")
    status: str = ""  # killed | survived | equivalent | no tests | timeout
    killed_by: str = ""
    reason: str = ""
    seconds: float = 0.0

    @property
    def key(self) -> tuple[str, str, str]:
        """What identifies the mutant across edits of other functions: function, original and mutated text."""
        return (self.function, self.original, self.mutated)


# -- making the mutants (mutmut's operators) -----------------------------------------------------------------
def make_mutants(chapter: answer_key.Chapter, functions: set[str] | None = None) -> list[Mutant]:
    """Every mutant mutmut makes of the chapter's solution file, as plain source (``functions``: of those only).

    Named and numbered the same either way; writing out each mutant's source is most of the time, so a caller
    that wants a few functions' mutants (tests/test_mutation_equivalent.py) says which.
    """
    from mutmut.mutation.file_mutation import create_mutations

    path = ROOT / "solutions" / f"{chapter.module}.py"
    code = path.read_text(encoding="utf-8")
    cwd = os.getcwd()
    os.chdir(ROOT)  # mutmut reads its configuration ([tool.mutmut] in pyproject.toml) from the working directory
    try:
        module, mutations, _, _ = create_mutations(str(path.relative_to(ROOT)), code)
    finally:
        os.chdir(cwd)
    counters: dict[str, int] = defaultdict(int)
    seen: dict[tuple, int] = defaultdict(int)
    around: dict[int, tuple[str, str] | None] = {}  # a function's node -> the module's text before and after it
    whole = module.code
    out = []
    for m in mutations:
        func = m.contained_by_top_level_function
        if func is None:  # mutmut 3 mutates code inside functions only
            continue
        name = func.name.value
        counters[name] += 1
        if functions is not None and name not in functions:
            continue
        if id(func) not in around:
            text = module.code_for_node(func)
            at = whole.find(text)
            once = at >= 0 and whole.find(text, at + 1) < 0
            around[id(func)] = (whole[:at], whole[at + len(text):]) if once else None
        if around[id(func)] is not None:  # the function's own text, mutated, between the module's others: what
            before, after = around[id(func)]  # the whole module's deep_replace writes, in a fraction of its time
            source = before + module.code_for_node(func.deep_replace(m.original_node, m.mutated_node)) + after
        else:
            source = module.deep_replace(m.original_node, m.mutated_node).code
        if source == code:
            continue
        removed, added, first = changed_lines(code.splitlines(), source.splitlines())
        mutant = Mutant(name=f"solutions.{chapter.module}.x_{name}__mutmut_{counters[name]}", chapter=chapter.number,
                        module=chapter.module, function=name, line=first, original=" / ".join(removed),
                        mutated=" / ".join(added), source=source)
        seen[mutant.key] += 1
        if seen[mutant.key] > 1:  # the same text change at two places of one line: tell them apart
            mutant.mutated += f"  (#{seen[mutant.key]})"
        out.append(mutant)
    return out


def changed_lines(before: list[str], after: list[str]) -> tuple[list[str], list[str], int]:
    """The lines that differ from ``before`` to ``after``, as difflib sees them: (removed, added, the first, from 1).

    The lines the two share at the start and at the end are set aside before difflib compares the rest: a
    mutant changes a few lines of one function of a long file, and SequenceMatcher over the whole file for
    every mutant was most of the time making them took (chapter 10: 1,113 mutants of a 700-line file).
    """
    start, limit = 0, min(len(before), len(after))
    while start < limit and before[start] == after[start]:
        start += 1
    end = 0
    while end < limit - start and before[-1 - end] == after[-1 - end]:
        end += 1
    a, b = before[start:len(before) - end], after[start:len(after) - end]
    removed, added, first = [], [], 0
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op != "equal":
            first = first or start + i1 + 1
            removed += [s.strip() for s in a[i1:i2]]
            added += [s.strip() for s in b[j1:j2]]
    return removed, added, first


# -- which tests reach which function -------------------------------------------------------------------------
def call_graph() -> dict[tuple[str, str], set[tuple[str, str]]]:
    """(module, function) -> every (module, function) of solutions/ it names, itself included, transitively.

    Built once per content of solutions/ (``tests_reaching`` asks for it once per mutant).
    """
    files = tuple((path.stem, path.read_text(encoding="utf-8"))
                  for path in project.chapter_files(ROOT / "solutions").values())
    return _call_graph(files)


@functools.cache
def _call_graph(files: tuple[tuple[str, str], ...]) -> dict[tuple[str, str], set[tuple[str, str]]]:
    """``call_graph`` of these (module, source) pairs. The caller gets the cached sets: it must not change them."""
    direct: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for stem, text in files:
        tree = ast.parse(text)
        local = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        imported = {}
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                for alias in node.names:
                    imported[alias.asname or alias.name] = (node.module, alias.name)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                edges = {(stem, n) for n in names & local} | {imported[n] for n in names if n in imported}
                direct[(stem, node.name)] = edges
    closure = {}
    for start in direct:
        seen, todo = {start}, [start]
        while todo:
            for nxt in direct.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        closure[start] = seen
    return closure


def tests_reaching(chapter: answer_key.Chapter, function: str) -> list[str]:
    """Names of the chapter's test functions that call (through ``ch``) something that reaches ``function``.

    Read from the test file, not run: for a quick selection (``-k``) where a clean run is not worth its time.
    """
    graph = call_graph()
    tree = ast.parse((ROOT / chapter.test_file).read_text(encoding="utf-8"))
    helpers = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("test_")}

    def called(node, seen=()):
        names = {n.func.attr for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and isinstance(n.func.value, ast.Name) and n.func.value.id == "ch"}
        for n in ast.walk(node):  # helpers of the test file that call ch themselves
            if isinstance(n, ast.Name) and n.id in helpers and n.id not in seen:
                names |= called(helpers[n.id], (*seen, n.id))
        return names

    out = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            reach = set().union(*(graph.get((chapter.module, f), set()) for f in called(node)))
            if (chapter.module, function) in reach:
                out.append(node.name)
    return out


def baseline(chapter: answer_key.Chapter, work: Path, python: str) -> tuple[dict[str, set], dict[str, float]]:
    """Run the chapter's tests on an unmutated copy: the functions each test reaches, and its duration."""
    package = work / "baseline" / "solutions"
    shutil.copytree(ROOT / "solutions", package, ignore=shutil.ignore_patterns("__pycache__"))
    results, junit = work / "baseline.jsonl", work / "baseline.xml"
    proc = subprocess.run([python, "-m", "pytest", chapter.test_file, "--impl", str(package), "--given", "-q",
                           "-p", "no:cacheprovider", *runner.stream_options(results), "--junitxml", str(junit)],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"chapter {chapter.number}'s tests fail on the unmutated solutions:\n{proc.stdout[-3000:]}")
    graph = call_graph()
    reached = {}
    for r in runner.read(results).results.values():
        functions = set()
        for qualified in r["functions"]:
            module, _, function = qualified.rpartition(".")
            functions |= graph.get((module, function), {(module, function)})
        reached[r["nodeid"]] = functions
    durations = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        file = case.get("file") or chapter.test_file
        nodeid = f"{file}::{case.get('name')}"
        durations[nodeid] = float(case.get("time", 0))
    return reached, durations


# -- running one mutant ---------------------------------------------------------------------------------------
def run_mutant(mutant: Mutant, tests: list[str], work: Path, python: str, timeout: float) -> None:
    """Write the mutant into a copy of solutions/ and run ``tests`` on it; set its status."""
    start = time.monotonic()
    folder = Path(tempfile.mkdtemp(dir=work, prefix="m"))
    package = folder / "solutions"
    shutil.copytree(ROOT / "solutions", package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / f"{mutant.module}.py").write_text(mutant.source, encoding="utf-8")
    results = folder / "results.jsonl"
    try:
        proc = subprocess.run([python, "-m", "pytest", *tests, "--impl", str(package), "--given", "-x", "-q", "-p",
                               "no:cacheprovider", *runner.stream_options(results), "--timeout", str(int(timeout))],
                              cwd=ROOT, capture_output=True, text=True, check=False, timeout=timeout * 4)
    except subprocess.TimeoutExpired:
        mutant.status, mutant.killed_by = "timeout", "the whole run took too long"
    else:
        if proc.returncode == 0:
            mutant.status = "survived"
        else:
            mutant.status = "killed"
            try:
                bad = next(r for r in runner.read(results).results.values() if r["status"] != "passed")
                mutant.killed_by = f"{bad['nodeid'].split('::')[-1]} ({bad['status']})"
                if bad["status"] == "timed out":
                    mutant.status = "timeout"
            except (OSError, ValueError, StopIteration):
                mutant.killed_by = f"pytest exit code {proc.returncode}"
    shutil.rmtree(folder, ignore_errors=True)
    mutant.seconds = time.monotonic() - start


class MutantLoop:
    """A pytest plugin that checks many mutants in one pytest process (``--shard``).

    Per mutant, the judge's worker is restarted on that mutant's copy of solutions/ and its selected tests
    run, up to the first failure. Starting pytest, NumPy and the plugin once per shard instead of once per
    mutant makes a run several times faster. Between mutants the test modules' random generators and private
    caches (``_trained``…) are put back as they were, so every mutant sees the inputs a fresh run would.

    A job's ``tests`` are node ids or test functions' names; without ``tests``, every test collected. With
    ``"record": true`` the job's result carries each test's result as the judge records it (``results``:
    status, message…, as ``kata.judge.runner`` streams them), up to the first that failed, erred or timed out
    (a test whose function is "not started", a cascade of the mistake, does not stop it): what
    ``tests/test_suite_proves.py`` reads of its planted mistakes. With ``"every": true`` as well, all of them
    run, failing or not.
    """

    def __init__(self, jobs: list[dict]) -> None:
        self.jobs, self.results, self.failed, self.caught = jobs, [], None, False

    def pytest_runtest_logreport(self, report) -> None:
        """Remember the first failing report of the current mutant's tests, and whether one has caught it."""
        if report.failed:
            status = dict(report.user_properties).get("kata_status", "failed")
            self.caught = self.caught or status != "not started"
            if self.failed is None:
                self.failed = (report.nodeid.split("::")[-1], status)

    def pytest_runtestloop(self, session):
        """Run every mutant's tests; return True so pytest runs nothing else."""
        import copy

        import numpy as np

        from kata.judge import plugin, proxy

        state = session.config.stash[plugin.STATE]
        items = {item.nodeid: item for item in session.items}
        modules = {id(item.module): item.module for item in session.items}.values()
        saved = []
        for module in modules:
            for name, value in vars(module).items():
                if isinstance(value, np.random.Generator):
                    saved.append((module, name, copy.deepcopy(value.bit_generator.state)))
                elif name.startswith("_") and isinstance(value, (dict, list)) and not name.startswith("__"):
                    saved.append((module, name, copy.deepcopy(value)))
        for job in self.jobs:
            start = time.monotonic()
            folder = Path(job["folder"])
            old = state.worker
            if old is not None:
                try:
                    old.close()
                except OSError:  # its throwaway folder was still being written to: harmless, it is a temp dir
                    pass
            state.worker = proxy.Worker(folder, "solutions", call_timeout=old.call_timeout, hide=old.hide,
                                        shown_as={"solutions": "solutions"})
            state.folder, state.impl = folder, "solutions"
            state.modules.clear()
            state.chapters_seen.clear()
            state.worker.start()
            for module, name, value in saved:
                if isinstance(getattr(module, name), np.random.Generator):
                    getattr(module, name).bit_generator.state = copy.deepcopy(value)
                else:
                    setattr(module, name, copy.deepcopy(value))
            self.failed, self.caught = None, False
            selected = [] if "tests" in job else list(session.items)
            for test in job.get("tests", ()):  # a node id, or a test function's name (every case of it)
                selected += [items[test]] if test in items else [
                    item for item in session.items if item.name.split("[")[0] == test]
            first = len(state.results)
            for item in selected:
                item.ihook.pytest_runtest_protocol(item=item, nextitem=None)
                if not job.get("every") and (self.caught if job.get("record") else self.failed is not None):
                    break
            status = "survived" if self.failed is None else ("timeout" if self.failed[1] == "timed out" else "killed")
            self.results.append({"name": job["name"], "status": status,
                                 "killed_by": "" if self.failed is None else f"{self.failed[0]} ({self.failed[1]})",
                                 "seconds": time.monotonic() - start})
            if job.get("record") or job.get("every"):
                self.results[-1]["results"] = [dict(vars(r)) for r in state.results[first:]]
            Path(job["out"]).write_text(json.dumps(self.results), encoding="utf-8")
        return True


def run_shard(path: str) -> int:
    """``--shard FILE``: check the mutants listed in FILE in this one pytest process (see ``MutantLoop``)."""
    import pytest

    spec = json.loads(Path(path).read_text(encoding="utf-8"))
    loop = MutantLoop(spec["jobs"])
    tests = spec.get("files") or sorted({t.split("::")[0] for job in spec["jobs"] for t in job["tests"]})
    pytest.main([*tests, "--impl", spec["jobs"][0]["folder"] + "/solutions", "--given", "-q", "-p", "no:cacheprovider",
                 "--timeout", str(int(spec["timeout"])), "-o", "console_output_style=classic"], plugins=[loop])
    return 0


def copy_with(folder: Path, module: str, source: str) -> Path:
    """A copy of solutions/ in ``folder``/solutions with ``module``'s file replaced by ``source``; ``folder``."""
    shutil.copytree(ROOT / "solutions", folder / "solutions", ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "solutions" / f"{module}.py").write_text(source, encoding="utf-8")
    return folder


def run_in_one_process(jobs: list[dict], files: list[str], work: Path, timeout: float = 120,
                       python: str = sys.executable) -> tuple[dict[str, dict], subprocess.CompletedProcess]:
    """Check ``jobs`` (``MutantLoop``'s: name, folder, tests…) in one pytest process over ``files``; wait for it.

    Returns ({job name: its result}, the finished process); a job missing from the results did not run.
    """
    out = work / "results.json"
    spec = work / "spec.json"
    spec.write_text(json.dumps({"jobs": [{**job, "out": str(out)} for job in jobs], "timeout": timeout,
                                "files": files}), encoding="utf-8")
    proc = subprocess.run([python, __file__, "--shard", str(spec)], cwd=ROOT, capture_output=True, text=True,
                          timeout=max(1800, 4 * timeout), check=False)
    results = json.loads(out.read_text(encoding="utf-8")) if out.exists() else []
    return {r["name"]: r for r in results}, proc


def run_shards(jobs: list[tuple[Mutant, list[str]]], work: Path, python: str, args: argparse.Namespace,
               entries: list[dict]) -> None:
    """Split the mutants over ``args.jobs`` pytest processes, each running ``MutantLoop``; set their statuses."""
    by_name = {m.name: m for m, _ in jobs}
    shards = [jobs[i::args.jobs] for i in range(args.jobs)]
    procs = []
    for k, shard in enumerate(s for s in shards if s):
        specs = []
        for m, tests in shard:
            folder = Path(tempfile.mkdtemp(dir=work, prefix="m"))
            shutil.copytree(ROOT / "solutions", folder / "solutions", ignore=shutil.ignore_patterns("__pycache__"))
            (folder / "solutions" / f"{m.module}.py").write_text(m.source, encoding="utf-8")
            specs.append({"name": m.name, "folder": str(folder), "tests": tests, "out": str(work / f"shard{k}.out")})
        spec = work / f"shard{k}.json"
        spec.write_text(json.dumps({"jobs": specs, "timeout": args.timeout}), encoding="utf-8")
        procs.append((subprocess.Popen([python, __file__, "--shard", str(spec)], cwd=ROOT, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL), work / f"shard{k}.out", len(specs)))
    seen = set()
    while True:
        running = [p for p, _, _ in procs if p.poll() is None]
        for _, out, _ in procs:
            try:
                results = json.loads(out.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            for r in results:
                m = by_name[r["name"]]
                m.status, m.killed_by, m.seconds = r["status"], r["killed_by"], r["seconds"]
                if r["name"] not in seen:
                    seen.add(r["name"])
                    progress(m, f"{len(seen)}/{len(jobs)}", args.verbose, entries)
        if not running:
            break
        time.sleep(2)
    for m, tests in jobs:
        if not m.status:  # the shard's process died on this mutant (the worker or pytest itself crashed)
            run_mutant(m, tests, work, python, args.timeout)



def equivalent_reason(mutant: Mutant, entries: list[dict]) -> str | None:
    """The reason the mutant is listed as equivalent, or None."""
    for e in entries:
        if (e.get("chapter"), e.get("function"), e.get("original"), e.get("mutated")) == (
                mutant.chapter, mutant.function, mutant.original, mutant.mutated):
            return e.get("reason", "")
    return None


def progress(m: Mutant, count: str, verbose: bool, entries: list[dict]) -> None:
    """A mutant's line as it finishes: every one with ``verbose``, else each survivor not listed in ``entries``."""
    status = "equivalent" if m.status == "survived" and equivalent_reason(m, entries) is not None else m.status
    if verbose or status == "survived":
        print(f"  [{count}] {status:<10} {m.name}  line {m.line}: {m.original}  ->  {m.mutated}", flush=True)


def earlier_run(path: str, mutants: list[Mutant]) -> dict[str, str]:
    """Each mutant's status in an earlier ``--json`` run that ran all of them on the same solution (``--record``).

    A mutant it does not have, or has with other text (the solution changed since), is a ``SystemExit`` saying so.
    """
    results = {r["name"]: r for r in json.loads(Path(path).read_text(encoding="utf-8"))}
    text = {name: (r.get("original"), r.get("mutated")) for name, r in results.items()}
    differ = [m.name for m in mutants if text.get(m.name) != (m.original, m.mutated)]
    if differ:
        raise SystemExit(f"--record --survivors {path}: that run does not hold {len(differ)} of the "
                         f"{len(mutants)} mutants as they are now (the first: {differ[0]}); run them all with --record")
    return {m.name: results[m.name]["status"] for m in mutants}


def test_chapter(number: int, args: argparse.Namespace, python: str) -> list[Mutant]:
    """Make and run every mutant of one chapter; print its report.

    With ``--record --survivors JSON``: only the earlier run's survivors run again, and every other mutant keeps
    its status from that run, so the chapter's figures are whole (after equivalents were listed, say).
    """
    chapter = answer_key.load(number)
    mutants = every = make_mutants(chapter)
    earlier = earlier_run(args.survivors, every) if args.record and args.survivors else {}
    if args.function:
        mutants = [m for m in mutants if m.function in args.function]
    if args.mutant:
        mutants = [m for m in mutants if m.name in args.mutant]
    if args.survivors:  # only the mutants an earlier --json run left alive
        alive = {r["name"] for r in json.loads(Path(args.survivors).read_text(encoding="utf-8"))
                 if r["status"] in ("survived", "no tests", "equivalent")}
        mutants = [m for m in mutants if m.name in alive]
    entries = [e for e in chapter_files.equivalents() if e.get("chapter") == number]
    with tempfile.TemporaryDirectory(prefix=f"kata-mutation-{number}-") as tmp:
        work = Path(tmp)
        reached, durations = baseline(chapter, work, python)
        order = sorted(reached, key=lambda t: durations.get(t, 1.0))
        jobs = []
        for m in mutants:
            tests = [t for t in order if (m.module, m.function) in reached[t]]
            if not tests:
                m.status = "no tests"
            else:
                jobs.append((m, tests))
        print(f"chapter {number}: {len(mutants)} mutants of solutions/{chapter.module}.py, "
              f"{len(jobs)} to run ({args.jobs} at a time)", flush=True)
        done = 0

        def one(job):
            nonlocal done
            m, tests = job
            run_mutant(m, tests, work, python, args.timeout)
            done += 1
            progress(m, f"{done}/{len(jobs)}", args.verbose, entries)

        if args.fresh:
            with ThreadPoolExecutor(max_workers=args.jobs) as pool:
                list(pool.map(one, jobs))
        else:
            run_shards(jobs, work, python, args, entries)
    for m in mutants:
        if m.status in ("survived", "no tests"):
            reason = equivalent_reason(m, entries)
            if reason is not None:
                m.status, m.reason = "equivalent", reason
    if earlier:
        for m in every:
            m.status = m.status or earlier[m.name]
        mutants = every
    report(number, chapter, mutants)
    return mutants


def score(mutants: list[Mutant]) -> dict:
    """Counts and the score: killed / (killed + survived), equivalent mutants left out."""
    killed = sum(m.status in ("killed", "timeout") for m in mutants)
    survived = sum(m.status in ("survived", "no tests") for m in mutants)
    equivalent = sum(m.status == "equivalent" for m in mutants)
    total = killed + survived
    return {"mutants": len(mutants), "killed": killed, "survived": survived, "equivalent": equivalent,
            "score": killed / total if total else 1.0}


TABLE = ("<!-- kata:mutation-table -->", "<!-- /kata:mutation-table -->")  # where CONTRIBUTING.md's table is
TABLE_HEAD = """| chapter | mutants | killed | equivalent | survived | killed of non-equivalent |
| ---: | ---: | ---: | ---: | ---: | ---: |"""
"""The head of CONTRIBUTING.md's mutation table: ``row`` prints the columns in its order."""


def row(number: int, s: dict) -> str:
    """A chapter's row of CONTRIBUTING.md's mutation table from its ``score``, in the columns of ``TABLE_HEAD``."""
    return (f"| {number} | {s['mutants']} | {s['killed']} | {s['equivalent']} | {s['survived']} | "
            f"{100 * s['score']:.1f}% |")


def table() -> str:
    """CONTRIBUTING.md's mutation table: every chapter's recorded figures (``tests/mutants/``), and their sum."""
    recorded = chapter_files.figures()
    total = sum(s["mutants"] for s in recorded.values())
    equivalent = sum(s["equivalent"] for s in recorded.values())
    gaps = [str(n) for n, s in recorded.items() if s["survived"]]
    said = ("Every chapter kills all its non-equivalent mutants" if not gaps else
            f"Chapter {gaps[0]} leaves non-equivalent mutants alive" if len(gaps) == 1 else
            f"Chapters {', '.join(gaps)} leave non-equivalent mutants alive")
    return "\n".join([TABLE_HEAD, *(row(n, s) for n, s in recorded.items()), "",
                      f"{said} ({total:,} mutants, {equivalent:,} of them equivalent)."])


def fill(text: str) -> str:
    """``text`` with the mutation table written between its markers (``TABLE``); without them, as it is."""
    start, end = TABLE
    if start not in text:
        return text
    if end not in text.split(start, 1)[1]:
        raise ValueError(f"{start} is not closed by {end}")
    before, rest = text.split(start, 1)
    return f"{before}{start}\n{table()}\n{end}{rest.split(end, 1)[1]}"


def report(number: int, chapter: answer_key.Chapter, mutants: list[Mutant]) -> None:
    """Print the chapter's figures and a line per survivor."""
    s = score(mutants)
    print(f"chapter {number}: {s['mutants']} mutants, {s['killed']} killed, {s['equivalent']} equivalent, "
          f"{s['survived']} survived: {100 * s['score']:.1f}% of non-equivalent mutants killed")
    print(f"  its row of the mutation table: {row(number, s)}")
    for m in mutants:
        if m.status in ("survived", "no tests"):
            print(f"  survived{' (no test reaches it)' if m.status == 'no tests' else ''}: "
                  f"solutions/{chapter.module}.py:{m.line} in {m.function}: {m.original}  ->  {m.mutated}  [{m.name}]")


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, run the chapters, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", help="chapter numbers (default: all)")
    parser.add_argument("--jobs", "-j", type=int, default=2, help="mutants run at once (default 2)")
    parser.add_argument("--function", action="append", help="only the mutants of this function (repeatable)")
    parser.add_argument("--mutant", action="append", help="only this mutant, by mutmut's name (repeatable)")
    parser.add_argument("--survivors", metavar="JSON", help="only the mutants that survived in an earlier --json run")
    parser.add_argument("--timeout", type=float, default=120, help="seconds one test may take (default 120)")
    parser.add_argument("--json", help="write every mutant's result to this file")
    parser.add_argument("--record", action="store_true",
                        help="write each chapter's figures into tests/mutants/chapterNN.toml and CONTRIBUTING.md's "
                             "mutation table: a run of all the chapter's mutants, or with --survivors JSON of those "
                             "an earlier --json run of all of them left alive (the others keep its status)")
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument("--verbose", "-v", action="store_true", help="a line per mutant as it finishes")
    parser.add_argument("--fresh", action="store_true",
                        help="a fresh pytest process per mutant (slower; the default reuses one per job)")
    parser.add_argument("--shard", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.record and (args.function or args.mutant):
        parser.error("--record writes a chapter's figures: run all its mutants (no --function or --mutant), or "
                     "those an earlier --json run of all of them left alive (--survivors JSON)")
    if args.shard:
        return run_shard(args.shard)
    numbers = [int(c) for c in args.chapters] or [c.number for c in answer_key.chapters()]
    if args.list:
        for n in numbers:
            for m in make_mutants(answer_key.load(n)):
                print(f"{m.name}  line {m.line}: {m.original}  ->  {m.mutated}")
        return 0
    python = sys.executable
    results, table = [], []
    for n in numbers:
        mutants = test_chapter(n, args, python)
        results += mutants
        table.append((n, score(mutants)))
    print()
    print(TABLE_HEAD)
    for n, s in table:
        print(row(n, s))
    if args.record:
        for n, s in table:
            print(f"wrote: {chapter_files.record(n, s).relative_to(ROOT).as_posix()}")
        contributing = ROOT / "CONTRIBUTING.md"
        contributing.write_text(fill(contributing.read_text(encoding="utf-8")), encoding="utf-8")
        print("wrote: CONTRIBUTING.md (its mutation table)")
    if args.json:
        Path(args.json).write_text(json.dumps([{k: v for k, v in asdict(m).items() if k != "source"}
                                               for m in results], indent=1), encoding="utf-8")
    return 0 if all(s["score"] >= 0.95 for _, s in table) else 1


if __name__ == "__main__":
    sys.exit(main())
