"""``nox -s grade``: grade every chapter (or some) of an implementation, for a course's CI.

Writes ``grade/results.json`` (schema: ``results.schema.json``, documented in ``docs/instructors.md``),
``grade/junit.xml`` and ``grade/summary.md`` (also appended to ``$GITHUB_STEP_SUMMARY``). Exits 0
whenever grading completed, whatever the score; ``--fail-under PERCENT`` makes a low score exit 1.
Usage errors exit 2; grading that could not run (a missing ``--pristine`` ref, say) exits 3.

Each chapter runs in its own pytest process (``runner.run_tests``), in a throwaway copy of the
repository, so nothing a learner's code does (an endless loop, a syntax error, a flood of output, a
crash) can stop the other chapters from being graded.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import re
import secrets
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .. import project
from ..judge.runner import BUDGET_SPENT, RunResult, part, run_tests
from ..judge.status import blame, folded, function_status
from . import course, pristine, reports, strict
from . import points as points_mod

SCHEMA_VERSION = 1
PRIVATE_DIR = "tests/instructor_checks"
_SKIP_EVERYWHERE = {".git", ".nox", "__pycache__", ".pytest_cache", ".ruff_cache", ".benchmarks", ".venv", "venv",
                    ".venv-tools", ".ipynb_checkpoints"}
# What the judge never reads: the site and its sources, notebooks, training runs, reports, tools' venvs.
# (scripts/ is copied: a snapshot builder takes its classic mistakes from the chapter's audit script.)
_SKIP_AT_TOP = {"grade", "gradebook", "site", "build", "node_modules", "docs", "notebooks", "runs", "data",
                "benchmarks"}


def parser() -> argparse.ArgumentParser:
    """The command line of ``nox -s grade -- ...``."""
    p = argparse.ArgumentParser(
        prog="nox -s grade --",
        description="Grade the chapters of an implementation; write grade/results.json, junit.xml, summary.md.",
    )
    p.add_argument("--chapters", metavar="N,N,...", help="grade only these chapters, e.g. 3,4,5 (default: all)")
    p.add_argument("--impl", default=None,
                   help="package name or folder to grade (default: exercises/, with every function finished in a "
                        "saved notebook in its place: the one rule the chapter sessions and doctor use)")
    p.add_argument("--fail-under", type=float, metavar="PERCENT", help="exit 1 when the score is below PERCENT (0-100)")
    p.add_argument("--isolate", action="store_true",
                   help="grade each chapter on top of the reference implementation of every other chapter")
    p.add_argument("--reference", default="solutions", metavar="PACKAGE",
                   help="the reference implementation --isolate builds on (default: solutions)")
    p.add_argument("--pristine", metavar="REF",
                   help="restore tests/, reference/, kata/, conftest.py, noxfile.py, pyproject.toml and grading.toml "
                        "from this git ref before grading; the report lists every file that differed")
    p.add_argument("--extra-tests", metavar="DIR",
                   help="add an instructor's private tests (test_*.py with CHAPTER = N)")
    p.add_argument("--timeout", type=float, metavar="SECONDS",
                   help="seconds one call of a learner's function may take (default: grading.toml, else 2)")
    p.add_argument("--budget", type=float, metavar="SECONDS",
                   help="seconds for the whole repository (default: grading.toml, else 60)")
    p.add_argument("--points", metavar="FILE",
                   help="the points settings (default: grading.toml of the graded repository)")
    p.add_argument("--out", default="grade", metavar="DIR", help="where to write the reports (default: grade/)")
    # Recorded in results.json; `nox -s grade-class` passes them (kata/grading/classroom.py).
    p.add_argument("--seed", type=int,
                   help="draw the checks' random inputs from this seed (default: a fresh one each run, recorded in "
                        "results.json, so no answer can be fitted to the inputs; --seed 0 keeps the tests' own)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="judges run at once, each with its worker (default: one per CPU; grade-class sets it)")
    p.add_argument("--notebooks", action="store_true",
                   help="the default without --impl (the notebooks' finished functions count); kept for old commands")
    p.add_argument("--repository", help="the repository graded, for the report (default: git's origin, if any)")
    p.add_argument("--commit", help="the commit graded, for the report (default: git's HEAD, if any)")
    return p


class GradingError(Exception):
    """Grading could not run (exit 3)."""


def main(argv: list[str] | None = None) -> int:
    """Grade, write the reports, print the summary; return the exit code."""
    args = parser().parse_args(argv)
    if args.fail_under is not None and not 0 <= args.fail_under <= 100:
        parser().error("--fail-under takes a percentage between 0 and 100")
    root = project.ROOT
    if args.impl is None:  # the one --impl rule (kata/learners_code.py): the notebooks' finished functions count
        from .. import learners_code

        args.impl = learners_code.default_impl(root)
        if args.impl != "exercises":
            answered = ", ".join(map(str, sorted(learners_code.from_notebooks(root))))
            print(f"grading exercises/ with the functions finished in notebooks/ in their place (chapters {answered})")
            args.impl_label = "exercises and notebooks"
    try:
        with tempfile.TemporaryDirectory(prefix="kata-grade-") as tmp:
            results = grade(root, args, Path(tmp))
    except GradingError as err:
        print(f"grade: {err}", file=sys.stderr)
        return 3
    except (ValueError, SystemExit) as err:
        print(f"grade: {err}", file=sys.stderr)
        return 2
    out = Path(args.out) if Path(args.out).is_absolute() else Path.cwd() / args.out
    paths = reports.write_all(results, out)
    print(reports.terminal(results))
    for path in paths:
        print(f"wrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as f:
            f.write(reports.markdown(results) + "\n")
    if args.fail_under is not None and results["total"]["percent"] < args.fail_under:
        print(f"score {results['total']['percent']:.1f} % is below --fail-under {args.fail_under:g} %")
        return 1
    return 0


# -- the run -------------------------------------------------------------------------------------------
def grade(root: Path, args: argparse.Namespace, tmp: Path) -> dict:
    """Build the grading workspace, run every chapter, and return the results (``results.json``)."""
    learner = project.impl_folder(args.impl, root)  # resolved before anything is copied
    workspace = tmp / "repo"
    shutil.copytree(root, workspace, ignore=_ignore(root), symlinks=True)
    restored = None
    if args.pristine:
        try:
            restored = pristine.restore(root, args.pristine, workspace)
        except pristine.PristineError as err:
            raise GradingError(str(err)) from err
    points_file = Path(args.points) if args.points else workspace / "grading.toml"
    private = _private_tests(Path(args.extra_tests), workspace) if args.extra_tests else {}
    strict.check(points_file, workspace, [workspace / f for files in private.values() for f in files])
    settings = points_mod.load(points_file)
    if args.seed is None:
        args.seed = secrets.randbelow(2**31 - 1) + 1
    timeout = args.timeout if args.timeout is not None else settings.timeout
    budget = args.budget if args.budget is not None else settings.budget
    deadline = time.monotonic() + budget
    chapters = project.chapters(workspace)
    if args.chapters:
        wanted = [project.parse_chapter(c) for c in args.chapters.split(",") if c.strip()]
        have = {c.number: c for c in chapters}
        unknown = [n for n in wanted if n not in have]
        if unknown:
            raise ValueError(f"--chapters: no chapter {unknown} here (chapters: {', '.join(map(str, have))})")
        chapters = [have[n] for n in sorted(set(wanted))]
    if not chapters:
        raise GradingError("no chapters to grade (reference/ has no answer key with a test file)")
    packages = tmp / "packages"
    packages.mkdir()
    impls = _implementations(args, learner, workspace, packages, chapters)
    streams = tmp / "streams"
    streams.mkdir()

    def files(chapter) -> list[str]:
        return [chapter.test_file, *private.get(chapter.number, [])]

    def run(group: list) -> RunResult:
        return run_tests(
            workspace, [f for c in group for f in files(c)], impl=impls[group[0].number], timeout=timeout,
            deadline=deadline, hide=[root, learner], shown_as=_shown(learner, root),
            stream_dir=streams, extra_paths=[packages],
            extra_args=[f"--kata-seed={args.seed}"] if args.seed else [],
        )

    # One pytest process per core, each with a share of the chapters (a process costs more to start
    # than most chapters take to run); with --isolate every chapter needs its own implementation.
    workers = max(1, min(len(chapters), args.workers or os.cpu_count() or 1))
    groups = [[c] for c in chapters] if args.isolate else [chapters[i::workers] for i in range(workers)]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        runs = list(pool.map(run, groups))
    by_chapter = {c.number: part(r, files(c)) for group, r in zip(groups, runs, strict=True) for c in group}
    graded = [_chapter(c, by_chapter[c.number], settings) for c in chapters]
    _blame(graded, {m: u for r in runs for m, u in r.uses.items()})
    return {
        "schema_version": SCHEMA_VERSION,
        "created": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "checks": "public and private" if args.extra_tests else "public",
        "implementation": getattr(args, "impl_label", None) or args.impl,
        **course.submission(learner.parent, args.repository, args.commit),
        "course_version": course.course_version(workspace, points_file),
        "options": {"chapters": [c.number for c in chapters], "isolate": bool(args.isolate), "pristine": args.pristine,
                    "extra_tests": str(args.extra_tests) if args.extra_tests else None, "timeout": timeout,
                    "budget": budget, "fail_under": args.fail_under, "points_from": settings.source,
                    "seed": args.seed or None},
        "environment": _environment(),
        "protections": sorted({p for r in runs for p in r.protections}) or ["no learner code ran"],
        "pristine": restored,
        "total": _total(graded),
        "chapters": graded,
    }


def _shown(learner: Path, root: Path) -> str:
    """The learner's folder as they know it: relative to the repository they graded, else its name."""
    try:
        return learner.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return learner.name


