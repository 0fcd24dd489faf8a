"""An answer key held to its audit: the one runner and comparison of every ``scripts/audit_chapterNN_<topic>.py``.

A Part II chapter's audit recomputes its worksheet from the formulas on the page, with plain loops, ``math`` or
small NumPy products, never with ``solutions/``; the answer key must say what the audit computes. Each audit
script defines

- ``audit() -> {step id: {"exact": value, "mistakes": {the key's mistake name: value}, ...}}``, where a step
  may also give ``"inputs"`` (``{name: value}``: then the key's inputs are exactly those, equal) and
  ``"printed"`` (the worksheet's strings, when they are not ``printed(exact)``); a step id starting with ``_``
  is the audit's own and not compared (``"_page"``, ``{row label: [printed numbers]}``, is a table the page
  gives the learner: ``tests/test_audits.py`` finds each row on the chapter's page);
- ``printed(exact)``: the worksheet's strings for an exact value (optional: else ``"printed"`` in every step;
  ``four_decimals`` below is the usual one),

and nothing else: this module loads it by its file and runs it.

    python -m kata.authoring.audit 12           # print every step: printed, exact, mistakes
    python -m kata.authoring.audit 12 --check   # compare with the answer key; exit 1 naming each difference

``tests/test_audits.py`` runs every audit's ``--check``. Numbers agree to 1e-12 (relative) or 1e-15
(absolute); anything else (ids, strings, the names of mistakes) must be equal.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import tomllib
from collections.abc import Callable
from numbers import Real
from pathlib import Path
from types import ModuleType

from .. import project

REL, ABS = 1e-12, 1e-15


def key_file(chapter: int, root: Path = project.ROOT) -> Path:
    """The answer key of a chapter: ``reference/chapterNN_<topic>.toml``."""
    found = project.chapter_files(root / "reference", ".toml")
    if chapter not in found:
        raise SystemExit(f"there is no answer key for chapter {chapter} in {root / 'reference'}")
    return found[chapter]


def plain(value):
    """A value as the key stores it: arrays and tuples as nested lists, NumPy numbers as Python's."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def same(a, b) -> bool:
    """Equal as the key must be: numbers to 1e-12 (relative) or 1e-15 (absolute), the rest exactly."""
    a, b = plain(a), plain(b)
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, Real) and isinstance(b, Real):
        return math.isclose(a, b, rel_tol=REL, abs_tol=ABS)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return sorted(a) == sorted(b) and all(same(a[k], b[k]) for k in a)
    return a == b


def compare(key: Path, audited: dict[str, dict], printed: Callable | None = None) -> list[str]:
    """Every difference between an answer key and its audit; an empty list when they agree."""
    steps = {s["id"]: s for s in tomllib.loads(key.read_text(encoding="utf-8")).get("steps", [])}
    audited = {sid: step for sid, step in audited.items() if not sid.startswith("_")}
    problems = [f"{sid}: in the key but not audited" for sid in steps if sid not in audited]
    for sid, want in audited.items():
        step = steps.get(sid)
        if step is None:
            problems.append(f"{sid}: audited but missing from the key")
            continue
        inputs = step.get("inputs", {})
        if "inputs" in want:
            problems += [f"{sid}: the key's input {name!r} is not audited" for name in inputs
                         if name not in want["inputs"]]
        for name, value in want.get("inputs", {}).items():
            if name not in inputs:
                problems.append(f"{sid}: the key has no input {name!r} (the audit uses {plain(value)!r})")
            elif not same(inputs[name], value):
                problems.append(f"{sid}: input {name!r} is {inputs[name]!r} but the audit uses {plain(value)!r}")
        if not same(step.get("exact"), want["exact"]):
            problems.append(f"{sid}: exact {step.get('exact')!r} but the audit computes {plain(want['exact'])!r}")
        shown = want["printed"] if "printed" in want or printed is None else printed(want["exact"])
        if step.get("printed") != shown:
            problems.append(printed_problem(sid, step.get("printed"), plain(shown)))
        mistakes = {m.get("name"): m.get("value") for m in step.get("mistakes", [])}
        for name, value in want["mistakes"].items():
            if name not in mistakes:
                problems.append(f"{sid}: the key lacks the mistake {name!r}")
            elif not same(mistakes[name], value):
                problems.append(f"{sid}: mistake {name!r} is {mistakes[name]!r} "
                                f"but the audit computes {plain(value)!r}")
            if same(value, want["exact"]):
                problems.append(f"{sid}: the audit's mistake {name!r} gives the right answer")
        problems += [f"{sid}: the key's mistake {name!r} is not audited" for name in mistakes
                     if name not in want["mistakes"]]
    return problems


