"""Chapter 13: The Modern Block — RMSNorm, SiLU and SwiGLU, and the pre-norm block with rotary attention.

The block today's open models repeat dozens of times. Chapter 10's block normalised with LayerNorm and
fed a ReLU network; this one swaps in the pieces those models use instead. **RMSNorm** divides each row
by its root mean square and multiplies by a learned gain ``g``: no mean subtracted, no shift added.
**SwiGLU** is a feed-forward layer with two input projections: one goes through SiLU, x·σ(x), and
*gates* the other entry by entry before the output projection. Attention has several heads (chapter 11)
whose queries and keys are rotated by position (chapter 12). The **pre-norm** block puts them together:
``x1 = x + attention(rmsnorm(x))``, then ``y = x1 + swiglu(rmsnorm(x1))``. ``rms_norm`` and ``silu``
return an array, and their backward passes take the input again; SwiGLU, the attention and the block
return ``(output, cache)``, and their backward passes take the cache back and return the gradients in a
dict.
Row-vector convention throughout: one row per position, ``x @ W``.

Worksheet: this course's own; see docs/chapters/13-modern-block.md.

Types, as every docstring below uses them: an array is a NumPy array (a Python list where an array is
documented fails its checks, saying so); a float may be any NumPy float or a 0-d array.
"""

import numpy as np

from .chapter04_attention import causal_mask, scaled_dot_product_attention  # noqa: F401 - yours to use
from .chapter07_backprop import attention_backward, linear_backward  # noqa: F401 - yours to use
from .chapter11_multi_head_attention import merge_heads, split_heads  # noqa: F401 - yours to use
from .chapter12_rope import apply_rope, rope_backward  # noqa: F401 - yours to use

ATTENTION_KEYS = ("WQ", "WK", "WV", "WO")
BLOCK_KEYS = ("g1", "WQ", "WK", "WV", "WO", "g2", "W_gate", "W_up", "W_down")


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
        ValueError: if x has no feature axis or g does not fit it: the check given above the ``raise``.

    See docs: chapter 13, steps 13.1 and 13.2.
    """
    x = _check_features(x, g)
    raise NotImplementedError("13.1 rms_norm: each row over the square root of its mean square plus eps, scaled feature by feature by g with nothing subtracted (2 lines)")


def rms_norm_backward(
    x: np.ndarray, g: np.ndarray, d_out: np.ndarray, eps: float = 1e-6
) -> tuple[np.ndarray, np.ndarray]:
    r"""Gradients of a loss through ``rms_norm``, given the gradient of its output.

    The forward pass it reverses, row by row:

    $$y = g \odot \frac{x}{r}, \qquad r = \sqrt{\tfrac1d \textstyle\sum_k x_k^2 + \epsilon}$$

    Given dL/dy, it returns the gradients with respect to x and g. Every input of a row also moves that
    row's r.

    Args:
        x: the input that went into ``rms_norm``, shape (..., d_model).
        g: its gains, shape (d_model,).
        d_out: gradient of the loss with respect to the output, shape of x.
        eps: the same eps as the forward pass.

    Returns:
        (dx, dg): dx has the shape of x; dg has shape (d_model,), summed over every row.

    Raises:
        ValueError: if x, g or d_out do not fit: the checks given above the ``raise``.

    See docs: chapter 13, step 13.3.
    """
    x = _check_features(x, g)
    d_out = _check_shape(d_out, x.shape, "rms_norm_backward: d_out")
    raise NotImplementedError("13.3 rms_norm_backward: the chain rule through the gain and through x over r, where r moves with every input of its row (6 lines)")


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
    raise NotImplementedError("13.4 silu: x times its sigmoid, the sigmoid written so that no exponential sees a large positive number (2 lines)")


def silu_backward(x: np.ndarray, d_out: np.ndarray) -> np.ndarray:
    r"""Gradient through SiLU, entry by entry.

    $$y = \mathrm{SiLU}(x) = x\,\sigma(x): \quad \text{given } \frac{\partial L}{\partial y}, \text{ the gradient }
    \frac{\partial L}{\partial x}$$

    Args:
        x: the input SiLU saw (not its output), any shape.
        d_out: gradient of the loss with respect to SiLU's output, same shape as x.

    Returns:
        Gradient with respect to x, same shape as x.

    Raises:
        ValueError: if x and d_out have different shapes: the check given above the ``raise``.

    See docs: chapter 13, step 13.5.
    """
    x, d_out = _check_same_shape(x, d_out, "silu_backward")
    raise NotImplementedError("13.5 silu_backward: the product rule on x times its sigmoid, times the gradient that arrived (3 lines)")


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
        (out, cache): out has shape (seq, d_model); cache is a tuple for ``swiglu_backward`` that starts
        with x (its given check reads x's shape there); what follows x is yours to choose.

    Raises:
        ValueError: if x or a weight does not fit: the checks given above the ``raise``. W_gate decides
            d_ff; d_model = 1 and d_ff = 1 are allowed.

    See docs: chapter 13, step 13.6.
    """
    x = _check_rows(x, "swiglu: x")
    _check_swiglu_weights(x.shape[1], W_gate, W_up, W_down)
    raise NotImplementedError("13.6 swiglu: the down projection of the SiLU-gated product of x's two projections, and a cache that starts with x (4 lines)")


