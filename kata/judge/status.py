"""The results' vocabulary, and the one rule that folds several results into one.

A check with several cases, a step with several tests, a chapter with several steps: the learner's screen
(``plugin.chapter_view``) and the grade (``grading/grade.py``) fold them with ``folded``, so the two never
disagree (``tests/tools/judge/test_status.py`` checks every combination).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..project import chapter_number

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


def function_status(results: Iterable[tuple[str, Iterable[str]]]) -> dict[str, str]:
    """Each learner function the tests called: 'passes', 'fails' (one of its tests did) or 'not started'.

    ``results``: (status, the ``module.function`` names the test called) of every test.
    """
    status: dict[str, str] = {}
    for said, functions in results:
        for name in functions:
            if said == "not started":
                status.setdefault(name, "not started")
            elif said != "passed":
                status[name] = "fails"
            elif status.get(name) != "fails":
                status[name] = "passes"
    return status


def blame(uses: dict[str, str], known: dict[str, str]) -> str:
    """The note for a chapter whose code uses an earlier chapter's function that fails its own checks.

    ``uses``: function -> the earlier chapter module it comes from; ``known``: ``module.function`` -> its status
    (``function_status``). The learner's screen and the grade both say it this way.
    """
    notes = []
    for name, module in sorted(uses.items()):
        how = {"fails": "fails its own checks", "not started": "is not started"}.get(known.get(f"{module}.{name}"))
        earlier = chapter_number(module)
        if how and earlier is not None:
            notes.append(f"this chapter's code calls {name} (chapter {earlier}), which {how} — "
                         f"fix chapter {earlier} first: nox -s chapter{earlier}")
    return "".join(f"\n  note      {n}" for n in notes[:3])
