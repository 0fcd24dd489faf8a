"""Chapter 11, written from the docstrings: heads cut out column by column, attention per head by loops."""

import math
import numbers

import numpy as np

from .chapter04_attention import causal_mask, scaled_dot_product_attention  # noqa: F401
from .chapter07_backprop import attention_backward, linear_backward  # noqa: F401

PARAM_NAMES = ("WQ", "WK", "WV", "WO")


def _heads_count(n_heads, d_model: int) -> int:
    if isinstance(n_heads, bool) or not isinstance(n_heads, numbers.Integral) or n_heads < 1:
        raise ValueError(f"n_heads must be a whole number >= 1, got {n_heads!r}")
    if d_model % n_heads:
        raise ValueError(f"d_model {d_model} is not divisible by n_heads {n_heads}")
    return int(n_heads)


def split_heads(X: np.ndarray, n_heads: int) -> np.ndarray:
    """heads[h, i, j] = X[i, h * d_head + j], one element at a time."""
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (seq, d_model), got shape {X.shape}")
    seq, d_model = X.shape
    n = _heads_count(n_heads, d_model)
    d_head = d_model // n
    out = np.zeros((n, seq, d_head))
    for h in range(n):
        for i in range(seq):
            for j in range(d_head):
                out[h, i, j] = X[i, h * d_head + j]
    return out


def merge_heads(H: np.ndarray) -> np.ndarray:
    """merged[i, h * d_head + j] = H[h, i, j], one element at a time."""
    H = np.asarray(H)
    if H.ndim != 3:
        raise ValueError(f"H must be 3-D (n_heads, seq, d_head), got shape {H.shape}")
    n, seq, d_head = H.shape
    out = np.zeros((seq, n * d_head))
    for h in range(n):
        for i in range(seq):
            for j in range(d_head):
                out[i, h * d_head + j] = H[h, i, j]
    return out


def attend_heads(Qh: np.ndarray, Kh: np.ndarray, Vh: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every head: scores by dot products, the causal softmax row by row, then the weighted values."""
    Qh, Kh, Vh = (np.asarray(a, dtype=np.float64) for a in (Qh, Kh, Vh))
    if Qh.ndim != 3 or not Qh.shape == Kh.shape == Vh.shape:
        raise ValueError(f"Qh {Qh.shape}, Kh {Kh.shape} and Vh {Vh.shape} must be one 3-D shape")
    n, seq, d_head = Qh.shape
    out, weights = np.zeros(Qh.shape), np.zeros((n, seq, seq))
    for h in range(n):
        for i in range(seq):
            scores = [sum(Qh[h, i, k] * Kh[h, j, k] for k in range(d_head)) / math.sqrt(d_head)
                      for j in range(i + 1)]
            top = max(scores)
            exps = [math.exp(s - top) for s in scores]
            total = sum(exps)
            for j in range(i + 1):
                weights[h, i, j] = exps[j] / total
                out[h, i] += weights[h, i, j] * Vh[h, j]
    return out, weights


def _mm(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    out = np.zeros((A.shape[0], B.shape[1]))
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            out[i, j] = sum(A[i, k] * B[k, j] for k in range(A.shape[1]))
    return out


def multi_head_attention(x: np.ndarray, params: dict, n_heads: int) -> tuple[np.ndarray, tuple]:
    """Project, split, attend per head, merge, mix with W_O; the cache is a small dict."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 1:
        raise ValueError(f"x must be 2-D with at least one row, got shape {x.shape}")
    if not isinstance(params, dict):
        raise ValueError(f"params must be a dict, got {type(params).__name__}")
    d_model = x.shape[1]
    W = {}
    for key in PARAM_NAMES:
        if key not in params:
            raise ValueError(f"params has no {key}")
        W[key] = np.asarray(params[key], dtype=np.float64)
        if W[key].shape != (d_model, d_model):
            raise ValueError(f"{key} has shape {W[key].shape}, expected {(d_model, d_model)}")
    n = _heads_count(n_heads, d_model)
    Q, K, V = _mm(x, W["WQ"]), _mm(x, W["WK"]), _mm(x, W["WV"])
    Qh, Kh, Vh = split_heads(Q, n), split_heads(K, n), split_heads(V, n)
    heads, weights = attend_heads(Qh, Kh, Vh)
    merged = merge_heads(heads)
    out = _mm(merged, W["WO"])
    return out, ({"x": x, "W": W, "Qh": Qh, "Kh": Kh, "Vh": Vh, "weights": weights, "merged": merged},)


def multi_head_attention_backward(d_out: np.ndarray, cache: tuple) -> dict:
    """Back through W_O, each head's softmax by hand (loops), then the three projections."""
    (c,) = cache
    x, W, Qh, Kh, Vh, P, merged = c["x"], c["W"], c["Qh"], c["Kh"], c["Vh"], c["weights"], c["merged"]
    d_out = np.asarray(d_out, dtype=np.float64)
    if d_out.shape != merged.shape:
        raise ValueError(f"d_out has shape {d_out.shape}, expected {merged.shape}")
    n, seq, d_head = Qh.shape
    dWO = _mm(merged.T, d_out)
    d_heads = split_heads(_mm(d_out, W["WO"].T), n)
    dQh, dKh, dVh = np.zeros(Qh.shape), np.zeros(Kh.shape), np.zeros(Vh.shape)
    scale = 1 / math.sqrt(d_head)
    for h in range(n):
        for i in range(seq):
            dp = [sum(d_heads[h, i, k] * Vh[h, j, k] for k in range(d_head)) for j in range(seq)]
            for j in range(seq):
                dVh[h, j] += P[h, i, j] * d_heads[h, i]
            mean = sum(P[h, i, j] * dp[j] for j in range(seq))
            for j in range(seq):
                ds = P[h, i, j] * (dp[j] - mean) * scale
                dQh[h, i] += ds * Kh[h, j]
                dKh[h, j] += ds * Qh[h, i]
    dQ, dK, dV = merge_heads(dQh), merge_heads(dKh), merge_heads(dVh)
    return {"x": _mm(dQ, W["WQ"].T) + _mm(dK, W["WK"].T) + _mm(dV, W["WV"].T),
            "WQ": _mm(x.T, dQ), "WK": _mm(x.T, dK), "WV": _mm(x.T, dV), "WO": dWO}
