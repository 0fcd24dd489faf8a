"""Chapter 4: Attention Intuition — scores, softmax, masks, and scaled dot-product attention.

Every position asks "which positions hold what I need?". Its query is dotted with every key (how well
they match), the scores are scaled by 1/√d_k, softmax turns them into weights that sum to 1, and the
output is the weighted sum of the values. Row-vector convention: one row per position.

Worksheet: the book's Example 1, steps 3–5 (input "A B", W_Q = W_K = W_V = 0.1·I).

Types, as every docstring below uses them: an array is a NumPy array (a Python list where an array is
documented fails its checks, saying so); a float may be any NumPy float or a 0-d array.
"""

import numpy as np


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    r"""Turn scores into probabilities along ``axis``, stably.

    $$\mathrm{softmax}(x)_i = \frac{e^{x_i - \max_j x_j}}{\sum_k e^{x_k - \max_j x_j}}$$

    Subtracting the maximum first changes nothing mathematically (it cancels) but keeps ``exp`` from
    overflowing: ``softmax([1000, 1001])`` must be ``[0.2689, 0.7311]``, not ``nan``. Entries of
    ``-inf`` (masked positions) get probability 0.

    Args:
        x: scores, any shape with at least one entry along ``axis``.
        axis: the axis that sums to 1 (default: the last, one distribution per row).

    Returns:
        Probabilities, same shape as ``x``; every slice along ``axis`` is positive where ``x`` is finite
        and sums to 1.

    Raises:
        ValueError: if ``x`` is empty along ``axis``, or a slice along it is entirely ``-inf`` (the message
            says "-inf": nothing is left to normalise): the check given above the ``raise``.

    See docs: chapter 4, step 4.3.
    """
    x = _check_scores(x, axis)
    raise NotImplementedError("4.3 softmax: the probabilities along axis, safe for scores of 1000 (3 lines)")


def raw_scores(Q: np.ndarray, K: np.ndarray) -> np.ndarray:
    r"""Dot every query with every key, before any scaling.

    $$S_{ij} = q_i \cdot k_j \quad\text{i.e.}\quad S = Q K^\top$$

    Args:
        Q: queries, shape (seq_q, d_k).
        K: keys, shape (seq_k, d_k).

    Returns:
        Raw scores, shape (seq_q, seq_k); row i holds query i against every key.

    Raises:
        ValueError: if Q or K is not 2-D, or their widths d_k differ: the check given above the ``raise``.

    See docs: chapter 4, step 4.1.
    """
    Q, K = _check_queries_and_keys(Q, K)
    raise NotImplementedError("4.1 raw_scores: every query dotted with every key, Q Kᵀ (1 line)")


def attention_scores(Q: np.ndarray, K: np.ndarray) -> np.ndarray:
    r"""Scaled scores: raw scores divided by the square root of the key width.

    $$S = \frac{Q K^\top}{\sqrt{d_k}}$$

    Without the scaling, dot products grow with d_k and softmax saturates.

    Args:
        Q: queries, shape (seq_q, d_k).
        K: keys, shape (seq_k, d_k).

    Returns:
        Scaled scores, shape (seq_q, seq_k).

    Raises:
        ValueError: if the shapes do not fit (as ``raw_scores``): the check given above the ``raise``.

    See docs: chapter 4, step 4.2.
    """
    _check_queries_and_keys(Q, K)
    raise NotImplementedError("4.2 attention_scores: the raw scores divided by √d_k, d_k being the keys' width (2 lines)")


def causal_mask(n: int) -> np.ndarray:
    """Which positions each position may attend to when it must not look ahead.

    Args:
        n: sequence length, at least 1.

    Returns:
        Boolean array, shape (n, n): entry [i, j] is True when j <= i (position i may see position j).

    Raises:
        ValueError: if n is not a positive whole number (0, −1, 2.5, 2.0, True): the check given above the
            ``raise``.

    See docs: chapter 4, step 4.5.
    """
    _check_positions(n)
    raise NotImplementedError("4.5 causal_mask: a boolean lower triangle, True on and below the diagonal (1 line)")


def scaled_dot_product_attention(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    r"""Attention: each query's softmax-weighted average of the values.

    $$\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V$$

    Where ``mask`` is False, the score is replaced by −∞ before the softmax, so that position gets
    weight 0.

    Args:
        Q: queries, shape (seq_q, d_k).
        K: keys, shape (seq_k, d_k).
        V: values, shape (seq_k, d_v).
        mask: optional booleans, shape (seq_q, seq_k); True where query i may attend to key j.

    Returns:
        (output, weights): output has shape (seq_q, d_v); weights has shape (seq_q, seq_k) and each row
        sums to 1.

    Raises:
        ValueError: if Q and K do not fit (as ``raw_scores``), V has another number of rows than K, the mask
            has another shape than the scores, or a mask row allows nothing (the message says "mask" and
            names every such row, e.g. "row 0": that query would attend to nothing): the check given above
            the ``raise``, which hands you V as a float64 array and the mask as booleans (or None).

    See docs: chapter 4, steps 4.3, 4.4 and 4.6.
    """
    V, mask = _check_attention_inputs(Q, K, V, mask)
    raise NotImplementedError("4.4/4.6 scaled_dot_product_attention: each row's weighted sum of the rows of V, its weights the softmax of the scaled scores with −∞ where the mask is False (5 lines)")


# -- input checks: the course's, given in the stubs (CONTRIBUTING.md, "The stub") -----------------------------
def _check_scores(x, axis: int) -> np.ndarray:
    """``x`` as a float64 array, after checking every slice along ``axis`` has a score that is not -inf."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0 or x.shape[axis] == 0:
        raise ValueError(f"softmax needs at least one score along axis {axis}; got shape {x.shape}")
    if np.any(np.isneginf(np.max(x, axis=axis))):  # a slice whose largest score is -inf is all -inf
        raise ValueError("softmax: a slice is entirely -inf (every position masked), nothing to normalise")
    return x


def _check_queries_and_keys(Q, K) -> tuple[np.ndarray, np.ndarray]:
    """(Q, K) as float64 arrays, after checking they are 2-D, of one width d_k (the message names both shapes)."""
    Q, K = np.asarray(Q, dtype=np.float64), np.asarray(K, dtype=np.float64)
    if Q.ndim != 2 or K.ndim != 2 or Q.shape[1] != K.shape[1]:
        raise ValueError(f"queries Q {Q.shape} and keys K {K.shape} must be 2-D with the same width d_k")
    return Q, K


def _check_positions(n) -> None:
    """The number of positions n, a whole number ≥ 1 (a bool or a float such as 2.0 is refused)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"causal_mask needs a positive whole number of positions, got {n!r}")


def _check_attention_inputs(Q, K, V, mask) -> tuple:
    """(V as float64, mask as booleans or None), after checking Q, K, V and the mask fit one another.

    A mask row with no True entry is refused too: that query would attend to nothing.
    """
    _check_queries_and_keys(Q, K)
    scores = (np.shape(Q)[0], np.shape(K)[0])  # (seq_q, seq_k)
    V = np.asarray(V, dtype=np.float64)
    if V.ndim != 2 or V.shape[0] != scores[1]:
        raise ValueError(f"values V {V.shape} need one row per key; K has {scores[1]} rows")
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != scores:
            raise ValueError(f"mask {mask.shape} must have the scores' shape {scores}")
        empty = np.flatnonzero(~mask.any(axis=-1))  # rows where the query may see no key at all
        if empty.size:
            raise ValueError(f"mask: row {', '.join(map(str, empty))} allows no position: that query would "
                             "attend to nothing")
    return V, mask
