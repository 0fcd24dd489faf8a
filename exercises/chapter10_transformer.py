"""Chapter 10: The Complete Transformer — layer norm, blocks, training and greedy generation.

Every piece of the earlier chapters, put together and trained end to end. Token ids are looked up in a
token table and a position table and added; ``n_layers`` blocks each compute
``x + Attention(LayerNorm(x))`` and then ``x + FFN(LayerNorm(x))`` (pre-norm, causal single-head attention
scaled by 1/√d_model); a final layer norm and an output projection give one row of logits per position.
Every forward function returns ``(output, cache)`` and its backward takes the cache back, so the chain
rule runs through the model in the reverse order of the forward pass. Row-vector convention throughout:
one row per position, ``x @ W``.

Worksheet: this course's own (the book's Example 6 has none); see docs/chapters/10-transformer.md.

Types, as every docstring below uses them: an array is a NumPy array (a Python list where an array is
documented fails its checks, saying so); a float may be any NumPy float or a 0-d array.
"""

import numpy as np

from .chapter04_attention import causal_mask, softmax  # noqa: F401 - yours from chapter 4, to use here

BLOCK_KEYS = ("ln1_gamma", "ln1_beta", "WQ", "WK", "WV", "ln2_gamma", "ln2_beta", "W1", "b1", "W2", "b2")
MODEL_KEYS = ("tok_emb", "pos_emb", "blocks", "lnf_gamma", "lnf_beta", "WO")


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    r"""Normalise every row to mean 0 and variance 1, then scale by gamma and shift by beta.

    $$\mathrm{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta,\qquad
    \mu = \frac{1}{d}\sum_i x_i,\quad \sigma^2 = \frac{1}{d}\sum_i (x_i - \mu)^2$$

    The variance is the population variance (divide by d, not d − 1). With only d = 2 features a row
    keeps one degree of freedom: it becomes ±h/√(h² + ε) with h half the difference of its entries.

    Args:
        x: activations, shape (..., d_model); normalised over the last axis, each row on its own.
        gamma: scales, shape (d_model,).
        beta: shifts, shape (d_model,).
        eps: added to the variance so a constant row does not divide by zero.

    Returns:
        Array of the shape of x.

    Raises:
        ValueError: if x has no feature axis or gamma or beta does not fit it: the check given above the ``raise``.

    See docs: chapter 10, steps 10.1 and 10.2.
    """
    x = _check_features(x, gamma, beta)
    raise NotImplementedError("10.1 layer_norm: each row standardised by its mean and √(population variance + eps), scaled by gamma and shifted by beta (4 lines)")


