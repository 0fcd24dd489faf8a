"""``report.html`` of ``nox -s grade-class``: one self-contained page for the instructor's next lecture.

Three figures drawn with matplotlib and embedded as SVG data (no network, opens from disk): the class's
score histogram, a heat map of learners × chapters (each chapter's share of points from red to green; a
chapter not started, and a learner not graded, each in a colour of its own, named in its legend), and the
steps the class fails most. Below them, each of those steps with how many learners fail it and the top
"looks like <classic mistake>" diagnoses from the failure messages, the rows that are missing or in
error, and every learner's row.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import re
import statistics
import urllib.parse
from collections import Counter
from pathlib import Path

from ..project import installed
from . import escape, gradebook

LOOKS_LIKE = re.compile(r"^\s*looks like:\s*(.+?)\s*$", re.M)
FAILING = ("failed", "error", "timed out")
# Heat-map cells that are not a share of points on the red (0 %) to green (100 %) scale: a colour each.
NOT_STARTED = "#6baed6"  # every step and check "not started" (the stubs untouched: NotImplementedError)
NOT_GRADED = "#d9d9d9"  # no grade: the learner's row is missing or in error
NAME_POINTS = 8  # a learner's name in the heat map, at any class size (8 pt: about 11 px on screen)
ROW_INCHES = 0.17  # one learner's row in the heat map: room for the name (8 pt = 0.11 in) and a gap


def _svg(fig) -> str:
    """``fig`` as an SVG data URL; the figure is closed."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode()


def not_importing(rows: list[dict]) -> list[dict]:
    """Chapters that could not be graded for a learner (does not import, a file not graded), by chapter.

    Each: ``chapter``, ``learners`` (names), ``errors`` ({student: the first line of the error}).
    """
    found: dict[int, dict] = {}
    for r in rows:
        for chapter in (r.get("results") or {}).get("chapters", []):
            if chapter.get("error"):
                entry = found.setdefault(chapter["chapter"], {"chapter": chapter["chapter"], "learners": [],
                                                              "title": chapter.get("title"), "errors": {}})
                entry["learners"].append(r["student"])
                entry["errors"][r["student"]] = chapter["error"].strip().splitlines()[0][:300]
    return [found[n] for n in sorted(found)]


def failing_steps(rows: list[dict]) -> list[dict]:
    """The steps and checks learners answer wrongly, most failed first: id, title, learners, the diagnoses.

    A chapter that does not import is left out here (``not_importing``): that is not a wrong answer.
    ``by_diagnosis`` names the learners under each "looks like" diagnosis.
    """
    found: dict[str, dict] = {}
    for r in rows:
        for chapter in (r.get("results") or {}).get("chapters", []):
            if chapter.get("error"):
                continue
            for s in chapter["steps"]:
                if s["status"] not in FAILING:
                    continue
                entry = found.setdefault(s["id"], {"id": s["id"], "title": s["title"], "kind": s["kind"],
                                                   "chapter": chapter["chapter"], "learners": [],
                                                   "diagnoses": Counter(), "statuses": Counter(),
                                                   "by_diagnosis": {}})
                entry["learners"].append(r["student"])
                entry["statuses"][s["status"]] += 1
                said = set()
                for t in s["tests"]:
                    said.update(LOOKS_LIKE.findall(t.get("message") or ""))
                said.update(LOOKS_LIKE.findall(s.get("message") or ""))
                entry["diagnoses"].update(said)
                for diagnosis in sorted(said):
                    entry["by_diagnosis"].setdefault(diagnosis, []).append(r["student"])
    return sorted(found.values(), key=lambda e: (-len(e["learners"]), e["chapter"], e["id"]))


def _label(entry: dict) -> str:
    """``4.3 Attention weights…`` for a step, ``ch4 check: its title`` for a check beyond the worksheet."""
    if entry["kind"] == "step":
        return f"{entry['id']} {entry['title']}"
    return f"ch{entry['chapter']} check: {entry['title']}"


def _figure_data(book: dict) -> dict:
    """Everything the figures show, and nothing else (their cache key)."""
    rows = [{"student": r["student"], "status": r["status"], "percent": r["percent"],
             "chapters": [(c["chapter"], c["percent"], c.get("status")) for c in r["chapters"]]} for r in book["rows"]]
    failing = [{k: e[k] for k in ("id", "title", "kind", "chapter", "learners")} for e in failing_steps(book["rows"])]
    return {"rows": rows, "failing": failing[:15], "chapters": book["options"]["chapters"],
            "all": [c["chapter"] for c in book["chapters"]]}


