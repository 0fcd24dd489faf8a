"""Chapter 4, written from the docstrings: loops over rows and keys, math.exp per entry."""

import math
import numbers

import numpy as np


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """exp(x - max) / sum, one slice along ``axis`` at a time."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0 or x.shape[axis] == 0:
        raise ValueError(f"softmax needs at least one entry along axis {axis}, got shape {x.shape}")
    moved = np.moveaxis(x, axis, -1)
    out = np.empty(moved.shape)
    for index in np.ndindex(moved.shape[:-1]):
        row = moved[index].tolist()
        top = max(row)
        if top == -math.inf:
            raise ValueError(f"a slice along axis {axis} is all -inf: softmax has nothing to weigh")
        weights = [math.exp(v - top) for v in row]
        total = sum(weights)
        out[index] = [w / total for w in weights]
    return np.moveaxis(out, -1, axis)


def _pair(Q: np.ndarray, K: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    Q, K = np.asarray(Q), np.asarray(K)
    if Q.ndim != 2 or K.ndim != 2 or Q.shape[1] != K.shape[1]:
        raise ValueError(f"Q {Q.shape} and K {K.shape} must be 2-D with the same width d_k")
    return Q, K


def raw_scores(Q: np.ndarray, K: np.ndarray) -> np.ndarray:
    """S[i, j] = sum over k of Q[i, k] K[j, k]."""
    Q, K = _pair(Q, K)
    S = np.zeros((Q.shape[0], K.shape[0]))
    for i in range(Q.shape[0]):
        for j in range(K.shape[0]):
            S[i, j] = math.fsum(float(q) * float(k) for q, k in zip(Q[i], K[j], strict=True))
    return S


def attention_scores(Q: np.ndarray, K: np.ndarray) -> np.ndarray:
    """Raw scores divided by sqrt(d_k)."""
    S = raw_scores(Q, K)
    return S / math.sqrt(np.shape(K)[1])


def causal_mask(n: int) -> np.ndarray:
    """[i, j] True when j <= i."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"n must be a positive whole number, got n = {n!r}")
    mask = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(i + 1):
            mask[i, j] = True
    return mask


def scaled_dot_product_attention(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """softmax of the (masked) scaled scores, then a weighted sum of V's rows."""
    S = attention_scores(Q, K)
    V = np.asarray(V)
    if V.ndim != 2 or V.shape[0] != S.shape[1]:
        raise ValueError(f"V has shape {V.shape}; it needs one row per key ({S.shape[1]})")
    if mask is not None:
        mask = np.asarray(mask)
        if mask.shape != S.shape:
            raise ValueError(f"the mask's shape {mask.shape} differs from the scores' {S.shape}")
        empty = [f"row {i}" for i in range(mask.shape[0]) if not mask[i].any()]
        if empty:
            raise ValueError(f"the mask allows nothing in {', '.join(empty)}")
        S = np.where(mask, S, -np.inf)
    weights = softmax(S)
    out = np.zeros((S.shape[0], V.shape[1]))
    for i in range(S.shape[0]):
        for j in range(S.shape[1]):
            out[i] += weights[i, j] * V[j]
    return out, weights
