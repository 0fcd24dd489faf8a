"""Chapter 5: The Forward Pass — from token ids to next-token probabilities.

The book's Example 1, end to end: embeddings, the Q/K/V projections, causal scaled dot-product
attention, the context at the last position, the output matrix W_O, and a softmax over the vocabulary.
Every intermediate is returned so that a pencil worksheet can be compared with it line by line.

Two modelling choices make the book's "simplified" model exact:

- W_O is an explicit (d_v, vocab) matrix, 2×4 here: ``[[0.1, 0, 0, 0], [0, 0, 0.1, 0]]``, so that
  ``logits = context @ W_O`` gives the worksheet's logits [0.00498, 0, 0.00502, 0].
- Attention is causal (a position sees itself and the positions before it), and the context that
  predicts the next token is the attention output at the LAST position.

Worksheet: the book's Example 1 (input "A B", W_Q = W_K = W_V = 0.1·I).

Types, as every docstring below uses them: an array is a NumPy array (a Python list where an array is
documented fails its checks, saying so); a float may be any NumPy float or a 0-d array.
"""

import numpy as np

from .chapter03_embeddings import TOY_EMBEDDINGS, _check_table, embed  # noqa: F401 - yours to use
from .chapter04_attention import attention_scores, causal_mask, raw_scores, scaled_dot_product_attention, softmax  # noqa: F401 - yours to use

PARAM_NAMES = ("WQ", "WK", "WV", "WO")


def _check_matrix(params: dict, name: str) -> np.ndarray:
    if name not in params:
        raise ValueError(f"params is missing {name!r}: it needs {', '.join(PARAM_NAMES)}")
    W = np.asarray(params[name], dtype=np.float64)
    if W.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got shape {W.shape}")
    return W


def toy_params() -> dict[str, np.ndarray]:
    r"""The book's toy model: W_Q = W_K = W_V = 0.1·I and the explicit 2×4 output matrix W_O.

    $$W_Q = W_K = W_V = \begin{bmatrix} 0.1 & 0 \\ 0 & 0.1 \end{bmatrix}, \qquad
    W_O = \begin{bmatrix} 0.1 & 0 & 0 & 0 \\ 0 & 0 & 0.1 & 0 \end{bmatrix}$$

    Column j of W_O scores token j (A, B, C, D): context[0] feeds A's logit, context[1] feeds C's.

    Returns:
        A new dict ``{"WQ", "WK", "WV"}`` of shape (2, 2) each and ``"WO"`` of shape (2, 4); fresh arrays
        on every call, so changing one model never changes another.

    See docs: chapter 5, step 5.1.
    """
    raise NotImplementedError("5.1 toy_params: the book's weights (0.1 times the identity for the three projections and its 2×4 W_O) as new arrays each call (6 lines)")


