"""The three reports of ``nox -s grade``, all written from the same results, so they always agree.

- ``results.json``: everything (schema ``results.schema.json``);
- ``junit.xml``: one ``<testcase>`` per test, one ``<testsuite>`` per chapter, for any CI's test view;
- ``summary.md``: a Markdown table for people (GitHub shows it on the run's page).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from . import escape

MARK = {"passed": "✅", "failed": "❌", "not started": "⬜", "error": "⚠️", "timed out": "⏱️"}
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def wording(results: dict) -> str:
    """'public checks', unless the instructor's private tests ran too."""
    if results["checks"] == "public":
        return "public checks"
    return "public checks and the instructor's private checks"


def write_all(results: dict, out: Path) -> list[Path]:
    """Write ``results.json``, ``junit.xml`` and ``summary.md`` into ``out``; return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "results.json", out / "junit.xml", out / "summary.md"]
    paths[0].write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    ET.ElementTree(junit(results)).write(paths[1], encoding="utf-8", xml_declaration=True)
    paths[2].write_text(markdown(results) + "\n", encoding="utf-8")
    return paths


def _fmt(x: float) -> str:
    return f"{x:g}" if float(x).is_integer() else f"{x:.2f}".rstrip("0").rstrip(".")


def _clean(text: str | None) -> str:
    return _CONTROL.sub("?", text or "")


# -- junit ---------------------------------------------------------------------------------------------
def junit(results: dict) -> ET.Element:
    """The results as JUnit XML: failed and not started are failures, error and timed out errors."""
    root = ET.Element("testsuites", name=f"transformer katas ({wording(results)})")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for chapter in results["chapters"]:
        suite = ET.SubElement(root, "testsuite", name=f"chapter {chapter['chapter']}: {chapter['title']}")
        props = ET.SubElement(suite, "properties")
        for key in ("points", "max_points", "status"):
            ET.SubElement(props, "property", name=key, value=str(chapter[key]))
        counts = {"tests": 0, "failures": 0, "errors": 0}
        seconds = 0.0
        for unit in chapter["steps"]:
            for test in unit["tests"]:
                counts["tests"] += 1
                seconds += test.get("seconds") or 0.0
                label = f"{unit['id']} {unit['title']}" if unit["kind"] == "step" else unit["title"]
                case = ET.SubElement(suite, "testcase", classname=f"chapter{chapter['chapter']:02d}.{unit['kind']}",
                                     name=_clean(f"{label} [{test['nodeid'].split('::', 1)[-1]}]"),
                                     time=f"{test.get('seconds') or 0.0:.3f}")
                status, message = test["status"], _clean(test.get("message"))
                kind = {"failed": "failures", "not started": "failures", "error": "errors", "timed out": "errors"}
                if status in kind:
                    counts[kind[status]] += 1
                    tag = ET.SubElement(case, kind[status].removesuffix("s"), type=status,
                                        message=(message.splitlines() or [status])[0])
                    tag.text = message
        for key, value in counts.items():
            suite.set(key, str(value))
        suite.set("skipped", "0")
        suite.set("time", f"{seconds:.3f}")
        for key in totals:
            totals[key] += counts[key]
    for key, value in totals.items():
        root.set(key, str(value))
    return root


# -- markdown ------------------------------------------------------------------------------------------
def _cell(text: str) -> str:
    return _clean(text).replace("|", "\\|").replace("\n", " ")


def _gist(message: str, title: str) -> str:
    """What went wrong, in one line: the "got" and "looks like" lines of a failure, else its first new line."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    raised = next((i for i, line in enumerate(lines) if line.startswith("the code raised")), None)
    if raised is not None:  # a crash: what, where, and the line itself
        where = [" ".join(line.split()) for line in lines[raised + 1:raised + 3] if line[:1].isdigit() or
                 line.startswith("at ")]
        return " · ".join([lines[raised], *where])
    said = [line for line in lines if line.startswith(("got ", "looks like:"))]
    if said:
        return " · ".join(" ".join(line.split()) for line in said)
    fresh = [line for line in lines if title not in line]
    return fresh[0] if fresh else (lines[0] if lines else "")


