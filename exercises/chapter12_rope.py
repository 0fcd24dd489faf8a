"""Chapter 12: Rotary Position Embeddings (RoPE) — positions as rotations of queries and keys.

Chapter 10 added a learned position vector to every token. RoPE instead turns each pair of features of a
query or key by an angle that grows with the position, so the dot product of a query at position m with a
key at position n depends on their contents and on m − n only. Values are never rotated.

The convention of this course, used by every function below:

- the pairs are ADJACENT features: (x_0, x_1), (x_2, x_3), …, (x_{2i}, x_{2i+1}) for i = 0 … d/2 − 1;
- pair i turns at the frequency θ_i = base^(−2i/d), with base = 10000.0 unless given;
- positions count from 0 (plus ``start``, the position of the first row);
- at position m the pair (x_0, x_1) becomes (x_0 cos(mθ) − x_1 sin(mθ), x_0 sin(mθ) + x_1 cos(mθ)):
  a turn by +mθ, counter-clockwise.

Worksheet: this course's own, d = 4: the default base (θ = 1 and 0.01), then base 100 (θ = 1 and 0.1) and
positions from start = 2; every number is a cos or a sin a calculator gives.

Types, as every docstring below uses them: an array is a NumPy array (a Python list where an array is
documented fails its checks, saying so); a whole number is a Python or NumPy int (not a bool, not a float).
"""

import numpy as np

from .chapter04_attention import causal_mask, scaled_dot_product_attention  # noqa: F401 - yours to use


def rope_frequencies(d: int, base: float = 10000.0) -> np.ndarray:
    r"""The angle per position of every pair of features: fast for the first pair, slow for the last.

    $$\theta_i = \text{base}^{-2i/d}, \qquad i = 0, 1, \dots, d/2 - 1$$

    Pair i is the features (2i, 2i+1). θ_0 = 1 always; with d = 4 and base 10000, θ = [1, 0.01].

    Args:
        d: the width of a query or key, a positive even whole number.
        base: the base of the geometric progression, a finite number greater than 1 (default 10000.0), so
            that the frequencies fall from pair to pair.

    Returns:
        θ as float64, shape (d/2,).

    Raises:
        ValueError: if d is odd, 1 included (the message says "odd" and names d): yours to write, RoPE turns
            the features two at a time. A d that is not a positive whole number and a base that is not a
            finite number greater than 1 are refused by the checks given above the ``raise``.

    See docs: chapter 12, step 12.1.
    """
    _check_whole(d, "d", 1)
    _check_base(base)
    raise NotImplementedError("12.1 rope_frequencies: base to the power −2i/d for every pair i, refusing an odd d (4 lines)")


def rope_angles(seq_len: int, d: int, base: float = 10000.0, start: int = 0) -> np.ndarray:
    r"""The angle every pair turns by at every position: the position times the pair's frequency.

    $$\text{angle}_{m,i} = (\text{start} + m)\,\theta_i, \qquad m = 0, 1, \dots, \text{seq\_len} - 1$$

    Row m is the position start + m; positions count from 0, so with start = 0 the first row is all zeros
    (the first position is not turned).

    Args:
        seq_len: the number of positions, a whole number ≥ 0.
        d: the width of a query or key (as ``rope_frequencies``).
        base: as ``rope_frequencies``.
        start: the position of the first row, a whole number ≥ 0 (default 0; a cache of keys passes the
            number of positions it already holds).

    Returns:
        Angles in radians, float64, shape (seq_len, d/2).

    Raises:
        ValueError: if seq_len or start is not a whole number ≥ 0: the checks given above the ``raise``; or
            as ``rope_frequencies`` for d and base.

    See docs: chapter 12, step 12.2.
    """
    _check_whole(seq_len, "seq_len", 0)
    _check_whole(start, "start", 0)
    raise NotImplementedError("12.2 rope_angles: the outer product of the positions start … start + seq_len − 1 with rope_frequencies (3 lines)")


