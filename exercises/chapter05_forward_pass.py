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

from .chapter03_embeddings import TOY_EMBEDDINGS, embed  # noqa: F401 - yours to use
from .chapter04_attention import attention_scores, causal_mask, raw_scores, scaled_dot_product_attention, softmax  # noqa: F401 - yours to use

PARAM_NAMES = ("WQ", "WK", "WV", "WO")


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
    raise NotImplementedError("5.1 toy_params: W_Q = W_K = W_V = 0.1·I and the 2×4 W_O, fresh arrays every call (6 lines)")


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
        ValueError: if X is not 2-D, a matrix is missing or not 2-D, a matrix's rows differ from X's
            width d_model, or W_Q and W_K have different widths (the message names the matrix,
            ``WQ``, ``WK`` or ``WV``, and the shapes).

    See docs: chapter 5, step 5.3.
    """
    raise NotImplementedError("5.3 project_qkv: check X is 2-D and each matrix fits, then X @ WQ, X @ WK, X @ WV (10 lines)")


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
        IndexError: if a token id is outside the embedding table (the message names the id).
        ValueError: if ids is empty (the message says "at least one token"), or a matrix is missing or has a
            shape that does not fit (W_O must have d_v rows and one column per token of the table; the message
            names the matrix, ``WQ``, ``WK``, ``WV`` or ``WO``, and its shape, and for ``WO`` the shape it
            should have).

    See docs: chapter 5, steps 5.2–5.8.
    """
    raise NotImplementedError("5.2 forward: embed, project, attend causally (chapter 4), context = last row, logits, softmax (15 lines)")


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
