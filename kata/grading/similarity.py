"""Copying signals for ``report.html``: learners whose code is alike, and learners who fail the same steps.

Two signals for a human to read, never a verdict:

- **Alike code.** Each learner's graded files (``students/<name>/graded/exercises/``) are compared chapter
  file with chapter file by copydetect (winnowed fingerprints of the code's tokens, so renamed variables
  and moved whitespace do not hide a copy), with the course's own stubs (``exercises/`` of this course copy)
  as boilerplate: the handed-out signatures and docstrings never count. A pair is listed when, in some
  chapter, at least ``ALIKE`` of one learner's remaining code is found in the other's.
- **The same failing steps.** Learners whose set of failing steps and checks (failed, error, timed out; not
  "not started") is identical and at least ``MIN_SAME_FAILURES`` long, in groups of at most ``MAX_GROUP``
  (a set that many share is a common mistake, not a signal).

Short functions have few ways to be right: two honest learners can look alike. The report says so.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from pathlib import Path

ALIKE = 0.6  # share of a learner's code (after the stubs are taken out) found in another's
MIN_SAME_FAILURES = 3
MAX_GROUP = 4
FAILING = ("failed", "error", "timed out")


def graded_folder(out: Path, student: str) -> Path:
    """Where a learner's graded files are kept: ``students/<name>/graded/``."""
    return out / "students" / student / "graded"


def alike_code(folders: dict[str, Path], boilerplate: Path, threshold: float = ALIKE) -> list[dict]:
    """Pairs of learners whose code is alike, most alike first.

    Args:
        folders: {student: the folder of their graded ``.py`` files}.
        boilerplate: the course's stubs (never counted as alike).
        threshold: the least share of one learner's code found in the other's, in some chapter.

    Returns:
        ``[{"students": [a, b], "chapters": [{"file", "similarity": [a's share, b's share], "tokens"}],
        "similarity": the largest share}]``.
    """
    from copydetect import CopyDetector

    folders = {s: f for s, f in folders.items() if f.is_dir()}
    if len(folders) < 2:
        return []
    logging.getLogger().setLevel(max(logging.getLogger().level, logging.ERROR))  # copydetect logs every skip
    detector = CopyDetector(boilerplate_dirs=[str(boilerplate.resolve())], extensions=["py"], same_name_only=True,
                            autoopen=False, silent=True, display_t=threshold)
    owners = {}
    for student in sorted(folders):  # one list, in one order: row i and column i are the same file
        for path in sorted(folders[student].rglob("*.py")):
            if path.is_file() and not path.is_symlink():
                owners[str(path)] = student
                detector.add_file(str(path), "testref")
    if len(set(owners.values())) < 2:
        return []
    detector.run()
    if len(detector.similarity_matrix) == 0:
        return []

    def whose(path: str) -> str | None:
        return owners.get(path)

    pairs: dict[tuple[str, str], list[dict]] = defaultdict(list)
    files = detector.test_files
    for i, a_file in enumerate(files):
        for j in range(i + 1, len(files)):
            sim_a, sim_b = detector.similarity_matrix[i, j]
            if sim_a < 0 or max(sim_a, sim_b) < threshold:
                continue
            a, b = whose(a_file), whose(files[j])
            if a is None or b is None or a == b:
                continue
            key, sims = ((a, b), [sim_a, sim_b]) if a < b else ((b, a), [sim_b, sim_a])
            pairs[key].append({"file": Path(a_file).name, "similarity": [round(float(x), 3) for x in sims],
                               "tokens": int(detector.token_overlap_matrix[i, j])})
    found = [{"students": list(k), "chapters": sorted(v, key=lambda c: c["file"]),
              "similarity": max(max(c["similarity"]) for c in v)} for k, v in pairs.items()]
    return sorted(found, key=lambda p: (-p["similarity"], p["students"]))


def same_failures(rows: list[dict]) -> list[dict]:
    """Groups (2 to ``MAX_GROUP`` learners) whose failing steps are the same set of ``MIN_SAME_FAILURES`` or more."""
    by_set: dict[frozenset, list[str]] = defaultdict(list)
    for r in rows:
        failing = frozenset(s["id"] for c in (r.get("results") or {}).get("chapters", []) for s in c["steps"]
                            if s["status"] in FAILING)
        if len(failing) >= MIN_SAME_FAILURES:
            by_set[failing].append(r["student"])
    groups = [{"students": sorted(names), "steps": sorted(steps, key=_step_order)}
              for steps, names in by_set.items() if 2 <= len(names) <= MAX_GROUP]
    return sorted(groups, key=lambda g: (-len(g["steps"]), g["students"]))


def _step_order(step_id: str) -> tuple:
    head, _, rest = step_id.partition(":")
    major, _, minor = head.partition(".")
    return (int(major) if major.isdigit() else 0, rest == "" and minor.isdigit() and int(minor) or 0, rest)


def signals(book: dict, out: Path, course_root: Path) -> dict:
    """Both signals for the graded rows of ``book``; ``error`` says why alike code could not be compared."""
    graded = [r for r in book["rows"] if r["status"] == "graded"]
    folders = {r["student"]: graded_folder(out, r["student"]) / "exercises" for r in graded}
    error = None
    try:
        code = alike_code(folders, course_root / "exercises")
    except ImportError:
        code, error = [], "copydetect is not installed (it comes with the grade-class session: nox -s grade-class)"
    except Exception as err:  # noqa: BLE001 - one odd file never costs the class its report
        code, error = [], f"the comparison failed: {type(err).__name__}: {str(err)[:200]}"
    return {"alike": ALIKE, "compared": sum(f.is_dir() for f in folders.values()), "code": code,
            "failures": same_failures(graded), "min_same_failures": MIN_SAME_FAILURES, "error": error}
