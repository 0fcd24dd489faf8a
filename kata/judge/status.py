"""The results' vocabulary, and the one rule that folds several results into one.

A check with several cases, a step with several tests, a chapter with several steps: the learner's screen
(``plugin.chapter_view``) and the grade (``grading/grade.py``) fold them with ``folded``, so the two never
disagree (``tests/tools/judge/test_status.py`` checks every combination).
"""

from __future__ import annotations

STATUSES = ("passed", "failed", "not started", "error", "timed out")


def folded(statuses: list[str]) -> str:
    """One status for several: all passed, all not started, else the worst that happened.

    ✓ only when every one passed; "not started" only when nothing was started; a mix of passed and not
    started is "failed" (part of it is done, not all); an empty list is "error" (nothing ran that should have).
    """
    if not statuses:
        return "error"
    if all(s == "passed" for s in statuses):
        return "passed"
    if all(s == "not started" for s in statuses):
        return "not started"
    return next((s for s in ("error", "timed out") if s in statuses), "failed")