def swiglu_backward(d_out: np.ndarray, cache: tuple) -> dict:
    r"""Gradients through ``swiglu``.

    The forward pass it reverses (``swiglu``):

    $$a = xW_{gate},\quad b = xW_{up},$$
    $$h = \mathrm{SiLU}(a) \odot b,\quad \mathrm{out} = h\,W_{down}$$

    Given dL/dout, it returns the gradients with respect to x and the three weights.

    Args:
        d_out: gradient of the loss with respect to the output, shape (seq, d_model).
        cache: the cache ``swiglu`` returned.

    Returns:
        A dict of gradient arrays, each shaped like what it is the gradient of: ``"x"``, ``"W_gate"``,
        ``"W_up"`` and ``"W_down"``.

    Raises:
        ValueError: if d_out does not have the output's shape: the check given above the ``raise``.

    See docs: chapter 13, step 13.7.
    """
    d_out = _check_shape(d_out, np.shape(cache[0]), "swiglu_backward: d_out")
    raise NotImplementedError("13.7 swiglu_backward: the product rule through h's two factors and SiLU on the gate's, with x feeding both branches (6 lines)")


def rope_multi_head_attention(
    x: np.ndarray, params: dict, n_heads: int, base: float = 10000.0
) -> tuple[np.ndarray, tuple]:
    r"""Causal multi-head self-attention with rotary positions on every head's queries and keys.

    $$\begin{gathered}
      Q = xW_Q,\ K = xW_K,\ V = xW_V, \\
      \mathrm{head}_h = \mathrm{softmax}\!\left(\frac{\mathrm{RoPE}(Q_h)\,\mathrm{RoPE}(K_h)^\top}{\sqrt{d_{head}}}
      + M\right) V_h,\qquad \mathrm{out} = [\mathrm{head}_0, \dots]\, W_O
    \end{gathered}$$

    Chapter 11's causal multi-head attention with chapter 12's rotation on each head's queries and keys.
    Shapes: Q, K and V are (seq, d_model); head h's slices Q_h, K_h, V_h and its output head_h are
    (seq, d_head) with d_head = d_model / n_heads; the heads side by side, and out, are (seq, d_model).
    RoPE turns the d_head-wide rows of Q_h and K_h by their positions 0, 1, … (chapter 12's rotation with
    d = d_head, so the frequencies are the same in every head): a query and a key then score by their
    content and the distance between them. V_h is not turned: the values are what is read, not where it
    is read from. M is the causal mask (−∞ above the diagonal: position i reads only positions j ≤ i), and
    the scale is 1/√d_head. Nothing depends on where the sequence starts, only on distances between
    positions, so there is no ``start``.

    Args:
        x: the (normalised) input rows, shape (seq, d_model), seq ≥ 1.
        params: a dict with the keys ``"WQ"``, ``"WK"``, ``"WV"`` and ``"WO"``, each of shape
            (d_model, d_model); other keys are ignored.
        n_heads: how many heads, a whole number ≥ 1 that divides d_model into heads of an even width d_head.
        base: RoPE's base, as in chapter 12: pair i of a head turns by position·base^(−2i/d_head).

    Returns:
        (out, cache): out has shape (seq, d_model); cache is a tuple for
        ``rope_multi_head_attention_backward`` that starts with x (its given check reads x's shape there);
        what follows x is yours to choose. Neither x nor params is modified.

    Raises:
        ValueError: if x, n_heads or a weight does not fit (d_model not divisible by n_heads, an odd d_head
            included): the checks given above the ``raise``; they hand you x and the weights ``W`` as
            float64 arrays.

    See docs: chapter 13, step 13.8.
    """
    x = _check_rows(x, "rope_multi_head_attention: x")
    _check_heads(x.shape[1], n_heads)
    W = _check_weights(params, ATTENTION_KEYS, x.shape[1])  # noqa: F841 - yours to use
    raise NotImplementedError("13.8 rope_multi_head_attention: causal multi-head attention with each head's queries and keys turned by their positions and its values not, and a cache that starts with x (9 lines)")


