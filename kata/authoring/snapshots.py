"""Write the chapters' snapshots from solutions/: ``python -m kata.authoring.snapshots [N ...] [--check]``.

Authors only (the student edition has neither this file, nor the builders, nor solutions/). A chapter's builder is
its own file, found by its number: ``build(seed=None)`` of ``tests/snapshots/chapterNN.py`` draws seeded inputs,
runs the reference implementation on them and returns inputs, results, central-difference gradients and the
values of classic mistakes (so a failure can still say "looks like: ..."), which this module writes to
``tests/snapshots/chapterNN.npz`` beside it (``kata/judge/snapshots.py`` reads it). Every chapter that has a
builder file is built: there is no list to edit. ``--check`` (and ``tests/test_snapshots.py``) fails when a stored
file is not what its builder makes today.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import numpy as np

from kata.judge import snapshots
from kata.judge.gradient import numerical_gradient
from kata.judge.snapshots import copy_tree, flatten, leaves


# -- helpers --------------------------------------------------------------------------------------------
class Store(dict):
    """What a builder returns, ``{path: array}`` (what ``kata.judge.snapshots`` reads), with its rng and ``put``.

    ``rng`` is seeded with the builder's own number (404 for chapter 4) unless a ``seed`` is given (the suite
    builds with other seeds to show the tests do not depend on one draw). ``put("forward/0", ids=ids,
    params={...})`` stores each value, a tree of dicts and lists flattened, under ``forward/0/<name>/...``.
    """

    def __init__(self, number: int, seed: int | None):
        super().__init__()
        self.rng = np.random.default_rng(number if seed is None else seed)

    def put(self, prefix: str, **values) -> None:
        """Store each value under ``<prefix>/<name>``."""
        for name, value in values.items():
            self.update(flatten(value, f"{prefix}/{name}"))


def tree_gradients(loss: Callable[[dict], float], params) -> list[tuple[str, np.ndarray]]:
    """Central differences of ``loss(params)`` for every leaf, as (path, gradient)."""
    out = []
    for path, leaf in leaves(params):
        def f(v, leaf=leaf):
            saved = leaf.copy()
            leaf[...] = v
            try:
                return loss(params)
            finally:
                leaf[...] = saved
        out.append((path, numerical_gradient(f, leaf)))
    return out


def unpath(grads: list[tuple[str, np.ndarray]], like):
    """Gradients given by path, as a tree shaped like ``like``."""
    tree = copy_tree(like)
    for path, g in grads:
        target = eval("tree" + path, {"tree": tree})  # noqa: S307 - paths made by `leaves`
        target[...] = g
    return tree


# -- the builders, found by their files ------------------------------------------------------------------
def chapters() -> list[int]:
    """The chapters that have a snapshot builder, ``tests/snapshots/chapterNN.py``, in order."""
    return sorted(int(f.stem[len("chapter"):]) for f in snapshots.FOLDER.glob("chapter[0-9][0-9].py"))


def build(chapter: int, seed: int | None = None) -> dict[str, np.ndarray]:
    """The snapshot of one chapter, as {key: array}: the stored one, or fresh inputs drawn from ``seed``.

    The instructor's grade (``--seed``, with solutions/ at hand) draws fresh inputs for every run, so
    nothing a learner can read in the student edition predicts them.
    """
    builder = snapshots.builder(chapter)
    if builder is None:
        have = ", ".join(str(n) for n in chapters()) or "none"
        raise SystemExit(f"there is no snapshot builder {snapshots.builder_file(chapter)} (builders: {have})")
    return builder(seed)


def differences(chapter: int) -> list[str]:
    """How chapter ``chapter``'s stored snapshot differs from what its builder makes today; empty when in sync.

    Keys, shapes and dtypes must be equal, values equal to ``kata.judge.snapshots.TOLERANCE`` (why not exactly:
    see there).
    """
    if not snapshots.path(chapter).is_file():
        return [f"{snapshots.path(chapter)} is missing"]
    with np.load(snapshots.path(chapter), allow_pickle=False) as archive:
        stored = {key: archive[key] for key in archive.files}
    fresh = build(chapter)
    problems = [f"{key}: stored but no longer built" for key in sorted(set(stored) - set(fresh))]
    problems += [f"{key}: built but not stored" for key in sorted(set(fresh) - set(stored))]
    for key in sorted(set(stored) & set(fresh)):
        a, b = stored[key], np.asarray(fresh[key])
        if a.shape != b.shape or a.dtype != b.dtype:
            problems.append(f"{key}: stored {a.shape} {a.dtype}, built {b.shape} {b.dtype}")
        elif not np.allclose(a, b, **snapshots.TOLERANCE):
            problems.append(f"{key}: stored values differ from the solutions'")
    return problems


def main(argv: list[str] | None = None) -> int:
    """Write every chapter's snapshot (or those given by number); ``--check`` only compares: 0 when all are in sync."""
    p = argparse.ArgumentParser(prog="python -m kata.authoring.snapshots", description=__doc__.splitlines()[0])
    p.add_argument("chapters", type=int, nargs="*", help="the chapters to build (default: every builder)")
    p.add_argument("--check", action="store_true", help="compare the stored files with the builders; write nothing")
    args = p.parse_args(argv)
    failed = 0
    for chapter in args.chapters or chapters():
        if args.check:
            problems = differences(chapter)
            failed += bool(problems)
            print(f"chapter {chapter}: " + ("in sync" if not problems else
                                            f"{len(problems)} difference(s), e.g. {problems[0]} "
                                            f"(write it again: python -m kata.authoring.snapshots {chapter})"))
        else:
            target = snapshots.write(chapter, build(chapter))
            print(f"wrote {target} ({target.stat().st_size} bytes)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