def rotate_pairs(X: np.ndarray, angles: np.ndarray) -> np.ndarray:
    r"""Turn every adjacent pair of features of every row by its own angle.

    $$\begin{pmatrix} y_{2i} \\ y_{2i+1} \end{pmatrix} =
      \begin{pmatrix} \cos\phi_i & -\sin\phi_i \\ \sin\phi_i & \cos\phi_i \end{pmatrix}
      \begin{pmatrix} x_{2i} \\ x_{2i+1} \end{pmatrix}$$

    Row m's pair i (features 2i and 2i+1) turns by ``angles[m, i]``, counter-clockwise for a positive angle.
    The same angles serve every leading index (every head).

    Args:
        X: rows to turn, shape (..., seq, d) with d even: (seq, d), or (n_heads, seq, d_head).
        angles: radians, shape (seq, d/2).

    Returns:
        A new array of X's shape, float64. X is not modified.

    Raises:
        ValueError: if X has fewer than 2 dimensions, d is odd or angles is not of shape (seq, d/2): the
            check given above the ``raise``, which hands you X and angles as float64 arrays.

    See docs: chapter 12, step 12.3.
    """
    X, angles = _check_rotation(X, angles)
    raise NotImplementedError("12.3 rotate_pairs: a new array whose pairs of an even and an odd feature are x0·cos − x1·sin and x0·sin + x1·cos (6 lines)")


def apply_rope(X: np.ndarray, base: float = 10000.0, start: int = 0) -> np.ndarray:
    r"""Rotary position embedding: turn row m's pair i by (start + m)·θ_i.

    $$\begin{gathered}
      \text{RoPE}(x_m) = R_{(\text{start}+m)\theta}\, x_m, \\
      (x_{2i}, x_{2i+1}) \mapsto (x_{2i}\cos\phi - x_{2i+1}\sin\phi,\; x_{2i}\sin\phi + x_{2i+1}\cos\phi), \\
      \phi = (\text{start}+m)\,\theta_i
    \end{gathered}$$

    Apply it to queries and keys, never to values. The second-to-last axis is the position; a leading axis
    (heads) shares the same angles.

    Args:
        X: queries or keys, shape (..., seq, d) with d even: (seq, d), or (n_heads, seq, d_head).
        base: as ``rope_frequencies``.
        start: the position of the first row (as ``rope_angles``).

    Returns:
        A new array of X's shape, float64. X is not modified.

    Raises:
        ValueError: if d is odd (the message says "odd"), as ``rope_frequencies``. X with fewer than 2
            dimensions, a start or a base that does not fit are refused by the checks given above the
            ``raise``.

    See docs: chapter 12, step 12.4.
    """
    X = _check_positions(X, "X")
    _check_whole(start, "start", 0)
    _check_base(base)
    raise NotImplementedError("12.4 apply_rope: X's pairs rotated by the angles of its positions counted from start (2 lines)")


def rope_scores(Q: np.ndarray, K: np.ndarray, base: float = 10000.0) -> np.ndarray:
    r"""Raw scores of rotated queries against rotated keys: entry [m, n] depends on m − n, not on m and n.

    $$S_{mn} = (R_{m\theta} q_m) \cdot (R_{n\theta} k_n) = q_m^\top R_{(n-m)\theta}\, k_n$$

    Both Q and K are rotated with ``apply_rope`` (the same ``base``, positions from 0); no 1/√d scaling. A
    ``start`` would change nothing: shifting every position by the same amount leaves every score as it is.

    Args:
        Q: queries, shape (..., seq, d) with d even.
        K: keys, the same shape as Q.
        base: as ``rope_frequencies``.

    Returns:
        Scores, shape (..., seq, seq): entry [m, n] is rotated query m dotted with rotated key n.

    Raises:
        ValueError: if Q and K differ in shape: the check given above the ``raise``; or as ``apply_rope``.

    See docs: chapter 12, step 12.5.
    """
    Q, K = _check_same_shape(Q, K)
    raise NotImplementedError("12.5 rope_scores: the raw scores of the rotated queries against the rotated keys (2 lines)")


