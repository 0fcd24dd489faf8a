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
import hashlib
import importlib.metadata
import io
import json
import re
from collections import Counter
from pathlib import Path

from . import escape

LOOKS_LIKE = re.compile(r"^\s*looks like:\s*(.+?)\s*$", re.M)
FAILING = ("failed", "error", "timed out")
# Heat-map cells that are not a share of points on the red (0 %) to green (100 %) scale: a colour each.
NOT_STARTED = "#6baed6"  # every step and check "not started" (the stubs untouched: NotImplementedError)
NOT_GRADED = "#d9d9d9"  # no grade: the learner's row is missing or in error


def _svg(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode()


def failing_steps(rows: list[dict]) -> list[dict]:
    """The steps and checks learners fail, most failed first: id, title, learners, and the top diagnoses."""
    found: dict[str, dict] = {}
    for r in rows:
        for chapter in (r.get("results") or {}).get("chapters", []):
            for s in chapter["steps"]:
                if s["status"] not in FAILING:
                    continue
                entry = found.setdefault(s["id"], {"id": s["id"], "title": s["title"], "kind": s["kind"],
                                                   "chapter": chapter["chapter"], "learners": [],
                                                   "diagnoses": Counter(), "statuses": Counter()})
                entry["learners"].append(r["student"])
                entry["statuses"][s["status"]] += 1
                said = set()
                for t in s["tests"]:
                    said.update(LOOKS_LIKE.findall(t.get("message") or ""))
                said.update(LOOKS_LIKE.findall(s.get("message") or ""))
                entry["diagnoses"].update(said)
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
    key = hashlib.sha256(json.dumps([_figure_data(book), _matplotlib_version()], sort_keys=True).encode())
    stored = cache / f"figures-{key.hexdigest()[:32]}.json" if cache is not None else None
    if stored is not None and stored.is_file():
        try:
            return json.loads(stored.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pass
    drawn = _draw(book)
    if stored is not None:
        try:
            stored.parent.mkdir(parents=True, exist_ok=True)
            stored.write_text(json.dumps(drawn), encoding="utf-8")
        except OSError:
            pass
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
    height = max(2.4, 0.22 * len(rows) + 1.6)
    fig, ax = plt.subplots(figsize=(1.2 + 0.55 * len(numbers), height), layout="constrained")
    ax.imshow(cells, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(len(numbers)), [str(n) for n in numbers])
    ax.set_yticks(range(len(rows)), [r["student"] for r in rows], fontsize=max(4, min(8, 400 / max(1, len(rows)))))
    ax.set_xlabel("chapter")
    ax.set_title("Points per chapter (% of the chapter)")
    fig.colorbar(matplotlib.cm.ScalarMappable(norm=norm, cmap=scale), ax=ax, label="% of the chapter's points",
                 shrink=0.8)
    swatches = [Patch(facecolor=NOT_STARTED, edgecolor="#777777", label="not started (stubs untouched)"),
                Patch(facecolor=NOT_GRADED, edgecolor="#777777", label="not graded (missing or error)")]
    fig.legend(handles=swatches, loc="outside lower left", frameon=False, fontsize=8)
    return fig


def _matplotlib_version() -> str | None:
    try:
        return importlib.metadata.version("matplotlib")
    except importlib.metadata.PackageNotFoundError:
        return None


def _draw(book: dict) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    # Names and titles are text: with mathtext off, ``Ka$$ie`` is drawn as typed (it stopped the report).
    plt.rcParams.update({"font.size": 9, "svg.fonttype": "path", "svg.hashsalt": "kata", **escape.PLAIN_LABELS})
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
    plt.close(fig)

    fig = _heatmap(book)
    out["heatmap"] = _svg(fig)
    plt.close(fig)

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
    plt.close(fig)
    return out


def _e(x) -> str:
    return escape.html(x)


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
.missing, .error { background: #fff3cd; } .muted { color: #666; }
"""


def render(book: dict, cache: Path | None = None) -> str:
    """The whole page (``cache``: a folder where figures of the same data are kept)."""
    figs = figures(book, cache)
    s = book["summary"]
    rows = book["rows"]
    head = (
        f"{s['learners']} learners: {s['graded']} graded, {s['missing']} missing, {s['error']} in error"
        + (f" · mean {s['mean_percent']:.1f} %, median {s['median_percent']:.1f} %" if s["mean_percent"] is not None
           else "")
    )
    meta = [f"course version <code>{_e(book['course_version'])}</code>", f"seed {book['seed']}",
            f"deadline {_e(book['deadline'])}" if book["deadline"] else "each repository's default branch head",
            f"chapters {', '.join(map(str, book['options']['chapters']))}", f"created {_e(book['created'])}"]
    if book["shard"]:
        meta.append(f"shard {_e(book['shard'])} only")
    parts = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>Transformer Katas: class report</title>", f"<style>{STYLE}</style>", "</head>", "<body>",
        "<h1>Transformer Katas: class report</h1>", f"<p><strong>{_e(head)}</strong></p>",
        f'<p class="muted">{" · ".join(meta)}</p>',
        "<h2>Scores</h2>",
        f'<figure id="histogram"><img class="figure" alt="histogram of the class\'s scores" src="{figs["histogram"]}">'
        "</figure>",
        "<h2>Learners × chapters</h2>",
        f'<figure id="heatmap"><img class="figure" alt="heat map of points per chapter for every learner" '
        f'src="{figs["heatmap"]}"></figure>',
        "<h2>What the class fails most</h2>",
        f'<figure id="failing"><img class="figure" alt="the steps most learners fail" src="{figs["failing"]}">'
        "</figure>",
    ]
    top = failing_steps(rows)[:25]
    if top:
        parts.append("<table><thead><tr><th>step</th><th>title</th><th>learners</th><th>looks like (learners)</th>"
                     "</tr></thead><tbody>")
        for e in top:
            said = "; ".join(f"{_e(name)} ({n})" for name, n in e["diagnoses"].most_common(3)) or \
                ", ".join(f"{k} {n}" for k, n in e["statuses"].most_common())
            where = e["id"] if e["kind"] == "step" else f"ch{e['chapter']} check"
            parts.append(f"<tr><td>{_e(where)}</td><td>{_e(e['title'])}</td><td class=\"n\">{len(e['learners'])}"
                         f"</td><td>{said}</td></tr>")
        parts.append("</tbody></table>")
    problems = [r for r in rows if r["status"] != "graded"]
    if problems:
        parts.append("<h2>Missing or in error</h2><table><thead><tr><th>student</th><th>repo</th><th>status</th>"
                     "<th>reason</th></tr></thead><tbody>")
        for r in problems:
            parts.append(f'<tr class="{_e(r["status"])}"><td>{_e(r["student"])}</td><td>{_e(r["repo"])}</td>'
                         f"<td>{_e(r['status'])}</td><td>{_e(r['note'])}</td></tr>")
        parts.append("</tbody></table>")
    numbers = [c["chapter"] for c in book["chapters"]]
    parts.append("<h2>Every learner</h2><table><thead><tr><th>student</th><th>status</th><th>percent</th>"
                 "<th>points</th>" + "".join(f"<th>ch{n}</th>" for n in numbers) + "<th>commit</th><th>note</th>"
                 "</tr></thead><tbody>")
    for r in sorted(rows, key=lambda r: (r["status"] != "graded", r["percent"] if r["percent"] is not None else 0)):
        cells = "".join(f'<td class="n">{_num(c["points"])}</td>' for c in r["chapters"])
        percent = "" if r["percent"] is None else f"{r['percent']:.1f}"
        points = f"{_num(r['points'])}/{_num(r['max_points'])}" if r["points"] is not None else ""
        parts.append(f'<tr class="{_e(r["status"])}"><td>{_e(r["student"])}</td><td>{_e(r["status"])}</td>'
                     f'<td class="n">{percent}</td><td class="n">{points}</td>{cells}'
                     f"<td><code>{_e((r['commit'] or '')[:7])}</code></td><td>{_e(r['note'])}</td></tr>")
    parts += ["</tbody></table>", "</body>", "</html>", ""]
    return "\n".join(parts)
