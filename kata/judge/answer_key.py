"""Read the answer key in ``reference/``: one TOML file per chapter, one entry per worksheet step.

Everything that shows a worksheet number (tests, failure messages, hints, the docs tables) goes
through this module, so no number is typed twice.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from .. import project
from ..project import ROOT

REFERENCE = ROOT / "reference"
DEFAULT_RTOL = 1e-6
DEFAULT_ATOL = 1e-9


@dataclass(frozen=True)
class Mistake:
    """A classic mistake and the value it produces for a step."""

    name: str
    value: np.ndarray
    why: str = ""


@dataclass(frozen=True)
class Step:
    """One worksheet step: what is computed, from what, and the numbers it must give."""

    id: str
    title: str
    chapter: int
    exact: Any  # float64 or bool array; text or nested lists for non-numeric answers
    printed: Any = None  # nested lists of strings, exactly as the worksheet prints them
    source: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    hints: tuple[str, ...] = ()
    erratum: str = ""
    note: str = ""
    mistakes: tuple[Mistake, ...] = ()
    own_tolerance: bool = False  # True when the key sets rtol or atol for this step

    @property
    def anchor(self) -> str:
        """The heading anchor of this step on its chapter page, e.g. ``step-4-3``."""
        return "step-" + self.id.replace(".", "-")

    def input(self, name: str) -> Any:
        """Return input ``name`` as a float64 array (lists) or as it is stored (other values)."""
        if name not in self.inputs:
            raise KeyError(f"step {self.id} has no input {name!r}; it has {sorted(self.inputs)}")
        value = self.inputs[name]
        if isinstance(value, list) and _is_bool_tree(value):
            return np.array(value, dtype=bool)
        if isinstance(value, list) and all(_is_number_tree(v) for v in value):
            return np.array(value, dtype=np.float64)
        return value

    def printed_values(self) -> np.ndarray | None:
        """The printed numbers as floats (same shape as ``exact``), or None when nothing is printed."""
        if self.printed is None:
            return None
        return np.array(_map(self.printed, lambda s: float(s)), dtype=np.float64)

    def printed_units(self) -> np.ndarray | None:
        """One unit in the last printed digit of every printed number."""
        if self.printed is None:
            return None
        return np.array(_map(self.printed, _unit), dtype=np.float64)


@dataclass(frozen=True)
class Chapter:
    """A chapter's answer key."""

    number: int
    title: str
    module: str
    page: str
    path: Path
    source: str
    steps: tuple[Step, ...]

    def step(self, step_id: str) -> Step:
        """Return the step with id ``step_id``."""
        for s in self.steps:
            if s.id == step_id:
                return s
        raise KeyError(f"chapter {self.number} has no step {step_id!r}")

    @property
    def test_file(self) -> str:
        """The chapter's test file, relative to the repository root."""
        return f"tests/test_{self.module}.py"

    @property
    def exercise_file(self) -> str:
        """The chapter's stub file, relative to the repository root."""
        return f"exercises/{self.module}.py"


def _is_number_tree(v: Any) -> bool:
    if isinstance(v, list):
        return all(_is_number_tree(x) for x in v)
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _map(tree: Any, fn) -> Any:
    if isinstance(tree, list):
        return [_map(t, fn) for t in tree]
    return fn(tree)


def _unit(text: str) -> float:
    """One unit in the last digit of a printed decimal: '0.0498' -> 0.0001, '7.13' -> 0.01, '1' -> 1."""
    exponent = Decimal(text.strip()).as_tuple().exponent
    return float(Decimal(1).scaleb(exponent))


def _array(value: Any, where: str) -> Any:
    """Numbers become float64 arrays and booleans bool arrays.

    Anything else (text, ragged lists of examples) stays as TOML gives it and is compared for equality.
    """
    if isinstance(value, bool) or (isinstance(value, list) and _is_bool_tree(value)):
        return np.array(value, dtype=bool)
    if _is_number_tree(value):
        try:
            return np.array(value, dtype=np.float64)
        except ValueError:  # ragged
            return value
    return value


def _is_bool_tree(v: Any) -> bool:
    if isinstance(v, list):
        return len(v) > 0 and all(_is_bool_tree(x) for x in v)
    return isinstance(v, bool)


def _step(raw: dict[str, Any], chapter: int, where: str) -> Step:
    missing = {"id", "title", "exact"} - raw.keys()
    if missing:
        raise ValueError(f"{where}: step is missing {sorted(missing)}")
    sid = raw["id"]
    mistakes = tuple(
        Mistake(m["name"], _array(m["value"], f"{where} step {sid} mistake"), m.get("why", ""))
        for m in raw.get("mistakes", [])
    )
    return Step(
        id=sid,
        title=raw["title"],
        chapter=chapter,
        exact=_array(raw["exact"], f"{where} step {sid}"),
        printed=raw.get("printed"),
        source=raw.get("source", ""),
        inputs=raw.get("inputs", {}),
        rtol=float(raw.get("rtol", DEFAULT_RTOL)),
        atol=float(raw.get("atol", DEFAULT_ATOL)),
        hints=tuple(raw.get("hints", ())),
        erratum=raw.get("erratum", ""),
        note=raw.get("note", ""),
        mistakes=mistakes,
        own_tolerance="rtol" in raw or "atol" in raw,
    )


def chapter_files() -> dict[int, Path]:
    """Every answer-key file in ``reference/``, by chapter number."""
    return project.chapter_files(REFERENCE, ".toml")


@cache
def load(number: int) -> Chapter:
    """Load chapter ``number``'s answer key (e.g. ``load(4)`` reads ``reference/chapter04_*.toml``)."""
    files = chapter_files()
    if number not in files:
        raise KeyError(f"no answer key for chapter {number} in {REFERENCE}")
    path = files[number]
    with path.open("rb") as f:
        raw = tomllib.load(f)
    where = path.name
    steps = tuple(_step(s, number, where) for s in raw.get("steps", []))
    return Chapter(
        number=number,
        title=raw["title"],
        module=raw["module"],
        page=raw["page"],
        path=path,
        source=raw.get("source", ""),
        steps=steps,
    )


def chapters() -> list[Chapter]:
    """Every chapter that has an answer key, in order."""
    return [load(n) for n in chapter_files()]


def find_step(step_id: str) -> Step:
    """Find a step anywhere in the course by its id, e.g. ``"4.3"``."""
    number = int(step_id.split(".")[0])
    return load(number).step(step_id)
