"""The check before training, for either model: the learner's gradients on a tiny model against central differences.

Then each layer function on its own, so the message blames the function that is wrong, not the first gradient
its error reaches.

Part of ``nox -s train`` (``kata/learner/train/__init__.py`` tells the whole story).
"""

from __future__ import annotations

import numpy as np

from ...judge.gradient import numerical_gradient
from .corpus import TrainError

RTOL, ATOL, H = 1e-4, 1e-6, 1e-5  # central differences of a float64 loss are good to ~1e-9 at h = 1e-5


def wrong(got, want: np.ndarray) -> bool:
    """Whether ``got`` differs from the numerical ``want`` (a wrong shape, NaN or a value off the tolerance)."""
    try:
        got = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return True
    return got.shape != want.shape or not bool(np.all(np.abs(got - want) <= ATOL + RTOL * np.abs(want)))


def numerical(f, x: np.ndarray) -> np.ndarray:
    """Central differences (``numerical_gradient``) of ``f()``, which reads ``x``, as ``x``'s entries move.

    ``x`` is changed in place while it runs and restored after.
    """
    kept = x.copy()

    def at(value: np.ndarray) -> float:
        x[...] = value
        return f()

    try:
        return numerical_gradient(at, kept, eps=H)
    finally:
        x[...] = kept


def compare(function: str, forward: str, names, got, wants) -> tuple[str, str] | None:
    """(function, what is wrong) when one of ``got`` disagrees with central differences ``wants``; else None."""
    bad = [n for n, g, w in zip(names, got, wants, strict=True) if wrong(g, w)]
    return (function, f"its {', '.join(bad)} disagree{'s' * (len(bad) == 1)} with central differences of "
                      f"{forward}, on its own") if bad else None


def check_gradients(ch, model, seed: int = 1234) -> dict:
    """The learner's gradients on ``model``'s tiny model against central differences of its loss, one by one.

    Returns:
        ``{"parameters": n, "largest_difference": d}`` when every gradient matches.

    Raises:
        TrainError: a wrong gradient (naming the parameter and the function to look at), grads that do not
            mirror params, a loss that is not a number, or logits that see the future.
    """
    probe = model.probe(ch, np.random.default_rng(seed))
    loss, grads = probe.loss_and_grads()
    try:
        loss = float(loss)
    except (TypeError, ValueError):
        loss = None
    if loss is None or not np.isfinite(loss):
        raise TrainError(model.bad_loss.format(loss=loss))
    changed = probe.ids.copy()
    changed[-1] = (changed[-1] + 1) % probe.vocab
    logits, later = np.asarray(probe.logits(probe.ids)), np.asarray(probe.logits(changed))
    if not np.allclose(logits[:-1], later[:-1], rtol=1e-9, atol=1e-12):
        raise TrainError(model.peeking)
    found, largest, count = [], 0.0, 0
    for name, function in model.backward_order(probe):
        mine = np.asarray(grads[name], dtype=np.float64)
        theirs = numerical(probe.loss, probe.params[name])
        count += mine.size
        largest = max(largest, float(np.max(np.abs(mine - theirs))))
        if wrong(mine, theirs):
            i = int(np.argmax(np.abs(mine - theirs)))
            found.append((name, function, float(mine.ravel()[i]), float(theirs.ravel()[i]),
                          np.unravel_index(i, mine.shape)))
    if not found:
        return {"parameters": count, "largest_difference": largest}
    culprit = next((c for c in model.one_function_checks(ch, np.random.default_rng(seed + 1)) if c), None)
    raise failure(model, found, culprit)


def failure(model, found: list[tuple], culprit: tuple[str, str] | None) -> TrainError:
    """The one message of a failed gradient check.

    Args:
        model: the model checked (``model.Model``): how it names a parameter and what it suggests.
        found: ``(parameter, function, yours, central difference, index)`` of every wrong parameter, in the order
            the backward pass computes them.
        culprit: ``(function, why)`` of the first layer function that is wrong on its own, or None.
    """
    if culprit is None:
        function = found[0][1]
        why = model.unchained(function)
    else:
        function, why = culprit[0], f"{culprit[0]}: {culprit[1]}"
    name, _, mine, theirs, where = next((w for w in found if w[1] == function), found[0])
    others = [model.shown(w[0]) for w in found if w[0] != name]
    lines = [f"gradient check failed, before training: {model.shown(name)} is wrong: look at {why}.",
             f"  at index {tuple(int(i) for i in where)}: yours {mine:.6g}, central differences {theirs:.6g}"]
    if others:
        lines.append(f"  also wrong: {', '.join(others[:4])}" + (f" and {len(others) - 4} more" if len(others) > 4
                                                                  else ""))
    lines.append(f"Training with a wrong gradient would only waste your time: {model.rerun} the failing checks; "
                 "fix them and train again.")
    return TrainError("\n".join(lines))
