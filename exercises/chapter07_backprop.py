"""Chapter 7: Backpropagation — the gradient of the loss for every weight, through attention.

The book's Example 3: the same "A B" → C example as chapter 6, but now W_Q, W_K and W_V learn too. The
chain rule is applied backwards, one local rule at a time: the loss to the logits, the logits to W_O and
to the context, the context to the attention output, the output to the attention weights and the values,
through the softmax to the scores, through the 1/√d_k to Q Kᵀ, and on to Q, K and the three projections.

The model is chapter 5's: explicit 2×4 W_O, causal attention, and the context taken from the LAST
position, so only that position's output receives a gradient from the loss.

Worksheet: the book's Example 3 (input "A B", target C = 2, learning rate 0.1, all four matrices trainable).

Types, as every docstring below uses them: an array is a NumPy array (a Python list where an array is
documented fails its checks, saying so); a float may be any NumPy float or a 0-d array.
"""

import numpy as np

from .chapter02_matrices import _check_matrix
from .chapter05_forward_pass import PARAM_NAMES, forward  # noqa: F401 - yours to use
from .chapter06_training_step import cross_entropy, cross_entropy_grad, sgd_step  # noqa: F401 - yours to use


def softmax_backward(probs: np.ndarray, dprobs: np.ndarray) -> np.ndarray:
    r"""Carry a gradient back through a softmax, row by row (a Jacobian-vector product).

    $$\frac{\partial L}{\partial x_i} = \sum_j \frac{\partial s_j}{\partial x_i}\,g_j, \qquad
    s = \mathrm{softmax}(x), \quad g = \frac{\partial L}{\partial s}$$

    Each row along the last axis is one softmax, with its own Jacobian ∂s_j/∂x_i (the page's local
    derivative). The result needs only s and g, not x, and no row's n × n Jacobian has to be built: that is
    yours to work out. Where s_i = 0 (a masked position) the gradient is 0.

    Args:
        probs: the softmax's output s, shape (..., n); each row sums to 1.
        dprobs: dL/ds, the same shape.

    Returns:
        dL/dx, the gradient with respect to the softmax's input, same shape; each row sums to 0.

    Raises:
        ValueError: if the shapes differ or the arrays are 0-D: the check given above the ``raise``, which
            hands you s (probs) and g (dprobs) as float64 arrays.

    See docs: chapter 7, steps 7.6 and 7.7.
    """
    s, g = _check_softmax_backward(probs, dprobs)  # noqa: F841 - yours to use
    raise NotImplementedError(
        "7.7 softmax_backward: the chain rule through each row's softmax Jacobian, simplified by hand so that"
        " the Jacobian is never built (2 lines)"
    )