def _ignore(root: Path):
    def ignore(folder: str, names: list[str]) -> set[str]:
        skip = {n for n in names if n in _SKIP_EVERYWHERE or n.endswith(".pyc")}
        if Path(folder).resolve() == root.resolve():
            skip |= {n for n in names if n in _SKIP_AT_TOP}
        return skip

    return ignore


def _environment() -> dict:
    found = project.versions(("numpy", "pytest"))
    return {"python": platform.python_version(), "numpy": found["numpy"]["installed"],
            "platform": platform.platform(), "packages": found}


def _copy_package(source: Path, target: Path) -> None:
    from ..judge.proxy import regular_files_only

    shutil.copytree(source, target, ignore=regular_files_only)
    (target / "__init__.py").touch()


def _implementations(args, learner: Path, workspace: Path, packages: Path, chapters: list) -> dict[int, str]:
    """The ``--impl`` name each chapter runs with (a package in the workspace or in ``packages``).

    The workspace is a snapshot, so saving a file while the grade runs changes nothing.
    """
    if not args.isolate:
        if (workspace / args.impl).is_dir() and args.impl.isidentifier():
            return {c.number: args.impl for c in chapters}  # exercises/, solutions/: copied with the workspace
        name = learner.name if learner.name.isidentifier() and not (workspace / learner.name).exists() else "graded"
        _copy_package(learner, packages / name)
        return {c.number: name for c in chapters}
    reference = workspace / args.reference
    if not reference.is_dir():
        raise GradingError(
            f"--isolate builds on the reference implementation, and there is no {args.reference}/ here "
            "(a student edition has none: grade from the course authors' repository with --impl <folder>, "
            "or name one with --reference)"
        )
    impls = {}
    for c in chapters:
        package = packages / f"isolated_ch{c.number:02d}"
        _copy_package(reference, package)
        for path in learner.glob("*.py"):  # the learner's helpers, if any, without overwriting the reference
            if project.chapter_number(path.name) is None and not (package / path.name).exists():
                shutil.copy2(path, package / path.name)
        mine = learner / f"{c.module}.py"
        target = package / f"{c.module}.py"
        if mine.exists():
            shutil.copy2(mine, target)
        else:
            target.unlink(missing_ok=True)
        impls[c.number] = package.name
    return impls


