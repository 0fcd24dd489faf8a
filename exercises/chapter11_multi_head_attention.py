"""Chapter 11: Multi-Head Attention — several small attentions side by side, each free to look elsewhere.

One attention head mixes the positions with ONE set of weights per query: if a token needs both the
previous word and the subject of the sentence, a single softmax must share its weight between them.
Multi-head attention projects the input once into queries, keys and values of width d_model, cuts each
into ``n_heads`` slices of ``d_head = d_model / n_heads`` features (head h owns the columns
``h*d_head : (h+1)*d_head``), runs chapter 4's causal scaled dot-product attention in every head on its
own (scaled by 1/√d_head, the width of that head's keys), puts the heads' outputs back side by side and
mixes them with one more projection, W_O. The backward pass runs the same road in reverse: W_O, the
heads apart again, chapter 7's attention backward in every head, the heads together, the projections.

Worksheet: this course's own (Part II goes beyond the book): three tokens A B C, d_model 4, two heads;
see docs/chapters/11-multi-head-attention.md.

Types, as every docstring below uses them: an array is a NumPy array (a Python list where an array is
documented fails its checks, saying so); a float may be any NumPy float or a 0-d array.
"""

import numpy as np

from .chapter04_attention import causal_mask, scaled_dot_product_attention  # noqa: F401 - yours to use
from .chapter07_backprop import attention_backward, linear_backward  # noqa: F401 - yours to use

PARAM_NAMES = ("WQ", "WK", "WV", "WO")


def split_heads(X: np.ndarray, n_heads: int) -> np.ndarray:
    r"""Cut the features of every row into ``n_heads`` equal slices, one per head.

    $$\mathrm{heads}[h, i, :] = X[i,\ h\,d_{head} : (h+1)\,d_{head}], \qquad d_{head} = d_{model} / n_{heads}$$

    Head h owns the columns ``h*d_head`` to ``(h+1)*d_head - 1`` of every position; every head keeps every
    position.

    Args:
        X: one row per position, shape (seq, d_model).
        n_heads: how many heads, a whole number ≥ 1 that divides d_model.

    Returns:
        The heads, shape (n_heads, seq, d_head); X is not modified.

    Raises:
        ValueError: if d_model is not divisible by n_heads (the message says "divisible" and names d_model
            and n_heads): yours to write, the one check of this chapter. X not 2-D and an n_heads that is not
            a whole number ≥ 1 are refused by the checks given above the ``raise``.

    See docs: chapter 11, step 11.1.
    """
    X = _check_array(X, 2, "split_heads: X (seq, d_model)")
    _check_n_heads(n_heads)
    raise NotImplementedError("11.1 split_heads: each head's block of columns with the head axis leading, refusing an n_heads that does not divide d_model (4 lines)")


def merge_heads(H: np.ndarray) -> np.ndarray:
    r"""Put the heads back side by side: the inverse of ``split_heads``.

    $$\mathrm{merged}[i,\ h\,d_{head} : (h+1)\,d_{head}] = H[h, i, :]$$

    Row i of the result is head 0's row i, then head 1's row i, and so on: ``merge_heads(split_heads(X, n))``
    is X again.

    Args:
        H: the heads, shape (n_heads, seq, d_head).

    Returns:
        The merged rows, shape (seq, n_heads * d_head); H is not modified.

    Raises:
        ValueError: if H is not 3-D: the check given above the ``raise``.

    See docs: chapter 11, step 11.4.
    """
    H = _check_array(H, 3, "merge_heads: H (n_heads, seq, d_head)")
    raise NotImplementedError("11.4 merge_heads: split_heads undone, each position's heads side by side in one row (2 lines)")