def figures(book: dict, cache: Path | None = None) -> dict[str, str]:
    """The three figures as data URLs: ``histogram``, ``heatmap``, ``failing``.

    With ``cache``, figures of exactly the same data are taken from there instead of drawn again (a run
    with nothing changed then never imports matplotlib).
    """
    key = hashlib.sha256(json.dumps([_figure_data(book), installed("matplotlib")], sort_keys=True).encode())
    stored = cache / f"figures-{key.hexdigest()[:32]}.json" if cache is not None else None
    if stored is not None and stored.is_file():
        with contextlib.suppress(OSError, ValueError):
            return json.loads(stored.read_text(encoding="utf-8"))
    drawn = _draw(book)
    if stored is not None:
        with contextlib.suppress(OSError):
            stored.parent.mkdir(parents=True, exist_ok=True)
            stored.write_text(json.dumps(drawn), encoding="utf-8")
    return drawn


def _heatmap(book: dict):
    """Learners × chapters: each chapter's share of points; not started and not graded each in a colour of its own."""
    import matplotlib
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import Normalize, to_rgba
    from matplotlib.patches import Patch

    rows = book["rows"]
    numbers = list(book["options"]["chapters"]) or [c["chapter"] for c in book["chapters"]]
    scale, norm = matplotlib.colormaps["RdYlGn"], Normalize(vmin=0, vmax=100)
    cells = np.tile(to_rgba(NOT_GRADED), (len(rows), len(numbers), 1))
    for i, r in enumerate(rows):
        for c in r["chapters"]:
            if c["chapter"] not in numbers:
                continue
            if c.get("status") == "not started":
                cells[i, numbers.index(c["chapter"])] = to_rgba(NOT_STARTED)
            elif c["percent"] is not None:
                cells[i, numbers.index(c["chapter"])] = scale(norm(c["percent"]))
    height = max(2.4, ROW_INCHES * len(rows) + 1.6)  # a fixed pitch: names stay NAME_POINTS high at any size
    fig, ax = plt.subplots(figsize=(1.2 + 0.55 * len(numbers), height), layout="constrained")
    ax.imshow(cells, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(len(numbers)), [str(n) for n in numbers])
    ax.set_yticks(range(len(rows)), [r["student"] for r in rows], fontsize=NAME_POINTS)
    ax.tick_params(axis="x", labeltop=len(rows) > 40)  # a long map: the chapters above it too
    ax.set_xlabel("chapter")
    ax.set_title("Points per chapter (% of the chapter)")
    fig.colorbar(matplotlib.cm.ScalarMappable(norm=norm, cmap=scale), ax=ax, label="% of the chapter's points",
                 shrink=0.8)
    swatches = [Patch(facecolor=NOT_STARTED, edgecolor="#777777", label="not started (stubs untouched)"),
                Patch(facecolor=NOT_GRADED, edgecolor="#777777", label="not graded (missing or error)")]
    fig.legend(handles=swatches, loc="outside lower left", frameon=False, fontsize=8)
    return fig


def _draw(book: dict) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    # Names and titles are text: with mathtext off, ``Ka$$ie`` is drawn as typed (it stopped the report).
    from ..style import STYLE

    plt.rcParams.update({**STYLE, **escape.PLAIN_LABELS})
    rows = book["rows"]
    graded = [r for r in rows if r["status"] == "graded"]
    out = {}

    fig, ax = plt.subplots(figsize=(6.4, 3.0))
    ax.hist([r["percent"] for r in graded], bins=np.linspace(0, 100, 11), color="#3b6ea8", edgecolor="white")
    ax.set_xlim(0, 100)
    ax.set_xlabel("score (%)")
    ax.set_ylabel("learners")
    ax.set_title(f"Scores of the {len(graded)} graded learners")
    ax.yaxis.get_major_locator().set_params(integer=True)
    out["histogram"] = _svg(fig)
    out["heatmap"] = _svg(_heatmap(book))

    top = failing_steps(rows)[:15]
    fig, ax = plt.subplots(figsize=(6.4, max(1.8, 0.32 * len(top) + 1.0)))
    if top:
        labels = [_label(e)[:50] for e in top]
        ax.barh(range(len(top)), [len(e["learners"]) for e in top], color="#c0504d")
        ax.set_yticks(range(len(top)), labels)
        ax.invert_yaxis()
        ax.xaxis.get_major_locator().set_params(integer=True)
    else:
        ax.text(0.5, 0.5, "no step fails", ha="center", va="center", transform=ax.transAxes)
        ax.set_yticks([])
    ax.set_xlabel("learners failing it (failed, error or timed out)")
    ax.set_title("Steps and checks the class fails most")
    out["failing"] = _svg(fig)
    return out


