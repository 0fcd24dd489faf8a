"""``nox -s hint -- 4.3``: the next hint for a step, one layer at a time (nudge → formula → worked numbers).

The hints are the answer key's (``reference/``), the same ones the docs fold away. Which layers you
have seen is remembered in ``.kata/hints.json`` (not in git); ``--all`` prints every layer at once,
``--reset`` forgets what you have seen, and ``nox -s hint -- 4`` lists a chapter's steps.
"""

from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path

from .. import project

LAYERS = ("nudge", "formula", "worked numbers")
STATE = project.ROOT / ".kata" / "hints.json"


def parser() -> argparse.ArgumentParser:
    """The command line of ``nox -s hint -- ...``."""
    p = argparse.ArgumentParser(prog="nox -s hint --", description="Print the next hint layer for a step.")
    p.add_argument("step", help="a step id such as 4.3, or a chapter number such as 4 to list its steps")
    p.add_argument("--all", action="store_true", help="print every layer of the step's hints")
    p.add_argument("--reset", action="store_true", help="forget which layers you have seen (this step)")
    return p


def load_state(path: Path | None = None) -> dict[str, int]:
    """How many layers of each step have been shown."""
    path = path or STATE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    return {k: int(v) for k, v in data.items() if isinstance(v, int)}


def save_state(state: dict[str, int], path: Path | None = None) -> None:
    """Remember how many layers of each step have been shown."""
    path = path or STATE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(state, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def find(step_id: str):
    """The answer key's step, or a SystemExit listing the steps there are."""
    number = project.parse_chapter(step_id.split(".")[0])
    chapter = project.chapter(number)
    for step in chapter.steps:
        if step.id == step_id:
            return chapter, step
    ids = ", ".join(s.id for s in chapter.steps)
    raise SystemExit(f"chapter {number} has no step {step_id!r}; its steps are {ids}")


def layer_text(step, index: int) -> str:
    """One hint layer, labelled and wrapped."""
    name = LAYERS[index] if index < len(LAYERS) else f"hint {index + 1}"
    body = textwrap.fill(step.hints[index], width=96, initial_indent="  ", subsequent_indent="  ")
    return f"hint {index + 1} of {len(step.hints)} ({name}):\n{body}"


def main(argv: list[str] | None = None) -> int:
    """Print the next layer (or all of them); return 0."""
    args = parser().parse_args(argv)
    if "." not in args.step:
        chapter = project.chapter(project.parse_chapter(args.step))
        seen = load_state()
        print(f"chapter {chapter.number}: {chapter.title}. Hints per step (shown so far / layers):")
        for step in chapter.steps:
            print(f"  {step.id:<6} {step.title}  ({min(seen.get(step.id, 0), len(step.hints))}/{len(step.hints)})")
        print(f"next hint for a step: nox -s hint -- {chapter.steps[0].id if chapter.steps else f'{chapter.number}.1'}")
        return 0
    chapter, step = find(args.step)
    state = load_state()
    if args.reset:
        state.pop(step.id, None)
        save_state(state)
        print(f"forgot the hints you had seen for step {step.id}.")
        return 0
    print(f"step {step.id} {step.title}  (chapter {chapter.number}: {chapter.title})")
    print(f"docs: {chapter.page}#{step.anchor}")
    if not step.hints:
        print("this step has no hints in the answer key.")
        return 0
    if args.all:
        for i in range(len(step.hints)):
            print()
            print(layer_text(step, i))
        state[step.id] = len(step.hints)
        save_state(state)
        return 0
    shown = state.get(step.id, 0)
    index = min(shown, len(step.hints) - 1)
    print()
    print(layer_text(step, index))
    print()
    if index + 1 < len(step.hints):
        following = LAYERS[index + 1] if index + 1 < len(LAYERS) else "the next hint"
        print(f"stuck still? run it again for the {following}; every layer at once: nox -s hint -- {step.id} --all")
    else:
        print(f"that was the last layer. Start over with: nox -s hint -- {step.id} --reset")
    state[step.id] = index + 1
    save_state(state)
    return 0