def rope_attention(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, base: float = 10000.0
) -> tuple[np.ndarray, np.ndarray]:
    r"""Causal attention with rotary positions: rotate Q and K, leave V alone, then chapter 4's attention.

    $$\text{output} = \mathrm{softmax}\!\left(\frac{\text{RoPE}(Q)\,\text{RoPE}(K)^\top}{\sqrt{d}} + M\right) V$$

    M is the causal mask: 0 where key n ≤ query m, −∞ above the diagonal.

    The causal mask lets position m see positions 0 … m; positions count from 0 (a common shift would change
    no score). The values carry content, not position: rotating
    them would turn the output by angles that mean nothing to the next layer.

    Args:
        Q: queries, shape (seq, d) with d even.
        K: keys, shape (seq, d).
        V: values, shape (seq, d_v).
        base: as ``rope_frequencies``.

    Returns:
        (output, weights): output has shape (seq, d_v); weights has shape (seq, seq), zero above the diagonal,
        and each row sums to 1.

    Raises:
        ValueError: if Q and K differ in shape: the check given above the ``raise``; or as ``apply_rope``
            and chapter 4's attention (Q or K not 2-D, V with another number of rows than K: its given check).

    See docs: chapter 12, step 12.6.
    """
    Q, K = _check_same_shape(Q, K)
    raise NotImplementedError("12.6 rope_attention: chapter 4's causal attention with Q and K rotated and V not (2 lines)")


def rope_backward(dY: np.ndarray, base: float = 10000.0, start: int = 0) -> np.ndarray:
    r"""The gradient through ``apply_rope``, for its input X.

    The forward pass it reverses, pair by pair at position m:

    $$y_m = R_{(\text{start}+m)\theta}\, x_m, \qquad
      R_\phi = \begin{bmatrix} \cos\phi & -\sin\phi \\ \sin\phi & \cos\phi \end{bmatrix}$$

    Given dL/dY, it returns dL/dX: each pair of each position carried back through the rotation the
    forward pass applied to it.

    Args:
        dY: the gradient of the loss with respect to ``apply_rope(X, base, start)``, shape (..., seq, d) with d
            even.
        base: as ``rope_frequencies``; the same as the forward pass used.
        start: as ``rope_angles``; the same as the forward pass used.

    Returns:
        The gradient with respect to X, a new array of dY's shape, float64. dY is not modified.

    Raises:
        ValueError: as ``apply_rope`` (d odd: the message says "odd"); fewer than 2 dimensions, a start or a
            base that does not fit: the checks given above the ``raise``.

    See docs: chapter 12, step 12.7.
    """
    dY = _check_positions(dY, "dY")
    _check_whole(start, "start", 0)
    _check_base(base)
    raise NotImplementedError("12.7 rope_backward: dY carried back through each pair's fixed two-by-two matrix as through any linear layer, which is itself a rotation (2 lines)")


# -- input checks: the course's, given in the stubs (CONTRIBUTING.md, "The stub") -----------------------------
def _check_whole(value, name: str, smallest: int) -> None:
    """Refuse what is not a whole number at least ``smallest`` (a bool or a float is not one)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < smallest:
        raise ValueError(f"{name} must be a whole number ≥ {smallest}, got {value!r}")


def _check_base(base) -> None:
    """Refuse a base that is not a finite number greater than 1 (the frequencies must fall from pair to pair)."""
    if not np.isfinite(base) or base <= 1:
        raise ValueError(f"base must be a finite number greater than 1, got {base!r}")


def _check_positions(X, name: str) -> np.ndarray:
    """``X`` as a float64 array, after checking it has a position axis and a feature axis (..., seq, d)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim < 2:
        raise ValueError(f"{name} of shape {X.shape} needs at least 2 dimensions (..., seq, d)")
    return X


def _check_rotation(X, angles) -> tuple[np.ndarray, np.ndarray]:
    """(X, angles) as float64 arrays, after checking X is (..., seq, d) with d even and angles (seq, d/2)."""
    X, angles = _check_positions(X, "X"), np.asarray(angles, dtype=np.float64)
    if X.shape[-1] % 2:
        raise ValueError(f"the width d = {X.shape[-1]} is odd: RoPE rotates pairs of features, so d must be even")
    if angles.ndim != 2 or angles.shape[0] != X.shape[-2] or 2 * angles.shape[1] != X.shape[-1]:
        raise ValueError(f"angles of shape {angles.shape} must be (seq, d/2) for X of shape {X.shape}")
    return X, angles


def _check_same_shape(Q, K) -> tuple[np.ndarray, np.ndarray]:
    """(Q, K) as arrays, after checking they have one shape (the message names both)."""
    Q, K = np.asarray(Q), np.asarray(K)
    if Q.shape != K.shape:
        raise ValueError(f"queries Q {Q.shape} and keys K {K.shape} must have the same shape")
    return Q, K