def _private_tests(source: Path, workspace: Path) -> dict[int, list[str]]:
    """Copy the instructor's tests into the workspace; return their files by chapter."""
    if not source.is_dir():
        raise ValueError(f"--extra-tests: {source} is not a folder")
    target = workspace / PRIVATE_DIR
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for folder in [target, *[p for p in target.rglob("*") if p.is_dir()]]:
        (folder / "__init__.py").touch()
    by_chapter: dict[int, list[str]] = {}
    files = sorted(target.rglob("test_*.py"))
    if not files:
        raise ValueError(f"--extra-tests: {source} has no test_*.py files")
    for path in files:
        found = re.search(r"^CHAPTER\s*=\s*(\d+)", path.read_text(encoding="utf-8"), re.M)
        if not found:
            raise ValueError(f"--extra-tests: {path.name} does not say which chapter it checks (CHAPTER = N)")
        by_chapter.setdefault(int(found.group(1)), []).append(str(path.relative_to(workspace)))
    return by_chapter


# -- scoring -------------------------------------------------------------------------------------------
def _chapter(chapter, run: RunResult, settings: points_mod.Points) -> dict:
    """Group a chapter's tests into steps (the worksheet) and checks (beyond it) and score them."""
    tests = {t["nodeid"]: t for t in run.tests}
    results = [run.results.get(n) or _missing(t) for n, t in tests.items()]
    units: dict[tuple[str, str], list[dict]] = {("step", step.id): [] for step in chapter.steps}
    functions_of: dict[tuple[str, str], set[str]] = {}
    for result in results:
        test = tests[result["nodeid"]]
        key = ("step", test["step"]) if test.get("step") else ("check", f"{chapter.number}:{test['check']}")
        functions_of.setdefault(key, set()).update(
            f for f in (result.get("functions") or []) if isinstance(f, str))
        units.setdefault(key, []).append({
            "nodeid": result["nodeid"], "status": result["status"], "message": result.get("message") or None,
            "seconds": result.get("seconds"), "private": result["nodeid"].startswith(PRIVATE_DIR),
            "title": test.get("title")})
    steps = []
    titles = {s.id: s.title for s in chapter.steps}
    for (kind, unit_id), members in units.items():
        if not members and not (run.collect_errors or run.problems):
            continue  # a step of the key with no test (the chapter is still being written)
        statuses = [m["status"] for m in members]
        passed = statuses.count("passed")
        status = folded(statuses) if members else ("timed out" if run.problems else "error")
        first = next((m for m in members if m["status"] != "passed"), None)
        steps.append({
            "id": unit_id, "kind": kind, "title": titles.get(unit_id) or (members[0]["title"] if members else unit_id),
            "status": status, "passed": passed, "total": len(members),
            "max_points": settings.unit(chapter.number, kind, unit_id), "message": first["message"] if first else None,
            "private": bool(members) and all(m["private"] for m in members),
            "functions": sorted(functions_of.get((kind, unit_id), ())), "withheld": None,
            "tests": [{k: v for k, v in m.items() if k != "title"} for m in members]})
    _withhold(steps)
    raw_max = sum(s["max_points"] for s in steps)
    scale = settings.chapters[chapter.number] / raw_max if chapter.number in settings.chapters and raw_max else 1.0
    for s in steps:
        s["max_points"] = round(s["max_points"] * scale, 4)
        earned = s["max_points"] if s["status"] == "passed" else \
            s["max_points"] * s["passed"] / s["total"] if settings.partial_credit and s["total"] else 0.0
        s["points"] = 0.0 if s["withheld"] else round(earned, 4)
    error = _chapter_error(run, results)
    statuses = [s["status"] for s in steps]
    status = folded(statuses) if steps else "error"
    if error and all(st in ("error", "timed out") for st in statuses):
        status = "timed out" if run.problems else "error"
    return {"chapter": chapter.number, "title": chapter.title, "module": chapter.module, "status": status,
            "error": error, **_counts(steps), "steps": steps}