_e = escape.html


def _num(x) -> str:
    if x is None:
        return ""
    return f"{x:g}" if float(x).is_integer() else f"{x:.2f}"


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1rem; color: #222; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
table { border-collapse: collapse; font-size: 0.85rem; margin: 0.5rem 0; }
th, td { border-bottom: 1px solid #ddd; padding: 0.2rem 0.5rem; text-align: left; vertical-align: top; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1rem 0; } figure img { max-width: 100%; height: auto; }
.missing, .error { background: #fff3cd; } .muted { color: #666; } .flag { color: #9a3412; }
#filters { position: sticky; top: 0; background: #f6f8fa; padding: 0.4rem 0.6rem; border: 1px solid #ddd; }
#filters label { margin-right: 1rem; } .names .learner + .learner::before { content: ", "; }
"""

# Filtering by a roster column: every element naming a learner carries class "learner" and data-fI
# attributes (the learner's value of the I-th filterable column); the script hides the others.
SCRIPT = """
(function () {
  var selects = Array.prototype.slice.call(document.querySelectorAll('select.filter'));
  function apply() {
    var wanted = selects.map(function (s) { return [s.getAttribute('data-i'), s.value]; });
    document.querySelectorAll('.learner').forEach(function (el) {
      el.hidden = !wanted.every(function (w) { return !w[1] || el.getAttribute('data-f' + w[0]) === w[1]; });
    });
    document.querySelectorAll('[data-count]').forEach(function (el) {
      var scope = el.closest('tr') || document;
      el.textContent = scope.querySelectorAll('.learner:not([hidden])').length;
    });
    document.querySelectorAll('span.names').forEach(function (el) {
      var n = el.querySelectorAll('.learner:not([hidden])').length;
      var c = el.previousElementSibling; if (c && c.classList.contains('n-names')) { c.textContent = n; }
    });
  }
  selects.forEach(function (s) { s.addEventListener('change', apply); });
})();
"""
MAX_FILTER_VALUES = 60  # a column with more distinct values (an e-mail) is no section to filter by


def filter_columns(book: dict) -> list[tuple[str, list[str]]]:
    """The roster's extra columns a class can be filtered by, with their values (at most MAX_FILTER_VALUES)."""
    found = []
    for column in book.get("roster", {}).get("extra_columns", []):
        values = sorted({r["extra"].get(column, "") for r in book["rows"]})
        if 1 < len(values) <= MAX_FILTER_VALUES and len(values) < max(2, len(book["rows"])):
            found.append((column, values))
    return found


def _attrs(r: dict, columns: list[tuple[str, list[str]]]) -> str:
    return "".join(f' data-f{i}="{_e(r["extra"].get(c, ""))}"' for i, (c, _) in enumerate(columns))


def _summary_link(student: str) -> str:
    return "students/" + urllib.parse.quote(student, safe="") + "/summary.md"


def _flags(r: dict) -> str:
    said = []
    if r.get("late"):
        said.append(f"{r['late']} late commit{'s' if r['late'] != 1 else ''}")
    if (r.get("sandbox") or "").startswith("none"):
        said.append(f"graded unsealed{' (allowed)' if r['sandbox'] != 'none' else ''}")
    if r.get("other_branches"):
        said.append("newer branch")
    if r.get("not_graded"):
        said.append("files not graded")
    if r.get("notebooks"):
        said.append("notebooks: " + ", ".join(map(str, r["notebooks"])))
    if r.get("shared_with"):
        said.append("shared repository")
    return "; ".join(said)


def render(book: dict, cache: Path | None = None, similarity: dict | None = None) -> str:
    """The whole page (``cache``: a folder where figures of the same data are kept)."""
    figs = figures(book, cache)
    s = book["summary"]
    rows = book["rows"]
    columns = filter_columns(book)
    by_name = {r["student"]: r for r in rows}

    def who(student: str, text: str | None = None, title: str | None = None) -> str:
        r = by_name.get(student, {"extra": {}})
        tip = f' title="{_e(title)}"' if title else ""
        return f'<span class="learner"{_attrs(r, columns)}{tip}>{_e(text or student)}</span>'

    def names(students: list[str], errors: dict | None = None) -> str:
        inner = "".join(who(x, title=(errors or {}).get(x)) for x in students)
        return f'<span class="n-names">{len(students)}</span>: <span class="names">{inner}</span>'

    head = (
        f"{s['learners']} learners: {s['graded']} graded, {s['missing']} missing, {s['error']} in error"
        + (f" · mean {s['mean_percent']:.1f} %, median {s['median_percent']:.1f} %" if s["mean_percent"] is not None
           else "")
    )
    meta = [f"course version <code>{_e(book['course_version'])}</code>", f"seed {book['seed']}",
            _e(gradebook.deadline_said(book["deadline"])),
            f"chapters {', '.join(map(str, book['options']['chapters']))}", f"created {_e(book['created'])}"]
    if book["shard"]:
        meta.append(f"shard {_e(book['shard'])} only")
    parts = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>Transformer Katas: class report</title>", f"<style>{STYLE}</style>", "</head>", "<body>",
        "<h1>Transformer Katas: class report</h1>", f"<p><strong>{_e(head)}</strong></p>",
        f'<p class="muted">{" · ".join(meta)}</p>',
    ]
    if columns:
        selects = []
        for i, (column, values) in enumerate(columns):
            options = "".join(f'<option value="{_e(v)}">{_e(v) or "(empty)"}</option>' for v in values)
            selects.append(f'<label>{_e(column)} <select class="filter" data-i="{i}" data-column="{_e(column)}">'
                           f'<option value="">all</option>{options}</select></label>')
        parts.append(f'<p id="filters">Show only: {"".join(selects)} <span class="muted">(the names in the tables '
                     "below; the figures show the whole class)</span></p>")
        parts += _by_column(book, columns)
    parts += [
        "<h2>Scores</h2>",
        f'<figure id="histogram"><img class="figure" alt="histogram of the class\'s scores" src="{figs["histogram"]}">'
        "</figure>",
        "<h2>Learners × chapters</h2>",
        f'<figure id="heatmap"><img class="figure" alt="heat map of points per chapter for every learner" '
        f'src="{figs["heatmap"]}"></figure>',
        "<h2>What the class answers wrongly most</h2>",
        f'<figure id="failing"><img class="figure" alt="the steps most learners fail" src="{figs["failing"]}">'
        "</figure>",
    ]
    top = failing_steps(rows)[:25]
    if top:
        parts.append('<table id="failing-steps"><thead><tr><th>step</th><th>title</th><th>learners</th>'
                     "<th>looks like (learners)</th></tr></thead><tbody>")
        for e in top:
            said = "<br>".join(f"{_e(name)}: {names(e['by_diagnosis'][name])}"
                               for name, _ in e["diagnoses"].most_common(3)) or \
                ", ".join(f"{k} {n}" for k, n in e["statuses"].most_common())
            where = e["id"] if e["kind"] == "step" else f"ch{e['chapter']} check"
            parts.append(f"<tr><td>{_e(where)}</td><td>{_e(e['title'])}</td><td>{names(e['learners'])}</td>"
                         f"<td>{said}</td></tr>")
        parts.append("</tbody></table>")
    broken = not_importing(rows)
    if broken:
        parts.append('<h2>Chapters that do not import (not wrong answers)</h2><p class="muted">The code of these '
                     "chapters could not be loaded (a syntax error, a missing name, a file not graded): no check "
                     "ran. Hover a name for its error.</p>")
        parts.append('<table id="not-importing"><thead><tr><th>chapter</th><th>learners</th></tr></thead><tbody>')
        for e in broken:
            parts.append(f"<tr><td>{e['chapter']} {_e(e['title'])}</td>"
                         f"<td>{names(e['learners'], e['errors'])}</td></tr>")
        parts.append("</tbody></table>")
    if similarity is not None:
        parts += similarity_section(similarity, who)
    problems = [r for r in rows if r["status"] != "graded"]
    if problems:
        parts.append("<h2>Missing or in error</h2><table><thead><tr><th>student</th><th>repo</th><th>status</th>"
                     "<th>reason</th></tr></thead><tbody>")
        for r in problems:
            parts.append(f'<tr class="{_e(r["status"])} learner"{_attrs(r, columns)}><td>{_e(r["student"])}</td>'
                         f'<td>{_e(r["repo"])}</td><td>{_e(r["status"])}</td><td>{_e(r["note"])}</td></tr>')
        parts.append("</tbody></table>")
    numbers = [c["chapter"] for c in book["chapters"]]
    extra_heads = "".join(f"<th>{_e(c)}</th>" for c, _ in columns)
    parts.append('<h2>Every learner</h2><table id="learners"><thead><tr><th>student</th>' + extra_heads
                 + "<th>status</th><th>percent</th><th>points</th>" + "".join(f"<th>ch{n}</th>" for n in numbers)
                 + "<th>commit</th><th>late</th><th>sandbox</th><th>flags</th><th>summary</th><th>note</th>"
                 "</tr></thead><tbody>")
    for r in sorted(rows, key=lambda r: (r["status"] != "graded", r["percent"] if r["percent"] is not None else 0)):
        cells = "".join(f'<td class="n">{_num(c["points"])}</td>' for c in r["chapters"])
        percent = "" if r["percent"] is None else f"{r['percent']:.1f}"
        points = f"{_num(r['points'])}/{_num(r['max_points'])}" if r["points"] is not None else ""
        extra = "".join(f"<td>{_e(r['extra'].get(c, ''))}</td>" for c, _ in columns)
        sandbox = f'<span class="flag">{_e(r["sandbox"])}</span>' if (r.get("sandbox") or "").startswith("none") \
            else _e(r.get("sandbox") or "")
        parts.append(f'<tr class="{_e(r["status"])} learner"{_attrs(r, columns)}><td>{_e(r["student"])}</td>{extra}'
                     f'<td>{_e(r["status"])}</td><td class="n">{percent}</td><td class="n">{points}</td>{cells}'
                     f"<td><code>{_e((r['commit'] or '')[:7])}</code></td>"
                     f'<td class="n">{_e(r.get("late") or "")}</td>'
                     f"<td>{sandbox}</td>"
                     f'<td class="flag">{_e(_flags(r))}</td>'
                     f'<td><a href="{_e(_summary_link(r["student"]))}">summary.md</a></td>'
                     f"<td>{_e(r['note'])}</td></tr>")
    parts += ["</tbody></table>"]
    if columns:
        parts.append(f"<script>{SCRIPT}</script>")
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)


