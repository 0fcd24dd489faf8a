"""Chapter 6: One Training Step — loss, its gradient, and one step of gradient descent on W_O.

The book's Example 2: feed "A B", measure how surprised the model is that C comes next (cross-entropy),
carry the gradient back to the logits and on to the output matrix W_O, and move W_O a little against
the gradient. Only W_O learns here (W_Q, W_K, W_V stay fixed, as in the book), but all eight entries
of the explicit 2×4 W_O move, not only the one the worksheet updates.

Worksheet: the book's Example 2 (input "A B", target C = 2, learning rate 0.1).

Types, as every docstring below uses them: an array is a NumPy array (a Python list where an array is
documented fails its checks, saying so); a float may be any NumPy float or a 0-d array.
"""

import numpy as np

from .chapter05_forward_pass import forward  # noqa: F401 - yours to use


def _check_probs(probs) -> np.ndarray:
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 1 or p.size == 0:
        raise ValueError(f"probs must be a non-empty 1-D vector (vocab,), got shape {p.shape}")
    if np.any(p < 0) or abs(p.sum() - 1.0) > 1e-6:
        raise ValueError(f"probs must be a probability distribution (non-negative, summing to 1), got sum "
                         f"{p.sum():.6g} and minimum {p.min():.6g}: were logits passed instead of probabilities?")
    return p


def _check_target(target, vocab: int) -> int:
    if isinstance(target, bool) or not isinstance(target, (int, np.integer)):
        raise TypeError(f"target must be a whole-number token id, got {target!r}")
    if not 0 <= target < vocab:
        raise IndexError(f"target {target} is outside the vocabulary of {vocab} tokens (0..{vocab - 1})")
    return int(target)


def cross_entropy(probs: np.ndarray, target: int) -> float:
    r"""How surprised the model is by the right answer: minus the log of its probability.

    $$L = -\log p_{\text{target}}$$

    Args:
        probs: the model's probabilities, shape (vocab,), non-negative and summing to 1.
        target: the id of the token that really comes next, in 0..vocab−1.

    Returns:
        The loss, a float ≥ 0: 0 when the model gives the target probability 1.

    Raises:
        IndexError: if target is outside 0..vocab−1; TypeError: if target is not a whole number;
        ValueError: if probs is not a 1-D probability distribution (logits passed by mistake, say): the
            checks given above the ``raise``, which hand you probs as a float64 array and target as an int.
            A vocabulary of one token, probs [1.0], is a distribution.

    See docs: chapter 6, step 6.1.
    """
    p = _check_probs(probs)  # noqa: F841 - yours to use
    t = _check_target(target, len(p))  # noqa: F841 - yours to use
    raise NotImplementedError("6.1 cross_entropy: minus the log of the target's probability, as a float (1 line)")


def cross_entropy_grad(probs: np.ndarray, target: int) -> np.ndarray:
    r"""Gradient of the cross-entropy loss with respect to the logits (softmax included).

    $$\frac{\partial L}{\partial z_i} = p_i - \mathbb{1}[i = \text{target}]$$

    Negative only at the target: gradient descent raises the target's logit and lowers every other.

    Args:
        probs: the softmax probabilities, shape (vocab,).
        target: the id of the right token, in 0..vocab−1.

    Returns:
        dL/dlogits, shape (vocab,), a new array summing to 0.

    Raises:
        IndexError: if target is outside 0..vocab−1; TypeError: if target is not a whole number;
        ValueError: if probs is not a 1-D probability distribution: the checks given above the ``raise``.

    See docs: chapter 6, step 6.2.
    """
    p = _check_probs(probs)  # noqa: F841 - yours to use
    t = _check_target(target, len(p))  # noqa: F841 - yours to use
    raise NotImplementedError("6.2 cross_entropy_grad: dL/dlogits as a new array, the probabilities minus the target's one-hot (3 lines)")


