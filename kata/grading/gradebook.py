"""The class's gradebook: one row per learner, as ``gradebook.csv`` (spreadsheets, LMS) and ``gradebook.json``.

``gradebook.csv`` (UTF-8 with a byte-order mark, for Excel) starts with exactly these columns, then the
roster's extra columns (and, with
``--extra-tests``, ``private_points`` and ``private_max_points``)::

    student, repo, commit, committed_at, status, points, max_points, percent, ch1, …, chN, note,
    late, sandbox, other_branches, not_graded, notebooks, shared_with

with one ``chN`` per chapter graded (``--chapters``; all of them without it), as the LMS files have.

Its first row after the header is ``(maximum points)``: the total's and each chapter's maximum.
``gradebook.json`` (schema ``gradebook.schema.json``, documented in ``docs/instructors.md``) holds the
same rows plus each learner's whole ``results.json``. Shards of a class merge into one gradebook here.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import statistics
from pathlib import Path

from . import escape
from .roster import Learner

SCHEMA_VERSION = 2  # 2: ``deadline`` is an object that says how the deadline was applied (was: the text)
SCHEMA = Path(__file__).with_name("gradebook.schema.json")
STATUSES = ("graded", "missing", "error")
LEADING = ("student", "repo", "commit", "committed_at", "status", "points", "max_points", "percent")
# After the chapters and the note: what the instructor must know about how a row was graded.
FLAGS = ("late", "sandbox", "other_branches", "not_graded", "notebooks", "shared_with")
# The most a spreadsheet cell holds: Excel's limit, in UTF-16 code units (an emoji takes two). Python's csv
# refuses a field over 131,072 characters on reading, LibreOffice and Google Sheets read this much.
MAX_CELL = 32_767
# A row's note: its parts come bounded (submissions.listed), this bounds their sum, whatever a learner made.
MAX_NOTE = 4_000


class MergeError(ValueError):
    """Shard outputs that do not belong together, or that leave learners out."""


def load_schema() -> dict:
    """The schema of ``gradebook.json``."""
    return json.loads(SCHEMA.read_text(encoding="utf-8"))


def columns(chapters: list[int], extra_columns: list[str], private: bool) -> list[str]:
    """The CSV header: the fixed columns, a column per chapter graded, note, then the roster's own columns.

    Only the chapters graded: a run of chapters 1 and 2 with 14 empty columns beside them reads as 14 chapters
    nobody did, and an LMS import would make them assignments.
    """
    cols = [*LEADING, *(f"ch{n}" for n in chapters), "note", *FLAGS, *extra_columns]
    if private:
        cols += ["private_points", "private_max_points"]
    return cols


TRUSTS_COMMITTER_DATES = ("committer dates, which the learner's own git writes and a learner can forge: for a "
                          "deadline nobody can forge, take --snapshot FILE at the deadline and grade with --at FILE")


def committer_deadline(time: str) -> dict:
    """The gradebook's ``deadline`` for ``--deadline TIME``: the last commit by committer date, which it trusts."""
    return {"mode": "committer dates", "time": time, "taken": None, "file": None, "digest": None,
            "trusts": TRUSTS_COMMITTER_DATES}


def snapshot_deadline(record: dict, file: str) -> dict:
    """The gradebook's ``deadline`` for ``--at FILE``: the heads that ``--snapshot`` recorded at ``taken``."""
    return {"mode": "snapshot", "time": None, "taken": record["taken"], "file": file, "digest": record["digest"],
            "trusts": "the grader's clock: each learner's head as fetched when the snapshot was taken"}


def deadline_said(block: dict | None) -> str:
    """How the deadline was applied, in one line (the closing table, the run's page, ``report.html``)."""
    if block is None:
        return "each repository's default branch head, now (no deadline)"
    if block["mode"] == "snapshot":
        return (f"graded at the deadline snapshot of {block['taken']} ({block['file']}): "
                "whatever was pushed since is not graded")
    return f"deadline {block['time']}: graded by {block['trusts']}"


UNSEALED = "none"  # the sandbox column of a learner whose code ran without a sandbox that held
ALLOWED = "none (allowed)"  # the same, graded with --allow-unsealed


