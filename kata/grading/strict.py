"""``grading.toml`` checked against the course: every table, key, chapter, step id and check name must exist.

``points.load`` checks the file's form (numbers ≥ 0, known keys); this module checks what the keys name
against the course itself (the answer keys in ``reference/`` and the test files), so ``[steps] "4.33"``,
a misspelt check name or ``[chapters] 11`` stop the grade instead of grading silently. Every error names
the file, the line and the nearest valid name::

    grading.toml, line 14: [steps] "4.33" is not a worksheet step of the course; did you mean "4.3"?
"""

from __future__ import annotations

import ast
import difflib
import re
import tomllib
from pathlib import Path

from .. import project
from ..judge.markers import marked_steps
from . import points as points_mod


class StrictError(ValueError):
    """``grading.toml`` names something the course does not have."""


_TABLE = re.compile(r"^\s*\[\s*([A-Za-z0-9_.\"' -]+?)\s*\]\s*(#.*)?$")
_KEY = re.compile(r"""^\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([A-Za-z0-9_.:-]+))\s*=""")


def course_names(root: Path, extra_tests: list[Path] = ()) -> tuple[dict[int, list[str]], dict[int, list[str]]]:
    """(step ids by chapter, check names by chapter) of the course at ``root`` (plus extra test files).

    Steps come from the answer keys in ``reference/``; checks are the test functions without a step marker
    in ``tests/test_chapter*.py`` and in ``extra_tests`` (each file says its chapter with ``CHAPTER = N``).
    """
    steps: dict[int, list[str]] = {}
    for path in project.chapter_files(root / "reference", ".toml").values():
        with path.open("rb") as f:
            key = tomllib.load(f)
        if isinstance(key.get("chapter"), int):
            steps[key["chapter"]] = [str(s.get("id")) for s in key.get("steps", [])]
    checks: dict[int, list[str]] = {}
    for path in [*project.chapter_files(root / "tests", prefix="test_").values(), *extra_tests]:
        chapter, names = _checks_in(path)
        if chapter is not None:
            checks.setdefault(chapter, []).extend(names)
    return steps, checks


def _checks_in(path: Path) -> tuple[int | None, list[str]]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None, []
    chapter, names = None, []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "CHAPTER" for t in node.targets):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, int):
                chapter = node.value.value
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            if not marked_steps(node):
                names.append(node.name)
    return chapter, names


def _lines(text: str) -> dict[tuple[str, str], int]:
    """(table, key) -> line number, for the simple layout ``grading.toml`` uses (tables, one key a line)."""
    found: dict[tuple[str, str], int] = {}
    table = ""
    for number, line in enumerate(text.splitlines(), start=1):
        m = _TABLE.match(line)
        if m:
            table = m.group(1).strip().strip("\"'")
            found.setdefault((table, ""), number)
            continue
        m = _KEY.match(line)
        if m:
            key = next(g for g in m.groups() if g is not None)
            found.setdefault((table, key), number)
    return found


def _nearest(name: str, valid: list[str]) -> str:
    close = difflib.get_close_matches(name, valid, n=1, cutoff=0.5)
    if close:
        return f"; did you mean {close[0]!r}?"
    if len(valid) <= 12:
        return f"; valid: {', '.join(map(repr, valid))}" if valid else ""
    return ""


def check(path: Path, root: Path, extra_tests: list[Path] = ()) -> None:
    """Refuse ``path`` (a points file) when it names a table, key, chapter, step or check the course lacks.

    Args:
        path: the points file; nothing to check when it does not exist.
        root: the course (``reference/`` and ``tests/``) the names must exist in.
        extra_tests: the instructor's private test files, whose checks may be named too.

    Raises:
        StrictError: every problem found, one line each, naming the file, the line and the nearest valid name.
    """
    if not path.is_file():
        return
    text = path.read_text(encoding="utf-8")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise StrictError(f"{path.name}: not valid TOML: {err}") from None
    lines = _lines(text)
    steps, checks = course_names(root, list(extra_tests))
    problems: list[str] = []

    def say(table: str, key: str, what: str, valid: list[str]) -> None:
        line = lines.get((table, key)) if table else lines.get((key, ""))
        line = line or lines.get((table, ""))
        where = f"{path.name}, line {line}" if line else path.name
        shown = f'[{table}] "{key}"' if table else f"[{key}]"
        problems.append(f"{where}: {shown} {what}{_nearest(key, valid)}")

    tables = sorted(points_mod.KNOWN)
    for table, body in raw.items():
        if table not in points_mod.KNOWN:
            say("", table, "is not a table this file may have", tables)
            continue
        if not isinstance(body, dict):
            say("", table, "must be a table", tables)
            continue
        known = points_mod.KNOWN[table]
        if known is not None:
            for key in body:
                if key not in known:
                    say(table, key, f"is not a setting of [{table}]", sorted(known))
    chapters = sorted(set(steps) | set(checks))
    for key in raw.get("chapters", {}) if isinstance(raw.get("chapters"), dict) else {}:
        if not str(key).isdigit() or int(key) not in chapters:
            say("chapters", key, f"is not a chapter of the course (chapters: {chapters[0]}–{chapters[-1]})"
                if chapters else "is not a chapter of the course", [])
    all_steps = [s for c in sorted(steps) for s in steps[c]]
    for key in raw.get("steps", {}) if isinstance(raw.get("steps"), dict) else {}:
        if key not in all_steps:
            say("steps", key, "is not a worksheet step of the course", all_steps)
    all_checks = sorted({n for names in checks.values() for n in names})
    qualified = sorted(f"{c}:{n}" for c, names in checks.items() for n in names)
    for key in raw.get("checks", {}) if isinstance(raw.get("checks"), dict) else {}:
        if ":" in key:
            if key not in qualified:
                say("checks", key, "is not a check of the course (chapter:test name)", qualified)
        elif key not in all_checks:
            say("checks", key, "is not the test name of a check beyond the worksheet", all_checks)
    if problems:
        raise StrictError("\n".join(problems))
