"""Chapter 2, written from the docstrings: every entry computed by an explicit loop."""

from collections.abc import Callable

import numpy as np


def _matrix(M: np.ndarray, name: str) -> np.ndarray:
    M = np.asarray(M)
    if M.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got shape {M.shape}")
    return M


def matmul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """C[i, j] = sum over k of A[i, k] B[k, j]."""
    A, B = _matrix(A, "A"), _matrix(B, "B")
    m, n = A.shape
    n2, p = B.shape
    if n != n2:
        raise ValueError(f"A {A.shape} @ B {B.shape}: A has {n} columns, B {n2} rows")
    C = np.zeros((m, p))
    for i in range(m):
        for j in range(p):
            total = 0.0
            for k in range(n):
                total += float(A[i, k]) * float(B[k, j])
            C[i, j] = total
    return C


def transpose(A: np.ndarray) -> np.ndarray:
    """T[j, i] = A[i, j], in a new array."""
    A = _matrix(A, "A")
    m, n = A.shape
    T = np.empty((n, m), dtype=A.dtype)
    for i in range(m):
        for j in range(n):
            T[j, i] = A[i, j]
    return T


def dot(a: np.ndarray, b: np.ndarray) -> float:
    """Sum of products."""
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim != 1 or b.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"dot needs two 1-D vectors of one length, got shapes {a.shape} and {b.shape}")
    total = 0.0
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        total += x * y
    return float(total)


def matmul_backward(A: np.ndarray, B: np.ndarray, dC: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """dA = dC Bᵀ, dB = Aᵀ dC, by loops."""
    A, B, dC = _matrix(A, "A"), _matrix(B, "B"), _matrix(dC, "dC")
    m, n = A.shape
    if B.shape[0] != n or dC.shape != (m, B.shape[1]):
        raise ValueError(f"shapes do not fit: A {A.shape}, B {B.shape}, dC {dC.shape} (dC must be {(m, B.shape[1])})")
    p = B.shape[1]
    dA = np.zeros((m, n))
    dB = np.zeros((n, p))
    for i in range(m):
        for j in range(p):
            g = float(dC[i, j])
            for k in range(n):
                dA[i, k] += g * float(B[k, j])
                dB[k, j] += float(A[i, k]) * g
    return dA, dB


def numerical_gradient(f: Callable[[np.ndarray], float], X: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences, one entry at a time, on a float64 copy."""
    if not eps > 0:
        raise ValueError(f"eps must be positive, got eps = {eps}")
    point = np.array(X, dtype=np.float64)
    grad = np.zeros(point.shape)
    for index in np.ndindex(point.shape):
        up = point.copy()
        up[index] += eps
        down = point.copy()
        down[index] -= eps
        grad[index] = (float(f(up)) - float(f(down))) / (2 * eps)
    return grad
