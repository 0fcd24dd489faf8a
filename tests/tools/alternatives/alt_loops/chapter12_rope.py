"""Chapter 12, written from the docstrings: every pair turned with math.cos and math.sin, one at a time."""

import math
import numbers

import numpy as np

from .chapter04_attention import causal_mask, scaled_dot_product_attention  # noqa: F401


def _whole(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def rope_frequencies(d: int, base: float = 10000.0) -> np.ndarray:
    """theta_i = base ** (-2 i / d), pair by pair."""
    if not _whole(d) or d < 1:
        raise ValueError(f"d must be a positive whole number, got d = {d!r}")
    if d % 2:
        raise ValueError(f"d = {d} is odd: features turn in pairs")
    if isinstance(base, bool) or not isinstance(base, numbers.Real) or not math.isfinite(base) or base <= 1:
        raise ValueError(f"base must be a finite number greater than 1, got base = {base!r}")
    return np.array([float(base) ** (-2 * i / d) for i in range(d // 2)])


def rope_angles(seq_len: int, d: int, base: float = 10000.0, start: int = 0) -> np.ndarray:
    """(start + m) * theta_i, entry by entry."""
    if not _whole(seq_len) or seq_len < 0:
        raise ValueError(f"seq_len must be a whole number >= 0, got seq_len = {seq_len!r}")
    if not _whole(start) or start < 0:
        raise ValueError(f"start must be a whole number >= 0, got start = {start!r}")
    theta = rope_frequencies(d, base)
    out = np.zeros((seq_len, len(theta)))
    for m in range(seq_len):
        for i, t in enumerate(theta):
            out[m, i] = (start + m) * t
    return out


def rotate_pairs(X: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """Each (x_2i, x_2i+1) of each row through its own 2×2 rotation."""
    X = np.asarray(X, dtype=np.float64)
    angles = np.asarray(angles, dtype=np.float64)
    if X.ndim < 2:
        raise ValueError(f"X must have at least 2 dimensions (seq, d), got shape {X.shape}")
    seq, d = X.shape[-2:]
    if d % 2:
        raise ValueError(f"the width d = {d} is odd")
    if angles.shape != (seq, d // 2):
        raise ValueError(f"angles has shape {angles.shape}; X of shape {X.shape} needs {(seq, d // 2)}")
    Y = np.zeros(X.shape)
    for lead in np.ndindex(X.shape[:-2]):
        for m in range(seq):
            for i in range(d // 2):
                c, s = math.cos(angles[m, i]), math.sin(angles[m, i])
                x0, x1 = X[lead + (m, 2 * i)], X[lead + (m, 2 * i + 1)]
                Y[lead + (m, 2 * i)] = x0 * c - x1 * s
                Y[lead + (m, 2 * i + 1)] = x0 * s + x1 * c
    return Y


def _rows_of_pairs(name: str, X) -> np.ndarray:
    """X in float64, checked: at least 2 dimensions, an even width d."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim < 2:
        raise ValueError(f"{name} must have at least 2 dimensions, got shape {X.shape}")
    if X.shape[-1] % 2:
        raise ValueError(f"the width d = {X.shape[-1]} is odd")
    return X


def apply_rope(X: np.ndarray, base: float = 10000.0, start: int = 0) -> np.ndarray:
    """rotate_pairs with the angles of positions start, start + 1, ..."""
    X = _rows_of_pairs("X", X)
    return rotate_pairs(X, rope_angles(X.shape[-2], X.shape[-1], base, start))


def rope_scores(Q: np.ndarray, K: np.ndarray, base: float = 10000.0) -> np.ndarray:
    """Rotated query m dotted with rotated key n, entry by entry."""
    Q, K = np.asarray(Q, dtype=np.float64), np.asarray(K, dtype=np.float64)
    if Q.shape != K.shape:
        raise ValueError(f"Q {Q.shape} and K {K.shape} must have one shape")
    Qr, Kr = apply_rope(Q, base), apply_rope(K, base)
    seq = Q.shape[-2]
    S = np.zeros(Q.shape[:-1] + (seq,))
    for lead in np.ndindex(Q.shape[:-2]):
        for m in range(seq):
            for n in range(seq):
                S[lead + (m, n)] = sum(a * b for a, b in zip(Qr[lead + (m,)], Kr[lead + (n,)], strict=True))
    return S


def rope_attention(Q: np.ndarray, K: np.ndarray, V: np.ndarray, base: float = 10000.0) -> tuple[np.ndarray, np.ndarray]:
    """Rotate Q and K, never V; a causal softmax row by row over the rotated scores / sqrt(d)."""
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    if Q.shape != K.shape:
        raise ValueError(f"Q {Q.shape} and K {K.shape} must have one shape")
    if Q.ndim != 2:
        raise ValueError(f"Q and K must be 2-D (seq, d), got shape {Q.shape}")
    if V.ndim != 2 or len(V) != len(K):
        raise ValueError(f"V has shape {V.shape}; it needs {len(K)} rows, one per key")
    S = rope_scores(Q, K, base) / math.sqrt(Q.shape[1])
    seq = len(Q)
    weights, out = np.zeros((seq, seq)), np.zeros((seq, V.shape[1]))
    for m in range(seq):
        top = max(S[m, : m + 1])
        exps = [math.exp(S[m, n] - top) for n in range(m + 1)]
        total = sum(exps)
        for n in range(m + 1):
            weights[m, n] = exps[n] / total
            out[m] += weights[m, n] * V[n]
    return out, weights


def rope_backward(dY: np.ndarray, base: float = 10000.0, start: int = 0) -> np.ndarray:
    """The transpose of every 2×2 rotation: the same angles, turned back."""
    dY = _rows_of_pairs("dY", dY)
    angles = rope_angles(dY.shape[-2], dY.shape[-1], base, start)
    dX = np.zeros(dY.shape)
    for lead in np.ndindex(dY.shape[:-2]):
        for m in range(dY.shape[-2]):
            for i in range(dY.shape[-1] // 2):
                c, s = math.cos(angles[m, i]), math.sin(angles[m, i])
                g0, g1 = dY[lead + (m, 2 * i)], dY[lead + (m, 2 * i + 1)]
                dX[lead + (m, 2 * i)] = g0 * c + g1 * s
                dX[lead + (m, 2 * i + 1)] = -g0 * s + g1 * c
    return dX
