"""Chapter 12, written from the docstrings: pairs as complex numbers, multiplied by e^{i·angle}."""

import numbers

import numpy as np

from .chapter04_attention import causal_mask, scaled_dot_product_attention  # noqa: F401


def _whole(value) -> bool:
    return isinstance(value, numbers.Integral | np.integer) and not isinstance(value, bool | np.bool_)


def rope_frequencies(d: int, base: float = 10000.0) -> np.ndarray:
    """exp(-(2i/d) log base), all pairs at once."""
    if not _whole(d) or d <= 0:
        raise ValueError(f"d must be a positive whole number; d = {d!r} was given")
    if d % 2 == 1:
        raise ValueError(f"d must be even, not odd: d = {d}")
    try:
        ok = not isinstance(base, bool | str) and bool(np.isfinite(base)) and float(base) > 1
    except TypeError:
        ok = False
    if not ok:
        raise ValueError(f"base must be finite and above 1; base = {base!r}")
    return np.exp(-np.arange(0, d, 2) / d * np.log(float(base)))


def rope_angles(seq_len: int, d: int, base: float = 10000.0, start: int = 0) -> np.ndarray:
    """The outer product of the positions with the frequencies, by einsum."""
    if not _whole(seq_len) or seq_len < 0:
        raise ValueError(f"seq_len must be a whole number >= 0; seq_len = {seq_len!r}")
    if not _whole(start) or start < 0:
        raise ValueError(f"start must be a whole number >= 0; start = {start!r}")
    positions = np.arange(start, start + seq_len, dtype=np.float64)
    return np.einsum("m,i->mi", positions, rope_frequencies(d, base))


def _pairs(name: str, X) -> np.ndarray:
    """X in float64, at least 2-D with an even last axis (rows of pairs); else a ValueError naming it."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim < 2:
        raise ValueError(f"{name} needs at least 2 dimensions; its shape is {X.shape}")
    if X.shape[-1] % 2:
        raise ValueError(f"the last axis of {name} is odd ({X.shape[-1]})")
    return X


def rotate_pairs(X: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """(x_2i + i x_2i+1) · e^{i angle}, back to real pairs."""
    X, angles = _pairs("X", X), np.asarray(angles, dtype=np.float64)
    if angles.shape != (X.shape[-2], X.shape[-1] // 2):
        raise ValueError(f"angles {angles.shape} do not fit X {X.shape}")
    z = X[..., 0::2] + 1j * X[..., 1::2]
    turned = z * np.exp(1j * angles)
    return np.stack([turned.real, turned.imag], axis=-1).reshape(X.shape)


def apply_rope(X: np.ndarray, base: float = 10000.0, start: int = 0) -> np.ndarray:
    """Angles of the rows' positions, then rotate_pairs."""
    X = _pairs("X", X)
    return rotate_pairs(X, rope_angles(X.shape[-2], X.shape[-1], base, start))


def rope_scores(Q: np.ndarray, K: np.ndarray, base: float = 10000.0) -> np.ndarray:
    """einsum of rotated queries with rotated keys."""
    Q, K = np.asarray(Q, dtype=np.float64), np.asarray(K, dtype=np.float64)
    if Q.shape != K.shape:
        raise ValueError(f"Q and K differ in shape: {Q.shape} and {K.shape}")
    return np.einsum("...md,...nd->...mn", apply_rope(Q, base), apply_rope(K, base))


def rope_attention(Q: np.ndarray, K: np.ndarray, V: np.ndarray, base: float = 10000.0) -> tuple[np.ndarray, np.ndarray]:
    """Masked scaled rotated scores, a log-sum-exp softmax, then the values (never rotated)."""
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    if Q.shape != K.shape:
        raise ValueError(f"Q and K differ in shape: {Q.shape} and {K.shape}")
    if Q.ndim != 2:
        raise ValueError(f"Q and K must be (seq, d), not {Q.shape}")
    if V.ndim != 2 or V.shape[0] != K.shape[0]:
        raise ValueError(f"V of shape {V.shape} needs {K.shape[0]} rows")
    seq = len(Q)
    S = np.where(np.tri(seq, dtype=bool), rope_scores(Q, K, base) / np.sqrt(Q.shape[1]), -np.inf)
    top = S.max(axis=1, keepdims=True)
    weights = np.exp(S - top - np.log(np.exp(S - top).sum(axis=1, keepdims=True)))
    return np.einsum("mn,nd->md", weights, V), weights


def rope_backward(dY: np.ndarray, base: float = 10000.0, start: int = 0) -> np.ndarray:
    """Multiply by e^{-i angle}: the conjugate turn."""
    dY = _pairs("dY", dY)
    return rotate_pairs(dY, -rope_angles(dY.shape[-2], dY.shape[-1], base, start))
