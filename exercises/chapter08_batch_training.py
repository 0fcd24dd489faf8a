"""Chapter 8: Batch Training — several patterns at once, one averaged update per epoch.

A batch is a list of examples, each an ``(ids, target)`` pair: the token ids the model reads and the id
of the token that should come next. Forward every example, take the mean of their losses, take the mean
of their gradients, and move every weight once, against that mean gradient. Repeat for a number of
epochs and the model learns all the patterns together.

The model is chapters 5–7's: the toy embeddings, W_Q, W_K, W_V, the explicit 2×4 W_O, causal attention,
and the context taken from the last position.

Worksheet: the book's Example 4 (A B → C, A A → D, B A → C; toy parameters; learning rate 0.1).

Types, as every docstring below uses them: an array is a NumPy array (a Python list where an array is
documented fails its checks, saying so); a float may be any NumPy float or a 0-d array.
"""

import numpy as np

from .chapter05_forward_pass import PARAM_NAMES, forward  # noqa: F401 - yours to use
from .chapter06_training_step import cross_entropy, cross_entropy_grad, output_backward, sgd_step  # noqa: F401 - yours to use
from .chapter07_backprop import backward  # noqa: F401 - yours to use


def _check_examples(examples) -> list[tuple[list[int], int]]:
    """Check that ``examples`` is a non-empty list of (ids, target) pairs; return it as a list."""
    if isinstance(examples, np.ndarray) or not isinstance(examples, (list, tuple)):
        raise TypeError(f"examples must be a list of (ids, target) pairs, got {type(examples).__name__}")
    if len(examples) == 0:
        raise ValueError("the batch is empty: there is nothing to average over")
    for k, example in enumerate(examples):
        if not isinstance(example, (list, tuple)) or len(example) != 2:
            raise TypeError(f"example {k} must be an (ids, target) pair, got {example!r}")
        target = example[1]
        if isinstance(target, bool) or not isinstance(target, (int, np.integer)):
            raise TypeError(f"example {k}: the target must be a whole-number token id, got {target!r}")
    return list(examples)


def _check_target(k: int, target: int, vocab: int) -> None:
    if not 0 <= target < vocab:
        raise IndexError(f"example {k}: target {target} is outside the vocabulary of {vocab} tokens (0..{vocab - 1})")


def per_example(examples: list[tuple[list[int], int]], params: dict[str, np.ndarray], *,
                embeddings: np.ndarray | None = None) -> dict[str, np.ndarray]:
    r"""Forward every example and take its loss and output gradients: the worksheet's Parts 1 and 2, stacked.

    For example k with context $c_k$: $z_k = c_k W_O$, $p_k = \mathrm{softmax}(z_k)$,
    $L_k = -\log p_{k,t_k}$, $\partial L_k/\partial z_k = p_k - \text{onehot}(t_k)$,
    $\partial L_k/\partial c_k = W_O\, \partial L_k/\partial z_k$.

    Args:
        examples: N ≥ 1 pairs ``(ids, target)``: token ids (length ≥ 1, may differ between examples) and
            the id of the token that should come next.
        params: ``"WQ"``, ``"WK"`` (d_model, d_k), ``"WV"`` (d_model, d_v), ``"WO"`` (d_v, vocab).
        embeddings: the embedding table (vocab, d_model); None means the toy table (A, B, C, D).

    Returns:
        A dict of new arrays, row k for example k: ``"context"`` (N, d_v), ``"logits"`` (N, vocab),
        ``"probs"`` (N, vocab), ``"loss"`` (N,), ``"dlogits"`` (N, vocab), ``"dcontext"`` (N, d_v).

    Raises:
        ValueError: if the batch is empty, or a matrix is missing or its shape does not fit.
        IndexError: if a token id or a target is outside the vocabulary (the message names the example, e.g.
            "example 1", the target and the range, e.g. 0..3).
        TypeError: if examples is not a list of (ids, target) pairs with whole-number targets, a bool
            included (the message names what came instead: a dict, a str, True).

    See docs: chapter 8, steps 8.1–8.4, 8.6 and 8.7.
    """
    examples = _check_examples(examples)
    raise NotImplementedError("8.1 per_example: each example's loss and output gradients from chapter 5's forward as stacked rows (each target checked by the given _check_target) (11 lines)")


