"""``--lms canvas|moodle|blackboard``: the gradebook as the import file of a learning management system.

Each system matches a row to its own learner by an identifier of its own, which only the roster can carry
(extra columns, matched by name without case, spaces or underscores):

- **Canvas** (Grades → Import): the columns ``Student, ID, SIS User ID, SIS Login ID, Section``, then one
  column per assignment, and a second row ``Points Possible`` with each assignment's maximum. Canvas matches
  by ``ID``, ``SIS User ID`` or ``SIS Login ID``: the roster needs one of ``id`` (or ``canvas_id``),
  ``sis_user_id``, ``sis_login_id``. UTF-8 with a byte-order mark (the file is usually opened in Excel
  first).
- **Moodle** (Grades → Import → CSV file): any columns; at import, "Map from" the identifier column to the
  user field of the same name (``Email address``, ``ID number`` or ``Username``) and each chapter column to
  a grade item. The roster needs one of ``email``, ``idnumber``, ``username``. UTF-8 without a byte-order mark
  (choose "Encoding: UTF-8" at import).
- **Blackboard** (Grade Center → Work Offline → Upload): ``Last Name, First Name, Username, Student ID``,
  then the grade columns; every value quoted; ``Username`` identifies the learner (roster column
  ``username``). New columns (without a Blackboard column ID) are created as text columns.

A learner with no grade (missing, error) gets empty cells: the import leaves that grade as it was.

No file carries a total: every numeric column Canvas imports becomes an assignment (a total column would be
a 17th one, counting every point twice in the course's total), and Moodle and Blackboard would make it a
grade item or column of its own. Each system sums the chapter columns itself.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from . import escape
from .gradebook import MAX_CELL, capped, cell, number

SYSTEMS = ("canvas", "moodle", "blackboard")
TITLE = "Transformer Katas"


def _key(name: str) -> str:
    return re.sub(r"[\s_-]+", "", name).casefold()


# For each system: (its column, the roster column names it is taken from).
IDENTIFIERS = {
    "canvas": [("ID", ("id", "canvasid")), ("SIS User ID", ("sisuserid",)), ("SIS Login ID", ("sisloginid",))],
    "moodle": [("Email address", ("email", "emailaddress")), ("ID number", ("idnumber",)),
               ("Username", ("username",))],
    "blackboard": [("Username", ("username",)), ("Student ID", ("studentid",))],
}
REQUIRED = {"canvas": "ID, SIS User ID or SIS Login ID (a roster column id, sis_user_id or sis_login_id)",
            "moodle": "Email address, ID number or Username (a roster column email, idnumber or username)",
            "blackboard": "Username (a roster column username)"}


def _find(extra_columns: list[str], names: tuple[str, ...]) -> str | None:
    return next((c for c in extra_columns if _key(c) in names), None)


def check(system: str, extra_columns: list[str]) -> None:
    """Raise ``ValueError`` when the roster has no column the system can match learners by."""
    if system not in SYSTEMS:
        raise ValueError(f"--lms: {system!r} is not one of {', '.join(SYSTEMS)}")
    found = [column for column, names in IDENTIFIERS[system] if _find(extra_columns, names)]
    if system == "blackboard" and "Username" not in found:
        found = []
    if not found:
        raise ValueError(f"--lms {system}: the roster has no column that identifies a learner in {system.title()}: "
                         f"add {REQUIRED[system]} (it has: {', '.join(extra_columns) or 'only student,repo'})")


def check_identifiers(system: str, extra_columns: list[str], learners) -> None:
    """Before grading: every identifier the import file will carry is refused now if it ever would be."""
    columns = [(column, _find(extra_columns, names)) for column, names in IDENTIFIERS[system]]
    columns.append(("Section", _find(extra_columns, ("section",)) if system == "canvas" else None))
    for learner in learners:
        for column, source in columns:
            if source:
                _identifier(learner.extra.get(source, ""), f"{column} (roster line {learner.line})", learner.student,
                            system)


def _identifier(value: str, column: str, student: str, system: str) -> str:
    """An identifier cell as the roster gives it; one a spreadsheet would run as a formula is refused.

    A learner's other cells get a leading ``'`` (:func:`escape.csv_cell`), but an identifier changed so would
    no longer match the learner in the LMS: the roster has to be corrected instead. So is one too long for a
    spreadsheet's cell (``gradebook.MAX_CELL``), which could only be cut.
    """
    if len(value) > MAX_CELL // 2 and capped(value, MAX_CELL) != value:
        raise ValueError(f"--lms {system}: {student}'s {column} is {len(value):,} characters long, more than a "
                         "spreadsheet's cell holds; correct it in the roster")
    if escape.csv_cell(value) != value:
        raise ValueError(f"--lms {system}: {student}'s {column} {value!r} starts with {value[:1]!r}: a spreadsheet "
                         f"would run it as a formula, and with a quote in front {system.title()} would not match the "
                         "learner; correct it in the roster")
    return value


def _chapter_max(book: dict) -> dict[int, float]:
    """Each graded chapter's maximum points, from any graded row."""
    best: dict[int, float] = {}
    for r in book["rows"]:
        for c in r["chapters"]:
            if c["max_points"] is not None:
                best.setdefault(c["chapter"], c["max_points"])
    return best