def _by_column(book: dict, columns: list[tuple[str, list[str]]]) -> list[str]:
    """A table per filterable column: learners, graded, mean percent and each chapter's mean share, per value."""
    numbers = book["options"]["chapters"]
    parts = []
    for column, values in columns:
        parts.append(f"<h2>By {_e(column)}</h2><table class=\"by-column\"><thead><tr><th>{_e(column)}</th>"
                     "<th>learners</th><th>graded</th><th>mean %</th>"
                     + "".join(f"<th>ch{n} %</th>" for n in numbers) + "</tr></thead><tbody>")
        for value in values:
            group = [r for r in book["rows"] if r["extra"].get(column, "") == value]
            graded = [r for r in group if r["status"] == "graded" and r["percent"] is not None]
            mean = f"{statistics.fmean(r['percent'] for r in graded):.1f}" if graded else ""
            shares = []
            for n in numbers:
                got = [c["percent"] for r in graded for c in r["chapters"]
                       if c["chapter"] == n and c["percent"] is not None]
                shares.append(f'<td class="n">{statistics.fmean(got):.0f}</td>' if got else "<td></td>")
            parts.append(f"<tr><td>{_e(value) or '(empty)'}</td><td class=\"n\">{len(group)}</td>"
                         f"<td class=\"n\">{len(graded)}</td><td class=\"n\">{mean}</td>{''.join(shares)}</tr>")
        parts.append("</tbody></table>")
    return parts