def rope_multi_head_attention_backward(d_out: np.ndarray, cache: tuple) -> dict:
    r"""Gradients through ``rope_multi_head_attention``: for the input and all four weights.

    The forward pass it reverses (``rope_multi_head_attention``): chapter 11's multi-head attention with
    each head's queries and keys rotated (``apply_rope``) before they meet. Given dL/dout, it returns the
    gradients with respect to x and the four weights; the pieces are chapters 7, 11 and 12's backwards.

    Args:
        d_out: gradient of the loss with respect to the output, shape (seq, d_model).
        cache: the cache ``rope_multi_head_attention`` returned.

    Returns:
        A dict with the keys ``"x"``, ``"WQ"``, ``"WK"``, ``"WV"`` and ``"WO"``: the gradients, arrays shaped
        like x and like each weight.

    Raises:
        ValueError: if d_out does not have the output's shape: the check given above the ``raise``.

    See docs: chapter 13, steps 13.10 (by hand) and 13.11.
    """
    d_out = _check_shape(d_out, np.shape(cache[0]), "rope_multi_head_attention_backward: d_out")
    raise NotImplementedError("13.10 rope_multi_head_attention_backward: every piece of the forward pass taken back by its local derivatives (chapters 7 and 11 and 12) with the rotated queries and keys turned back and x feeding three projections (12 lines)")


def prenorm_block(x: np.ndarray, params: dict, n_heads: int) -> tuple[np.ndarray, tuple]:
    r"""One pre-norm block of a modern transformer: RMSNorm, rotary attention, RMSNorm, SwiGLU, two residuals.

    $$x_1 = x + \mathrm{Attention}(\mathrm{RMSNorm}_{g_1}(x)),\qquad
      y = x_1 + \mathrm{SwiGLU}(\mathrm{RMSNorm}_{g_2}(x_1))$$

    The norms sit on the branches, never on the stream: x and x₁ are added to unnormalised. Attention is
    ``rope_multi_head_attention`` (base 10000); RMSNorm uses its default eps.

    Args:
        x: the residual stream, shape (seq, d_model).
        params: a dict with exactly the keys ``"g1"``, ``"WQ"``, ``"WK"``, ``"WV"``, ``"WO"``, ``"g2"``,
            ``"W_gate"``, ``"W_up"``, ``"W_down"``: g1 and g2 of shape (d_model,); the attention weights
            (d_model, d_model); W_gate and W_up (d_model, d_ff), W_down (d_ff, d_model).
        n_heads: the number of attention heads (as ``rope_multi_head_attention``).

    Returns:
        (y, cache): y has shape (seq, d_model); cache is a tuple for ``prenorm_block_backward`` that
        starts with params, then x (its given check reads x's shape there); what follows is yours to
        choose. Neither x nor params is modified.

    Raises:
        ValueError: if x, params or n_heads does not fit: the checks given above the ``raise``.

    See docs: chapter 13, step 13.9.
    """
    x = _check_rows(x, "prenorm_block: x")
    _check_block(params, x.shape[1], "prenorm_block")
    _check_heads(x.shape[1], n_heads)
    raise NotImplementedError("13.9 prenorm_block: x through two residual sub-layers (attention under g1's RMSNorm and SwiGLU under g2's) and a cache that starts with params and x (6 lines)")


def prenorm_block_backward(d_y: np.ndarray, cache: tuple) -> dict:
    r"""Gradients through ``prenorm_block``: for the input and every parameter.

    The forward pass it reverses (``prenorm_block``), two residual connections like chapter 10's:

    $$x_1 = x + \mathrm{Attention}(\mathrm{RMSNorm}_{g_1}(x)),\qquad
      y = x_1 + \mathrm{SwiGLU}(\mathrm{RMSNorm}_{g_2}(x_1))$$

    Args:
        d_y: gradient of the loss with respect to the block's output, shape (seq, d_model).
        cache: the cache ``prenorm_block`` returned.

    Returns:
        A dict with the key ``"x"`` and every key of params, each gradient an array shaped like what it
        belongs to.

    Raises:
        ValueError: if d_y does not have the output's shape: the check given above the ``raise``.

    See docs: chapter 13, steps 13.12 (by hand) and 13.13.
    """
    d_y = _check_shape(d_y, np.shape(cache[1]), "prenorm_block_backward: d_y")
    raise NotImplementedError("13.12 prenorm_block_backward: the block's gradients, each residual fork adding its branch's gradient to the one going straight through (8 lines)")


