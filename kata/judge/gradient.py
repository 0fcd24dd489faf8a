"""Central differences: the one numerical gradient of the machinery (tests, snapshots, ``nox -s train``).

No pytest here: the training tool's child process uses it too.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def numerical_gradient(f: Callable[[np.ndarray], float], x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences of a scalar function, written here so tests never use the learner's version.

    Args:
        f: the scalar function; it is called with a copy of ``x`` with one entry moved by ``±eps``.
        x: where to take the gradient (never changed).
        eps: the step.

    Returns:
        The gradient, shaped like ``x``.
    """
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        old = x[i]
        x[i] = old + eps
        up = f(x.copy())
        x[i] = old - eps
        down = f(x.copy())
        x[i] = old
        grad[i] = (up - down) / (2 * eps)
    return grad