def output_backward(context: np.ndarray, WO: np.ndarray, dlogits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Carry the gradient of the logits z = c W_O back to the context and to W_O.

    $$\frac{\partial L}{\partial c} = W_O \frac{\partial L}{\partial z}, \qquad
    \frac{\partial L}{\partial W_O} = c^\top \frac{\partial L}{\partial z}
    \quad(\text{the outer product: } dW_O[i][j] = c_i \, dz_j)$$

    Args:
        context: the context vector c, shape (d_v,).
        WO: the output matrix, shape (d_v, vocab).
        dlogits: dL/dz, shape (vocab,).

    Returns:
        (dcontext, dWO) with shapes (d_v,) and (d_v, vocab).

    Raises:
        ValueError: if context or dlogits is not 1-D, WO is not 2-D, or the shapes do not fit z = c W_O: the
            check given above the ``raise``, which hands you c, WO and dz as float64 arrays.

    See docs: chapter 6, steps 6.3 and 6.4.
    """
    c, WO, dz = _check_output(context, WO, dlogits)  # noqa: F841 - yours to use
    raise NotImplementedError("6.3 output_backward: the gradients of the context (W_O times dlogits) and of W_O (the outer product of context and dlogits) (3 lines)")


def sgd_step(param: np.ndarray, grad: np.ndarray, lr: float) -> np.ndarray:
    r"""One step of gradient descent: move against the gradient.

    $$W_{\text{new}} = W - \eta \, \frac{\partial L}{\partial W}$$

    Args:
        param: the parameter, any shape.
        grad: dL/dparam, the same shape.
        lr: the learning rate η, a finite number ≥ 0.

    Returns:
        The updated parameter, a new array of the same shape; ``param`` itself is not changed.

    Raises:
        ValueError: if the shapes differ or lr is negative or not finite; TypeError: if lr is not a real
            number: the checks given above the ``raise`` (lr = 0 is allowed: the parameter comes back
            unchanged).

    See docs: chapter 6, step 6.5.
    """
    param, grad = _check_same_shape(param, grad)
    _check_lr(lr)
    raise NotImplementedError("6.5 sgd_step: param − lr·grad, as a new array (1 line)")


def train_output_step(ids: list[int], target: int, params: dict[str, np.ndarray], lr: float, *,
                      embeddings: np.ndarray | None = None) -> tuple[dict[str, np.ndarray], float]:
    """One training step that updates W_O only: forward, loss, gradient, descent.

    Args:
        ids: the input token ids, length seq ≥ 1.
        target: the id of the token that should come next, in 0..vocab−1.
        params: ``"WQ"``, ``"WK"`` (d_model, d_k), ``"WV"`` (d_model, d_v), ``"WO"`` (d_v, vocab).
        lr: the learning rate η ≥ 0.
        embeddings: the embedding table (vocab, d_model); None means the toy table.

    Returns:
        (new_params, loss): a new dict with the same keys, W_O replaced by W_O − η·dW_O and the other
        matrices copied unchanged; ``loss`` is the cross-entropy BEFORE the update, a float.
        ``params`` is not changed.

    Raises:
        IndexError: if a token id or the target is outside the vocabulary (the message names it).
        TypeError: if target is not a whole number.
        ValueError: if a matrix is missing or its shape does not fit (the message names the matrix, e.g.
            ``WO``, and its shape), or lr is negative.

    See docs: chapter 6, step 6.6.
    """
    raise NotImplementedError("6.6 train_output_step: the loss before the update and new params with one SGD step on W_O alone (7 lines)")


def _check_output(context, WO, dlogits) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(c, WO, dz) as float64 arrays, after checking that z = c W_O fits (the message names all three shapes)."""
    c, WO, dz = (np.asarray(a, dtype=np.float64) for a in (context, WO, dlogits))
    if c.ndim != 1 or WO.ndim != 2 or dz.ndim != 1 or WO.shape != (c.size, dz.size):
        raise ValueError(f"output_backward: context {c.shape}, WO {WO.shape} and dlogits {dz.shape} do not fit "
                         "logits = context @ WO (need (d_v,), (d_v, vocab) and (vocab,))")
    return c, WO, dz


def _check_same_shape(param, grad) -> tuple[np.ndarray, np.ndarray]:
    """(param, grad) as float64 arrays, after checking they have one shape (the message names both)."""
    param, grad = np.asarray(param, dtype=np.float64), np.asarray(grad, dtype=np.float64)
    if param.shape != grad.shape:
        raise ValueError(f"sgd_step: param {param.shape} and grad {grad.shape} must have the same shape")
    return param, grad


def _check_lr(lr) -> None:
    """A real number (a bool or a string is not one), finite and 0 or more."""
    if isinstance(lr, bool) or not isinstance(lr, (int, float, np.integer, np.floating)):
        raise TypeError(f"the learning rate must be a number, got {lr!r}")
    if not (np.isfinite(lr) and lr >= 0):
        raise ValueError(f"the learning rate must be finite and 0 or more, got {lr}")