def batch_loss(examples: list[tuple[list[int], int]], params: dict[str, np.ndarray], *,
               embeddings: np.ndarray | None = None) -> float:
    r"""The mean cross-entropy over a batch.

    $$L = \frac{1}{N} \sum_{k=1}^{N} -\log p_{k,\,t_k}$$

    Args:
        examples: N ≥ 1 pairs ``(ids, target)``.
        params: ``"WQ"``, ``"WK"``, ``"WV"``, ``"WO"`` as in chapter 5.
        embeddings: the embedding table (vocab, d_model); None means the toy table.

    Returns:
        The mean loss, a float.

    Raises:
        ValueError: if the batch is empty, or a matrix is missing or its shape does not fit (the message
            names the matrix, e.g. ``WO``).
        IndexError: if a token id or a target is outside the vocabulary (the message names it).
        TypeError: if examples is not a list of (ids, target) pairs (the message says "pair" or names the
            bad target).

    See docs: chapter 8, steps 8.5 and 8.13.
    """
    examples = _check_examples(examples)
    raise NotImplementedError("8.5 batch_loss: the mean of per_example's losses (1 line)")


def batch_gradients(examples: list[tuple[list[int], int]], params: dict[str, np.ndarray], *,
                    embeddings: np.ndarray | None = None) -> tuple[float, dict[str, np.ndarray]]:
    r"""The mean loss and the mean gradient of every weight matrix over a batch.

    $$\frac{\partial L}{\partial W} = \frac{1}{N} \sum_{k=1}^{N} \frac{\partial L_k}{\partial W}
    \qquad \text{for } W \in \{W_Q, W_K, W_V, W_O\}$$

    Averaging (not summing) keeps the step size independent of the batch size.

    Args:
        examples: N ≥ 1 pairs ``(ids, target)``.
        params: ``"WQ"``, ``"WK"``, ``"WV"``, ``"WO"`` as in chapter 5.
        embeddings: the embedding table (vocab, d_model); None means the toy table.

    Returns:
        (mean_loss, mean_grads): the mean loss, a float, and a new dict keyed ``"WQ"``, ``"WK"``, ``"WV"``,
        ``"WO"``, each the mean gradient, shaped like its matrix.

    Raises:
        ValueError: if the batch is empty, or a matrix is missing or its shape does not fit (the message
            names the matrix, e.g. ``WO``).
        IndexError: if a token id or a target is outside the vocabulary (the message names the example, e.g.
            "example 1", the target and the range, e.g. 0..3).
        TypeError: if examples is not a list of (ids, target) pairs.

    See docs: chapter 8, steps 8.8 and 8.9.
    """
    examples = _check_examples(examples)
    raise NotImplementedError("8.9 batch_gradients: the MEAN loss and the MEAN of each matrix's gradient over the examples, from chapter 7's backward (7 lines)")


def apply_gradients(params: dict[str, np.ndarray], grads: dict[str, np.ndarray], lr: float) -> dict[str, np.ndarray]:
    r"""One step of gradient descent on every matrix that has a gradient.

    $$W \leftarrow W - \eta\, \frac{\partial L}{\partial W} \qquad \text{for every } W \text{ in grads}$$

    Args:
        params: the weights, name -> array.
        grads: name -> gradient, each shaped like ``params[name]``; names not in ``grads`` are copied
            unchanged (so ``{"WO": dWO}`` updates W_O only, as the worksheet does).
        lr: the learning rate η ≥ 0.

    Returns:
        A new dict with the same keys as ``params``; ``params`` is not changed.

    Raises:
        KeyError: if grads names a matrix that params does not have (the message names it and the matrices
            params has, ``WQ``, ``WK``, ``WV``, ``WO``).
        ValueError: if a gradient's shape differs from its matrix's (the message names the matrix and the
            gradient's shape), or lr is negative.
        TypeError: if lr is not a number.

    See docs: chapter 8, step 8.10.
    """
    _check_grads(params, grads)
    raise NotImplementedError("8.10 apply_gradients: new params with W − lr·grad for every name in grads, the others copied (3 lines)")


