"""Chapter 9: Feed-Forward Layers — ReLU, a two-layer network per position, and a residual connection.

Attention mixes information *between* positions; the feed-forward network then transforms each position
on its own: a linear layer widens it to d_ff features, ReLU zeroes the negative ones, and a second
linear layer brings it back. The residual connection adds the input back on, so the layer only has to
learn a correction, and gradients get a path that skips the layer entirely. Row-vector convention: one
row per position.

Worksheet: the book's Example 5 (input "A B", W_Q = W_K = W_V = 0.1·I, W1 = W2 = [[0.2, 0.1], [0.1, 0.2]]).

Types, as every docstring below uses them: an array is a NumPy array (a Python list where an array is
documented fails its checks, saying so); a float may be any NumPy float or a 0-d array.
"""

import numpy as np

from .chapter02_matrices import _check_matrix
from .chapter04_attention import causal_mask, scaled_dot_product_attention  # noqa: F401 - yours to use


def _check_ffn(x, W1, W2, b1, b2) -> tuple:
    """Validate the shapes of a feed-forward layer's input and parameters; return them as float64."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"x must be 2-D (seq, d_model); got shape {x.shape} (use x[None, :] for one row)")
    W1, W2 = _check_matrix("W1", W1), _check_matrix("W2", W2)
    if W1.shape[0] != x.shape[1]:
        raise ValueError(f"W1 {W1.shape} must have one row per input feature: x is {x.shape}")
    if W2.shape[0] != W1.shape[1]:
        raise ValueError(f"W2 {W2.shape} must have one row per hidden feature: W1 is {W1.shape}")
    if b1 is not None:
        b1 = np.asarray(b1, dtype=np.float64)
        if b1.shape != (W1.shape[1],):
            raise ValueError(f"b1 {b1.shape} must have shape ({W1.shape[1]},), one entry per column of W1 {W1.shape}")
    if b2 is not None:
        b2 = np.asarray(b2, dtype=np.float64)
        if b2.shape != (W2.shape[1],):
            raise ValueError(f"b2 {b2.shape} must have shape ({W2.shape[1]},), one entry per column of W2 {W2.shape}")
    return x, W1, W2, b1, b2


def self_attention(X: np.ndarray, WQ: np.ndarray, WK: np.ndarray, WV: np.ndarray) -> np.ndarray:
    r"""Causal self-attention of a sequence: the sublayer whose output feeds the feed-forward network.

    $$Q = X W_Q,\quad K = X W_K,\quad V = X W_V,\qquad
    \mathrm{output} = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}} + M\right) V$$

    with the causal mask M of chapter 4: position i sees positions 0…i only, so row 0 is V[0] exactly.

    Args:
        X: embeddings, shape (seq, d_model), one row per position.
        WQ: query projection, shape (d_model, d_k).
        WK: key projection, shape (d_model, d_k).
        WV: value projection, shape (d_model, d_v).

    Returns:
        Attention output, shape (seq, d_v): every row, not just the last.

    Raises:
        ValueError: if X or a projection is not 2-D, or a projection does not have one row per column of X:
            the checks given above the ``raise``.

    See docs: chapter 9, step 9.1.
    """
    X = _check_matrix("X", X)
    _check_projections(X, WQ, WK, WV)
    raise NotImplementedError("9.1 self_attention: chapter 4's causal attention on X's three projections (3 lines)")


def linear(x: np.ndarray, W: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    r"""A linear layer: every row times W, plus an optional bias.

    $$y = x W + b$$

    Args:
        x: input rows, shape (seq, d_in).
        W: weights, shape (d_in, d_out).
        b: optional bias, shape (d_out,), added to every row; None means no bias.

    Returns:
        Output rows, shape (seq, d_out).

    Raises:
        ValueError: if x or W is not 2-D, W does not have one row per column of x, or b is not (d_out,):
            the check given above the ``raise``, which hands you x, W and b as float64 arrays (b may stay
            None).

    See docs: chapter 9, step 9.2.
    """
    x, W, b = _check_linear(x, W, b)
    raise NotImplementedError("9.2 linear: x times W, plus b when one is given (4 lines)")


def relu(x: np.ndarray) -> np.ndarray:
    r"""Rectified linear unit, entry by entry: keep positives, replace negatives by 0.

    $$\mathrm{ReLU}(x) = \max(0, x)$$

    Args:
        x: any shape.

    Returns:
        Same shape as x, every entry max(0, x).

    See docs: chapter 9, steps 9.3 and 9.6.
    """
    raise NotImplementedError("9.3 relu: each entry, or 0 where it is negative (2 lines)")


def relu_backward(x: np.ndarray, d_out: np.ndarray) -> np.ndarray:
    r"""Carry a gradient back through ReLU, entry by entry.

    $$y = \mathrm{ReLU}(x) = \max(0, x): \quad \text{given } \frac{\partial L}{\partial y}, \text{ the gradient }
    \frac{\partial L}{\partial x}$$

    At exactly x = 0 ReLU has a kink and no derivative; this course takes its slope there as 0, the same
    choice as PyTorch and JAX.

    Args:
        x: the input ReLU saw (not its output), any shape.
        d_out: gradient of the loss with respect to ReLU's output, same shape as x.

    Returns:
        Gradient with respect to x, same shape as x.

    Raises:
        ValueError: if x and d_out have different shapes: the check given above the ``raise``.

    See docs: chapter 9, step 9.7.
    """
    x, d_out = _check_same_shape(x, d_out)
    raise NotImplementedError("9.7 relu_backward: the gradient that arrived times ReLU's slope at each entry of x (the slope at exactly 0 is the course's choice) (1 line)")


def feed_forward(
    x: np.ndarray, W1: np.ndarray, W2: np.ndarray, b1: np.ndarray | None = None, b2: np.ndarray | None = None
) -> np.ndarray:
    r"""Position-wise feed-forward network: widen, ReLU, project back.

    $$\mathrm{FFN}(x) = \mathrm{ReLU}(x W_1 + b_1)\, W_2 + b_2$$

    Every row (position) is transformed on its own; no information moves between rows.

    Args:
        x: input rows, shape (seq, d_model).
        W1: first layer, shape (d_model, d_ff).
        W2: second layer, shape (d_ff, d_out); d_out = d_model when a residual follows.
        b1: optional bias of the first layer, shape (d_ff,); None means none.
        b2: optional bias of the second layer, shape (d_out,); None means none.

    Returns:
        Output rows, shape (seq, d_out).

    Raises:
        ValueError: if a shape does not fit: the check given above the ``raise``, which hands you x, W1, W2,
            b1 and b2 as float64 arrays.

    See docs: chapter 9, step 9.4.
    """
    x, W1, W2, b1, b2 = _check_ffn(x, W1, W2, b1, b2)
    raise NotImplementedError("9.4 feed_forward: the two-layer network with a ReLU between its layers (2 lines)")


def feed_forward_backward(
    x: np.ndarray,
    W1: np.ndarray,
    W2: np.ndarray,
    b1: np.ndarray | None,
    b2: np.ndarray | None,
    d_out: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""Gradients of the feed-forward network, for its input and every parameter.

    The forward pass it reverses:

    $$h = x W_1 + b_1, \quad a = \mathrm{ReLU}(h), \quad y = a W_2 + b_2$$

    Given dL/dy, it returns the gradient of the loss with respect to x and to each parameter, each the
    shape of what it belongs to; a bias was added to every row.

    Args:
        x: the input of the forward pass, shape (seq, d_model).
        W1: first layer, shape (d_model, d_ff).
        W2: second layer, shape (d_ff, d_out).
        b1: bias of the first layer, shape (d_ff,), or None (no bias).
        b2: bias of the second layer, shape (d_out,), or None (no bias).
        d_out: gradient of the loss with respect to the output, shape (seq, d_out).

    Returns:
        (dx, dW1, dW2, db1, db2), in the order of the arguments: dx (seq, d_model), dW1 (d_model, d_ff),
        dW2 (d_ff, d_out), db1 (d_ff,), db2 (d_out,). db1 and db2 are returned even when the bias is None:
        they are the gradients a zero bias would receive.

    Raises:
        ValueError: if a shape does not fit, d_out and the biases included: the checks given above the
            ``raise``, as ``feed_forward``.

    See docs: chapter 9, steps 9.8 and 9.9.
    """
    x, W1, W2, b1, b2 = _check_ffn(x, W1, W2, b1, b2)
    d_out = _check_d_out(d_out, (x.shape[0], W2.shape[1]))
    raise NotImplementedError("9.8 feed_forward_backward: the gradients of x and of every weight and bias by the chain rule, h and its ReLU recomputed from x (8 lines)")