def linear_backward(X: np.ndarray, W: np.ndarray, dY: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Carry the gradient of Y = X W back to the input X and the weights W.

    $$Y = X W: \quad \text{given } \frac{\partial L}{\partial Y}, \text{ the gradients }
    \frac{\partial L}{\partial X} \text{ and } \frac{\partial L}{\partial W}$$

    Chapter 2's product of two matrices, as a layer. Each gradient has the shape of what it belongs to.
    A single row vector is a matrix with one row.

    Args:
        X: the input, shape (n, d_in), one row per position.
        W: the weights, shape (d_in, d_out).
        dY: dL/dY, shape (n, d_out).

    Returns:
        (dX, dW) with shapes (n, d_in) and (d_in, d_out).

    Raises:
        ValueError: if an array is not 2-D or the shapes do not fit Y = X W: the check given above the
            ``raise``, which hands you X, W and dY as float64 arrays.

    See docs: chapter 7, steps 7.2, 7.3 and 7.5.
    """
    X, W, dY = _check_linear_backward(X, W, dY)
    raise NotImplementedError("7.2 linear_backward: chapter 2's matmul_backward rule with X and W as the two factors, each gradient of its factor's shape (3 lines)")


def attention_backward(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, weights: np.ndarray, d_output: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Carry the gradient of the attention output back to the queries, keys and values.

    The forward pass it reverses (chapter 4, causal):

    $$R = Q K^\top, \quad S = \frac{R}{\sqrt{d_k}}, \quad A = \mathrm{softmax}(S + M), \quad H = A V$$

    Given dL/dH, it returns dL/dQ, dL/dK and dL/dV. The weights A are given, mask already applied: a masked
    weight is 0, so its score gets no gradient.

    Args:
        Q: queries, shape (seq, d_k).
        K: keys, shape (seq, d_k).
        V: values, shape (seq, d_v).
        weights: the attention weights A from the forward pass, shape (seq, seq); rows sum to 1.
        d_output: dL/dH, the gradient of the attention output H, shape (seq, d_v); zero in rows the loss
            does not read.

    Returns:
        (dQ, dK, dV) with shapes (seq, d_k), (seq, d_k) and (seq, d_v).

    Raises:
        ValueError: if an array is not 2-D or the shapes do not fit, any one of them: the check given above
            the ``raise``, which hands you Q, K, V, A (weights) and dH (d_output) as float64 arrays.

    See docs: chapter 7, steps 7.9, 7.10 and 7.11.
    """
    Q, K, V, A, dH = _check_attention_backward(Q, K, V, weights, d_output)  # noqa: F841 - yours to use
    raise NotImplementedError("7.9 attention_backward: the gradients of Q and K and V by the chain rule through chapter 4's attention, the mask already in the weights (5 lines)")


def backward_trace(ids: list[int], target: int, params: dict[str, np.ndarray], *,
                   embeddings: np.ndarray | None = None) -> dict:
    r"""The whole backward pass, keeping every intermediate gradient for comparison with a pencil.

    Chapter 5's forward pass, then the gradient of the loss $L = -\log p_t$ with respect to each
    intermediate, from the logits back to the four weight matrices (the page's backward diagram).

    Args:
        ids: the input token ids, length seq ≥ 1.
        target: the id of the token that should come next, in 0..vocab−1.
        params: ``"WQ"``, ``"WK"`` (d_model, d_k), ``"WV"`` (d_model, d_v), ``"WO"`` (d_v, vocab).
        embeddings: the embedding table (vocab, d_model); None means chapter 3's toy table.

    Returns:
        Chapter 5's forward dict (``"X"``, ``"Q"``, ``"K"``, ``"V"``, ``"weights"``, ``"context"``,
        ``"probs"``, …) plus ``"loss"`` (float) and dL/d of each intermediate, each the shape of what it
        belongs to: ``"dlogits"`` (vocab,); ``"dWO"`` (d_v, vocab); ``"dcontext"`` (d_v,), a vector
        like the context (step 7.3 checks ``linear_backward``'s, the context as one row: (1, d_v));
        ``"d_output"`` (seq, d_v), the attention output's, zero except its last row; ``"d_weights"``
        (seq, seq), the attention weights'; ``"d_scores"`` (seq, seq), the scaled scores' Q Kᵀ/√d_k (the
        softmax's input); ``"d_raw_scores"`` (seq, seq), Q Kᵀ's; ``"dQ"``, ``"dK"`` (seq, d_k);
        ``"dV"`` (seq, d_v); ``"dWQ"``, ``"dWK"`` (d_model, d_k); ``"dWV"`` (d_model, d_v).

    Raises:
        IndexError: if a token id or the target is outside the vocabulary (the message names it).
        TypeError: if target is not a whole number.
        ValueError: if a matrix is missing or its shape does not fit (the message names it).

    See docs: chapter 7, steps 7.1, 7.4 and 7.8.
    """
    raise NotImplementedError("7.1 backward_trace: chapter 5's forward dict with the loss and the gradient of every intermediate down to the four weights (18 lines)")


def backward(ids: list[int], target: int, params: dict[str, np.ndarray], *,
             embeddings: np.ndarray | None = None) -> tuple[float, dict[str, np.ndarray]]:
    """The loss and its gradient with respect to each of the four weight matrices.

    Args:
        ids: the input token ids, length seq ≥ 1.
        target: the id of the token that should come next, in 0..vocab−1.
        params: ``"WQ"``, ``"WK"`` (d_model, d_k), ``"WV"`` (d_model, d_v), ``"WO"`` (d_v, vocab).
        embeddings: the embedding table (vocab, d_model); None means chapter 3's toy table.

    Returns:
        (loss, grads): the cross-entropy, a float, and a new dict keyed like ``params`` (``"WQ"``,
        ``"WK"``, ``"WV"``, ``"WO"``), each gradient the shape of its matrix.

    Raises:
        IndexError: if a token id or the target is outside the vocabulary (the message names it).
        TypeError: if target is not a whole number.
        ValueError: if a matrix is missing or its shape does not fit (the message names the matrix).

    See docs: chapter 7, steps 7.12, 7.13 and 7.14.
    """
    raise NotImplementedError("7.12 backward: the loss and the four weight gradients, read off backward_trace (2 lines)")


def train_step(ids: list[int], target: int, params: dict[str, np.ndarray], lr: float, *,
               embeddings: np.ndarray | None = None) -> tuple[dict[str, np.ndarray], float]:
    r"""One step of gradient descent on all four matrices.

    $$W \leftarrow W - \eta \frac{\partial L}{\partial W} \qquad \text{for } W \in \{W_Q, W_K, W_V, W_O\}$$

    Args:
        ids: the input token ids, length seq ≥ 1.
        target: the id of the token that should come next, in 0..vocab−1.
        params: ``"WQ"``, ``"WK"`` (d_model, d_k), ``"WV"`` (d_model, d_v), ``"WO"`` (d_v, vocab).
        lr: the learning rate η ≥ 0.
        embeddings: the embedding table (vocab, d_model); None means chapter 3's toy table.

    Returns:
        (new_params, loss): a new dict with the same keys, each of the four matrices replaced by
        W − η·dW (other entries copied), and the loss BEFORE the update, a float. ``params`` is not changed.

    Raises:
        IndexError: if a token id or the target is outside the vocabulary (the message names it).
        TypeError: if target or lr is not a number of the right kind.
        ValueError: if a matrix is missing or its shape does not fit (the message names the matrix), or lr
            is negative (the message names it).

    See docs: chapter 7, steps 7.15–7.20.
    """
    raise NotImplementedError("7.15 train_step: the loss before the update and a new dict with one SGD step on all four matrices (4 lines)")


# -- input checks: the course's, given in the stubs (CONTRIBUTING.md, "The stub") -----------------------------
def _check_softmax_backward(probs, dprobs) -> tuple[np.ndarray, np.ndarray]:
    """(s, g) as float64 arrays, after checking they have one shape, at least 1-D (the message names both)."""
    s, g = np.asarray(probs, dtype=np.float64), np.asarray(dprobs, dtype=np.float64)
    if s.shape != g.shape or s.ndim == 0:
        raise ValueError(f"softmax_backward: probs {s.shape} and dprobs {g.shape} must have the same shape, "
                         "at least 1-D")
    return s, g


def _check_linear_backward(X, W, dY) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X, W, dY) as float64 matrices, after checking they fit Y = X W (the message names all three)."""
    X, W, dY = _check_matrix("X", X), _check_matrix("W", W), _check_matrix("dY", dY)
    if X.shape[1] != W.shape[0] or dY.shape != (X.shape[0], W.shape[1]):
        raise ValueError(f"linear_backward: X {X.shape}, W {W.shape} and dY {dY.shape} do not fit Y = X @ W")
    return X, W, dY


def _check_attention_backward(Q, K, V, weights, d_output) -> tuple:
    """(Q, K, V, A, dH) as float64 matrices, after checking they fit one another (the message names them all)."""
    Q, K, V = _check_matrix("Q", Q), _check_matrix("K", K), _check_matrix("V", V)
    A, dH = _check_matrix("weights", weights), _check_matrix("d_output", d_output)
    n = Q.shape[0]
    if K.shape != Q.shape or V.shape[0] != n or A.shape != (n, n) or dH.shape != V.shape:
        raise ValueError(f"attention_backward: Q {Q.shape}, K {K.shape}, V {V.shape}, weights {A.shape} and "
                         f"d_output {dH.shape} do not fit (need (seq, d_k), (seq, d_k), (seq, d_v), "
                         "(seq, seq), (seq, d_v))")
    return Q, K, V, A, dH