def layer_norm_backward(
    x: np.ndarray, gamma: np.ndarray, d_out: np.ndarray, eps: float = 1e-5
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Gradients of a loss through ``layer_norm``, given the gradient of its output.

    The forward pass it reverses, row by row:

    $$y = \gamma \odot \hat x + \beta, \qquad \hat x = \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}}$$

    with the row's mean μ and population variance σ² (``layer_norm``). Given dL/dy, it returns the
    gradients with respect to x, γ and β. Every input of a row also moves that row's mean and variance.

    Args:
        x: the input that went into ``layer_norm``, shape (..., d_model).
        gamma: its scales, shape (d_model,).
        d_out: gradient of the loss with respect to the output, shape of x.
        eps: the same eps as the forward pass.

    Returns:
        (dx, dgamma, dbeta): dx has the shape of x; dgamma and dbeta have shape (d_model,), summed over
        every row.

    Raises:
        ValueError: if x, gamma or d_out do not fit: the checks given above the ``raise``.

    See docs: chapter 10, step 10.3.
    """
    x = _check_features(x, gamma)
    d_out = _check_shape(d_out, x.shape, "layer_norm_backward: d_out")
    raise NotImplementedError("10.3 layer_norm_backward: the chain rule through the scale and shift and through x̂, whose row mean and variance every input of the row moves too (9 lines)")


def attention_forward(x: np.ndarray, WQ: np.ndarray, WK: np.ndarray, WV: np.ndarray) -> tuple[np.ndarray, tuple]:
    r"""Causal single-head self-attention, and what its backward pass needs.

    $$\begin{gathered}
      Q = xW_Q,\ K = xW_K,\ V = xW_V, \\
      A = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_{model}}} \text{ with } j > i \text{ masked}\right) V
    \end{gathered}$$

    Args:
        x: the (normalised) input rows, shape (seq, d_model).
        WQ: query weights, shape (d_model, d_model).
        WK: key weights, shape (d_model, d_model).
        WV: value weights, shape (d_model, d_model).

    Returns:
        (out, cache): out has shape (seq, d_model); cache is a tuple for ``attention_backward`` that starts
        with x (its given check reads x's shape there); what follows x is yours to choose.

    Raises:
        ValueError: if x has no rows (no position to attend from), x is not 2-D or a weight is not
            (d_model, d_model): the checks given above the ``raise``.

    See docs: chapter 10, step 10.4.
    """
    x = _check_rows(x, "attention_forward: x")
    _check_attention_weights(x.shape[1], WQ, WK, WV)
    raise NotImplementedError("10.4 attention_forward: single-head causal attention of x, and a cache that starts with x (5 lines)")


def attention_backward(d_out: np.ndarray, cache: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""Gradients through ``attention_forward``.

    The forward pass it reverses (``attention_forward``):

    $$Q = xW_Q,\quad K = xW_K,\quad V = xW_V,$$
    $$P = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d}} + M\right),\quad A = P V$$

    Given dL/dA, it returns the gradients with respect to x and the three weights. A masked weight is 0,
    so its score gets no gradient.

    Args:
        d_out: gradient of the loss with respect to the attention output, shape (seq, d_model).
        cache: the cache ``attention_forward`` returned.

    Returns:
        (dx, dWQ, dWK, dWV): dx has shape (seq, d_model); each weight gradient (d_model, d_model).

    Raises:
        ValueError: if d_out does not have the output's shape: the check given above the ``raise``.

    See docs: chapter 10, step 10.8.
    """
    d_out = _check_shape(d_out, np.shape(cache[0]), "attention_backward: d_out")
    raise NotImplementedError("10.8 attention_backward: the gradients of x and the three weights from the cache, dx summing its three paths (9 lines)")


def ffn_forward(
    x: np.ndarray, W1: np.ndarray, b1: np.ndarray, W2: np.ndarray, b2: np.ndarray
) -> tuple[np.ndarray, tuple]:
    r"""The position-wise feed-forward network, and what its backward pass needs.

    $$\mathrm{FFN}(x) = \mathrm{ReLU}(xW_1 + b_1)\,W_2 + b_2$$

    Args:
        x: the (normalised) input rows, shape (seq, d_model).
        W1: shape (d_model, d_ff).
        b1: shape (d_ff,).
        W2: shape (d_ff, d_model).
        b2: shape (d_model,).

    Returns:
        (out, cache): out has shape (seq, d_model); cache is an opaque tuple for ``ffn_backward``.

    Raises:
        ValueError: if x is not 2-D, or a weight or bias has the wrong shape: the checks given above the
            ``raise``.

    See docs: chapter 10, step 10.5.
    """
    x = _check_rows(x, "ffn_forward: x")
    _check_ffn_weights(x.shape[1], W1, b1, W2, b2)
    raise NotImplementedError("10.5 ffn_forward: the ReLU feed-forward of x, and a cache that starts with x (3 lines)")


def ffn_backward(
    d_out: np.ndarray, cache: tuple
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""Gradients through ``ffn_forward``.

    The forward pass it reverses (``ffn_forward``):

    $$z = x W_1 + b_1, \qquad r = \mathrm{ReLU}(z), \qquad \mathrm{out} = r W_2 + b_2$$

    Given dL/dout, it returns the gradients with respect to x and each parameter (chapter 9's). At exactly
    z = 0 the ReLU's slope is taken as 0.

    Args:
        d_out: gradient of the loss with respect to the FFN output, shape (seq, d_model).
        cache: the cache ``ffn_forward`` returned.

    Returns:
        (dx, dW1, db1, dW2, db2), shaped like x, W1, b1, W2, b2.

    Raises:
        ValueError: if d_out does not have the output's shape: the check given above the ``raise``.

    See docs: chapter 10, step 10.7.
    """
    d_out = _check_shape(d_out, np.shape(cache[0]), "ffn_backward: d_out")
    raise NotImplementedError("10.7 ffn_backward: the chain rule through both layers and the ReLU gate z > 0 (3 lines)")


def block_forward(x: np.ndarray, block: dict) -> tuple[np.ndarray, tuple]:
    r"""One pre-norm transformer block: attention, then feed-forward, each with a residual connection.

    $$x_1 = x + \mathrm{Attention}(\mathrm{LN}_1(x)),\qquad y = x_1 + \mathrm{FFN}(\mathrm{LN}_2(x_1))$$

    Args:
        x: the residual stream, shape (seq, d_model).
        block: one block's parameters, the dict described in ``init_params``.

    Returns:
        (y, cache): y has shape (seq, d_model); cache is an opaque tuple for ``block_backward``.

    Raises:
        ValueError: if a parameter has the wrong shape.

    See docs: chapter 10, step 10.6.
    """
    raise NotImplementedError("10.6 block_forward: a pre-norm block whose two sub-layers each read their own layer norm of the stream and add to it (7 lines)")


def block_backward(d_y: np.ndarray, cache: tuple) -> tuple[np.ndarray, dict]:
    r"""Gradients through ``block_forward``.

    The forward pass it reverses (``block_forward``), two residual connections like chapter 9's:

    $$x_1 = x + \mathrm{Attention}(\mathrm{LN}_1(x)),\qquad y = x_1 + \mathrm{FFN}(\mathrm{LN}_2(x_1))$$

    Args:
        d_y: gradient of the loss with respect to the block's output, shape (seq, d_model).
        cache: the cache ``block_forward`` returned.

    Returns:
        (dx, grads): dx has shape (seq, d_model); grads is a dict with the block's keys, each gradient
        shaped like its parameter.

    Raises:
        ValueError: if d_y does not have the output's shape.

    See docs: chapter 10, step 10.9.
    """
    raise NotImplementedError("10.9 block_backward: the block's gradients, each residual path ADDED to the gradient through its sub-layer (10 lines)")


def init_params(vocab_size: int, d_model: int, d_ff: int, n_layers: int, max_len: int, seed: int = 0) -> dict:
    r"""Random parameters for the whole model, as a nested dict of float64 arrays.

    The structure (every gradient dict in this chapter mirrors it)::

        {
          "tok_emb":   (vocab, d_model)    token embeddings, N(0, 1)
          "pos_emb":   (max_len, d_model)  position embeddings, N(0, 1)
          "blocks":    list of n_layers dicts, each
              {"ln1_gamma": (d_model,) ones, "ln1_beta": (d_model,) zeros,
               "WQ", "WK", "WV": (d_model, d_model) N(0, 1/d_model),
               "ln2_gamma": (d_model,) ones, "ln2_beta": (d_model,) zeros,
               "W1": (d_model, d_ff) N(0, 1/d_model), "b1": (d_ff,) zeros,
               "W2": (d_ff, d_model) N(0, 1/d_ff),   "b2": (d_model,) zeros}
          "lnf_gamma": (d_model,) ones,  "lnf_beta": (d_model,) zeros   the final layer norm
          "WO":     (d_model, vocab)    N(0, 0.01/d_model): first predictions are nearly uniform
        }

    N(0, s) means normal with mean 0 and variance s, drawn from NumPy's ``default_rng`` generator made from ``seed``.

    Args:
        vocab_size: number of token ids (vocab).
        d_model: width of the residual stream.
        d_ff: width of the feed-forward hidden layer.
        n_layers: number of blocks (0 is allowed: embeddings, final norm, output only).
        max_len: longest sequence the position table covers.
        seed: seed for the random generator; the same seed gives the same parameters.

    Returns:
        The parameter dict above.

    Raises:
        ValueError: if a size is not a positive whole number (n_layers may be 0): the check given above the ``raise``.

    See docs: chapter 10, step 10.10.
    """
    _check_sizes(vocab_size, d_model, d_ff, n_layers, max_len)
    raise NotImplementedError("10.10 init_params: the documented layout drawn in its order from NumPy's default generator made from seed (12 lines)")


def embed(ids, params: dict) -> np.ndarray:
    r"""Look up each token and its position and add them.

    $$x_i = E_{tok}[\mathrm{ids}_i] + E_{pos}[i]$$

    Args:
        ids: token ids, a sequence of seq whole numbers in [0, vocab), 1 ≤ seq ≤ max_len.
        params: the model's parameters (see ``init_params``).

    Returns:
        The residual stream entering block 0, shape (seq, d_model).

    Raises:
        ValueError: if ids is empty, not a 1-D sequence of whole numbers, outside the vocabulary or longer
            than max_len: the check given above the ``raise``, which hands you ids as an integer array.

    See docs: chapter 10, step 10.11.
    """
    ids = _check_ids(ids, params)
    raise NotImplementedError("10.11 embed: each id's token row plus the position row of its place (1 line)")


def transformer_forward(ids, params: dict) -> tuple[np.ndarray, dict]:
    r"""The whole model: embeddings, every block, the final layer norm, the output projection.

    $$x_0 = \mathrm{embed}(\mathrm{ids}),\quad x_{l+1} = \mathrm{block}_l(x_l),\quad
      \mathrm{logits} = \mathrm{LN}_f(x_L)\, W_O$$

    Args:
        ids: token ids, a sequence of seq whole numbers in [0, vocab), 1 ≤ seq ≤ max_len.
        params: the model's parameters (see ``init_params``).

    Returns:
        (logits, cache): logits has shape (seq, vocab), row i scoring the token after position i; cache
        is a dict for ``transformer_backward`` that holds at least ``"ids"`` (as an array) and ``"params"``
        (its given check reads them); its other keys are yours to choose.

    Raises:
        ValueError: if params is not the dict ``init_params`` makes (a key, a block or a shape that does not
            fit): the check given above the ``raise``; or the ids are bad (as ``embed``).

    See docs: chapter 10, step 10.12.
    """
    _check_params(params)
    raise NotImplementedError("10.12 transformer_forward: the logits of every position through all the blocks and the final LN, and a cache holding ids and params (9 lines)")


def cross_entropy(logits: np.ndarray, targets) -> tuple[float, np.ndarray]:
    r"""Mean cross-entropy over the positions that have a target, and its gradient.

    $$\begin{gathered}
      L = -\frac{1}{n}\sum_{i:\,t_i \ge 0} \log \mathrm{softmax}(\mathrm{logits}_i)_{t_i}, \\
      \frac{\partial L}{\partial\, \mathrm{logits}_i} = \frac{\mathrm{softmax}(\mathrm{logits}_i) -
      \mathrm{onehot}(t_i)}{n}\ \text{(0 where } t_i < 0)
    \end{gathered}$$

    with n the number of positions whose target is not negative. The loss is finite for any finite logits,
    however far apart (a row [0, 1000, −1000] included): take log softmax as x − max − log Σ exp(x − max)
    (log-sum-exp), never log(softmax(x)), whose entries far below the max underflow to log 0 = −inf.

    Args:
        logits: shape (seq, vocab).
        targets: one whole number per position, shape (seq,); a negative entry means "no loss here".

    Returns:
        (loss, d_logits): loss is a float; d_logits has shape (seq, vocab).

    Raises:
        ValueError: if targets does not have one whole number per position, has an entry ≥ vocab or has no
            entry ≥ 0: the check given above the ``raise``, which hands you targets as an integer array.

    See docs: chapter 10, steps 10.13 and 10.14.
    """
    targets = _check_targets(targets, np.shape(logits))
    raise NotImplementedError("10.13 cross_entropy: the mean −log p over the targets >= 0 and its gradient (softmax − onehot) / n (9 lines)")


def transformer_backward(d_logits: np.ndarray, cache: dict) -> dict:
    r"""Gradients of every parameter, given the gradient of the logits.

    The forward pass in reverse: the output projection, the final layer norm, the blocks from last to
    first, then the embeddings. A token that occurs at several positions collects the gradient of every
    one of them.

    Args:
        d_logits: gradient of the loss with respect to the logits, shape (seq, vocab).
        cache: the cache ``transformer_forward`` returned.

    Returns:
        Gradients in a nested dict that mirrors the parameters (same keys, same shapes, see
        ``init_params``).

    Raises:
        ValueError: if d_logits does not have the logits' shape: the check given above the ``raise``.

    See docs: chapter 10, step 10.15.
    """
    d_logits = _check_d_logits(d_logits, cache)
    raise NotImplementedError("10.15 transformer_backward: every parameter's gradient through the whole model, the rows of a repeated token adding up (NumPy's unbuffered add) (13 lines)")


def transformer_loss_and_grads(ids, targets, params: dict) -> tuple[float, dict]:
    """Forward, loss and backward for one sequence.

    Args:
        ids: token ids, shape (seq,).
        targets: the wanted next token at each position, shape (seq,); negative means "no loss here".
        params: the model's parameters (see ``init_params``).

    Returns:
        (loss, grads): the mean cross-entropy over the positions with a target, a float, and gradients
        mirroring params.

    Raises:
        ValueError: as ``transformer_forward`` and ``cross_entropy``.

    See docs: chapter 10, step 10.16.
    """
    raise NotImplementedError("10.16 transformer_loss_and_grads: the loss and every parameter's gradient, from your forward and backward (3 lines)")


def train_transformer(data, params: dict, lr: float, epochs: int) -> tuple[dict, np.ndarray]:
    r"""Full-batch gradient descent: each epoch one update on the mean gradient over ``data``.

    $$\theta \leftarrow \theta - \eta\,\frac{1}{N}\sum_{n=1}^{N} \nabla_\theta L_n$$

    Args:
        data: a non-empty list of (ids, targets) pairs, N of them; each pair as in
            ``transformer_loss_and_grads``.
        params: the starting parameters (left untouched).
        lr: learning rate η.
        epochs: number of updates, ≥ 0.

    Returns:
        (params, losses): new parameters after ``epochs`` updates; losses has shape (epochs,), losses[i]
        the mean loss over ``data`` before update i.

    Raises:
        ValueError: if data is empty, lr is not a finite number or epochs is not a whole number ≥ 0: the
            check given above the ``raise``, which hands you data as a list; or a pair is bad (as
            ``transformer_loss_and_grads``). epochs = 0 is allowed: the parameters come back unchanged, with
            no losses.

    See docs: chapter 10, step 10.17.
    """
    data = _check_training(data, lr, epochs)
    raise NotImplementedError("10.17 train_transformer: per epoch one step on the MEAN gradient (11 lines)")


def generate(prompt_ids, params: dict, n_new: int) -> np.ndarray:
    """Greedy generation: append the most likely next token, ``n_new`` times.

    Each new token is the argmax of the last row of the logits of everything so far.

    Args:
        prompt_ids: the prompt's token ids, shape (n_prompt,), at least one.
        params: the model's parameters (see ``init_params``).
        n_new: how many tokens to add, ≥ 0.

    Returns:
        The prompt followed by the new tokens, integer array of shape (n_prompt + n_new,).

    Raises:
        ValueError: if n_new is not a whole number ≥ 0, the result would be longer than max_len (the rows of
            pos_emb) or the prompt is bad (as ``embed``): the check given above the ``raise``, which hands
            you the prompt's ids as a list. n_new = 0 gives the prompt back.

    See docs: chapter 10, step 10.18.
    """
    ids = _check_generation(prompt_ids, params, n_new)  # noqa: F841 - yours to use
    raise NotImplementedError("10.18 generate: the ids grown by n_new greedy tokens, each the argmax of the last logits row (3 lines)")


# -- input checks: the course's, given in the stubs (CONTRIBUTING.md, "The stub") -----------------------------
def _check_shape(a, shape: tuple, what: str) -> np.ndarray:
    """``a`` as a float64 array, after checking it has ``shape`` (the message names ``what`` and both shapes)."""
    if np.shape(a) != tuple(shape):
        raise ValueError(f"{what} has shape {np.shape(a)}, expected {tuple(shape)}")
    return np.asarray(a, dtype=np.float64)


def _check_rows(x, what: str) -> np.ndarray:
    """``x`` as a float64 array, after checking it is (seq, d_model) with at least one row and one column."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"{what} must be 2-D (seq, d_model) with at least one row, got shape {x.shape}")
    return x


def _check_features(x, gamma, beta=None) -> np.ndarray:
    """``x`` as a float64 array, after checking it has a feature axis that gamma (and beta) fit."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim < 1 or x.shape[-1] < 1:
        raise ValueError(f"layer norm needs a feature axis with at least one entry, got shape {x.shape}")
    _check_shape(gamma, (x.shape[-1],), "layer norm: gamma")
    if beta is not None:
        _check_shape(beta, (x.shape[-1],), "layer norm: beta")
    return x


def _check_attention_weights(d_model: int, WQ, WK, WV) -> None:
    """WQ, WK and WV each (d_model, d_model) (the message names the weight and its shape)."""
    for name, W in (("WQ", WQ), ("WK", WK), ("WV", WV)):
        _check_shape(W, (d_model, d_model), f"attention_forward: {name}")


def _check_ffn_weights(d_model: int, W1, b1, W2, b2) -> None:
    """W1 (d_model, d_ff), b1 (d_ff,), W2 (d_ff, d_model), b2 (d_model,); W1 decides d_ff."""
    d_ff = np.shape(W1)[-1]
    for name, a, shape in (("W1", W1, (d_model, d_ff)), ("b1", b1, (d_ff,)), ("W2", W2, (d_ff, d_model)),
                           ("b2", b2, (d_model,))):
        _check_shape(a, shape, f"ffn_forward: {name}")


def _check_sizes(vocab_size, d_model, d_ff, n_layers, max_len) -> None:
    """Every size a whole number ≥ 1 (n_layers ≥ 0); a bool or a float such as 4.0 is refused."""
    for name, value, least in (("vocab_size", vocab_size, 1), ("d_model", d_model, 1), ("d_ff", d_ff, 1),
                               ("n_layers", n_layers, 0), ("max_len", max_len, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
            raise ValueError(f"init_params: {name} must be a whole number ≥ {least}, got {value!r}")


def _check_params(params: dict) -> None:
    """Every parameter present, float, and with a shape that fits the others."""
    if not isinstance(params, dict) or set(params) != set(MODEL_KEYS):
        got = sorted(params) if isinstance(params, dict) else type(params).__name__
        raise ValueError(f"params must be a dict with keys {sorted(MODEL_KEYS)}, got {got}")
    vocab, d_model = np.shape(params["tok_emb"]) if np.ndim(params["tok_emb"]) == 2 else (None, None)
    if vocab is None:
        raise ValueError(f"params['tok_emb'] must be 2-D (vocab, d_model), got shape {np.shape(params['tok_emb'])}")
    if np.ndim(params["pos_emb"]) != 2:
        raise ValueError(f"params['pos_emb'] must be 2-D (max_len, d_model), got shape {np.shape(params['pos_emb'])}")
    max_len = np.shape(params["pos_emb"])[0]
    _check_shape(params["pos_emb"], (max_len, d_model), "params['pos_emb']")
    _check_shape(params["lnf_gamma"], (d_model,), "params['lnf_gamma']")
    _check_shape(params["lnf_beta"], (d_model,), "params['lnf_beta']")
    _check_shape(params["WO"], (d_model, vocab), "params['WO']")
    if not isinstance(params["blocks"], list):
        raise ValueError(f"params['blocks'] must be a list of dicts, got {type(params['blocks']).__name__}")
    for i, block in enumerate(params["blocks"]):
        if not isinstance(block, dict) or set(block) != set(BLOCK_KEYS):
            got = sorted(block) if isinstance(block, dict) else type(block).__name__
            raise ValueError(f"params['blocks'][{i}] must be a dict with keys {sorted(BLOCK_KEYS)}, got {got}")
        d_ff = np.shape(block["W1"])[-1] if np.ndim(block["W1"]) == 2 else -1
        shapes = {"ln1_gamma": (d_model,), "ln1_beta": (d_model,), "WQ": (d_model, d_model),
                  "WK": (d_model, d_model), "WV": (d_model, d_model), "ln2_gamma": (d_model,),
                  "ln2_beta": (d_model,), "W1": (d_model, d_ff), "b1": (d_ff,), "W2": (d_ff, d_model),
                  "b2": (d_model,)}
        for key, shape in shapes.items():
            _check_shape(block[key], shape, f"params['blocks'][{i}]['{key}']")


def _check_whole_numbers(values, what: str) -> np.ndarray:
    """``values`` as a 1-D int64 array, after checking they are whole numbers."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be a 1-D sequence of token ids, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{what} must be whole numbers, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def _check_ids(ids, params: dict) -> np.ndarray:
    """The ids as an int64 array, after checking they are 1 to max_len whole numbers in [0, vocab)."""
    ids = _check_whole_numbers(ids, "ids")
    vocab, max_len = np.shape(params["tok_emb"])[0], np.shape(params["pos_emb"])[0]
    if ids.size == 0:
        raise ValueError("ids is empty: the model needs at least one token")
    if ids.size > max_len:
        raise ValueError(f"a sequence of {ids.size} tokens is longer than max_len {max_len}")
    bad = ids[(ids < 0) | (ids >= vocab)]
    if bad.size:
        raise ValueError(f"token ids must lie in [0, {vocab}) (the vocabulary), got {bad.tolist()}")
    return ids


def _check_targets(targets, logits_shape: tuple) -> np.ndarray:
    """The targets as an int64 array, after checking: one per position, below vocab, at least one ≥ 0."""
    targets = _check_whole_numbers(targets, "targets")
    if len(logits_shape) != 2 or targets.shape != (logits_shape[0],):
        raise ValueError(f"targets {targets.shape} must have one entry per position of logits {logits_shape}")
    vocab = logits_shape[1]
    if np.any(targets >= vocab):
        raise ValueError(f"targets must lie below vocab = {vocab} (negative = no loss), got "
                         f"{targets[targets >= vocab].tolist()} outside the vocabulary")
    if not np.any(targets >= 0):
        raise ValueError("targets: no position has a target (all are negative), so there is no loss to average")
    return targets


def _check_d_logits(d_logits, cache: dict) -> np.ndarray:
    """d_logits as a float64 array, after checking it has the logits' shape (seq, vocab), read from the cache."""
    shape = (len(cache["ids"]), np.shape(cache["params"]["WO"])[1])
    return _check_shape(d_logits, shape, "transformer_backward: d_logits")


def _check_training(data, lr, epochs) -> list:
    """The data as a list, after checking it is not empty, lr is finite and epochs a whole number ≥ 0."""
    data = list(data)
    if not data:
        raise ValueError("train_transformer: data is empty; give at least one (ids, targets) pair")
    if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or epochs < 0:
        raise ValueError(f"train_transformer: epochs must be a whole number ≥ 0, got {epochs!r}")
    if not np.isfinite(lr):
        raise ValueError(f"train_transformer: lr must be a finite number, got {lr!r}")
    return data


def _check_generation(prompt_ids, params: dict, n_new) -> list[int]:
    """The prompt's ids as a list, after checking them (as ``embed``), n_new ≥ 0 and the length ≤ max_len."""
    if isinstance(n_new, bool) or not isinstance(n_new, (int, np.integer)) or n_new < 0:
        raise ValueError(f"generate: n_new must be a whole number ≥ 0, got {n_new!r}")
    ids = [int(i) for i in _check_ids(prompt_ids, params)]
    max_len = np.shape(params["pos_emb"])[0]
    if len(ids) + n_new > max_len:
        raise ValueError(f"generate: {len(ids)} prompt tokens + {n_new} new ones exceed max_len {max_len}")
    return ids
