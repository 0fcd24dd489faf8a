"""Chapter 9, written from the docstrings: einsum layers and a cache object for the backward pass."""

import numpy as np

from .chapter02_matrices import _two_d
from .chapter04_attention import causal_mask, scaled_dot_product_attention


def self_attention(X: np.ndarray, WQ: np.ndarray, WK: np.ndarray, WV: np.ndarray) -> np.ndarray:
    """einsum projections, then chapter 4's causal attention."""
    X, WQ, WK, WV = _two_d(X=X, WQ=WQ, WK=WK, WV=WV)
    for name, W in (("WQ", WQ), ("WK", WK), ("WV", WV)):
        if len(W) != X.shape[1]:
            raise ValueError(f"{name} {W.shape} must have one row per column of X {X.shape}")
    Q, K, V = (np.einsum("sd,dk->sk", X, W) for W in (WQ, WK, WV))
    return scaled_dot_product_attention(Q, K, V, mask=causal_mask(len(X)))[0]


def linear(x: np.ndarray, W: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """einsum('si,io->so') + b."""
    x, W = _two_d(x=x, W=W)
    if x.shape[1] != len(W):
        raise ValueError(f"x {x.shape} @ W {W.shape} does not fit")
    y = np.einsum("si,io->so", x, W)
    if b is not None:
        b = np.asarray(b)
        if b.shape != (W.shape[1],):
            raise ValueError(f"b {b.shape} must be {(W.shape[1],)}")
        y = y + b
    return y


def relu(x: np.ndarray) -> np.ndarray:
    """np.where(x > 0, x, 0), in x's own float dtype."""
    x = np.asarray(x)
    return np.where(x > 0, x, np.zeros((), dtype=np.result_type(x.dtype, np.float16)))


def relu_backward(x: np.ndarray, d_out: np.ndarray) -> np.ndarray:
    """d_out * (x > 0)."""
    x, d_out = np.asarray(x), np.asarray(d_out)
    if x.shape != d_out.shape:
        raise ValueError(f"shapes differ: x {x.shape}, d_out {d_out.shape}")
    return np.where(x > 0, d_out, 0.0)


class _FFN:
    """The checked arguments of a feed-forward network and its forward intermediates."""

    def __init__(self, x, W1, W2, b1, b2) -> None:
        self.x, self.W1, self.W2 = _two_d(x=x, W1=W1, W2=W2)
        if self.x.shape[1] != len(self.W1) or self.W1.shape[1] != len(self.W2):
            raise ValueError(f"x {self.x.shape}, W1 {self.W1.shape} and W2 {self.W2.shape} do not chain")
        self.b1 = self._bias("b1", b1, self.W1.shape[1])
        self.b2 = self._bias("b2", b2, self.W2.shape[1])
        self.h = np.einsum("sm,mf->sf", self.x, self.W1) + self.b1
        self.a = relu(self.h)
        self.y = np.einsum("sf,fo->so", self.a, self.W2) + self.b2

    @staticmethod
    def _bias(name, b, width) -> np.ndarray:
        if b is None:
            return np.zeros(width)
        b = np.asarray(b)
        if b.shape != (width,):
            raise ValueError(f"{name} {b.shape} should be {(width,)}")
        return b

    def backward(self, d_out) -> tuple:
        (d_out,) = _two_d(d_out=d_out)
        if d_out.shape != self.y.shape:
            raise ValueError(f"d_out {d_out.shape} must match the output {self.y.shape}")
        dh = relu_backward(self.h, np.einsum("so,fo->sf", d_out, self.W2))
        return (np.einsum("sf,mf->sm", dh, self.W1), np.einsum("sm,sf->mf", self.x, dh),
                np.einsum("sf,so->fo", self.a, d_out), dh.sum(axis=0), d_out.sum(axis=0))


def feed_forward(x: np.ndarray, W1: np.ndarray, W2: np.ndarray, b1: np.ndarray | None = None,
                 b2: np.ndarray | None = None) -> np.ndarray:
    """The cache's output."""
    return _FFN(x, W1, W2, b1, b2).y


def feed_forward_backward(x: np.ndarray, W1: np.ndarray, W2: np.ndarray, b1: np.ndarray | None,
                          b2: np.ndarray | None, d_out: np.ndarray) -> tuple:
    """The cache's backward."""
    return _FFN(x, W1, W2, b1, b2).backward(d_out)


def _residual(x, W2) -> None:
    if np.ndim(W2) == 2 and np.ndim(x) == 2 and np.shape(W2)[1] != np.shape(x)[1]:
        raise ValueError(f"W2 {np.shape(W2)} outputs a width other than x's {np.shape(x)}")


def residual_feed_forward(x: np.ndarray, W1: np.ndarray, W2: np.ndarray, b1: np.ndarray | None = None,
                          b2: np.ndarray | None = None) -> np.ndarray:
    """x + FFN(x)."""
    _residual(x, W2)
    return np.asarray(x) + feed_forward(x, W1, W2, b1, b2)


def residual_feed_forward_backward(x: np.ndarray, W1: np.ndarray, W2: np.ndarray, b1: np.ndarray | None,
                                   b2: np.ndarray | None, d_out: np.ndarray) -> tuple:
    """The identity path added to dx."""
    _residual(x, W2)
    dx, *rest = feed_forward_backward(x, W1, W2, b1, b2, d_out)
    return (dx + np.asarray(d_out), *rest)