def project_qkv(X: np.ndarray, params: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Project every embedded token to its query, key and value.

    $$Q = X W_Q, \qquad K = X W_K, \qquad V = X W_V$$

    Args:
        X: embedded tokens, shape (seq, d_model), one row per position.
        params: a dict with ``"WQ"`` and ``"WK"`` of shape (d_model, d_k) and ``"WV"`` of shape
            (d_model, d_v); other keys are ignored.

    Returns:
        (Q, K, V) with shapes (seq, d_k), (seq, d_k) and (seq, d_v); new arrays.

    Raises:
        ValueError: if X is not 2-D, a matrix is missing or not 2-D, a matrix's rows differ from X's width
            d_model, or W_Q and W_K have different widths: the check given above the ``raise``, which hands
            you X, WQ, WK and WV as float64 arrays.

    See docs: chapter 5, step 5.3.
    """
    X, WQ, WK, WV = _check_projections(X, params)  # noqa: F841 - yours to use
    raise NotImplementedError("5.3 project_qkv: X times each of the three projection matrices (1 line)")


def _check_projections(X, params: dict) -> tuple:
    """(X, WQ, WK, WV) as float64 arrays, after checking that they fit (the message names the matrix)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (seq, d_model), got shape {X.shape}")
    WQ, WK, WV = (_check_matrix(params, name) for name in ("WQ", "WK", "WV"))
    for name, W in (("WQ", WQ), ("WK", WK), ("WV", WV)):
        if W.shape[0] != X.shape[1]:
            raise ValueError(f"{name} {W.shape} needs {X.shape[1]} rows to multiply X {X.shape}")
    if WQ.shape[1] != WK.shape[1]:
        raise ValueError(f"WQ {WQ.shape} and WK {WK.shape} must have the same width d_k: queries meet keys")
    return X, WQ, WK, WV


def forward(ids: list[int], params: dict[str, np.ndarray], *, embeddings: np.ndarray | None = None) -> dict:
    r"""Run the whole model on a sequence and keep every intermediate.

    $$\begin{gathered}
    X = E[\text{ids}], \quad Q, K, V = X W_Q, X W_K, X W_V, \\
    A = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}} + M_{\text{causal}}\right) V
    \end{gathered}$$

    $$c = A_{\text{last}}, \qquad z = c\, W_O, \qquad p = \mathrm{softmax}(z)$$

    Args:
        ids: token ids, length seq ≥ 1, each a row of the embedding table.
        params: ``"WQ"``, ``"WK"`` (d_model, d_k), ``"WV"`` (d_model, d_v) and ``"WO"`` (d_v, vocab).
        embeddings: the embedding table E, shape (vocab, d_model); None means chapter 3's
            ``TOY_EMBEDDINGS`` (A, B, C, D as [1, 0], [0, 1], [1, 1], [0, 0]).

    Returns:
        A dict of new arrays:
        ``"X"`` (seq, d_model) embedded tokens;
        ``"Q"``, ``"K"`` (seq, d_k) and ``"V"`` (seq, d_v);
        ``"raw_scores"`` (seq, seq) Q Kᵀ; ``"scores"`` (seq, seq) Q Kᵀ/√d_k, before the mask;
        ``"weights"`` (seq, seq) causal attention weights, zero above the diagonal, rows summing to 1;
        ``"output"`` (seq, d_v) attention output, one row per position;
        ``"context"`` (d_v,) the output's last row; ``"logits"`` (vocab,); ``"probs"`` (vocab,).

    Raises:
        IndexError: if a token id is outside the embedding table (the message names the id), as chapter 3's
            ``embed``.
        ValueError: if ids is empty (the message says "at least one token": there is no last position to
            predict from), or a matrix is missing or has a shape that does not fit (W_O must be (d_v, vocab)):
            the checks given above the ``raise``, which hand you the table (the toy one when embeddings is
            None) and W_O as float64 arrays.

    See docs: chapter 5, steps 5.2–5.8.
    """
    table, WO = _check_model(params, embeddings)  # noqa: F841 - yours to use
    _check_some_ids(ids)
    raise NotImplementedError("5.2 forward: every intermediate of one causal attention pass over the ids, up to the last row's probabilities (10 lines)")


def next_token_probs(ids: list[int], params: dict[str, np.ndarray], *,
                     embeddings: np.ndarray | None = None) -> np.ndarray:
    """The model's prediction: a probability for every token of the vocabulary to come next.

    Args:
        ids: token ids, length seq ≥ 1.
        params: as for ``forward``.
        embeddings: as for ``forward`` (None: the toy table).

    Returns:
        Probabilities, shape (vocab,), positive and summing to 1.

    Raises:
        IndexError: as for ``forward``.
        ValueError: as for ``forward``.

    See docs: chapter 5, step 5.8.
    """
    raise NotImplementedError("5.8 next_token_probs: the probs of forward (1 line)")


def _check_model(params: dict, embeddings) -> tuple[np.ndarray, np.ndarray]:
    """(table, WO) as float64 arrays, after checking every matrix and that W_O is (d_v, vocab)."""
    table = TOY_EMBEDDINGS if embeddings is None else _check_table(embeddings)
    _, _, _, WV = _check_projections(np.zeros((1, table.shape[1])), params)
    WO = _check_matrix(params, "WO")
    if WO.shape != (WV.shape[1], table.shape[0]):
        raise ValueError(f"WO {WO.shape} must be (d_v, vocab) = ({WV.shape[1]}, {table.shape[0]}): one row per "
                         f"value dimension, one column per token of the embedding table {table.shape}")
    return table, WO


def _check_some_ids(ids) -> None:
    """The ids hold at least one token: with none there is no last position to predict from."""
    if hasattr(ids, "__len__") and len(ids) == 0:
        raise ValueError("forward needs at least one token id, got none")
