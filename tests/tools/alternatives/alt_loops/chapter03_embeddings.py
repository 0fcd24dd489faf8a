"""Chapter 3, written from the docstrings: rows copied and added one id at a time."""

import math
import numbers

import numpy as np

TOY_EMBEDDINGS = np.array(
    [
        [1.0, 0.0],  # A
        [0.0, 1.0],  # B
        [1.0, 1.0],  # C
        [0.0, 0.0],  # D
    ]
)


def _ids(ids: list[int], vocab: int) -> list[int]:
    """The ids as ints, checked one by one."""
    if np.ndim(ids) != 1:
        raise ValueError(f"ids must be a 1-D list of whole numbers, got ids = {ids!r}")
    out = []
    for i in list(ids):
        if isinstance(i, bool) or not isinstance(i, numbers.Integral):
            raise ValueError(f"ids must hold whole numbers; ids = {ids!r} holds {i!r}")
        if not 0 <= i < vocab:
            raise IndexError(f"id {i} is outside 0..{vocab - 1}")
        out.append(int(i))
    return out


def one_hot(ids: list[int], vocab_size: int) -> np.ndarray:
    """A 1 in each row's token column."""
    rows = _ids(ids, vocab_size)
    out = np.zeros((len(rows), vocab_size))
    for r, i in enumerate(rows):
        out[r, i] = 1.0
    return out


def embed(ids: list[int], table: np.ndarray) -> np.ndarray:
    """Row i is table[ids[i]], copied entry by entry."""
    table = np.asarray(table)
    if table.ndim != 2:
        raise ValueError(f"the table must be 2-D (V, d), got shape {table.shape}")
    rows = _ids(ids, table.shape[0])
    X = np.zeros((len(rows), table.shape[1]), dtype=np.result_type(table.dtype, np.float64))
    for r, i in enumerate(rows):
        for c in range(table.shape[1]):
            X[r, c] = table[i, c]
    return X


def embedding_backward(ids: list[int], d_X: np.ndarray, vocab_size: int) -> np.ndarray:
    """Each row of d_X added to its token's row."""
    rows = _ids(ids, vocab_size)
    d_X = np.asarray(d_X)
    if d_X.ndim != 2 or d_X.shape[0] != len(rows):
        raise ValueError(f"d_X has shape {d_X.shape}; it needs one row per id ({len(rows)})")
    d_table = np.zeros((vocab_size, d_X.shape[1]))
    for r, i in enumerate(rows):
        for c in range(d_X.shape[1]):
            d_table[i, c] += d_X[r, c]
    return d_table


def cosine_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """a·b / (|a| |b|), summed by hand."""
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim != 1 or b.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"cosine_similarity needs two 1-D vectors of one shape, got {a.shape} and {b.shape}")
    ab = aa = bb = 0.0
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        ab += x * y
        aa += x * x
        bb += y * y
    if aa == 0 or bb == 0:
        raise ValueError("a zero vector has no direction to compare")
    return max(-1.0, min(1.0, ab / (math.sqrt(aa) * math.sqrt(bb))))
