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

Worksheet: this course's own, d = 4 (θ = 1 and 0.01), positions 0, 1, 2; every number is a cos or a sin
a calculator gives.

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
        ValueError: if d is not a positive whole number (the message names d and the value given), if d is
            odd, 1 included (the message says "odd" and names d), or if base is not a finite number greater
            than 1 (the message names base).

    See docs: chapter 12, step 12.1.
    """
    raise NotImplementedError("12.1 rope_frequencies: refuse a d that is not a positive even whole number or a bad base, then base ** (-2 * i / d) for i = 0 … d/2 − 1 (7 lines)")


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
        ValueError: if seq_len is not a whole number ≥ 0 (the message names seq_len), if start is negative or
            not a whole number (the message names start), or as ``rope_frequencies`` for d and base.

    See docs: chapter 12, step 12.2.
    """
    raise NotImplementedError("12.2 rope_angles: refuse a bad seq_len or start, then the outer product of the positions start … start + seq_len − 1 with rope_frequencies (5 lines)")


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
        ValueError: if X has fewer than 2 dimensions (the message names its shape), if d is odd (the
            message says "odd"), or if angles is not of shape (seq, d/2) (the message names both shapes).

    See docs: chapter 12, step 12.3.
    """
    raise NotImplementedError("12.3 rotate_pairs: check the shapes, take features 0::2 and 1::2, write x0·cos − x1·sin and x0·sin + x1·cos back into a new array (12 lines)")


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
        ValueError: if X has fewer than 2 dimensions (the message names its shape), if d is odd (the
            message says "odd"), if start is negative (the message names start), or as ``rope_angles``.

    See docs: chapter 12, step 12.4.
    """
    raise NotImplementedError("12.4 apply_rope: refuse X with fewer than 2 dims, then rotate_pairs(X, rope_angles(seq, d, base, start)) (4 lines)")


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
        ValueError: if Q and K differ in shape (the message names both shapes), or as ``apply_rope``.

    See docs: chapter 12, step 12.5.
    """
    raise NotImplementedError("12.5 rope_scores: check the shapes match, rotate Q and K with apply_rope, multiply by the rotated keys transposed (5 lines)")


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
        ValueError: if Q and K differ in shape (the message names both shapes), or as ``apply_rope`` and
            chapter 4's attention (Q or K not 2-D: the message names the shape; V with a different number of
            rows than K: the message names V's shape).

    See docs: chapter 12, step 12.6.
    """
    raise NotImplementedError("12.6 rope_attention: rotate Q and K (not V), then chapter 4's scaled_dot_product_attention with causal_mask (5 lines)")


def rope_backward(dY: np.ndarray, base: float = 10000.0, start: int = 0) -> np.ndarray:
    r"""The gradient through ``apply_rope``: turn every pair back by the same angle.

    $$\frac{\partial L}{\partial x_m} = R_{(\text{start}+m)\theta}^\top \frac{\partial L}{\partial y_m}
      = R_{-(\text{start}+m)\theta}\, \frac{\partial L}{\partial y_m}$$

    A rotation's transpose is its inverse, so the pair (g_0, g_1) at angle φ becomes
    (g_0 cos φ + g_1 sin φ, −g_0 sin φ + g_1 cos φ).

    Args:
        dY: the gradient of the loss with respect to ``apply_rope(X, base, start)``, shape (..., seq, d) with d
            even.
        base: as ``rope_frequencies``; the same as the forward pass used.
        start: as ``rope_angles``; the same as the forward pass used.

    Returns:
        The gradient with respect to X, a new array of dY's shape, float64. dY is not modified.

    Raises:
        ValueError: as ``apply_rope`` (fewer than 2 dimensions: the message names the shape; d odd: the
            message says "odd"; a negative start: the message names start).

    See docs: chapter 12, step 12.7.
    """
    raise NotImplementedError("12.7 rope_backward: like apply_rope, with every angle negated: the inverse rotation (4 lines)")
