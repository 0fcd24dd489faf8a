"""Chapter 3, written from the docstrings: one-hot products and np.add.at."""

import numpy as np

TOY_EMBEDDINGS = np.array(
    [
        [1.0, 0.0],  # A
        [0.0, 1.0],  # B
        [1.0, 1.0],  # C
        [0.0, 0.0],  # D
    ]
)


def _ids(ids: list[int], vocab: int) -> np.ndarray:
    arr = np.asarray(ids)
    if arr.ndim != 1 or (arr.size and (arr.dtype.kind not in "iu")):
        raise ValueError(f"ids is not a 1-D list of whole numbers: {ids!r}")
    arr = arr.astype(np.int64)
    bad = arr[(arr < 0) | (arr >= vocab)]
    if bad.size:
        raise IndexError(f"id {int(bad[0])} is out of range 0..{vocab - 1}")
    return arr


def one_hot(ids: list[int], vocab_size: int) -> np.ndarray:
    """Rows of the identity."""
    arr = _ids(ids, vocab_size)
    return (arr[:, None] == np.arange(vocab_size)[None, :]).astype(np.float64)


def embed(ids: list[int], table: np.ndarray) -> np.ndarray:
    """one_hot(ids) @ table, as einsum."""
    table = np.asarray(table)
    if table.ndim != 2:
        raise ValueError(f"table of shape {table.shape} is not 2-D")
    return np.einsum("sv,vd->sd", one_hot(ids, table.shape[0]), table)


def embedding_backward(ids: list[int], d_X: np.ndarray, vocab_size: int) -> np.ndarray:
    """one_hotᵀ d_X, as np.add.at."""
    arr = _ids(ids, vocab_size)
    d_X = np.asarray(d_X, dtype=np.float64)
    if d_X.ndim != 2 or len(d_X) != len(arr):
        raise ValueError(f"d_X {d_X.shape} must have one row for each of the {len(arr)} ids")
    d_table = np.zeros((vocab_size, d_X.shape[1]))
    np.add.at(d_table, arr, d_X)
    return d_table


def cosine_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """einsum dot over the two norms."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"shapes {a.shape} and {b.shape}: two 1-D vectors of one length are needed")
    na, nb = np.sqrt(np.einsum("i,i->", a, a)), np.sqrt(np.einsum("i,i->", b, b))
    if na == 0 or nb == 0:
        raise ValueError("cosine of a zero vector: it has no direction")
    return float(np.clip(np.einsum("i,i->", a, b) / (na * nb), -1.0, 1.0))