def csv_text(book: dict, system: str) -> str:
    """The import file of ``system`` for this gradebook (text, without a byte-order mark)."""
    extra_columns = book["roster"]["extra_columns"]
    check(system, extra_columns)
    chapters = book["options"]["chapters"]
    maxima = _chapter_max(book)
    titles = {c["chapter"]: c["title"] for c in book["chapters"]}
    grades = [f"{TITLE} {n}: {titles.get(n, f'chapter {n}')}" for n in chapters]
    ids = [(column, _find(extra_columns, names)) for column, names in IDENTIFIERS[system]]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n", quoting=csv.QUOTE_ALL if system == "blackboard" else
                        csv.QUOTE_MINIMAL)

    def scores(r: dict) -> list[str]:
        by = {c["chapter"]: c["points"] for c in r["chapters"]}
        if r["status"] != "graded":
            return [""] * len(chapters)
        return [number(by.get(n)) for n in chapters]

    if system == "canvas":
        section = _find(extra_columns, ("section",))
        writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *grades])
        writer.writerow(["Points Possible", "", "", "", "", *(number(maxima.get(n)) for n in chapters)])
        for r in book["rows"]:
            got = {column: r["extra"].get(source, "") if source else "" for column, source in ids}
            ident = [_identifier(got[c], c, r["student"], system) for c in ("ID", "SIS User ID", "SIS Login ID")]
            writer.writerow([cell(r["student"]), *ident,
                             _identifier(r["extra"].get(section, "") if section else "", "Section", r["student"],
                                         system)] + scores(r))
    elif system == "moodle":
        present = [(column, source) for column, source in ids if source]
        writer.writerow(["Full name", *(c for c, _ in present), *grades])
        for r in book["rows"]:
            writer.writerow([cell(r["student"]),
                             *(_identifier(r["extra"].get(s, ""), c, r["student"], system) for c, s in present),
                             *scores(r)])
    else:
        last = _find(extra_columns, ("lastname", "surname", "familyname"))
        first = _find(extra_columns, ("firstname", "givenname"))
        got_ids = dict(ids)
        writer.writerow(["Last Name", "First Name", "Username", "Student ID", *grades])
        for r in book["rows"]:
            writer.writerow([cell(r["extra"].get(last, "") if last else r["student"]),
                             cell(r["extra"].get(first, "") if first else ""),
                             _identifier(r["extra"].get(got_ids["Username"], ""), "Username", r["student"], system),
                             _identifier(r["extra"].get(got_ids["Student ID"], "") if got_ids["Student ID"] else "",
                                         "Student ID", r["student"], system),
                             *scores(r)])
    return buf.getvalue()


def write(book: dict, system: str, out: Path) -> Path:
    """Write ``DIR/<system>.csv`` (Canvas: UTF-8 with a byte-order mark); return its path."""
    path = out / f"{system}.csv"
    path.write_text(csv_text(book, system), encoding="utf-8-sig" if system == "canvas" else "utf-8", newline="")
    return path
