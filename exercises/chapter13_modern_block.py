"""Chapter 13: The Modern Block — RMSNorm, SiLU and SwiGLU, and the pre-norm block with rotary attention.

The block today's open models repeat dozens of times. Chapter 10's block normalised with LayerNorm and
fed a ReLU network; this one swaps in the two pieces those models use instead. **RMSNorm** divides each
row by its root mean square and multiplies by a learned gain ``g``: no mean subtracted, no shift added.
**SwiGLU** is a feed-forward layer with two input projections: one goes through SiLU, x·σ(x), and
*gates* the other entry by entry before the output projection. Every function that feeds a backward
pass returns ``(output, cache)``; its backward takes the cache back and returns the gradients. Row-vector
convention throughout: one row per position, ``x @ W``.

Worksheet: this course's own; see docs/chapters/13-modern-block.md.

Types, as every docstring below uses them: an array is a NumPy array (a Python list where an array is
documented fails its checks, saying so); a float may be any NumPy float or a 0-d array.
"""

import numpy as np


def rms_norm(x: np.ndarray, g: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    r"""Divide every row by its root mean square, then scale each feature by its gain g.

    $$\mathrm{RMSNorm}(x) = g \odot \frac{x}{\sqrt{\frac{1}{d}\sum_i x_i^2 + \epsilon}}$$

    Unlike LayerNorm, nothing is subtracted first (a row keeps its mean) and there is no shift β.

    Args:
        x: activations, shape (..., d_model); normalised over the last axis, each row on its own.
        g: gains, shape (d_model,).
        eps: added to the mean square, inside the square root, so a row of zeros does not divide by zero.

    Returns:
        Array of the shape of x.

    Raises:
        ValueError: if x has no feature axis, or an empty one (the message says "feature axis"), or g does
            not have shape (d_model,) (the message names ``g`` and its shape).

    See docs: chapter 13, steps 13.1 and 13.2.
    """
    raise NotImplementedError("13.1 rms_norm: g * x / sqrt(mean of x² over the last axis + eps); nothing subtracted (3 lines)")


def rms_norm_backward(
    x: np.ndarray, g: np.ndarray, d_out: np.ndarray, eps: float = 1e-6
) -> tuple[np.ndarray, np.ndarray]:
    r"""Gradients of a loss through ``rms_norm``, given the gradient of its output.

    With $r = \sqrt{\overline{x^2} + \epsilon}$, $\hat x = x / r$ and $u = d_{out} \odot g$ (per row):

    $$\frac{\partial L}{\partial x} = \frac{1}{r}\left(u - \hat x\, \overline{u \odot \hat x}\right),\qquad
      \frac{\partial L}{\partial g} = \sum_{\text{rows}} d_{out} \odot \hat x$$

    (a bar is the mean over the row's d features). The subtracted term is there because every input
    also moves its row's root mean square r; there is no mean term, since no mean was subtracted.

    Args:
        x: the input that went into ``rms_norm``, shape (..., d_model).
        g: its gains, shape (d_model,).
        d_out: gradient of the loss with respect to the output, shape of x.
        eps: the same eps as the forward pass.

    Returns:
        (dx, dg): dx has the shape of x; dg has shape (d_model,), summed over every row.

    Raises:
        ValueError: if x has no feature axis (as ``rms_norm``), g does not have shape (d_model,) or d_out
            does not have the shape of x (the message names ``g`` or ``d_out`` and the shapes).

    See docs: chapter 13, step 13.3.
    """
    raise NotImplementedError("13.3 rms_norm_backward: r, x_hat = x / r, dg = Σ_rows d_out·x_hat, dx = (u − x_hat·mean(u·x_hat)) / r with u = d_out·g (8 lines)")


def silu(x: np.ndarray) -> np.ndarray:
    r"""SiLU (also called swish), entry by entry: x times its own sigmoid.

    $$\mathrm{SiLU}(x) = x\,\sigma(x) = \frac{x}{1 + e^{-x}}$$

    It is smooth, close to ReLU far from 0 (SiLU(5) ≈ 4.97, SiLU(−5) ≈ −0.03) and slightly negative for
    negative inputs. It must be stable: ``silu([-1000, 1000])`` is ``[0, 1000]``, without overflow (and
    without NumPy warning about one).

    Args:
        x: any shape.

    Returns:
        Array of the shape of x.

    See docs: chapter 13, step 13.4.
    """
    raise NotImplementedError("13.4 silu: x * sigmoid(x), written so no exp overflows (2 lines)")


def silu_backward(x: np.ndarray, d_out: np.ndarray) -> np.ndarray:
    r"""Gradient through SiLU, entry by entry (the product rule on x·σ(x)).

    $$\frac{\partial L}{\partial x} = \frac{\partial L}{\partial y} \odot
      \sigma(x)\,\bigl(1 + x\,(1 - \sigma(x))\bigr)$$

    Args:
        x: the input SiLU saw (not its output), any shape.
        d_out: gradient of the loss with respect to SiLU's output, same shape as x.

    Returns:
        Gradient with respect to x, same shape as x.

    Raises:
        ValueError: if x and d_out have different shapes (the message names both).

    See docs: chapter 13, step 13.5.
    """
    raise NotImplementedError("13.5 silu_backward: d_out * σ(x) * (1 + x * (1 − σ(x))) (5 lines)")


def swiglu(x: np.ndarray, W_gate: np.ndarray, W_up: np.ndarray, W_down: np.ndarray) -> tuple[np.ndarray, tuple]:
    r"""The SwiGLU feed-forward layer: a SiLU gate multiplies a second projection, entry by entry.

    $$\mathrm{SwiGLU}(x) = \bigl(\mathrm{SiLU}(x W_{gate}) \odot x W_{up}\bigr)\, W_{down}$$

    The gate is the branch that goes through SiLU: ``W_gate``, not ``W_up``. No biases.

    Args:
        x: the (normalised) input rows, shape (seq, d_model).
        W_gate: gate projection, shape (d_model, d_ff).
        W_up: up projection, shape (d_model, d_ff).
        W_down: down projection, shape (d_ff, d_model).

    Returns:
        (out, cache): out has shape (seq, d_model); cache is an opaque tuple for ``swiglu_backward``.

    Raises:
        ValueError: if x is not 2-D with at least one row and one column, or a weight has the wrong shape
            (the message names it, ``x``, ``W_gate``, ``W_up`` or ``W_down``, and its shape). W_gate decides
            d_ff and needs at least one column; d_model = 1 and d_ff = 1 are allowed.

    See docs: chapter 13, step 13.6.
    """
    raise NotImplementedError("13.6 swiglu: a = x @ W_gate, b = x @ W_up, h = silu(a) * b, return (h @ W_down, cache) (10 lines)")


def swiglu_backward(d_out: np.ndarray, cache: tuple) -> dict:
    r"""Gradients through ``swiglu``.

    With $a = xW_{gate}$, $b = xW_{up}$, $h = \mathrm{SiLU}(a) \odot b$:

    $$dW_{down} = h^\top d_{out},\quad dh = d_{out} W_{down}^\top,\quad
      db = dh \odot \mathrm{SiLU}(a),\quad da = \mathrm{SiLU}'(a) \odot dh \odot b,$$
    $$dW_{up} = x^\top db,\quad dW_{gate} = x^\top da,\quad dx = da\, W_{gate}^\top + db\, W_{up}^\top$$

    Args:
        d_out: gradient of the loss with respect to the output, shape (seq, d_model).
        cache: the cache ``swiglu`` returned.

    Returns:
        A dict of gradients, each shaped like what it is the gradient of: ``"x"``, ``"W_gate"``, ``"W_up"``
        and ``"W_down"``.

    Raises:
        ValueError: if d_out does not have the output's shape (the message names ``d_out`` and its shape).

    See docs: chapter 13, step 13.7.
    """
    raise NotImplementedError("13.7 swiglu_backward: dh = d_out @ W_down.T, then the gate and up branches; x fed both (8 lines)")


# -- checks and helpers (not part of the exercise) -----------------------------------------------------








