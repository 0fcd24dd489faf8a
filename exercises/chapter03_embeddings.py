"""Chapter 3: Embeddings — from token ids to vectors, and gradients back to the table.

Tokens are symbols; networks need numbers. An embedding table holds one learned row per token, and
looking a token up is the same as multiplying its one-hot vector by the table. Training sends a
gradient back to exactly the rows that were used.

Types, as every docstring below uses them: an array is a NumPy array (a Python list where an array is
documented fails its checks, saying so); a float may be any NumPy float or a 0-d array.
"""

import numpy as np

TOY_EMBEDDINGS = np.array(
    [
        [1.0, 0.0],  # A
        [0.0, 1.0],  # B
        [1.0, 1.0],  # C
        [0.0, 0.0],  # D
    ]
)


def _check_ids(ids, vocab_size: int) -> np.ndarray:
    arr = _check_whole_ids(ids)
    bad = [int(i) for i in arr if not 0 <= i < vocab_size]
    if bad:
        raise IndexError(f"token ids {bad} are outside the table of {vocab_size} tokens (0..{vocab_size - 1})")
    return arr.astype(np.int64)


def one_hot(ids: list[int], vocab_size: int) -> np.ndarray:
    """One-hot rows: a 1 in the token's column, 0 elsewhere.

    Args:
        ids: token ids, length seq.
        vocab_size: number of tokens in the vocabulary, V.

    Returns:
        Shape (seq, V), float64.

    Raises:
        IndexError: if an id is outside 0..V−1 (negative ids too; the message names the id and the range,
            e.g. 0..3).
        ValueError: if ids is not a 1-D list of whole numbers (the message names ids).

    See docs: chapter 3, step 3.1.
    """
    arr = _check_ids(ids, vocab_size)  # noqa: F841 - yours to use
    raise NotImplementedError("3.1 one_hot: a zero matrix with one 1 per row (3 lines)")


def embed(ids: list[int], table: np.ndarray) -> np.ndarray:
    """Look up each token's row in the embedding table.

    The same rows as the product of ``one_hot(ids, V)`` with the table, without the multiplications.

    Args:
        ids: token ids, length seq.
        table: embedding table, shape (V, d).

    Returns:
        X, shape (seq, d): row i is ``table[ids[i]]``, a new array.

    Raises:
        IndexError: if an id is outside 0..V−1 — including −1, which NumPy would silently read as the
            last row (the message names the id and the range, e.g. 0..3): yours to write.
        ValueError: if the table is not 2-D or ids is not a 1-D list of whole numbers: the checks given
            above the ``raise``, which hand you the table as a float64 array and the ids as integers.

    See docs: chapter 3, steps 3.2 and 3.3.
    """
    table = _check_table(table)
    ids = _check_whole_ids(ids)
    raise NotImplementedError("3.2 embed: each id's row of the table, with ids outside the vocabulary refused by you (NumPy would accept −1) (5 lines)")


def embedding_backward(ids: list[int], d_X: np.ndarray, vocab_size: int) -> np.ndarray:
    """Send the gradient of the looked-up rows back to the table.

    Row ``ids[i]`` of the table receives ``d_X[i]``; a token used twice receives both gradients, added.

    Args:
        ids: token ids, length seq.
        d_X: gradient of the loss with respect to the embedded rows, shape (seq, d).
        vocab_size: number of rows in the table, V.

    Returns:
        d_table, shape (V, d); rows of unused tokens are 0.

    Raises:
        IndexError: if an id is outside 0..V−1: the check given above the ``raise``.
        ValueError: if d_X does not have one row per id, or ids is not a 1-D list of whole numbers: the
            checks given above the ``raise``, which hand you the ids as integers and d_X as float64.

    See docs: chapter 3, step 3.6.
    """
    arr = _check_ids(ids, vocab_size)  # noqa: F841 - yours to use
    d_X = _check_rows_per_id(d_X, len(arr))
    raise NotImplementedError("3.6 embedding_backward: the table's gradient, each token row the sum of the d_X rows of every position holding it (repeats add up) (3 lines)")


def cosine_similarity(a: np.ndarray, b: np.ndarray) -> float:
    r"""How closely two vectors point the same way, whatever their lengths.

    $$\cos(a, b) = \frac{a \cdot b}{\lVert a \rVert\,\lVert b \rVert}$$

    Args:
        a: shape (d,).
        b: shape (d,).

    Returns:
        A float in [−1, 1]: 1 same direction, 0 perpendicular, −1 opposite.

    Raises:
        ValueError: if a or b is not 1-D, they differ in shape, or either is all zeros (no direction to
            compare; the message says "zero"): the check given above the ``raise``.

    See docs: chapter 3, steps 3.4 and 3.5.
    """
    a, b = _check_vectors(a, b)
    raise NotImplementedError("3.4 cosine_similarity: dot over the product of the lengths (2 lines)")


# -- input checks: the course's, given in the stubs (CONTRIBUTING.md, "The stub") -----------------------------
def _check_whole_ids(ids) -> np.ndarray:
    """The ids as an int64 array, after checking they are a 1-D list of whole numbers (the message names ids)."""
    arr = np.asarray(ids)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise ValueError(f"token ids must be a 1-D list of whole numbers, got {ids!r}")
    return arr.astype(np.int64)


def _check_table(table) -> np.ndarray:
    """The table as a float64 array, after checking it is 2-D (V, d) (the message names its shape)."""
    table = np.asarray(table, dtype=np.float64)
    if table.ndim != 2:
        raise ValueError(f"the embedding table must be 2-D (V, d), got shape {table.shape}")
    return table


def _check_rows_per_id(d_X, n_ids: int) -> np.ndarray:
    """d_X as a float64 array, after checking it has one row per id (the message names its shape)."""
    d_X = np.asarray(d_X, dtype=np.float64)
    if d_X.ndim != 2 or d_X.shape[0] != n_ids:
        raise ValueError(f"d_X {d_X.shape} needs one row per id ({n_ids} ids)")
    return d_X


def _check_vectors(a, b) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) as float64 arrays, after checking they are nonzero vectors of one length (a mismatch names both)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"cosine_similarity needs two vectors of the same length, got {a.shape} and {b.shape}")
    if not (np.any(a) and np.any(b)):
        raise ValueError("cosine similarity of a zero vector is undefined: it has no direction")
    return a, b