def attend_heads(Qh: np.ndarray, Kh: np.ndarray, Vh: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Causal scaled dot-product attention in every head, each on its own.

    $$\mathrm{out}_h = \mathrm{softmax}\!\left(\frac{Q_h K_h^\top}{\sqrt{d_{head}}} + M\right) V_h
    \qquad\text{for } h = 0, \dots, n_{heads} - 1$$

    with chapter 4's causal mask M in every head (position i sees positions 0…i only) and the scale
    1/√d_head, the width of one head's keys, not of d_model.

    Args:
        Qh: queries, shape (n_heads, seq, d_head).
        Kh: keys, the same shape.
        Vh: values, the same shape.

    Returns:
        (out, weights): out has shape (n_heads, seq, d_head), one attention output per head; weights has
        shape (n_heads, seq, seq), one causal attention matrix per head (every row sums to 1, zero above the
        diagonal).

    Raises:
        ValueError: if Qh, Kh or Vh is not 3-D or the three shapes differ: the check given above the
            ``raise``.

    See docs: chapter 11, steps 11.2 and 11.3.
    """
    Qh, Kh, Vh = _check_heads_alike(Qh, Kh, Vh)
    raise NotImplementedError("11.2 attend_heads: chapter 4's attention with a causal mask in every head, stacked (3 lines)")


def multi_head_attention(x: np.ndarray, params: dict, n_heads: int) -> tuple[np.ndarray, tuple]:
    r"""Causal multi-head self-attention, and what its backward pass needs.

    $$Q = xW_Q,\quad K = xW_K,\quad V = xW_V,\qquad
      \mathrm{head}_h = \mathrm{softmax}\!\left(\frac{Q_h K_h^\top}{\sqrt{d_{head}}} + M\right) V_h,$$
    $$\mathrm{out} = [\mathrm{head}_0, \dots, \mathrm{head}_{n_{heads}-1}]\, W_O$$

    Q_h is head h's slice of Q (``split_heads``), the heads attend causally and separately
    (``attend_heads``), their outputs are put side by side (``merge_heads``) and mixed by W_O.

    Args:
        x: the input rows, shape (seq, d_model), seq ≥ 1.
        params: a dict with the keys ``"WQ"``, ``"WK"``, ``"WV"`` and ``"WO"``, each of shape
            (d_model, d_model); other keys are ignored.
        n_heads: how many heads, a whole number ≥ 1 that divides d_model.

    Returns:
        (out, cache): out has shape (seq, d_model); cache is a tuple for
        ``multi_head_attention_backward`` that starts with x (its given check reads x's shape there); what
        follows x is yours to choose. Neither x nor params is modified.

    Raises:
        ValueError: if d_model is not divisible by n_heads, as ``split_heads``. x, params and n_heads are
            checked by the lines given above the ``raise``, which hand you x and the weights ``W`` as
            float64 arrays.

    See docs: chapter 11, step 11.5.
    """
    x = _check_rows(x)
    _check_n_heads(n_heads)
    W = _check_weights(params, x.shape[1])  # noqa: F841 - yours to use
    raise NotImplementedError("11.5 multi_head_attention: the heads' causal attention of x merged through W_O, and a cache that starts with x (4 lines)")


def multi_head_attention_backward(d_out: np.ndarray, cache: tuple) -> dict:
    r"""Gradients through ``multi_head_attention``: for the input and all four weights.

    The forward pass it reverses (``multi_head_attention``):

    $$Q = xW_Q,\quad K = xW_K,\quad V = xW_V,$$
    $$\mathrm{head}_h = \mathrm{softmax}\!\left(\frac{Q_h K_h^\top}{\sqrt{d_\text{head}}} + M\right) V_h,$$
    $$\mathrm{out} = [\mathrm{head}_0, \dots, \mathrm{head}_{n-1}]\, W_O$$

    with $Q_h$, $K_h$, $V_h$ head h's columns (``split_heads``) and the heads put back side by side
    (``merge_heads``). Given dL/dout, it returns the gradients with respect to x and the four weights.

    Args:
        d_out: the gradient of the loss with respect to the output, shape (seq, d_model).
        cache: the cache ``multi_head_attention`` returned.

    Returns:
        A dict with the keys ``"x"``, ``"WQ"``, ``"WK"``, ``"WV"`` and ``"WO"``: the gradients, shaped like
        x (seq, d_model) and like each weight (d_model, d_model).

    Raises:
        ValueError: if d_out does not have the output's shape: the check given above the ``raise``.

    See docs: chapter 11, steps 11.6, 11.7 and 11.8.
    """
    d_out = _check_d_out(d_out, np.shape(cache[0]))
    raise NotImplementedError("11.6 multi_head_attention_backward: the gradients of x and of every weight, with chapter 7's attention backward in each head (11 lines)")


# -- input checks: the course's, given in the stubs (CONTRIBUTING.md, "The stub") -----------------------------
def _check_array(a, ndim: int, what: str) -> np.ndarray:
    """``a`` as a float64 array, after checking it has ``ndim`` axes (the message names ``what`` and its shape)."""
    a = np.asarray(a, dtype=np.float64)
    if a.ndim != ndim:
        raise ValueError(f"{what} must have {ndim} axes, got shape {a.shape}")
    return a


def _check_rows(x) -> np.ndarray:
    """``x`` as a float64 array, after checking it is (seq, d_model) with at least one row."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 1:
        raise ValueError(f"multi_head_attention needs x of shape (seq, d_model) with seq >= 1, got shape {x.shape}")
    return x


def _check_n_heads(n_heads) -> None:
    """n_heads a whole number ≥ 1 (a bool or a float such as 2.0 is refused)."""
    if isinstance(n_heads, bool) or not isinstance(n_heads, (int, np.integer)) or n_heads < 1:
        raise ValueError(f"n_heads must be a whole number >= 1, got {n_heads!r}")


def _check_heads_alike(Qh, Kh, Vh) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Qh, Kh, Vh as float64 arrays, after checking they are 3-D and of one shape (the message names all three)."""
    Qh, Kh, Vh = (np.asarray(a, dtype=np.float64) for a in (Qh, Kh, Vh))
    if Qh.ndim != 3 or Kh.shape != Qh.shape or Vh.shape != Qh.shape:
        raise ValueError(f"attend_heads needs Qh, Kh and Vh of one shape (n_heads, seq, d_head), got "
                         f"{Qh.shape}, {Kh.shape} and {Vh.shape}")
    return Qh, Kh, Vh


def _check_weights(params, d_model: int) -> dict[str, np.ndarray]:
    """The four weights of ``params`` as float64 arrays, each checked to be (d_model, d_model)."""
    if not isinstance(params, dict):
        raise ValueError(f"params must be a dict with keys {list(PARAM_NAMES)}, got {type(params).__name__}")
    missing = [k for k in PARAM_NAMES if k not in params]
    if missing:
        raise ValueError(f"params lacks {', '.join(missing)}: multi-head attention needs W_Q, W_K, W_V and W_O")
    W = {k: np.asarray(params[k], dtype=np.float64) for k in PARAM_NAMES}
    for k, w in W.items():
        if w.shape != (d_model, d_model):
            raise ValueError(f"params[{k!r}] has shape {w.shape}, expected {(d_model, d_model)} (d_model, d_model)")
    return W


def _check_d_out(d_out, shape: tuple) -> np.ndarray:
    """d_out as a float64 array, after checking it has the output's shape (the message names d_out)."""
    d_out = np.asarray(d_out, dtype=np.float64)
    if d_out.shape != tuple(shape):
        raise ValueError(f"d_out has shape {d_out.shape}, expected the output's shape {tuple(shape)}")
    return d_out
