"""Chapter 6, written from the docstrings: log-probabilities and einsum outer products."""

import numbers

import numpy as np

from .chapter05_forward_pass import forward


def _checked(probs, target) -> tuple[np.ndarray, int]:
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"probs of shape {p.shape} is not a 1-D vector of probabilities")
    if p.size == 0 or (p < 0).any() or not np.isclose(p.sum(), 1.0, rtol=0, atol=1e-6):
        raise ValueError("probs are not probabilities (each ≥ 0, summing to 1): logits, perhaps?")
    if isinstance(target, bool) or not isinstance(target, numbers.Integral):
        raise TypeError(f"target {target!r} is not a whole number")
    if not 0 <= target < p.size:
        raise IndexError(f"target {target} is not in 0..{p.size - 1}: the vocabulary has {p.size} tokens")
    return p, int(target)


def cross_entropy(probs: np.ndarray, target: int) -> float:
    """-log p[target], via np.log of the one entry."""
    p, t = _checked(probs, target)
    with np.errstate(divide="ignore"):
        return float(-np.log(p[t]))


def cross_entropy_grad(probs: np.ndarray, target: int) -> np.ndarray:
    """p - onehot(target)."""
    p, t = _checked(probs, target)
    return p - np.eye(p.size)[t]


def output_backward(context: np.ndarray, WO: np.ndarray, dlogits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """einsum('vt,t->v') and einsum('v,t->vt')."""
    c, W, dz = np.asarray(context), np.asarray(WO), np.asarray(dlogits)
    if not (c.ndim == dz.ndim == 1 and W.ndim == 2 and W.shape == (c.size, dz.size)):
        raise ValueError(f"shapes context {c.shape}, WO {W.shape}, dlogits {dz.shape} do not fit")
    return np.einsum("vt,t->v", W, dz), np.einsum("v,t->vt", c, dz)


def sgd_step(param: np.ndarray, grad: np.ndarray, lr: float) -> np.ndarray:
    """param - lr * grad, in param's own dtype when it is a float."""
    if isinstance(lr, bool) or not isinstance(lr, numbers.Real):
        raise TypeError(f"lr {lr!r} is not a real number")
    if not np.isfinite(lr) or lr < 0:
        raise ValueError(f"lr {lr} must be finite and not negative")
    param, grad = np.asarray(param), np.asarray(grad)
    if param.shape != grad.shape:
        raise ValueError(f"shapes differ: param {param.shape}, grad {grad.shape}")
    return np.subtract(param, lr * grad)


def train_output_step(ids: list[int], target: int, params: dict[str, np.ndarray], lr: float, *,
                      embeddings: np.ndarray | None = None) -> tuple[dict[str, np.ndarray], float]:
    """One step of W_O."""
    f = forward(ids, params, embeddings=embeddings)
    loss = cross_entropy(f["probs"], target)
    _, dWO = output_backward(f["context"], params["WO"], cross_entropy_grad(f["probs"], target))
    updated = sgd_step(params["WO"], dWO, lr)
    return {k: (updated if k == "WO" else np.copy(v)) for k, v in params.items()}, loss
