"""Chapter 9, written from the docstrings: rows transformed one at a time, shapes checked one by one."""

import numpy as np

from .chapter04_attention import causal_mask, scaled_dot_product_attention


def _matrix(name: str, M) -> np.ndarray:
    M = np.asarray(M, dtype=np.float64)
    if M.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {M.shape}")
    return M


def self_attention(X: np.ndarray, WQ: np.ndarray, WK: np.ndarray, WV: np.ndarray) -> np.ndarray:
    """Causal attention of X's projections."""
    X = _matrix("X", X)
    projected = []
    for name, W in (("WQ", WQ), ("WK", WK), ("WV", WV)):
        W = _matrix(name, W)
        if W.shape[0] != X.shape[1]:
            raise ValueError(f"X {X.shape} and {name} {W.shape}: {name} needs one row per column of X")
        projected.append(linear(X, W))
    Q, K, V = projected
    output, _ = scaled_dot_product_attention(Q, K, V, mask=causal_mask(X.shape[0]))
    return output


def linear(x: np.ndarray, W: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """Each row times W, plus b."""
    x, W = _matrix("x", x), _matrix("W", W)
    if W.shape[0] != x.shape[1]:
        raise ValueError(f"x {x.shape} and W {W.shape} do not fit: W needs {x.shape[1]} rows")
    if b is not None:
        b = np.asarray(b, dtype=np.float64)
        if b.shape != (W.shape[1],):
            raise ValueError(f"b has shape {b.shape}; it should be {(W.shape[1],)} for W {W.shape}")
    out = np.zeros((x.shape[0], W.shape[1]))
    for r in range(x.shape[0]):
        for c in range(W.shape[1]):
            out[r, c] = sum(x[r, k] * W[k, c] for k in range(x.shape[1])) + (b[c] if b is not None else 0.0)
    return out


def relu(x: np.ndarray) -> np.ndarray:
    """max(0, x) entry by entry."""
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros(x.shape)
    for index in np.ndindex(x.shape):
        out[index] = x[index] if x[index] > 0 else 0.0
    return out


def relu_backward(x: np.ndarray, d_out: np.ndarray) -> np.ndarray:
    """d_out where x > 0, else 0."""
    x, d_out = np.asarray(x, dtype=np.float64), np.asarray(d_out, dtype=np.float64)
    if x.shape != d_out.shape:
        raise ValueError(f"x {x.shape} and d_out {d_out.shape} must have one shape")
    out = np.zeros(x.shape)
    for index in np.ndindex(x.shape):
        if x[index] > 0:
            out[index] = d_out[index]
    return out


def _check_ffn(x, W1, W2, b1, b2) -> tuple:
    x, W1, W2 = _matrix("x", x), _matrix("W1", W1), _matrix("W2", W2)
    if W1.shape[0] != x.shape[1]:
        raise ValueError(f"x {x.shape} and W1 {W1.shape} do not fit")
    if W2.shape[0] != W1.shape[1]:
        raise ValueError(f"W1 {W1.shape} and W2 {W2.shape} do not fit")
    biases = []
    for name, b, width in (("b1", b1, W1.shape[1]), ("b2", b2, W2.shape[1])):
        if b is not None:
            b = np.asarray(b, dtype=np.float64)
            if b.shape != (width,):
                raise ValueError(f"{name} has shape {b.shape}; it should be {(width,)}")
        biases.append(b)
    return x, W1, W2, biases[0], biases[1]


def feed_forward(x: np.ndarray, W1: np.ndarray, W2: np.ndarray, b1: np.ndarray | None = None,
                 b2: np.ndarray | None = None) -> np.ndarray:
    """ReLU(x W1 + b1) W2 + b2."""
    x, W1, W2, b1, b2 = _check_ffn(x, W1, W2, b1, b2)
    return linear(relu(linear(x, W1, b1)), W2, b2)


def feed_forward_backward(x: np.ndarray, W1: np.ndarray, W2: np.ndarray, b1: np.ndarray | None,
                          b2: np.ndarray | None, d_out: np.ndarray) -> tuple:
    """Back through the second layer, the ReLU and the first layer."""
    x, W1, W2, b1, b2 = _check_ffn(x, W1, W2, b1, b2)
    d_out = _matrix("d_out", d_out)
    if d_out.shape != (x.shape[0], W2.shape[1]):
        raise ValueError(f"d_out has shape {d_out.shape}; the output is {(x.shape[0], W2.shape[1])}")
    h = linear(x, W1, b1)
    a = relu(h)
    dW2 = linear(a.T, d_out)
    db2 = np.array([sum(d_out[r, c] for r in range(d_out.shape[0])) for c in range(d_out.shape[1])])
    dh = relu_backward(h, linear(d_out, W2.T))
    dW1 = linear(x.T, dh)
    db1 = np.array([sum(dh[r, c] for r in range(dh.shape[0])) for c in range(dh.shape[1])])
    return linear(dh, W1.T), dW1, dW2, db1, db2


def residual_feed_forward(x: np.ndarray, W1: np.ndarray, W2: np.ndarray, b1: np.ndarray | None = None,
                          b2: np.ndarray | None = None) -> np.ndarray:
    """x + FFN(x)."""
    x = _matrix("x", x)
    if np.ndim(W2) == 2 and np.shape(W2)[1] != x.shape[1]:
        raise ValueError(f"W2 {np.shape(W2)} gives rows {np.shape(W2)[1]} wide; x {x.shape} is {x.shape[1]} wide")
    return x + feed_forward(x, W1, W2, b1, b2)


def residual_feed_forward_backward(x: np.ndarray, W1: np.ndarray, W2: np.ndarray, b1: np.ndarray | None,
                                   b2: np.ndarray | None, d_out: np.ndarray) -> tuple:
    """The FFN's gradients, d_out added to dx."""
    x = _matrix("x", x)
    if np.ndim(W2) == 2 and np.shape(W2)[1] != x.shape[1]:
        raise ValueError(f"W2 {np.shape(W2)} does not give rows as wide as x {x.shape}")
    dx, dW1, dW2, db1, db2 = feed_forward_backward(x, W1, W2, b1, b2, d_out)
    return dx + np.asarray(d_out, dtype=np.float64), dW1, dW2, db1, db2
