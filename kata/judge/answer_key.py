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
REQUIRED = ("chapter", "title", "module", "page")  # the key's top level (``source`` is optional)
REQUIRED_STEP = ("id", "title", "exact")  # every [[steps]] table (and ``hints``, exactly three)
HINT_LAYERS = 3  # nudge, formula, worked numbers


class AnswerKeyError(ValueError):
    """A malformed answer key, said in one line naming the file and the step.

    E.g. ``reference/chapter05_forward_pass.toml, step 5.3: no `exact```. The plugin turns it into pytest's
    one-line ``ERROR:`` instead of a traceback per test.
    """


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
    # how this run judges the step (``checks.RunSettings``): set by the ``ws`` fixture, None for the defaults
    settings: Any = field(default=None, compare=False, repr=False)

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
        return None if self.printed is None else np.array(_map(self.printed, float), dtype=np.float64)

    def printed_units(self) -> np.ndarray | None:
        """One unit in the last printed digit of every printed number."""
        return None if self.printed is None else np.array(_map(self.printed, _unit), dtype=np.float64)


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


def _where(path: Path) -> str:
    """A key's path as an author types it: relative to the repository when it is inside it."""
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:  # a key outside the course: in reference/ it is still reference/<name>
        return f"reference/{path.name}" if path.parent.name == "reference" else str(path)


def _step(raw: Any, chapter: int, where: str, index: int) -> Step:
    if not isinstance(raw, dict):
        raise AnswerKeyError(f"{where}, [[steps]] table {index}: not a table")
    sid = raw.get("id")
    if not isinstance(sid, str) or not sid.strip():
        raise AnswerKeyError(f'{where}, [[steps]] table {index}: no `id` (a string such as "{chapter}.{index}")')
    here = f"{where}, step {sid}"
    for name in REQUIRED_STEP[1:]:
        if name not in raw:
            raise AnswerKeyError(f"{here}: no `{name}`")
    hints = raw.get("hints")
    if (not isinstance(hints, list) or len(hints) != HINT_LAYERS
            or not all(isinstance(h, str) and h.strip() for h in hints)):
        found = f"{len(hints)} hint(s)" if isinstance(hints, list) else "no `hints`"
        raise AnswerKeyError(f"{here}: {found}; every step needs exactly three non-empty `hints` "
                             "(nudge, formula, worked numbers)")
    mistakes = []
    for k, m in enumerate(raw.get("mistakes", []), start=1):
        for name in ("name", "value"):
            if not isinstance(m, dict) or name not in m:
                raise AnswerKeyError(f"{here}, [[steps.mistakes]] {k}: no `{name}`")
        mistakes.append(Mistake(m["name"], _array(m["value"], f"{here} mistake"), m.get("why", "")))
    return Step(id=sid, title=raw["title"], chapter=chapter, exact=_array(raw["exact"], here),
                printed=raw.get("printed"), source=raw.get("source", ""), inputs=raw.get("inputs", {}),
                rtol=float(raw.get("rtol", DEFAULT_RTOL)), atol=float(raw.get("atol", DEFAULT_ATOL)),
                hints=tuple(hints), erratum=raw.get("erratum", ""), note=raw.get("note", ""),
                mistakes=tuple(mistakes), own_tolerance="rtol" in raw or "atol" in raw)


def read(path: Path, number: int | None = None) -> Chapter:
    """Read one answer-key file; a malformed one raises ``AnswerKeyError`` naming the file and the step."""
    where = _where(path)
    if number is None:
        number = project.chapter_number(path)
        if number is None:
            raise AnswerKeyError(f"{where}: an answer key is named reference/chapterNN_<topic>.toml")
    try:
        with path.open("rb") as f:
            raw = tomllib.load(f)
    except tomllib.TOMLDecodeError as err:
        raise AnswerKeyError(f"{where}: not valid TOML: {err}") from None
    for name in REQUIRED:
        if name not in raw:
            raise AnswerKeyError(f"{where}: no `{name}` at the top level (a key needs {', '.join(REQUIRED)})")
    if raw["chapter"] != number:
        raise AnswerKeyError(f"{where}: `chapter = {raw['chapter']!r}`, but the file is chapter {number}'s")
    steps = tuple(_step(s, number, where, i) for i, s in enumerate(raw.get("steps", []), start=1))
    return Chapter(number=number, title=raw["title"], module=raw["module"], page=raw["page"], path=path,
                   source=raw.get("source", ""), steps=steps)


def chapter_files() -> dict[int, Path]:
    """Every answer-key file in ``reference/``, by chapter number."""
    return project.chapter_files(REFERENCE, ".toml")


@cache
def load(number: int) -> Chapter:
    """Load chapter ``number``'s answer key (e.g. ``load(4)`` reads ``reference/chapter04_*.toml``)."""
    files = chapter_files()
    if number not in files:
        raise KeyError(f"no answer key for chapter {number} in {REFERENCE}")
    return read(files[number], number)


def chapters() -> list[Chapter]:
    """Every chapter that has an answer key, in order."""
    return [load(n) for n in chapter_files()]