def residual_feed_forward(
    x: np.ndarray, W1: np.ndarray, W2: np.ndarray, b1: np.ndarray | None = None, b2: np.ndarray | None = None
) -> np.ndarray:
    r"""The feed-forward network with a residual connection: the input plus its correction.

    $$y = x + \mathrm{FFN}(x)$$

    Args:
        x: input rows, shape (seq, d_model).
        W1: first layer, shape (d_model, d_ff).
        W2: second layer, shape (d_ff, d_model): the output must be as wide as the input to be added.
        b1: optional bias of the first layer, shape (d_ff,).
        b2: optional bias of the second layer, shape (d_model,).

    Returns:
        Output rows, shape (seq, d_model).

    Raises:
        ValueError: if W2's output width differs from x's (the message names both shapes): yours to write,
            the residual adds the two. Every other shape is checked by the check given above the ``raise``.

    See docs: chapter 9, step 9.5.
    """
    x, W1, W2, b1, b2 = _check_ffn(x, W1, W2, b1, b2)
    raise NotImplementedError("9.5 residual_feed_forward: x plus its feed-forward (2 lines plus a width check)")


def residual_feed_forward_backward(
    x: np.ndarray,
    W1: np.ndarray,
    W2: np.ndarray,
    b1: np.ndarray | None,
    b2: np.ndarray | None,
    d_out: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""Gradients of the feed-forward network with its residual connection, for its input and every parameter.

    $$y = x + \mathrm{FFN}(x): \quad \text{given } \frac{\partial L}{\partial y}, \text{ the gradients of }
    x, W_1, W_2, b_1, b_2$$

    x reaches y along two paths, directly and through the FFN.

    Args:
        x: the input of the forward pass, shape (seq, d_model).
        W1: first layer, shape (d_model, d_ff).
        W2: second layer, shape (d_ff, d_model).
        b1: bias of the first layer, shape (d_ff,), or None.
        b2: bias of the second layer, shape (d_model,), or None.
        d_out: gradient of the loss with respect to y, shape (seq, d_model).

    Returns:
        (dx, dW1, dW2, db1, db2), shaped as in ``feed_forward_backward``.

    Raises:
        ValueError: if W2's output width differs from x's (as ``residual_feed_forward``), or any other shape
            does not fit (as ``feed_forward_backward``): the checks given above the ``raise``.

    See docs: chapter 9, step 9.10.
    """
    x, W1, W2, b1, b2 = _check_ffn(x, W1, W2, b1, b2)
    _check_residual(x, W2)
    raise NotImplementedError("9.10 residual_feed_forward_backward: the FFN's gradients, and the chain rule for an input that reaches the output along two paths (3 lines)")


# -- input checks: the course's, given in the stubs (CONTRIBUTING.md, "The stub") -----------------------------
def _check_projections(X: np.ndarray, WQ, WK, WV) -> None:
    """WQ, WK and WV each 2-D with one row per column of X (the message names the projection and both shapes)."""
    for name, W in (("WQ", WQ), ("WK", WK), ("WV", WV)):
        W = _check_matrix(name, W)
        if W.shape[0] != X.shape[1]:
            raise ValueError(f"{name} {W.shape} must have one row per column of X {X.shape}")


def _check_linear(x, W, b) -> tuple:
    """(x, W, b) as float64 arrays (b None stays None), after checking that they fit one another."""
    x, W = _check_matrix("x", x), _check_matrix("W", W)
    if W.shape[0] != x.shape[1]:
        raise ValueError(f"W {W.shape} must have one row per column of x {x.shape}")
    if b is not None:
        b = np.asarray(b, dtype=np.float64)
        if b.shape != (W.shape[1],):
            raise ValueError(f"b {b.shape} must have shape ({W.shape[1]},), one entry per column of W {W.shape}")
    return x, W, b


def _check_same_shape(x, d_out) -> tuple:
    """(x, d_out) as float64 arrays, after checking they have one shape (the message names both)."""
    x, d_out = np.asarray(x, dtype=np.float64), np.asarray(d_out, dtype=np.float64)
    if x.shape != d_out.shape:
        raise ValueError(f"x {x.shape} and d_out {d_out.shape} must have the same shape")
    return x, d_out


def _check_d_out(d_out, shape: tuple) -> np.ndarray:
    """d_out as a float64 array, after checking it has the output's shape (the message names both shapes)."""
    d_out = np.asarray(d_out, dtype=np.float64)
    if d_out.shape != tuple(shape):
        raise ValueError(f"d_out {d_out.shape} must have the output's shape {tuple(shape)}")
    return d_out


def _check_residual(x: np.ndarray, W2: np.ndarray) -> None:
    """The FFN maps back to x's width, so the residual can add the two (the message names both shapes)."""
    if W2.shape[1] != x.shape[1]:
        raise ValueError(f"the residual adds x {x.shape} to the FFN's output: W2 {W2.shape} must map back to "
                         f"{x.shape[1]} features")