def _blame(chapters: list[dict], uses: dict[str, dict[str, str]]) -> None:
    """Say so when a failing step's chapter calls an earlier chapter's function that fails its own checks."""
    known = function_status((s["status"], s["functions"]) for c in chapters for s in c["steps"])
    for c in chapters:
        notes = blame(uses.get(c["module"], {}), known)
        if not notes:
            continue
        for s in c["steps"]:
            if s["status"] in ("failed", "error", "timed out") and s["message"]:
                s["message"] += notes


def _withhold(units: list[dict]) -> None:
    """Points follow working code: a step or check earns its points only once its functions work.

    A function *works* when every check beyond the worksheet that calls it passes (other shapes, other
    values, bad input, large inputs). A passed step or check that calls a function that does not work
    yet earns nothing, and says which check holds it back: answering only the worksheet's own inputs
    (or only refusing bad input) earns next to nothing, and a finished function earns all of its points.
    """
    unrun = [u for u in units if any(t["message"] == BUDGET_SPENT for t in u["tests"])]
    if unrun:  # what never ran cannot vouch for any function: the chapter's passed units wait
        for unit in units:
            if unit["status"] == "passed":
                unit["withheld"] = (f"passed, but worth no points: the time budget ran out before "
                                    f"'{unrun[0]['title']}' and other checks of this chapter ran")
        return
    checks_of: dict[str, list[dict]] = {}
    for unit in units:
        if unit["kind"] == "check":
            for name in unit["functions"]:
                checks_of.setdefault(name, []).append(unit)
    for unit in units:
        if unit["status"] != "passed":
            continue
        failing = {}
        for name in unit["functions"]:
            bad = [c["title"] for c in checks_of.get(name, []) if c["status"] != "passed"]
            if bad:
                failing[name.rsplit(".", 1)[-1]] = bad
        if failing:
            name, bad = next(iter(failing.items()))
            more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
            others = f"; also {', '.join(list(failing)[1:])}" if len(failing) > 1 else ""
            unit["withheld"] = (f"passed, but worth no points until {name} passes its checks beyond the worksheet: "
                                f"'{bad[0]}'{more}{others}")


