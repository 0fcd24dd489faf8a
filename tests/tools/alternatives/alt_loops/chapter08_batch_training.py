"""Chapter 8, written from the docstrings: one example at a time, sums kept by hand."""

import numbers

import numpy as np

from .chapter05_forward_pass import PARAM_NAMES, forward
from .chapter06_training_step import cross_entropy, cross_entropy_grad, output_backward, sgd_step
from .chapter07_backprop import backward


def _pairs(examples) -> list[tuple[list[int], int]]:
    """The batch as (ids, target) pairs, each checked."""
    if not isinstance(examples, list | tuple):
        raise TypeError(f"examples must be a list of (ids, target) pairs, got a {type(examples).__name__}")
    if len(examples) == 0:
        raise ValueError("the batch is empty: give at least one (ids, target) pair")
    pairs = []
    for k, example in enumerate(examples):
        if not isinstance(example, list | tuple) or len(example) != 2:
            raise TypeError(f"example {k} is not an (ids, target) pair: a {type(example).__name__}")
        ids, target = example
        if isinstance(target, bool) or not isinstance(target, numbers.Integral):
            raise TypeError(f"example {k}: the target {target!r} is not a whole number")
        pairs.append((list(ids), int(target)))
    return pairs


def _vocab(params: dict, embeddings) -> int:
    if "WO" not in params:
        raise ValueError("params has no WO")
    return np.shape(params["WO"])[-1]


def per_example(examples: list[tuple[list[int], int]], params: dict[str, np.ndarray], *,
                embeddings: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Forward and output gradients of each example, stacked row by row."""
    rows: dict[str, list] = {k: [] for k in ("context", "logits", "probs", "loss", "dlogits", "dcontext")}
    for k, (ids, target) in enumerate(_pairs(examples)):
        f = forward(ids, params, embeddings=embeddings)
        vocab = len(f["probs"])
        if not 0 <= target < vocab:
            raise IndexError(f"example {k}: target {target} is outside 0..{vocab - 1}")
        dz = cross_entropy_grad(f["probs"], target)
        dc, _ = output_backward(f["context"], np.asarray(params["WO"], dtype=np.float64), dz)
        for name, value in (("context", f["context"]), ("logits", f["logits"]), ("probs", f["probs"]),
                            ("loss", cross_entropy(f["probs"], target)), ("dlogits", dz), ("dcontext", dc)):
            rows[name].append(value)
    return {name: np.array(values, dtype=np.float64) for name, values in rows.items()}


def batch_loss(examples: list[tuple[list[int], int]], params: dict[str, np.ndarray], *,
               embeddings: np.ndarray | None = None) -> float:
    """The mean of the per-example losses, summed in a loop."""
    losses = per_example(examples, params, embeddings=embeddings)["loss"]
    total = 0.0
    for value in losses:
        total += float(value)
    return total / len(losses)


def batch_gradients(examples: list[tuple[list[int], int]], params: dict[str, np.ndarray], *,
                    embeddings: np.ndarray | None = None) -> tuple[float, dict[str, np.ndarray]]:
    """The mean of chapter 7's gradients."""
    pairs = _pairs(examples)
    total_loss = 0.0
    sums = None
    for k, (ids, target) in enumerate(pairs):
        vocab = _vocab(params, embeddings)
        if isinstance(target, numbers.Integral) and not 0 <= target < vocab:
            raise IndexError(f"example {k}: target {target} is outside 0..{vocab - 1}")
        loss, grads = backward(ids, target, params, embeddings=embeddings)
        total_loss += loss
        if sums is None:
            sums = {name: np.zeros(np.shape(grads[name])) for name in PARAM_NAMES}
        for name in PARAM_NAMES:
            sums[name] += grads[name]
    n = len(pairs)
    return total_loss / n, {name: sums[name] / n for name in PARAM_NAMES}


def apply_gradients(params: dict[str, np.ndarray], grads: dict[str, np.ndarray], lr: float) -> dict[str, np.ndarray]:
    """W - lr dW for each matrix with a gradient; the others copied."""
    if isinstance(lr, bool) or not isinstance(lr, numbers.Real):
        raise TypeError(f"lr must be a number, got {lr!r}")
    if lr < 0:
        raise ValueError(f"lr = {lr} is negative")
    for name in grads:
        if name not in params:
            raise KeyError(f"grads has {name}, which params does not have (params has {', '.join(params)})")
    new = {}
    for name, value in params.items():
        if name in grads:
            if np.shape(grads[name]) != np.shape(value):
                raise ValueError(f"the gradient of {name} has shape {np.shape(grads[name])}, "
                                 f"{name} has {np.shape(value)}")
            new[name] = sgd_step(np.asarray(value, dtype=np.float64), np.asarray(grads[name]), lr)
        else:
            new[name] = np.array(value, copy=True)
    return new


def train(examples: list[tuple[list[int], int]], params: dict[str, np.ndarray], lr: float, epochs: int, *,
          embeddings: np.ndarray | None = None) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """epochs full-batch updates; the loss before each."""
    if isinstance(epochs, bool) or not isinstance(epochs, numbers.Integral):
        raise TypeError(f"epochs must be a whole number, got epochs = {epochs!r}")
    if epochs < 0:
        raise ValueError(f"epochs = {epochs} is negative")
    if isinstance(lr, numbers.Real) and not isinstance(lr, bool) and lr < 0:
        raise ValueError(f"lr = {lr} is negative")
    _pairs(examples)
    current = {name: np.array(value, dtype=np.float64) for name, value in params.items()}
    losses = []
    for _ in range(epochs):
        loss, grads = batch_gradients(examples, current, embeddings=embeddings)
        losses.append(loss)
        current = apply_gradients(current, grads, lr)
    return current, np.array(losses, dtype=np.float64)


def accuracy(examples: list[tuple[list[int], int]], params: dict[str, np.ndarray], *,
             embeddings: np.ndarray | None = None) -> float:
    """Count the examples whose first most probable token is the target."""
    pairs = _pairs(examples)
    probs = per_example(pairs, params, embeddings=embeddings)["probs"]
    right = 0
    for (_, target), row in zip(pairs, probs, strict=True):
        best = 0
        for j in range(1, len(row)):
            if row[j] > row[best]:
                best = j
        right += best == target
    return right / len(pairs)