def markdown(results: dict) -> str:
    """The summary table (what GitHub shows on the run's page)."""
    total = results["total"]
    isolated = " · each chapter graded on the reference implementation of the others"
    lines = [
        f"## Transformer Katas: grade on the {wording(results)}",
        "",
        f"**{_fmt(total['points'])} / {_fmt(total['max_points'])} points ({total['percent']:.1f} %)** · "
        f"implementation {escape.markdown_code(results['implementation'])} · {len(results['chapters'])} chapter(s)"
        + (isolated if results["options"]["isolate"] else ""),
        "",
        "| Chapter | Title | Steps and checks passed | Points | Status |",
        "| ---: | --- | ---: | ---: | --- |",
    ]
    lines += [f"| {c['chapter']} | {_cell(c['title'])} | {c['passed']}/{c['total']} | "
              f"{_fmt(c['points'])}/{_fmt(c['max_points'])} | {MARK[c['status']]} {c['status']} |"
              for c in results["chapters"]]
    lines.append(f"| **total** | | **{total['passed']}/{total['total']}** | "
                 f"**{_fmt(total['points'])}/{_fmt(total['max_points'])}** | {total['percent']:.1f} % |")
    lines.append("")
    lines.append("Steps are the worksheet's steps and the checks beyond it (other shapes, bad input, stability). "
                 "A step or check earns its points once every function it calls passes all of its checks.")
    protections = results.get("protections") or []
    if protections:
        lines.append("")
        lines.append("The learner's code ran sealed off from the grader: " + "; ".join(protections) + ".")
    restored = results.get("pristine")
    if restored:
        lines.append("")
        if restored["differed"]:
            lines.append(f"Graded with the course's files from {escape.markdown_code(restored['ref'])}. "
                         "Files that differed:")
            lines.append("")
            lines.extend(f"- {escape.markdown_code(d['path'])} ({escape.markdown(d['change'])})"
                         for d in restored["differed"])
        else:
            lines.append(f"Graded with the course's files from {escape.markdown_code(restored['ref'])}; "
                         "none of them differed.")
    errors = [c for c in results["chapters"] if c["error"]]
    if errors:
        lines.append("")
        for c in errors:
            first = c["error"].splitlines()[0]
            lines.append(f"- chapter {c['chapter']}: {escape.markdown_code(first, limit=300)}")
    todo = [
        (c, s) for c in results["chapters"] for s in c["steps"]
        if s["status"] in ("failed", "error", "timed out") and "does not import" not in (s["message"] or "")
    ]
    if todo:
        lines += ["", "<details><summary>Steps that fail (not-started steps are left out)</summary>", ""]
        for c, s in todo[:200]:
            first = _gist(s["message"] or "", s["title"]) or s["status"]
            label = f"step {s['id']}" if s["kind"] == "step" else "check"
            lines.append(f"- chapter {c['chapter']}, {label} {_cell(s['title'])}: {s['status']} — "
                         f"{escape.markdown(first, limit=200)}")
        if len(todo) > 200:
            lines.append(f"- … and {len(todo) - 200} more (see results.json)")
        lines += ["", "</details>"]
    withheld = [(c, s) for c in results["chapters"] for s in c["steps"] if s.get("withheld")]
    if withheld:
        lines += ["", "<details><summary>Passed, but worth no points yet</summary>", ""]
        for c, s in withheld[:100]:
            label = f"step {s['id']}" if s["kind"] == "step" else "check"
            lines.append(f"- chapter {c['chapter']}, {label} {_cell(s['title'])}: "
                         f"{escape.markdown(s['withheld'], limit=300)}")
        lines += ["", "</details>"]
    return "\n".join(lines)


# -- terminal ------------------------------------------------------------------------------------------
def terminal(results: dict) -> str:
    """A plain-text table for the terminal."""
    total = results["total"]
    lines = ["", f"grade of {results['implementation']}/ on the {wording(results)}", ""]
    lines.append(f"  {'chapter':<8} {'title':<34} {'passed':>7} {'points':>11}  status")
    for c in results["chapters"]:
        points = f"{_fmt(c['points'])}/{_fmt(c['max_points'])}"
        steps = f"{c['passed']:>3}/{c['total']:<3}"
        lines.append(f"  {c['chapter']:<8} {c['title'][:34]:<34} {steps} {points:>11}  {c['status']}")
        if c["error"]:
            lines.append(f"  {'':<8} {c['error'].splitlines()[0][:100]}")
    lines.append("")
    lines.append(f"  total: {_fmt(total['points'])} / {_fmt(total['max_points'])} points ({total['percent']:.1f} %)")
    withheld = sum(1 for c in results["chapters"] for s in c["steps"] if s.get("withheld"))
    if withheld:
        lines.append(f"  {withheld} passed step(s) and check(s) earn nothing until their functions pass every check "
                     "(summary.md lists them)")
    unsealed = [p for p in results.get("protections") or [] if p.startswith("no sandbox")]
    if unsealed:  # the judge's own line, with its cause (no bubblewrap, or one that did not hold)
        lines.append(f"  {unsealed[0][:300]}")
    restored = results.get("pristine")
    if restored:
        changed = ", ".join(f"{d['path']} ({d['change']})" for d in restored["differed"]) or "none"
        lines.append(f"  restored from {restored['ref']}; files that differed: {changed}")
    lines.append("")
    return "\n".join(lines)