def sandbox(results: dict | None, allow_unsealed: bool = False) -> str | None:
    """``"bubblewrap"``, ``"none"`` (the learner's code ran unsealed), or None (no learner code ran).

    Unsealed when any of the learner's workers was (a ``no sandbox: …`` protection line, which the judge writes
    unless the worker's own probe showed the sandbox held), even if another was sealed; ``"none (allowed)"``
    when the instructor accepted it with ``--allow-unsealed``.
    """
    said = (results or {}).get("protections") or []
    if any(p.startswith("no sandbox") for p in said):
        return ALLOWED if allow_unsealed else UNSEALED
    if any(p.startswith("bubblewrap") for p in said):
        return "bubblewrap"
    return None


def unsealed_cause(results: dict | None) -> str:
    """Why the learner's code ran unsealed, as the judge said it (its first ``no sandbox: …`` line), or ''."""
    said = [p for p in (results or {}).get("protections") or [] if p.startswith("no sandbox")]
    return said[0].removeprefix("no sandbox: ").split(" (the learner's code could", 1)[0][:300] if said else ""


def row(learner, *, status: str, repo: str, commit: str | None, committed_at: str | None, note: str,
        results: dict | None, chapters: list[int], cached: bool = False, seconds: float = 0.0,
        late: int | None = None, branches: list[str] = (), dropped: list[str] = (), notebooks: list[int] = (),
        shared_with: list[str] = (), allow_unsealed: bool = False) -> dict:
    """One learner's row (``results`` is their ``results.json``, or None when nothing was graded).

    ``late``: commits after the deadline; ``branches``: newer branch heads not graded; ``dropped``: files left
    out; ``notebooks``: chapters answered in notebooks; ``shared_with``: students with the same repository.
    Each of them, a grade without a sandbox (with its cause, and ``allow_unsealed``: that the instructor accepted
    it) and the roster's warnings about the learner's row, is also said in the ``note`` (at most ``MAX_NOTE``
    characters).
    """
    said = [note] if note else []
    if branches:
        said.append("newer commits on other branches, not graded (only the default branch is): "
                    + "; ".join(branches))
    if dropped:
        said.append("not graded: " + "; ".join(dropped))
    if notebooks:
        said.append(f"chapter{'s' if len(notebooks) > 1 else ''} {', '.join(map(str, notebooks))} graded with the "
                    "answers in notebooks/ (a function finished in its notebook replaces the one in exercises/)")
    if shared_with:
        said.append(f"the same repository as {', '.join(shared_with)} (--allow-shared)")
    if sandbox(results) in (UNSEALED, ALLOWED):
        said.append(f"graded without a sandbox{' (allowed: --allow-unsealed)' if allow_unsealed else ''}: "
                    f"{unsealed_cause(results)}")
    said += list(learner.warnings)  # look-alike characters (roster.look_alikes)
    note = capped("; ".join(said), MAX_NOTE)
    by_number = {c["chapter"]: c for c in (results or {}).get("chapters", [])}
    total = (results or {}).get("total")
    private = None
    if results and results.get("checks") == "public and private":
        units = [s for c in results["chapters"] for s in c["steps"] if s["private"]]
        private = {"points": round(sum(s["points"] for s in units), 4),
                   "max_points": round(sum(s["max_points"] for s in units), 4)}
    return {
        "student": learner.student, "repo": repo, "commit": commit, "committed_at": committed_at, "status": status,
        "points": total["points"] if total else None, "max_points": total["max_points"] if total else None,
        "percent": total["percent"] if total else None,
        "chapters": [
            {"chapter": n, "points": by_number[n]["points"], "max_points": by_number[n]["max_points"],
             "percent": by_number[n]["percent"], "status": by_number[n]["status"]}
            if n in by_number else
            {"chapter": n, "points": None, "max_points": None, "percent": None, "status": None}
            for n in chapters
        ],
        "note": note, "late": late, "sandbox": sandbox(results, allow_unsealed), "other_branches": list(branches),
        "not_graded": list(dropped), "notebooks": list(notebooks), "shared_with": list(shared_with),
        "extra": dict(learner.extra), "private": private, "course_version": (results or {}).get("course_version"),
        "seed": ((results or {}).get("options") or {}).get("seed"), "cached": cached, "seconds": round(seconds, 2),
        "results": results}


def number(x) -> str:
    """A number of points as a spreadsheet reads it (``12``, ``7.5``), or '' for None."""
    if x is None:
        return ""
    return f"{x:g}" if float(x).is_integer() else f"{x:.4f}".rstrip("0").rstrip(".")



