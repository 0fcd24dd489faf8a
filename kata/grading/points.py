"""The instructor's grading settings, read from ``grading.toml`` at the repository root.

Every key is optional; without the file each worksheet step and each check beyond the worksheet is
worth one point. See ``docs/instructors.md`` for the file with every key explained.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_TIMEOUT = 2.0  # seconds one call of a learner's function may take
DEFAULT_BUDGET = 60.0  # seconds for a whole repository


@dataclass(frozen=True)
class Points:
    """How many points each gradable unit is worth, and how long one test may run."""

    timeout: float = DEFAULT_TIMEOUT
    budget: float = DEFAULT_BUDGET
    step: float = 1.0
    check: float = 1.0
    partial_credit: bool = False
    chapters: dict[int, float] = field(default_factory=dict)  # chapter -> its total, scaled to
    steps: dict[str, float] = field(default_factory=dict)  # "4.3" -> points
    checks: dict[str, float] = field(default_factory=dict)  # "4:test_name" or "test_name" -> points
    source: str = "defaults (no grading.toml)"

    def unit(self, chapter: int, kind: str, unit_id: str) -> float:
        """Points for one step (``kind == "step"``, id ``4.3``) or check (id ``4:test_name``)."""
        if kind == "step":
            return float(self.steps.get(unit_id, self.step))
        name = unit_id.split(":", 1)[-1]
        return float(self.checks.get(unit_id, self.checks.get(name, self.check)))


KNOWN = {
    "grade": {"timeout", "budget", "step_points", "check_points", "partial_credit"},
    "chapters": None,
    "steps": None,
    "checks": None,
}


def load(path: Path) -> Points:
    """Read ``grading.toml``; unknown keys and non-numbers are errors, so a typo never grades silently.

    Args:
        path: the settings file; when it does not exist every default applies.

    Returns:
        The settings.

    Raises:
        ValueError: the file has a key this tool does not know or a value of the wrong kind.
    """
    if not path.exists():
        return Points()
    with path.open("rb") as f:
        raw = tomllib.load(f)
    unknown = set(raw) - set(KNOWN)
    if unknown:
        raise ValueError(f"{path.name}: unknown table(s) {sorted(unknown)}; known: {sorted(KNOWN)}")
    grade = raw.get("grade", {})
    unknown = set(grade) - KNOWN["grade"]
    if unknown:
        raise ValueError(f"{path.name}: unknown key(s) in [grade]: {sorted(unknown)}; known: {sorted(KNOWN['grade'])}")

    def number(value, where: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"{path.name}: {where} must be a number ≥ 0, got {value!r}")
        return float(value)

    partial = grade.get("partial_credit", False)
    if not isinstance(partial, bool):
        raise ValueError(f"{path.name}: [grade] partial_credit must be true or false, got {partial!r}")
    chapters = {}
    for key, value in raw.get("chapters", {}).items():
        if not str(key).isdigit():
            raise ValueError(f"{path.name}: [chapters] keys are chapter numbers, got {key!r}")
        chapters[int(key)] = number(value, f"[chapters] {key}")
    timeout = number(grade.get("timeout", DEFAULT_TIMEOUT), "[grade] timeout")
    if timeout <= 0:
        raise ValueError(f"{path.name}: [grade] timeout must be more than 0 seconds")
    return Points(
        timeout=timeout,
        budget=number(grade.get("budget", DEFAULT_BUDGET), "[grade] budget") or DEFAULT_BUDGET,
        step=number(grade.get("step_points", 1), "[grade] step_points"),
        check=number(grade.get("check_points", 1), "[grade] check_points"),
        partial_credit=partial,
        chapters=chapters,
        steps={str(k): number(v, f"[steps] {k}") for k, v in raw.get("steps", {}).items()},
        checks={str(k): number(v, f"[checks] {k}") for k, v in raw.get("checks", {}).items()},
        source=path.name,
    )
