"""Chapter 6, written from the docstrings: each check spelled out, the update entry by entry."""

import math
import numbers

import numpy as np

from .chapter05_forward_pass import forward


def _target(target, vocab: int, with_range: bool = True) -> int:
    if isinstance(target, bool) or not isinstance(target, numbers.Integral):
        raise TypeError(f"target must be a whole number, got {target!r}")
    if not 0 <= target < vocab:
        raise IndexError(f"target {target} is outside 0..{vocab - 1} (a vocabulary of {vocab} tokens)")
    return int(target)


def _distribution(probs) -> np.ndarray:
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 1 or p.size == 0:
        raise ValueError(f"probs must be a 1-D vector of probabilities, got shape {p.shape}")
    total = 0.0
    for v in p.tolist():
        if not v >= 0:
            raise ValueError(f"probs are not probabilities: an entry is {v}")
        total += v
    if abs(total - 1.0) > 1e-6:
        raise ValueError(f"probs are not probabilities: they sum to {total}, not 1")
    return p


def cross_entropy(probs: np.ndarray, target: int) -> float:
    """-log p[target]."""
    p = _distribution(probs)
    t = _target(target, len(p))
    return -math.log(p[t]) if p[t] > 0 else math.inf


def cross_entropy_grad(probs: np.ndarray, target: int) -> np.ndarray:
    """probs minus the one-hot of the target."""
    p = _distribution(probs)
    t = _target(target, len(p))
    grad = np.zeros(len(p))
    for i, v in enumerate(p.tolist()):
        grad[i] = v - (1.0 if i == t else 0.0)
    return grad


def output_backward(context: np.ndarray, WO: np.ndarray, dlogits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """dc = W_O dz, dW_O = c ⊗ dz, by loops."""
    c, W, dz = np.asarray(context), np.asarray(WO), np.asarray(dlogits)
    if c.ndim != 1 or dz.ndim != 1 or W.ndim != 2 or W.shape != (len(c), len(dz)):
        raise ValueError(f"context {c.shape}, WO {W.shape} and dlogits {dz.shape} do not fit z = c W_O")
    dc = np.zeros(len(c))
    dW = np.zeros(W.shape)
    for i in range(len(c)):
        for j in range(len(dz)):
            dc[i] += W[i, j] * dz[j]
            dW[i, j] = c[i] * dz[j]
    return dc, dW


def sgd_step(param: np.ndarray, grad: np.ndarray, lr: float) -> np.ndarray:
    """param - lr * grad, into a new array."""
    if isinstance(lr, bool) or not isinstance(lr, numbers.Real):
        raise TypeError(f"lr must be a real number, got lr = {lr!r}")
    if not (math.isfinite(lr) and lr >= 0):
        raise ValueError(f"lr must be finite and 0 or more, got {lr}")
    param, grad = np.asarray(param), np.asarray(grad)
    if param.shape != grad.shape:
        raise ValueError(f"param {param.shape} and grad {grad.shape} differ in shape")
    out = np.array(param, dtype=np.float64)
    for index in np.ndindex(out.shape):
        out[index] = out[index] - lr * grad[index]
    return out


def train_output_step(ids: list[int], target: int, params: dict[str, np.ndarray], lr: float, *,
                      embeddings: np.ndarray | None = None) -> tuple[dict[str, np.ndarray], float]:
    """Forward, loss, gradient of W_O, one step on W_O only."""
    if isinstance(lr, numbers.Real) and not isinstance(lr, bool) and lr < 0:
        raise ValueError(f"lr = {lr} is negative")
    f = forward(ids, params, embeddings=embeddings)
    loss = cross_entropy(f["probs"], target)
    _, dWO = output_backward(f["context"], params["WO"], cross_entropy_grad(f["probs"], target))
    new = {name: np.array(value, dtype=np.float64) for name, value in params.items()}
    new["WO"] = sgd_step(params["WO"], dWO, lr)
    return new, float(loss)