def _missing(test: dict) -> dict:
    return {"nodeid": test["nodeid"], "status": "error", "message": "no result was recorded for this test"}


def _chapter_error(run: RunResult, results: list[dict]) -> str | None:
    said = [e["message"] for e in run.collect_errors] + run.problems
    imports = {
        r["message"] for r in results if r["status"] == "error" and "does not import" in (r.get("message") or "")
    }
    said += sorted(imports)
    if not said:
        return None
    return "\n".join(m.strip() for m in said)[:4000]


def _counts(units: list[dict]) -> dict:
    max_points = round(sum(u["max_points"] for u in units), 4)
    earned = round(sum(u["points"] for u in units), 4)
    return {"passed": sum(u["status"] == "passed" for u in units), "total": len(units), "points": earned,
            "max_points": max_points, "percent": round(100 * earned / max_points, 1) if max_points else 0.0,
            "tests": {
                "passed": sum(u["tests"]["passed"] if isinstance(u["tests"], dict) else _passed(u) for u in units),
                "total": sum(u["tests"]["total"] if isinstance(u["tests"], dict) else len(u["tests"]) for u in units)}}


def _passed(unit: dict) -> int:
    return sum(t["status"] == "passed" for t in unit["tests"])


def _total(chapters: list[dict]) -> dict:
    counts = _counts(chapters)
    counts["passed"] = sum(c["passed"] for c in chapters)
    counts["total"] = sum(c["total"] for c in chapters)
    counts["status"] = folded([c["status"] for c in chapters])
    return counts


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
