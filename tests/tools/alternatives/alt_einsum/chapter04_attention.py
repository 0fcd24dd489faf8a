"""Chapter 4, written from the docstrings: log-sum-exp softmax and einsum products."""

import numbers

import numpy as np


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """exp(x - logsumexp(x))."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0 or x.ndim == 0:
        raise ValueError(f"softmax of an empty array (shape {x.shape})")
    top = np.max(x, axis=axis, keepdims=True)
    if np.isneginf(top).any():
        raise ValueError("a slice that is all -inf has no softmax")
    shifted = x - top
    lse = np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
    return np.exp(shifted - lse)


def raw_scores(Q: np.ndarray, K: np.ndarray) -> np.ndarray:
    """einsum('qd,kd->qk')."""
    Q, K = np.asarray(Q), np.asarray(K)
    if not (Q.ndim == K.ndim == 2) or Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"shapes {Q.shape} (Q) and {K.shape} (K) do not fit: both 2-D, one width d_k")
    return np.einsum("qd,kd->qk", Q, K)


def attention_scores(Q: np.ndarray, K: np.ndarray) -> np.ndarray:
    """Raw scores times d_k ** -0.5."""
    S = raw_scores(Q, K)
    return S * np.shape(K)[-1] ** -0.5


def causal_mask(n: int) -> np.ndarray:
    """np.tri."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n <= 0:
        raise ValueError(f"causal_mask(n): n = {n!r} is not a positive whole number")
    return np.tri(int(n), dtype=bool)


def scaled_dot_product_attention(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """einsum('qk,kv->qv', softmax(masked scores), V)."""
    S = attention_scores(Q, K)
    V = np.asarray(V)
    if V.ndim != 2 or len(V) != S.shape[1]:
        raise ValueError(f"V {V.shape} must have as many rows as K ({S.shape[1]})")
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != S.shape:
            raise ValueError(f"mask {mask.shape} does not match the scores {S.shape}")
        rows = np.flatnonzero(~mask.any(axis=1))
        if rows.size:
            raise ValueError("the mask leaves nothing to attend to in " + ", ".join(f"row {r}" for r in rows))
        S = np.where(mask, S, -np.inf)
    weights = softmax(S, axis=-1)
    return np.einsum("qk,kv->qv", weights, V), weights