def train(examples: list[tuple[list[int], int]], params: dict[str, np.ndarray], lr: float, epochs: int, *,
          embeddings: np.ndarray | None = None) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Full-batch gradient descent: one averaged update of all four matrices per epoch.

    Args:
        examples: N ≥ 1 pairs ``(ids, target)``.
        params: the starting ``"WQ"``, ``"WK"``, ``"WV"``, ``"WO"``; not changed.
        lr: the learning rate η ≥ 0.
        epochs: how many updates, a whole number ≥ 0.
        embeddings: the embedding table (vocab, d_model); None means the toy table.

    Returns:
        (params, losses): the trained weights, a new dict; and the losses, shape (epochs,), where
        ``losses[i]`` is the mean loss BEFORE update i (so ``losses[0]`` is the untrained model's).

    Raises:
        ValueError: if the batch is empty, epochs is negative, lr is negative, or a shape does not fit (the
            message names the bad value).
        IndexError: if a token id or a target is outside the vocabulary.
        TypeError: if epochs is not a whole number (2.0 and True are refused; the message names it), or
            examples is not a list of (ids, target) pairs.

    See docs: chapter 8, steps 8.14 and 8.16.
    """
    _check_epochs(epochs)
    examples = _check_examples(examples)
    raise NotImplementedError("8.14 train: the params after one full-batch step per epoch, and each epoch's loss before its step (6 lines)")


def accuracy(examples: list[tuple[list[int], int]], params: dict[str, np.ndarray], *,
             embeddings: np.ndarray | None = None) -> float:
    r"""The fraction of examples whose most probable next token is the target.

    $$\text{accuracy} = \frac{1}{N} \sum_{k=1}^{N} \mathbb{1}\big[\arg\max_j p_{k,j} = t_k\big]$$

    A tie goes to the lowest token id (NumPy's ``argmax``).

    Args:
        examples: N ≥ 1 pairs ``(ids, target)``.
        params: ``"WQ"``, ``"WK"``, ``"WV"``, ``"WO"`` as in chapter 5.
        embeddings: the embedding table (vocab, d_model); None means the toy table.

    Returns:
        A float in [0, 1].

    Raises:
        ValueError: if the batch is empty, or a matrix is missing or its shape does not fit (the message
            names the matrix, e.g. ``WO``).
        IndexError: if a token id or a target is outside the vocabulary (the message names it).
        TypeError: if examples is not a list of (ids, target) pairs with whole-number targets, a bool
            included (the message says "pair" or names the bad target, e.g. True).

    See docs: chapter 8, steps 8.15 and 8.16.
    """
    examples = _check_examples(examples)
    raise NotImplementedError("8.15 accuracy: the share of examples whose most probable token is their target (4 lines)")


def _check_grads(params: dict, grads: dict) -> None:
    """Refuse a gradient for a matrix params does not have (the message names it and params' matrices)."""
    unknown = sorted(set(grads) - set(params))
    if unknown:
        raise KeyError(f"gradients for {unknown}, which params does not have (it has {sorted(params)})")


def _check_epochs(epochs) -> None:
    """A whole number of epochs, 0 or more (2.0 and True are refused)."""
    if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)):
        raise TypeError(f"epochs must be a whole number, got {epochs!r}")
    if epochs < 0:
        raise ValueError(f"epochs must be 0 or more, got {epochs}")