MAX_PAIRS = 100  # pairs with rare shared code shown; the rest are counted, with the score they are all below
MAX_PLACES = 6  # a pair's places (chapter, files) shown; the rest are counted


def similarity_section(signals: dict, who) -> list[str]:  # noqa: ANN001 - who: render's learner span
    """The copying signals (``similarity.signals``), worded as what they are: something to look at."""
    holders = signals.get("holders")
    parts = [
        '<h2 id="similarity">Similarity: signals to read, not verdicts</h2>',
        '<p class="muted">Pairs of learners who share code the rest of the class does not '
        f"({signals['compared']} learners' graded files compared as a whole, every file whatever its name, by "
        "their copydetect fingerprints: renamed variables and moved code do not hide a match; the course's own "
        "stubs and solutions are taken out). <em>Rare shared code</em> counts each fingerprint the two share as "
        "2/n when n learners hold it: 1 when only these two do"
        + (f", nothing when more than {signals['common']:.0%} of the class ({holders} learners or more) do"
           if holders is not None else "")
        + f"; a pair is listed from {signals['min_rare']:g}, most first, with where each of the two holds it. "
        "And learners who fail exactly the same steps. Short functions have few ways to be right, a small class "
        "has little to say what is rare, and learners may have worked together as allowed: two honest learners "
        "can look alike. Open both learners' <code>students/&lt;name&gt;/graded/</code> folders and talk to "
        "them before drawing any conclusion.</p>",
    ]
    if signals.get("error"):
        parts.append(f"<p>Code was not compared: {_e(signals['error'])}</p>")
    pairs = signals["code"]
    if pairs:
        parts.append('<table id="alike-code"><thead><tr><th>learners</th><th>rare shared code</th><th>share of each '
                     "one's code found in the other's</th><th>where (chapter: each one's file, rare shared code)"
                     "</th></tr></thead><tbody>")
        for pair in pairs[:MAX_PAIRS]:
            a, b = pair["students"]
            places = [f"{_place(c)}: {c['rare']:g}" for c in pair["chapters"][:MAX_PLACES]]
            if len(pair["chapters"]) > MAX_PLACES:
                places.append(f"and {len(pair['chapters']) - MAX_PLACES} more")
            parts.append(f'<tr><td><span class="names">{who(a)}{who(b)}</span></td><td class="n">{pair["rare"]:g}'
                         f'</td><td>{pair["share"][0]:.0%} / {pair["share"][1]:.0%}</td>'
                         f"<td>{'<br>'.join(places)}</td></tr>")
        parts.append("</tbody></table>")
        if len(pairs) > MAX_PAIRS:
            parts.append(f"<p>{_below_the_cut(pairs)}</p>")
    elif not signals.get("error"):
        parts.append(f"<p>No two learners share {signals['min_rare']:g} or more of rare code.</p>")
    if signals.get("skipped"):
        shown = "; ".join(_e(s) for s in signals["skipped"][:20])
        more = len(signals["skipped"]) - 20
        parts.append(f"<p>Not compared: {shown}{f'; and {more} more' if more > 0 else ''}.</p>")
    if signals["failures"]:
        parts.append(f'<table id="same-failures"><thead><tr><th>learners</th><th>the same failing steps (all of '
                     f"them, {signals['min_same_failures']} or more)</th></tr></thead><tbody>")
        for group in signals["failures"]:
            inner = "".join(who(x) for x in group["students"])
            parts.append(f'<tr><td><span class="names">{inner}</span></td>'
                         f"<td>{_e(', '.join(group['steps']))}</td></tr>")
        parts.append("</tbody></table>")
    else:
        parts.append(f"<p>No small group of learners fails exactly the same {signals['min_same_failures']} or more "
                     "steps.</p>")
    return parts


def _place(chapter: dict) -> str:
    """Where a pair's rare shared code is: its chapter, and the file each of the two holds it in."""
    a, b = chapter["files"]
    files = _e(a) if a == b else f"{_e(a)} ↔ {_e(b)}"
    return f"chapter {chapter['chapter']}: {files}" if chapter["chapter"] is not None else files


def _below_the_cut(pairs: list[dict]) -> str:
    """What the pairs past ``MAX_PAIRS`` are, worded so it is true wherever the cut falls (ties included)."""
    last, hidden = pairs[MAX_PAIRS - 1]["rare"], pairs[MAX_PAIRS:]
    more = f"{len(hidden)} more pair{'s' if len(hidden) != 1 else ''}"
    tied = sum(p["rare"] == last for p in hidden)
    if tied:
        said = (f"… and {more} at or below {last:g} of rare shared code, the last score shown: {tied} of them "
                f"score{'s' if tied == 1 else ''} {last:g} too (a tie at the cut).")
    else:
        said = (f"… and {more} below {last:g} of rare shared code, the last score shown (the best of them "
                f"{hidden[0]['rare']:g}).")
    return said + " So many pairs: the chapters may have one obvious answer; compare within a chapter first."
