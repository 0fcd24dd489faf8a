"""``nox -s worksheet -- 5``: the chapter's worksheet, step by step, with your numbers beside it.

For every step of the answer key: its id and title, every input its check gives your code (the data a
pencil works from), the value the worksheet prints, the exact value, the value your code gives, and ✓ or ✗.
The interactive counterpart of the book's example programs that print every intermediate. Your values are
the ones the step's test hands to the comparison, so this shows exactly what ``nox -s chapter5`` judged.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from .. import learners_code, project
from ..judge.checks import show
from ..judge.plugin import STATUS_MARK
from ..judge.runner import run_tests
from ..judge.status import folded


def parser() -> argparse.ArgumentParser:
    """The command line of ``nox -s worksheet -- ...``."""
    p = argparse.ArgumentParser(prog="nox -s worksheet --", description="Your numbers beside the worksheet's.")
    p.add_argument("chapter", help="the chapter, e.g. 5")
    p.add_argument("--impl", default=None, help="package name or folder to run (default: exercises/ with your saved "
                   "notebooks' answers, as nox -s chapterN runs it)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds one step may run (default: 10)")
    return p


def _printed(value) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_printed(v) for v in value) + "]"
    return str(value)


def _given(value) -> str:
    """An input as the key gives it, whole (never cut short: it is the data a pencil works from)."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_given(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_given(v)}" for k, v in value.items()) + "}"
    if isinstance(value, bool) or isinstance(value, str):
        return repr(value)
    if isinstance(value, float):  # the shortest repr that reads back the same float, 2 for 2.0
        return repr(value).removesuffix(".0")
    return str(value)


def given_lines(step) -> list[str]:
    """Every input the step's check hands to your code, one line each, so the worksheet states all its data.

    ``name = value``; a dict of arrays by its entries, ``name.key = value``, and a list of such dicts by index,
    ``model.blocks[0].WQ = ...``.
    """
    def lines(name, value):
        if isinstance(value, dict) and any(isinstance(v, (list, dict)) for v in value.values()):
            return [line for k, v in value.items() for line in lines(f"{name}.{k}", v)]
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value) and any(
                isinstance(x, (list, dict)) for v in value for x in v.values()):
            return [line for i, v in enumerate(value) for line in lines(f"{name}[{i}]", v)]
        return [f"{name} = {_given(value)}"]
    return [line for name, value in step.inputs.items() for line in lines(name, value)]


def step_status(statuses: list[str]) -> str:
    """One status for a step's tests, folded as the chapter view folds several cases of one check."""
    return folded(statuses)


def _said(step, result: dict) -> list[str]:
    """What a test that did not pass says, without the step's own title line."""
    status = result["status"]
    said = [line.strip() for line in (result.get("message") or status).strip().splitlines() if line.strip()]
    return [line for line in said if not line.startswith(step.id)] or said or [status]


def _test_name(result: dict) -> str:
    return str(result.get("nodeid", "")).rsplit("::", 1)[-1] or "a test"


def lines_for(chapter, results: dict[str, list[dict]], show) -> list[str]:
    """The worksheet as text: a block per step (``results``: the step's tests, in run order), then a count."""
    out = [f"chapter {chapter.number}: {chapter.title} — worksheet ({chapter.source})", ""]
    matched = whole = 0
    for step in chapter.steps:
        tests = results.get(step.id) or []
        status = step_status([t["status"] for t in tests])
        valued = [t for t in tests if "got" in t]  # the test that compared the worksheet value
        value_matches = any(t["status"] == "passed" for t in valued) if valued else status == "passed"
        matched += value_matches
        whole += status == "passed"
        out.append(f"{STATUS_MARK.get(status, '?')} {step.id:<5} {step.title}")
        out.extend(f"        given      {line}" for line in given_lines(step))
        if step.printed is not None:
            out.append(f"        worksheet  {_printed(step.printed)}")
        out.append(f"        exact      {show(step.exact)}")
        failing = [t for t in tests if t["status"] != "passed"]
        shown = next((t for t in tests if "got" in t), None) or (failing or tests or [None])[0]
        if shown is None:
            out.append("        yours      (no test ran for this step)")
        elif "got" in shown:
            got = shown["got"]
            out.append(f"        yours      {got if isinstance(got, str) else show(got)}")
            if shown["status"] != "passed":  # the value was recorded, and the comparison (or its type) failed
                out.extend(f"        why        {line}" for line in _said(step, shown)[:2])
            elif status != "passed":
                out.append("        (your value matches; another check of this step does not pass:)")
        else:
            said = _said(step, shown)
            out.append(f"        yours      {said[0]}")
            for line in said[1:3] if said[0].startswith(("the code raised", "timed out")) else []:
                out.append(f"                   {line}")  # where: file, line and its source
        for other in (t for t in failing if t is not shown):  # the step's other tests that did not pass
            out.append(f"        also {STATUS_MARK.get(other['status'], '?')}     {_test_name(other)}")
            out.extend(f"                   {line}" for line in _said(step, other)[:3])
        if step.erratum:
            out.append(f"        erratum    {step.erratum}")
        out.append("")
    n = len(chapter.steps)
    out.append(f"chapter {chapter.number}: {matched}/{n} worksheet values match"
               + (f"; {whole}/{n} steps pass every check of theirs." if whole != matched else "."))
    out.append(f"The worksheet is only part of it: nox -s chapter{chapter.number} runs every check.")
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the worksheet with your values; return 0."""
    args = parser().parse_args(argv)
    chapter = project.chapter(project.parse_chapter(args.chapter))
    folder = project.impl_folder(args.impl or learners_code.default_impl())  # exercises/ with the notebooks' answers
    with tempfile.TemporaryDirectory(prefix="kata-worksheet-") as tmp:
        run = run_tests(
            project.ROOT, [chapter.test_file], impl=str(folder), timeout=args.timeout, stream_dir=Path(tmp),
            record_values=True, extra_args=["-m", "step"],
        )
    by_step: dict[str, list[dict]] = {}  # every test of a step: a step may be checked by several
    for r in run.results.values():
        if r.get("step"):
            by_step.setdefault(r["step"], []).append(r)
    print(f"implementation: {folder}")
    print()
    for line in lines_for(chapter, by_step, show):
        print(line)
    for problem in run.problems + [e["message"].splitlines()[0] for e in run.collect_errors]:
        print(f"note: {problem}")
    return 0
