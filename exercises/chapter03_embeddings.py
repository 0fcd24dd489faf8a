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
    raise NotImplementedError("3.1 one_hot: check the ids, then a zero matrix with one 1 per row (4 lines)")


def embed(ids: list[int], table: np.ndarray) -> np.ndarray:
    """Look up each token's row in the embedding table.

    Equivalent to ``one_hot(ids, V) @ table``, without the multiplications.

    Args:
        ids: token ids, length seq.
        table: embedding table, shape (V, d).

    Returns:
        X, shape (seq, d): row i is ``table[ids[i]]``, a new array.

    Raises:
        IndexError: if an id is outside 0..V−1 — including −1, which NumPy would silently read as the
            last row (the message names the id and the range, e.g. 0..3).
        ValueError: if the table is not 2-D (the message names its shape), or ids is not a 1-D list of whole
            numbers (the message names ids).

    See docs: chapter 3, steps 3.2 and 3.3.
    """
    raise NotImplementedError("3.2 embed: check the ids yourself (NumPy would accept −1), then table[ids] (4 lines)")


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
        IndexError: if an id is outside 0..V−1 (the message names the id and the range, e.g. 0..3).
        ValueError: if d_X does not have one row per id (the message names d_X's shape), or ids is not a 1-D
            list of whole numbers (the message names ids).

    See docs: chapter 3, step 3.6.
    """
    raise NotImplementedError("3.6 embedding_backward: add each d_X row into its token row; repeats must add up (6 lines)")


def cosine_similarity(a: np.ndarray, b: np.ndarray) -> float:
    r"""How closely two vectors point the same way, whatever their lengths.

    $$\cos(a, b) = \frac{a \cdot b}{\lVert a \rVert\,\lVert b \rVert}$$

    Args:
        a: shape (d,).
        b: shape (d,).

    Returns:
        A float in [−1, 1]: 1 same direction, 0 perpendicular, −1 opposite.

    Raises:
        ValueError: if a or b is not 1-D or their shapes differ (the message names both shapes), or either
            vector is all zeros (no direction to compare; the message says "zero").

    See docs: chapter 3, steps 3.4 and 3.5.
    """
    raise NotImplementedError("3.4 cosine_similarity: dot over the product of the lengths; refuse zero vectors (7 lines)")
