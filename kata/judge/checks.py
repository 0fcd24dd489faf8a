"""Comparisons that teach.

Every failure names the step, the inputs, the exact and printed values, what came back, the tolerance (none
for whole numbers and booleans, which are compared exactly), a hint, and the classic mistake the result looks like.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from .answer_key import DEFAULT_ATOL, DEFAULT_RTOL, Step, load


@dataclass(frozen=True)
class RunSettings:
    """How one run judges, from its options: built once from the pytest config (``plugin.settings``).

    Handed to the code that needs it, never set on a module, so two runs in one process (pytester, a warm
    judge's forks) each keep their own: ``expect`` reads it from the step the ``ws`` fixture gives
    (``Step.settings``), ``snapshots.load`` takes its ``fresh_seed`` as its ``seed``.
    """

    # `--strict-exact` (the suite's own check that the key's exact values are stored to full float64 precision):
    # worksheet steps without a tolerance of their own are compared at rtol 1e-12.
    strict_exact: bool = False
    # `--kata-seed N`: the snapshots' inputs drawn afresh where the reference is at hand (``snapshots.load``).
    fresh_seed: int | None = None
    # `--kata-record-values` (``nox -s worksheet``): ``expect`` keeps the value each worksheet step gave here, by
    # step id, as JSON-ready data (``kata/judge/runner.py`` sends it with the step's result).
    recorded: dict[str, Any] | None = field(default=None, compare=False)


def _fmt(v: Any) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return f"{float(v):.10g}"


def show(value: Any) -> str:
    """Format a value for a failure message: arrays on one line, numbers to 10 significant digits.

    A large array shows its shape and first values only, so a huge answer costs no time to report.
    """
    if isinstance(value, (np.ndarray, list, tuple, float, int, np.floating, np.integer)):
        try:
            arr = np.asarray(value)
        except ValueError:  # ragged
            return _clip(repr(value))
        if arr.dtype.kind in "fiub":
            if arr.size > SHOW_AT_MOST:
                first = _fmt(arr.reshape(-1)[:12].tolist()).rstrip("]")
                return f"array of shape {arr.shape}, {arr.size} values: {first}, …]"
            return _fmt(arr.tolist())
    return _clip(repr(value))


SHOW_AT_MOST = 400  # values in a failure message


def _as_typed(value: Any) -> str:
    """A number as its type prints it (``21.0`` for a float, not ``21``): for messages about the type."""
    if isinstance(value, float | np.floating) or (isinstance(value, np.ndarray) and value.ndim == 0
                                                   and value.dtype.kind == "f"):
        return repr(float(value))
    return show(value)


def input_lines(inputs: dict[str, Any], fmt) -> list[str]:
    """A failure's "input" lines: a dict or a list of dicts (a model, a block's params) an entry a line, whole.

    Written on one line, a model's repr is cut after 600 characters, in the middle of its first weight.
    """
    def spread(name: str, value: Any):
        if isinstance(value, dict):
            for key, entry in value.items():
                yield from spread(f'{name}["{key}"]' if isinstance(key, str) else f"{name}[{key!r}]", entry)
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, dict) for v in value):
            for i, entry in enumerate(value):
                yield from spread(f"{name}[{i}]", entry)
        else:
            yield f"  input     {name} = {fmt(value)}"

    return [line for name, value in inputs.items() for line in spread(name, value)]


def _clip(text: str, limit: int = 600) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more characters)"


def _printed(printed: Any) -> str:
    if isinstance(printed, list):
        return "[" + ", ".join(_printed(p) for p in printed) + "]"
    return str(printed)


def _whole(got: np.ndarray, want: np.ndarray) -> bool:
    """Whole numbers given for whole numbers (a count, a token id, chapter 14's pairs): compared exactly.

    ``got`` holds ints (a list of ints, an int array) and ``want`` only whole values: no tolerance applies, so
    a failure shows none.
    """
    return (got.dtype.kind in "iu" and want.dtype.kind in "iuf"
            and bool(np.all(np.isfinite(want))) and bool(np.all(want == np.round(want))))


def _matches(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> bool:
    if got.shape != want.shape:
        return False
    if _whole(got, want):
        return bool(np.array_equal(got, want))
    if want.dtype == bool or got.dtype == bool:
        return got.dtype == want.dtype and bool(np.array_equal(got, want))
    if not np.all(np.isfinite(got)):
        return False
    return bool(np.allclose(got, want, rtol=rtol, atol=atol))


def _as_array(got: Any) -> np.ndarray:
    try:
        arr = np.asarray(got)
    except ValueError as err:  # ragged nesting
        pytest.fail(f"the result is not an array of numbers: {_clip(repr(got))} ({err})", pytrace=False)
    if arr.dtype == object:
        pytest.fail(f"the result is not an array of numbers: {_clip(repr(got))}", pytrace=False)
    return arr


KINDS = ("array", "float", "int")


def _type_name(value: Any) -> str:
    """What came back, in words a learner recognises: ``list``, ``numpy.float32``, a NumPy array and its shape."""
    if isinstance(value, np.ndarray):
        return f"a NumPy array of shape {value.shape}, dtype {value.dtype}"
    if isinstance(value, np.generic):
        return f"numpy.{type(value).__name__}"
    return type(value).__name__


def returned(got: Any, kind: str | None, what: str = "the result") -> Any:
    """Check that ``got`` is of the kind the docstring promises; return it (a float as a Python float).

    - ``"array"``: a NumPy array. A Python list (or tuple, or number) fails, saying "expected a NumPy array,
      got list": the docstring says an array, and later code indexes, reshapes and multiplies it as one.
    - ``"float"``: one real number. A Python float, any NumPy float (``np.float32`` too), a NumPy integer or
      int, or a 0-d array holding one is accepted and compared by value; anything else (a list, a
      1-element array, a bool, None) fails, saying what was expected and what came back.
    - ``"int"``: a whole number, a Python or NumPy int (not a bool, not a float such as 21.0).
    - ``None``: no requirement.
    """
    if kind is None:
        return got
    if kind == "array":
        if not isinstance(got, np.ndarray):
            pytest.fail(f"{what}: expected a NumPy array, got {_type_name(got)}: {show(got)}\n"
                        f"  the docstring promises a NumPy array, not a Python {type(got).__name__}", pytrace=False)
        return got
    if kind == "int":
        if not isinstance(got, (int, np.integer)) or isinstance(got, (bool, np.bool_)):
            pytest.fail(f"{what}: expected a whole number (an int), got {_type_name(got)}: {_as_typed(got)}\n"
                        "  the docstring promises an int: count with whole numbers (// divides without a "
                        "remainder, / gives a float)", pytrace=False)
        return int(got)
    if kind == "float":
        number = isinstance(got, (float, int, np.floating, np.integer)) and not isinstance(got, (bool, np.bool_))
        zero_d = isinstance(got, np.ndarray) and got.ndim == 0 and got.dtype.kind in "fiu"
        if not (number or zero_d):
            pytest.fail(f"{what}: expected a float (one number), got {_type_name(got)}: {show(got)}\n"
                        "  the docstring promises a float: one number, not a container of one", pytrace=False)
        return float(got)
    raise ValueError(f"kind must be one of {KINDS} or None, got {kind!r}")


def looks_like(got: np.ndarray, mistakes: Iterable[tuple[str, Any]], rtol: float, atol: float) -> str | None:
    """Name the first known mistake whose value ``got`` matches, if any."""
    for name, value in mistakes:
        want = np.asarray(value)
        if _matches(got, want, max(rtol, 1e-9), max(atol, 1e-12)):
            return name
    return None


def _recordable(value: Any) -> Any:
    """``value`` as JSON-ready data (arrays as nested lists), or its repr when it has no such form."""
    def plain(v: Any) -> Any:
        tolist = getattr(v, "tolist", None)
        if tolist is not None:
            return tolist()
        raise TypeError(type(v).__name__)

    try:
        return json.loads(json.dumps(value, default=plain))
    except (TypeError, ValueError):
        return repr(value)


def expect(step: Step, got: Any, *, mistakes: Iterable[tuple[str, Any]] = (), inputs: dict[str, Any] | None = None,
           derived: dict[str, Any] | None = None, kind: str | None = None) -> None:
    """Check ``got`` against the answer key's exact value for ``step``; fail with a teaching message.

    Args:
        step: the worksheet step (from ``reference/``).
        got: what the implementation returned for the step's inputs.
        mistakes: extra (name, value) pairs, computed in the test, for mistakes the key does not list.
        inputs: the inputs to show, when they are not the step's own ``inputs``.
        derived: values shown after the inputs, labelled "derived", not "input": what the test worked out
            from the implementation's own results (a number read back from them, say) before comparing.
        kind: what the docstring promises ``got`` is, checked first: ``"array"``, ``"float"`` or ``"int"``
            (see ``returned``); None for no requirement.
    """
    settings = step.settings or RunSettings()
    if settings.recorded is not None:
        settings.recorded[step.id] = _recordable(got)
    got = returned(got, kind, f"{step.id} {step.title}")
    if not isinstance(step.exact, np.ndarray):
        _expect_equal(step, got, inputs, derived)
        return
    arr = _as_array(got)
    rtol, atol = step.rtol, step.atol
    if settings.strict_exact and not step.own_tolerance:
        rtol, atol = 1e-12, 1e-15
    if _matches(arr, step.exact, rtol, atol):
        return
    known = [(m.name, m.value) for m in step.mistakes] + list(mistakes)
    lines = [f"{step.id} {step.title}"]
    lines += input_lines(step.inputs if inputs is None else inputs, show)
    for name, value in (derived or {}).items():
        lines.append(f"  derived   {name} = {show(value)}")
    # a count or a distance, or whole numbers given for whole numbers (chapter 14's token ids): no float64
    # label, and no tolerance, since they were compared exactly
    whole = step.exact.dtype != bool and _whole(arr, step.exact)
    number = "  (a whole number)" if step.exact.ndim == 0 else "  (whole numbers)"
    label = "" if step.exact.dtype == bool else number if whole else "  (exact float64)"
    lines.append(f"  expected  {show(step.exact)}{label}")
    if step.printed is not None:
        printed = f"  worksheet {_printed(step.printed)}"
        lines.append(printed)
        if step.erratum:
            first = step.erratum.split(". ")[0].rstrip(".")
            lines.append(f"  erratum   the printed value is off: {first}. (Errata on the chapter's page.)")
    lines.append(_got(got, arr, step.exact))
    if step.exact.dtype == bool:
        if arr.dtype != bool:
            lines.append(f"  note      expected booleans (dtype bool), got dtype {arr.dtype}")
    elif not whole:
        lines.append(f"  tolerance rtol {rtol:g}, atol {atol:g}")
    mistake = looks_like(arr, known, step.rtol, step.atol)
    if mistake:
        why = next((m.why for m in step.mistakes if m.name == mistake and m.why), "")
        lines.append(f"  looks like: {mistake}" + (f" — {why}" if why else ""))
    lines += footer(step)
    pytest.fail("\n".join(lines), pytrace=False)


def _got(got: Any, arr: np.ndarray, want: np.ndarray) -> str:
    """The "got" line of a failure: the size first when it is not the expected one.

    An array's size is its shape; a list's (or tuple's) is said in plain words, "got 13 items, expected 14",
    since a learner who returned a list never asked NumPy for a shape.
    """
    if arr.shape == want.shape:
        return f"  got       {show(arr)}"
    if isinstance(got, (list, tuple)) and arr.ndim >= 1 and want.ndim >= 1:
        return f"  got       {_items(arr.shape)}, expected {_items(want.shape)}: {show(arr)}"
    return f"  got       shape {arr.shape}, expected shape {want.shape}: {show(arr)}"


def _items(shape: tuple[int, ...]) -> str:
    """A list's size in words: ``(13,)`` is "13 items", ``(4, 3)`` "4 items of 3" (of 2 × 3 for deeper lists)."""
    first = f"{shape[0]} item{'' if shape[0] == 1 else 's'}"
    return first if len(shape) == 1 else f"{first} of {' × '.join(str(n) for n in shape[1:])}"


def plain(value: Any) -> Any:
    """Tuples to lists, NumPy scalars and arrays to Python values: for comparing structured answers."""
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


DOCS = "  docs      "  # how a failing step's last line starts: its page and anchor
BEYOND = "(the test's expected value)"  # how `close` marks its expected value: a case other than the worksheet's
OTHER_CASE = "  hint      the step's hints work the worksheet's own case, not the inputs above"


def footer(step: Step, said: Iterable[str] = ()) -> list[str]:
    """A failing step's last lines: its first hint, how to get the others, and its section of the page.

    `expect` ends with them; the judge adds them to every other failing step (a `close` check, a failure a
    chapter test wrote itself: a mistake the key cannot name, a warning, a wrong type), so that every failing
    step ends the same way. The notebook
    rewrites the hint command as its own. ``said``: the failure's lines so far; when they hold a `close` check
    (inputs other than the worksheet's, marked ``BEYOND``), the first hint, a nudge about the worksheet's own
    numbers, would not fit the case shown: the footer says so instead of printing it.
    """
    more = [f"            more hints: nox -s hint -- {step.id}"] if len(step.hints) > 1 else []
    other = any(BEYOND in line for line in said)
    first = [OTHER_CASE if other else f"  hint      {step.hints[0]}", *more] if step.hints else []
    return [*first, f"{DOCS}{load(step.chapter).page}#{step.anchor}"]


def _expect_equal(step: Step, got: Any, inputs: dict[str, Any] | None, derived: dict[str, Any] | None) -> None:
    if plain(got) == step.exact:
        return
    lines = [f"{step.id} {step.title}"]
    lines += input_lines(step.inputs if inputs is None else inputs, repr)
    for name, value in (derived or {}).items():
        lines.append(f"  derived   {name} = {value!r}")
    lines.append(f"  expected  {step.exact!r}")
    lines.append(f"  got       {_clip(repr(plain(got)))}")
    mistake = next((m for m in step.mistakes if plain(m.value) == plain(got)), None)
    if mistake:
        lines.append(f"  looks like: {mistake.name}" + (f" — {mistake.why}" if mistake.why else ""))
    lines += footer(step)
    pytest.fail("\n".join(lines), pytrace=False)


def close(got: Any, want: Any, what: str, *, rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL,
          mistakes: Iterable[tuple[str, Any]] = (), inputs: dict[str, Any] | None = None,
          kind: str | None = None) -> None:
    """Check a result beyond the worksheet against an oracle computed in the test.

    ``kind`` (``"array"``, ``"float"`` or ``"int"``) is what the docstring promises ``got`` is, checked first
    (see ``returned``).
    """
    got = returned(got, kind, what)
    arr = _as_array(got)
    want_arr = np.asarray(want)
    if _matches(arr, want_arr, rtol, atol):
        return
    lines = [what]
    lines += input_lines(inputs or {}, show)
    lines.append(f"  expected  {show(want_arr)}  {BEYOND}")
    lines.append(_got(got, arr, want_arr))
    if want_arr.dtype != bool and not _whole(arr, want_arr):  # whole numbers and booleans compare exactly
        lines.append(f"  tolerance rtol {rtol:g}, atol {atol:g}")
    mistake = looks_like(arr, mistakes, rtol, atol)
    if mistake:
        lines.append(f"  looks like: {mistake}")
    pytest.fail("\n".join(lines), pytrace=False)


def _names(error: type[BaseException] | tuple[type[BaseException], ...]) -> str:
    return error.__name__ if isinstance(error, type) else " or ".join(e.__name__ for e in error)


def raises_clearly(
    fn: Callable[[], Any], error: type[BaseException] | tuple[type[BaseException], ...], *words: str,
    hint: str = "", names: tuple[str, ...] = (),
) -> None:
    """Check that ``fn()`` raises ``error`` with a message that names every one of ``words``.

    ``words`` are found in any case, anywhere; ``names`` (identifiers such as ``A``, ``dC``, ``W1``) must appear
    as whole words, exactly as written. A stub's NotImplementedError passes through untouched, so the test
    shows as "not started". ``hint``, when given, is added to a failure: what the code most likely got wrong.
    """
    tail = f"\n  hint      {hint}" if hint else ""
    try:
        result = fn()
    except NotImplementedError:
        raise
    except error as err:
        if type(err).__module__ == "kata.judge.proxy":  # the call did not return or ended its process: say so
            raise
        message = str(err)
        missing = [w for w in words if w.lower() not in message.lower()]
        missing += [n for n in names if not re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", message)]
        if missing:
            frames = getattr(err, "frames", None) or []
            inner = frames[-1] if frames else None
            origin = ""
            if inner and not str(inner.get("source", "")).lstrip().startswith("raise"):
                # not a raise of the learner's: NumPy (or Python) raised it inside this line of their code
                origin = (f"\n  where     raised inside {inner['file']}:{inner['line']} in {inner['function']}: "
                          f"{inner['source']}\n            not by a check of yours: test the input first and raise "
                          f"{type(err).__name__} with a message naming {', '.join(repr(w) for w in missing)}")
            pytest.fail(f"the error is right ({type(err).__name__}) but its message does not name "
                        f"{', '.join(repr(w) for w in missing)}: {message!r}{origin}{tail}", pytrace=False)
        return
    except Exception as err:  # noqa: BLE001 - we report what came instead
        if type(err).__module__ == "kata.judge.proxy":  # timed out, crashed, changed its input: that, not this
            raise
        frames = getattr(err, "frames", None) or []
        where = (f"\n  where     raised at {frames[-1]['file']}:{frames[-1]['line']} in {frames[-1]['function']}: "
                 f"{frames[-1]['source']}\n            test that input first and raise {_names(error)} naming it"
                 if frames else "")
        pytest.fail(f"expected {_names(error)}, got {type(err).__name__}: {err}{where}{tail}", pytrace=False)
    pytest.fail(f"expected {_names(error)}, but the call returned {show(result)} — bad input must not pass "
                f"silently{tail}", pytrace=False)