def four_decimals(value, zeros: bool = True):
    """How most worksheets print a value, for an audit's ``printed``: whole numbers as they are, else 4 decimals.

    ``"3"``, ``"0.2500"`` (with ``zeros=False`` the trailing zeros dropped: ``"0.25"``); a list item by item.
    """
    if isinstance(value, list):
        return [four_decimals(v, zeros) for v in value]
    if value == int(value):
        return str(int(value))
    return f"{value:.4f}" if zeros else f"{value:.4f}".rstrip("0")


def printed_problem(sid: str, said, shown) -> str:
    """The line naming a key's ``printed`` that is not the audit's; when only the nesting differs, what to write.

    ``printed`` has the shape of ``exact``: a bare string for a single number (``printed = "1.0397"``), a list
    of strings (nested as ``exact``) for an array; ``["1.0397"]`` for a single number is a list of one.
    """
    line = f"{sid}: printed {said!r} but the audit prints {shown!r}"
    if said is not None and shown is not None and _flat(said) == _flat(shown):
        line += (f": the same strings, nested differently; printed has the shape of exact (a bare string for a "
                 f"single number, a list nested as exact for an array): write printed = "
                 f"{json.dumps(shown, ensure_ascii=False)}")
    return line


def _flat(value) -> list:
    return [x for v in value for x in _flat(v)] if isinstance(value, list) else [value]


def script(chapter: int, root: Path = project.ROOT) -> ModuleType:
    """A chapter's audit, ``scripts/audit_chapterNN_<topic>.py``, loaded by its file; a missing one is named."""
    found = project.chapter_files(root / "scripts", prefix="audit_")
    if chapter not in found:
        have = ", ".join(str(n) for n in found) or "none"
        raise SystemExit(f"there is no audit of chapter {chapter} in {root / 'scripts'} (audits: {have})")
    spec = importlib.util.spec_from_file_location(found[chapter].stem, found[chapter])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not callable(getattr(module, "audit", None)):
        raise SystemExit(f"{found[chapter].name} defines no audit() (see kata/authoring/audit.py)")
    return module


def main(argv: list[str] | None = None) -> int:
    """Print every step of a chapter's audit, or (``--check``) compare the key with it: 0 when they agree, else 1."""
    p = argparse.ArgumentParser(prog="python -m kata.authoring.audit", description=__doc__.splitlines()[0])
    p.add_argument("chapter", type=int, help="the chapter whose scripts/audit_chapterNN_<topic>.py to run")
    p.add_argument("--check", action="store_true", help="compare with the answer key; exit 1 naming each difference")
    args = p.parse_args(argv)
    module = script(args.chapter)
    audit, printed = module.audit, getattr(module, "printed", None)
    if args.check:  # printing needs no key: the audit comes first, the key is written from what it prints
        key = key_file(args.chapter)
        problems = compare(key, audit(), printed)
        print("\n".join(problems) or f"{key.name}: every value agrees with the audit")
        return 1 if problems else 0
    for sid, step in audit().items():
        print(f"[{sid}]")
        if not sid.startswith("_"):
            print(f"printed = {step['printed'] if 'printed' in step or printed is None else printed(step['exact'])!r}")
        for name, value in step.items():
            if name in ("printed", "mistakes", "inputs"):
                continue
            print(f"{name} = {plain(value)!r}")
        for name, value in step.get("inputs", {}).items():
            print(f"  input {name} = {plain(value)!r}")
        for name, value in step.get("mistakes", {}).items():
            print(f"  mistake {name!r}: {plain(value)!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
