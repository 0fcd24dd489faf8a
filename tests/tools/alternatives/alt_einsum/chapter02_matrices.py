"""Chapter 2, written from the docstrings: einsum, and inputs kept in their dtype where allowed."""

from collections.abc import Callable

import numpy as np


def _two_d(**arrays: np.ndarray) -> list[np.ndarray]:
    out = []
    for name, value in arrays.items():
        value = np.asarray(value)
        if value.ndim != 2:
            raise ValueError(f"{name} has shape {value.shape}; it must be 2-D")
        out.append(value)
    return out


def matmul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """einsum('ik,kj->ij')."""
    A, B = _two_d(A=A, B=B)
    if A.shape[1] != B.shape[0]:
        raise ValueError(f"cannot multiply {A.shape} by {B.shape}: A has {A.shape[1]} columns, B {B.shape[0]} rows")
    return np.einsum("ik,kj->ij", A, B)


def transpose(A: np.ndarray) -> np.ndarray:
    """einsum('ij->ji'), copied so that it is a new array."""
    (A,) = _two_d(A=A)
    return np.einsum("ij->ji", A).copy()


def dot(a: np.ndarray, b: np.ndarray) -> float:
    """einsum('i,i->')."""
    a, b = np.asarray(a), np.asarray(b)
    if not (a.ndim == b.ndim == 1 and len(a) == len(b)):
        raise ValueError(f"shapes {a.shape} and {b.shape} are not two 1-D vectors of the same length")
    return float(np.einsum("i,i->", a, b))


def matmul_backward(A: np.ndarray, B: np.ndarray, dC: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """dA = einsum('ij,kj->ik', dC, B), dB = einsum('ik,ij->kj', A, dC)."""
    A, B, dC = _two_d(A=A, B=B, dC=dC)
    if A.shape[1] != B.shape[0] or dC.shape != (A.shape[0], B.shape[1]):
        raise ValueError(f"A {A.shape}, B {B.shape} and dC {dC.shape} do not fit together")
    return np.einsum("ij,kj->ik", dC, B), np.einsum("ik,ij->kj", A, dC)


def numerical_gradient(f: Callable[[np.ndarray], float], X: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences through a flat view of one float64 copy, restored after each nudge."""
    if eps <= 0:
        raise ValueError(f"eps = {eps} is not positive")
    x = np.array(X, dtype=np.float64)
    flat = x.reshape(-1)
    grad = np.empty_like(flat)
    for k in range(flat.size):
        keep = flat[k]
        flat[k] = keep + eps
        high = float(f(x))
        flat[k] = keep - eps
        low = float(f(x))
        flat[k] = keep
        grad[k] = (high - low) / (2 * eps)
    return grad.reshape(x.shape)
