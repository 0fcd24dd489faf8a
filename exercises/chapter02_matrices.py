"""Chapter 2: The Matrix Core — multiplication by hand, transposes, dot products, and their gradients.

Everything a transformer computes is built from matrix products. Here they are written out as loops,
so that every multiply-add is visible, together with the two rules that carry gradients back through a
product, and central differences to check any gradient numerically.

Types, as every docstring below uses them: an array is a NumPy array (a Python list where an array is
documented fails its checks, saying so); a float may be any NumPy float or a 0-d array.
"""

from collections.abc import Callable

import numpy as np


def _check_matrix(name: str, A) -> np.ndarray:
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got shape {A.shape}")
    return A


def matmul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    r"""Multiply two matrices with explicit loops.

    $$C_{ij} = \sum_k A_{ik} B_{kj}$$

    Args:
        A: shape (m, n).
        B: shape (n, p).

    Returns:
        C = AB, shape (m, p).

    Raises:
        ValueError: if A's columns and B's rows differ (the message names both shapes and says how many
            columns A has and how many rows B has: "A has 3 columns, B 4 rows"): yours to write. A or B not
            2-D is refused by the checks given above the ``raise``.

    See docs: chapter 2, steps 2.1 and 2.2.
    """
    A = _check_matrix("A", A)
    B = _check_matrix("B", B)
    raise NotImplementedError("2.1 matmul: the product AB by hand with entry ij the sum of row i of A times column j of B, refusing A's columns that do not match B's rows (9 lines)")


def transpose(A: np.ndarray) -> np.ndarray:
    r"""Swap rows and columns.

    $$(A^\top)_{ij} = A_{ji}$$

    Args:
        A: shape (m, n).

    Returns:
        Aᵀ, shape (n, m), a new array.

    Raises:
        ValueError: if A is not 2-D: the check given above the ``raise``.

    See docs: chapter 2, step 2.6.
    """
    A = _check_matrix("A", A)
    raise NotImplementedError("2.6 transpose: Aᵀ by hand, row i of A becoming column i (5 lines)")


def dot(a: np.ndarray, b: np.ndarray) -> float:
    r"""Dot product of two vectors: how aligned they are.

    $$a \cdot b = \sum_i a_i b_i$$

    Args:
        a: shape (n,).
        b: shape (n,).

    Returns:
        The dot product, a float.

    Raises:
        ValueError: if a and b are not 1-D vectors of the same length: the check given above the ``raise``.

    See docs: chapter 2, steps 2.3–2.5.
    """
    a, b = _check_vectors(a, b)
    raise NotImplementedError("2.3 dot: the sum of the pairwise products of the entries (4 lines)")


def matmul_backward(A: np.ndarray, B: np.ndarray, dC: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Carry the gradient of C = AB back to A and B.

    $$\frac{\partial L}{\partial A} = \frac{\partial L}{\partial C} B^\top, \qquad
    \frac{\partial L}{\partial B} = A^\top \frac{\partial L}{\partial C}$$

    Each gradient has the shape of the matrix it belongs to; that alone tells you where the transposes go.

    Args:
        A: shape (m, n).
        B: shape (n, p).
        dC: gradient of the loss with respect to C, shape (m, p).

    Returns:
        (dA, dB) with shapes (m, n) and (n, p).

    Raises:
        ValueError: if A, B or dC is not 2-D or the shapes do not fit together: the check given above the
            ``raise``, which hands you A, B and dC as float64 arrays.

    See docs: chapter 2, steps 2.7 and 2.8.
    """
    A, B, dC = _check_product(A, B, dC)
    raise NotImplementedError("2.7 matmul_backward: each factor's gradient is dC times the other factor transposed, on the side its shape asks for (3 lines)")


def numerical_gradient(f: Callable[[np.ndarray], float], X: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    r"""Estimate the gradient of a scalar function by central differences.

    $$\frac{\partial f}{\partial X_{ij}} \approx \frac{f(X + \epsilon E_{ij}) - f(X - \epsilon E_{ij})}{2\epsilon}$$

    Nudge one entry up and down, watch f, and divide; the error shrinks like ε². Later chapters check every
    hand-derived gradient this way.

    Args:
        f: a function of an array shaped like X, returning a float.
        X: the point, any shape, integers too (the nudges are taken in float64); it is not modified.
        eps: the nudge, greater than 0.

    Returns:
        The estimated gradient, same shape as X.

    Raises:
        ValueError: if eps is not positive: 0 and negative values are refused (the message names eps and its
            value): yours to write, eps is a step size and a central difference divides by 2 eps.

    See docs: chapter 2, step 2.9.
    """
    raise NotImplementedError("2.9 numerical_gradient: each entry's central difference (f at +eps − f at −eps) / 2 eps, with x given back unchanged (12 lines)")


def _check_vectors(a, b) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) as float64 arrays, after checking they are vectors of one length (the message names both shapes)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"dot needs two vectors of the same length, got shapes {a.shape} and {b.shape}")
    return a, b


def _check_product(A, B, dC) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A, B, dC) as float64 matrices, after checking that dC has the shape of C = AB."""
    A, B, dC = _check_matrix("A", A), _check_matrix("B", B), _check_matrix("dC", dC)
    if A.shape[1] != B.shape[0] or dC.shape != (A.shape[0], B.shape[1]):
        raise ValueError(f"matmul_backward: A {A.shape}, B {B.shape} and dC {dC.shape} do not fit C = AB")
    return A, B, dC