def cell(text) -> str:
    """A text cell of a CSV file for a spreadsheet or an LMS (the one place such a cell is made).

    A learner's text that a spreadsheet would read as a formula is made inert (:func:`escape.csv_cell`), and
    a cell is at most ``MAX_CELL`` characters (:func:`capped`): a longer one would be cut by Excel where
    nobody sees it, or stop Python's ``csv`` reading the file.
    """
    return capped(escape.csv_cell("" if text is None else str(text)), MAX_CELL)


def capped(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` UTF-16 code units (as Excel counts); else cut, saying how much was cut."""
    if len(text) <= limit // 2 or _units(text) <= limit:
        return text
    # Cut in UTF-16 (Excel's count); a character of two units cut in half is dropped whole.
    cut = text.encode("utf-16-le", "surrogatepass")[: 2 * (limit - 60)].decode("utf-16-le", "ignore")
    return f"{cut} … (cut: {len(text) - len(cut):,} more characters)"


def _units(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


MAX_ROW = "(maximum points)"


def max_row(book: dict) -> dict[str, str]:
    """The row of maximum points: the total's and each graded chapter's (from any graded learner)."""
    cells = {"student": MAX_ROW}
    totals = [r["max_points"] for r in book["rows"] if r["max_points"] is not None]
    if totals:
        cells["max_points"] = cells["points"] = number(totals[0])
    for r in book["rows"]:
        for c in r["chapters"]:
            if c["max_points"] is not None:
                cells.setdefault(f"ch{c['chapter']}", number(c["max_points"]))
    return cells


def csv_text(book: dict) -> str:
    """``gradebook.csv`` of a gradebook: the header, the row of maximum points, then one row per learner."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([cell(c) for c in book["columns"]])
    top = max_row(book)
    writer.writerow([cell(top.get(c, "")) for c in book["columns"]])
    for r in book["rows"]:
        cells = {
            "student": r["student"], "repo": r["repo"], "commit": r["commit"] or "",
            "committed_at": r["committed_at"] or "", "status": r["status"], "points": number(r["points"]),
            "max_points": number(r["max_points"]),
            "percent": "" if r["percent"] is None else f"{r['percent']:.1f}", "note": r["note"],
            "late": "" if r.get("late") is None else str(r["late"]), "sandbox": r.get("sandbox") or "",
            "other_branches": "; ".join(r.get("other_branches") or []),
            "not_graded": "; ".join(r.get("not_graded") or []),
            "notebooks": " ".join(map(str, r.get("notebooks") or [])),
            "shared_with": "; ".join(r.get("shared_with") or []),
        }
        for c in r["chapters"]:
            cells[f"ch{c['chapter']}"] = number(c["points"])
        cells.update(r["extra"])
        if r["private"] is not None or "private_points" in book["columns"]:
            cells["private_points"] = number((r["private"] or {}).get("points"))
            cells["private_max_points"] = number((r["private"] or {}).get("max_points"))
        writer.writerow([cell(cells.get(c, "")) for c in book["columns"]])
    return buf.getvalue()


def summary(rows: list[dict]) -> dict:
    """How many learners were graded, missing or in error, and the graded ones' mean and median percent."""
    graded = [r["percent"] for r in rows if r["status"] == "graded" and r["percent"] is not None]
    return {"learners": len(rows), **{s: sum(r["status"] == s for r in rows) for s in STATUSES},
            "mean_percent": round(statistics.fmean(graded), 1) if graded else None,
            "median_percent": round(statistics.median(graded), 1) if graded else None}


def write(book: dict, out: Path) -> list[Path]:
    """Write ``gradebook.csv`` and ``gradebook.json`` into ``out``; return their paths.

    ``gradebook.json`` is written as it is encoded (``json.dump``), never whole in memory: it holds every
    learner's results, about 0.8 MB each, and as one string (with the pieces it is joined from) it tripled
    the merge's memory (937 MiB instead of 298 MiB for 200 learners; a class of 2,000 would not fit a
    7 GB runner).
    """
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "gradebook.csv", out / "gradebook.json"]
    paths[0].write_text(csv_text(book), encoding="utf-8-sig")  # the byte-order mark: Excel then reads UTF-8
    with open(paths[1], "w", encoding="utf-8") as f:
        json.dump(book, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return paths


def merge(folders: list[Path], out: Path, shards: int | None = None) -> dict:
    """Combine the outputs of ``--shard`` runs into one gradebook; copy their ``students/`` into ``out``.

    ``shards`` (``--shards N``): how many shards the run had. Then a shard that did not finish (its folder is
    not among ``folders``) is named, and each of its learners is an ``error`` row saying so, instead of the
    merge being refused: the instructor gets the rest of the class, and knows which job to look at.

    Raises:
        MergeError: a folder without ``gradebook.json``, shards of different classes or course versions,
            a learner graded twice, or learners of the roster that no shard graded.
    """
    books = []
    strings: dict[str, str] = {}
    for folder in folders:
        path = folder / "gradebook.json"
        if not path.is_file():
            raise MergeError(f"--merge: {folder} has no gradebook.json (is it the --out of a grade-class run?)")
        books.append((folder, load_shard(path, strings)))
    first_folder, first = books[0]
    for folder, book in books[1:]:
        for key, what in (("roster", "roster"), ("course_version", "course version"), ("seed", "seed"),
                          ("deadline", "deadline"), ("columns", "columns")):
            if book[key] != first[key]:
                raise MergeError(f"--merge: {folder} and {first_folder} differ in their {what}: "
                                 "shards must come from one run of one class")
    rows: dict[str, dict] = {}
    for folder, book in books:
        for r in book["rows"]:
            if r["student"] in rows:
                raise MergeError(f"--merge: {r['student']!r} is in more than one shard (again in {folder})")
            rows[r["student"]] = r
    order = first["roster"]["students"]
    left_out = [s for s in order if s not in rows]
    if left_out and shards:
        have = {b.get("shard") for _, b in books}
        ranked = sorted(order)  # roster.Roster.shard: students sorted by name, every N-th one
        for student in left_out:
            which = f"{ranked.index(student) % shards + 1}/{shards}"
            if which in have:
                raise MergeError(f"--merge: shard {which} did not grade {student!r} (a different roster?)")
            rows[student] = row(Learner(student, "", 0), status="error", repo="", commit=None, committed_at=None,
                                note=f"not graded: shard {which} did not finish (its job failed; see its log)",
                                results=None, chapters=[c["chapter"] for c in first["chapters"]])
        left_out = []
    if left_out:
        raise MergeError(f"--merge: no shard graded {len(left_out)} learner(s) of the roster: "
                         f"{', '.join(left_out[:20])}{' …' if len(left_out) > 20 else ''} (a shard missing?)")
    merged = dict(first)
    merged["rows"] = [rows[s] for s in order]
    merged["shard"] = None
    merged["shards"] = sorted({b.get("shard") or "1/1" for _, b in books})
    merged["summary"] = summary(merged["rows"])
    merged["created"] = max(b["created"] for _, b in books)
    (out / "students").mkdir(parents=True, exist_ok=True)
    for folder, _ in books:
        students = folder / "students"
        if students.is_dir():
            for learner in students.iterdir():
                target = out / "students" / learner.name
                if learner.is_dir() and learner.resolve() != target.resolve():
                    shutil.copytree(learner, target, dirs_exist_ok=True)
    restore_reports(merged["rows"], out)
    return merged


def load_shard(path: Path, strings: dict[str, str]) -> dict:
    """A shard's ``gradebook.json``, each text in it one object for all shards (``strings`` keeps them).

    Every learner's results repeat the same texts (test names, titles, statuses, most messages): read as
    they are, each learner's copy is an object of its own, and the texts were half of what a merge holds
    in memory (253 MiB for 200 learners, 116 MiB shared this way, in the same time).
    """
    def shared(pairs: list[tuple[str, object]]) -> dict:
        return {key: strings.setdefault(value, value) if value.__class__ is str else value for key, value in pairs}

    return json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=shared)


def restore_reports(rows: list[dict], out: Path) -> None:
    """Write each graded learner's ``results.json`` and ``junit.xml`` into ``out/students/`` where it is missing.

    A shard in CI uploads neither (``kata.grading.shards.pack``): both are written from the learner's
    results, which the shard's ``gradebook.json`` already holds whole, and they were two thirds of its
    bytes. They are written here by the grade's own writer (``reports.write_all``), so a merged folder is
    the same whether its shards were packed or not (its ``summary.md``, which may carry the grader's note,
    is always the shard's).
    """
    import tempfile

    from . import reports

    for r in rows:
        folder = out / "students" / r["student"]
        wanted = [n for n in ("results.json", "junit.xml") if not (folder / n).is_file()]
        if not r.get("results") or not folder.is_dir() or not wanted:
            continue
        with tempfile.TemporaryDirectory(dir=out, prefix=".reports-") as staging:
            reports.write_all(r["results"], Path(staging))
            for name in wanted:
                shutil.move(Path(staging) / name, folder / name)