# -- input checks: the course's, given in the stubs (CONTRIBUTING.md, "The stub") -----------------------------
def _check_shape(a, shape: tuple, what: str) -> np.ndarray:
    """``a`` as a float64 array, after checking it has ``shape`` (the message names ``what`` and both shapes)."""
    if np.shape(a) != tuple(shape):
        raise ValueError(f"{what} has shape {np.shape(a)}, expected {tuple(shape)}")
    return np.asarray(a, dtype=np.float64)


def _check_same_shape(x, d_out, who: str) -> tuple[np.ndarray, np.ndarray]:
    """(x, d_out) as float64 arrays, after checking they have one shape (the message names both)."""
    if np.shape(x) != np.shape(d_out):
        raise ValueError(f"{who}: x {np.shape(x)} and d_out {np.shape(d_out)} must have the same shape")
    return np.asarray(x, dtype=np.float64), np.asarray(d_out, dtype=np.float64)


def _check_rows(x, what: str) -> np.ndarray:
    """``x`` as a float64 array, after checking it is (seq, d_model) with at least one row and one column."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"{what} must be 2-D (seq, d_model) with at least one row, got shape {x.shape}")
    return x


def _check_features(x, g) -> np.ndarray:
    """``x`` as a float64 array, after checking it has a feature axis and ``g`` one gain per feature."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim < 1 or x.shape[-1] < 1:
        raise ValueError(f"rms_norm needs a feature axis with at least one entry, got shape {x.shape}")
    _check_shape(g, (x.shape[-1],), "rms_norm: g")
    return x


def _check_swiglu_weights(d_model: int, W_gate, W_up, W_down) -> None:
    """W_gate (d_model, d_ff) with d_ff ≥ 1 decides d_ff; W_up (d_model, d_ff) and W_down (d_ff, d_model)."""
    if np.ndim(W_gate) != 2 or np.shape(W_gate)[0] != d_model or np.shape(W_gate)[1] < 1:
        raise ValueError(f"swiglu: W_gate has shape {np.shape(W_gate)}, expected ({d_model}, d_ff) with d_ff ≥ 1")
    d_ff = np.shape(W_gate)[1]
    _check_shape(W_up, (d_model, d_ff), "swiglu: W_up")
    _check_shape(W_down, (d_ff, d_model), "swiglu: W_down")


def _check_heads(d_model: int, n_heads) -> None:
    """n_heads a whole number ≥ 1 that divides d_model into heads of an even width (RoPE turns pairs)."""
    if isinstance(n_heads, bool) or not isinstance(n_heads, (int, np.integer)) or n_heads < 1:
        raise ValueError(f"n_heads must be a whole number >= 1, got {n_heads!r}")
    if d_model % n_heads:
        raise ValueError(f"d_model = {d_model} is not divisible by n_heads = {n_heads}: heads must be equally wide")
    d_head = d_model // n_heads
    if d_head % 2:
        raise ValueError(f"d_head = d_model / n_heads = {d_head} is odd: RoPE turns a head's features in pairs")


def _check_weights(params, keys: tuple, d_model: int) -> dict:
    """The weights ``keys`` of ``params`` as float64 arrays, after checking each is there and (d_model, d_model)."""
    if not isinstance(params, dict):
        raise ValueError(f"params must be a dict with the keys {list(keys)}, got {type(params).__name__}")
    missing = [k for k in keys if k not in params]
    if missing:
        raise ValueError(f"params lacks {', '.join(missing)}: attention needs {', '.join(keys)}")
    for k in keys:
        _check_shape(params[k], (d_model, d_model), f"params[{k!r}]")
    return {k: np.asarray(params[k], dtype=np.float64) for k in keys}


def _check_block(params, d_model: int, who: str) -> None:
    """``params`` a dict with exactly the block's keys, each of its shape (the gains (d_model,), ...)."""
    # who: the function taking the block, named in the messages (prenorm_block; chapter 16's block_with_cache)
    if not isinstance(params, dict):
        raise ValueError(f"{who}: params must be a dict with the keys {list(BLOCK_KEYS)}, got {type(params).__name__}")
    missing = [k for k in BLOCK_KEYS if k not in params]
    if missing:
        raise ValueError(f"{who}: params lacks {', '.join(missing)}")
    extra = sorted(str(k) for k in params if k not in BLOCK_KEYS)
    if extra:
        raise ValueError(f"{who}: params has keys a block does not use: {', '.join(extra)}")
    for key in ("g1", "g2"):
        _check_shape(params[key], (d_model,), f"{who}: params[{key!r}]")
    for key in ATTENTION_KEYS:
        _check_shape(params[key], (d_model, d_model), f"{who}: params[{key!r}]")
    _check_swiglu_weights(d_model, params["W_gate"], params["W_up"], params["W_down"])


