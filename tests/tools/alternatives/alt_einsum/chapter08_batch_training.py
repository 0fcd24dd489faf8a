"""Chapter 8, written from the docstrings: stacked arrays, einsum and np.mean over the batch axis."""

import numbers

import numpy as np

from .chapter05_forward_pass import PARAM_NAMES, forward
from .chapter06_training_step import sgd_step
from .chapter07_backprop import backward


def _batch(examples) -> list:
    if not isinstance(examples, list):
        raise TypeError(f"examples is a {type(examples).__name__}, not a list of (ids, target) pairs")
    if not examples:
        raise ValueError("an empty batch has no mean")
    for k, pair in enumerate(examples):
        if not (isinstance(pair, tuple | list) and len(pair) == 2):
            raise TypeError(f"example {k} ({pair!r}) is not a pair (ids, target)")
        target = pair[1]
        if isinstance(target, bool) or not isinstance(target, numbers.Integral):
            raise TypeError(f"example {k}: target {target!r} is not a whole number")
    return examples


def per_example(examples: list[tuple[list[int], int]], params: dict[str, np.ndarray], *,
                embeddings: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Contexts stacked, then logits, probabilities and gradients for the whole batch at once."""
    batch = _batch(examples)
    runs = [forward(ids, params, embeddings=embeddings) for ids, _ in batch]
    C = np.stack([r["context"] for r in runs])
    P = np.stack([r["probs"] for r in runs])
    targets = np.array([t for _, t in batch])
    bad = np.flatnonzero((targets < 0) | (targets >= P.shape[1]))
    if bad.size:
        k = int(bad[0])
        raise IndexError(f"example {k} has target {targets[k]}, not in 0..{P.shape[1] - 1}")
    WO = np.asarray(params["WO"], dtype=np.float64)
    D = P - np.eye(P.shape[1])[targets]
    return {"context": C, "logits": np.einsum("nv,vt->nt", C, WO), "probs": P,
            "loss": -np.log(P[np.arange(len(batch)), targets]), "dlogits": D,
            "dcontext": np.einsum("vt,nt->nv", WO, D)}


def batch_loss(examples: list[tuple[list[int], int]], params: dict[str, np.ndarray], *,
               embeddings: np.ndarray | None = None) -> float:
    """np.mean of the losses."""
    return float(np.mean(per_example(examples, params, embeddings=embeddings)["loss"]))


def batch_gradients(examples: list[tuple[list[int], int]], params: dict[str, np.ndarray], *,
                    embeddings: np.ndarray | None = None) -> tuple[float, dict[str, np.ndarray]]:
    """np.mean over the stacked per-example gradients."""
    batch = _batch(examples)
    per_example(batch, params, embeddings=embeddings)  # the batch's own checks, with the example named
    results = [backward(ids, t, params, embeddings=embeddings) for ids, t in batch]
    loss = float(np.mean([r[0] for r in results]))
    return loss, {k: np.mean(np.stack([r[1][k] for r in results]), axis=0) for k in PARAM_NAMES}


def apply_gradients(params: dict[str, np.ndarray], grads: dict[str, np.ndarray], lr: float) -> dict[str, np.ndarray]:
    """sgd_step where there is a gradient, a copy elsewhere."""
    if isinstance(lr, bool) or not isinstance(lr, numbers.Real):
        raise TypeError(f"lr {lr!r} is not a number")
    if lr < 0:
        raise ValueError(f"lr {lr} < 0")
    extra = sorted(set(grads) - set(params))
    if extra:
        raise KeyError(f"no matrix {extra[0]} in params; it has {sorted(params)}")
    for k, g in grads.items():
        if np.shape(g) != np.shape(params[k]):
            raise ValueError(f"{k}: gradient {np.shape(g)} for a matrix {np.shape(params[k])}")
    return {k: (sgd_step(v, grads[k], lr) if k in grads else np.copy(v)) for k, v in params.items()}


def train(examples: list[tuple[list[int], int]], params: dict[str, np.ndarray], lr: float, epochs: int, *,
          embeddings: np.ndarray | None = None) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Full-batch descent."""
    if isinstance(epochs, bool) or not isinstance(epochs, numbers.Integral):
        raise TypeError(f"epochs {epochs!r} is not a whole number")
    if epochs < 0 or (isinstance(lr, numbers.Real) and lr < 0):
        raise ValueError(f"epochs = {epochs} and lr = {lr} must not be negative")
    _batch(examples)
    losses = np.zeros(int(epochs))
    for i in range(int(epochs)):
        losses[i], grads = batch_gradients(examples, params, embeddings=embeddings)
        params = apply_gradients(params, grads, lr)
    return {k: np.array(v, dtype=np.float64) for k, v in params.items()}, losses


def accuracy(examples: list[tuple[list[int], int]], params: dict[str, np.ndarray], *,
             embeddings: np.ndarray | None = None) -> float:
    """np.argmax (ties to the lowest id) against the targets."""
    batch = _batch(examples)
    probs = per_example(batch, params, embeddings=embeddings)["probs"]
    return float(np.mean(np.argmax(probs, axis=1) == np.array([t for _, t in batch])))
