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
        ValueError: if x has no feature axis, or an empty one (the message says "feature axis"), or gamma
            or beta does not have shape (d_model,) (the message names ``gamma`` or ``beta`` and its shape).

    See docs: chapter 10, steps 10.1 and 10.2.
    """
    raise NotImplementedError("10.1 layer_norm: (x - mean) / sqrt(population var + eps) * gamma + beta (5 lines)")


def layer_norm_backward(
    x: np.ndarray, gamma: np.ndarray, d_out: np.ndarray, eps: float = 1e-5
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Gradients of a loss through ``layer_norm``, given the gradient of its output.

    With $\hat x = (x - \mu)/\sqrt{\sigma^2+\epsilon}$ and $g = d_{out} \odot \gamma$ (per row):

    $$\frac{\partial L}{\partial x} = \frac{1}{\sqrt{\sigma^2+\epsilon}}
      \left(g - \overline{g} - \hat x\, \overline{g \odot \hat x}\right),\quad
      \frac{\partial L}{\partial \gamma} = \sum_{\text{rows}} d_{out} \odot \hat x,\quad
      \frac{\partial L}{\partial \beta} = \sum_{\text{rows}} d_{out}$$

    (a bar is the mean over the row's d features). The two subtracted terms are there because every
    input moves the row's mean and variance too.

    Args:
        x: the input that went into ``layer_norm``, shape (..., d_model).
        gamma: its scales, shape (d_model,).
        d_out: gradient of the loss with respect to the output, shape of x.
        eps: the same eps as the forward pass.

    Returns:
        (dx, dgamma, dbeta): dx has the shape of x; dgamma and dbeta have shape (d_model,), summed over
        every row.

    Raises:
        ValueError: if d_out does not have the shape of x, or gamma does not have shape (d_model,) (the
            message names ``d_out`` or ``gamma`` and the shapes).

    See docs: chapter 10, step 10.3.
    """
    raise NotImplementedError("10.3 layer_norm_backward: dgamma, dbeta are row sums; dx has three terms (9 lines)")


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
        (out, cache): out has shape (seq, d_model); cache is an opaque tuple for ``attention_backward``.

    Raises:
        ValueError: if x has no rows (no position to attend from), or x is not 2-D or a weight is not
            (d_model, d_model) (the message names it, ``x``, ``WQ``, ``WK`` or ``WV``, and its shape).

    See docs: chapter 10, step 10.4.
    """
    raise NotImplementedError("10.4 attention_forward: Q K V, scale, causal mask, softmax, P @ V, cache (8 lines)")


def attention_backward(d_out: np.ndarray, cache: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""Gradients through ``attention_forward``.

    $$dV = P^\top dA,\quad dP = dA\,V^\top,\quad dS = P \odot \left(dP - \textstyle\sum_j (dP \odot P)_{:,j}\right),$$
    $$dQ = dS\,K/\sqrt{d},\quad dK = dS^\top Q/\sqrt{d},\quad
      dx = dQ\,W_Q^\top + dK\,W_K^\top + dV\,W_V^\top$$

    Masked entries have P = 0, so their dS is 0 without a second mask.

    Args:
        d_out: gradient of the loss with respect to the attention output, shape (seq, d_model).
        cache: the cache ``attention_forward`` returned.

    Returns:
        (dx, dWQ, dWK, dWV): dx has shape (seq, d_model); each weight gradient (d_model, d_model).

    Raises:
        ValueError: if d_out does not have the output's shape (the message names ``d_out`` and its shape).

    See docs: chapter 10, step 10.8.
    """
    raise NotImplementedError("10.8 attention_backward: dV, dP, softmax backward, dQ, dK; dx has 3 paths (10 lines)")


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
        ValueError: if x is not 2-D, or a weight or bias has the wrong shape (the message names it, ``x``,
            ``W1``, ``b1``, ``W2`` or ``b2``, and its shape).

    See docs: chapter 10, step 10.5.
    """
    raise NotImplementedError("10.5 ffn_forward: ReLU(x @ W1 + b1) @ W2 + b2, and a cache (7 lines)")


def ffn_backward(
    d_out: np.ndarray, cache: tuple
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""Gradients through ``ffn_forward``.

    $$\begin{gathered}
      dW_2 = r^\top d_{out},\ db_2 = \textstyle\sum_{\text{rows}} d_{out},\ dz = (d_{out} W_2^\top) \odot [z > 0], \\
      dW_1 = x^\top dz,\ db_1 = \textstyle\sum_{\text{rows}} dz,\ dx = dz\,W_1^\top
    \end{gathered}$$

    At exactly z = 0 the ReLU's slope is taken as 0.

    Args:
        d_out: gradient of the loss with respect to the FFN output, shape (seq, d_model).
        cache: the cache ``ffn_forward`` returned.

    Returns:
        (dx, dW1, db1, dW2, db2), shaped like x, W1, b1, W2, b2.

    Raises:
        ValueError: if d_out does not have the output's shape (the message names ``d_out`` and its shape).

    See docs: chapter 10, step 10.7.
    """
    raise NotImplementedError("10.7 ffn_backward: back through W2, the ReLU gate z > 0, then W1 (5 lines)")


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
    raise NotImplementedError("10.6 block_forward: x1 = x + attn(LN1(x)); y = x1 + FFN(LN2(x1)) (7 lines)")


def block_backward(d_y: np.ndarray, cache: tuple) -> tuple[np.ndarray, dict]:
    r"""Gradients through ``block_forward``.

    Each residual connection y = x + F(x) sends the gradient down two paths: straight through
    (dy) and through the sub-layer (dF/dx · dy); the two are added.

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
    raise NotImplementedError("10.9 block_backward: sub-layers in reverse, ADD each residual path (10 lines)")


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

    N(0, s) means normal with mean 0 and variance s, drawn from ``np.random.default_rng(seed)``.

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
        ValueError: if a size is not a positive whole number: 0, 4.0 or True (n_layers may be 0, every other
            size may be 1; the message names the size as written, e.g. ``d_model``, and its value).

    See docs: chapter 10, step 10.10.
    """
    raise NotImplementedError("10.10 init_params: default_rng(seed), then the documented layout (15 lines)")


def embed(ids, params: dict) -> np.ndarray:
    r"""Look up each token and its position and add them.

    $$x_i = E_{tok}[\mathrm{ids}_i] + E_{pos}[i]$$

    Args:
        ids: token ids, a sequence of seq whole numbers in [0, vocab), 1 ≤ seq ≤ max_len.
        params: the model's parameters (see ``init_params``).

    Returns:
        The residual stream entering block 0, shape (seq, d_model).

    Raises:
        ValueError: if ids is empty (the message says "empty"), not a 1-D sequence of whole numbers (the
            message names ``ids`` and its shape or dtype, e.g. float64), outside the vocabulary (the message
            names the id and the vocab size), or longer than max_len (the message names the length and
            max_len).

    See docs: chapter 10, step 10.11.
    """
    raise NotImplementedError("10.11 embed: check the ids, then tok_emb[ids] + pos_emb[:seq] (2 lines + checks)")


def transformer_forward(ids, params: dict) -> tuple[np.ndarray, dict]:
    r"""The whole model: embeddings, every block, the final layer norm, the output projection.

    $$x_0 = \mathrm{embed}(\mathrm{ids}),\quad x_{l+1} = \mathrm{block}_l(x_l),\quad
      \mathrm{logits} = \mathrm{LN}_f(x_L)\, W_O$$

    Args:
        ids: token ids, a sequence of seq whole numbers in [0, vocab), 1 ≤ seq ≤ max_len.
        params: the model's parameters (see ``init_params``).

    Returns:
        (logits, cache): logits has shape (seq, vocab), row i scoring the token after position i; cache
        is an opaque dict for ``transformer_backward``.

    Raises:
        ValueError: if params is not a dict with exactly the keys of ``init_params`` (the message lists them
            and names what came instead), a block is not such a dict, a parameter is missing or has a shape
            that does not fit the others (the message names it by its key, e.g. ``W1``, ``b2``, ``tok_emb``,
            ``lnf_beta`` or ``WO`` — ``params['WO']`` names it too — and its shape; when ``blocks`` is not a list
            of dicts, the message names ``blocks`` and what came instead: a ``dict``, a ``list``), or the ids are
            bad (as ``embed``).

    See docs: chapter 10, step 10.12.
    """
    raise NotImplementedError("10.12 transformer_forward: embed, blocks, final LN, @ W_out (10 lines)")


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
        ValueError: if targets does not have one entry per position or is not whole numbers (the message
            names ``targets`` and its shape or dtype), has an entry ≥ vocab (the message lists those entries,
            e.g. [4], and the vocab size), or has no entry ≥ 0.

    See docs: chapter 10, steps 10.13 and 10.14.
    """
    raise NotImplementedError("10.13 cross_entropy: mean -log p over targets >= 0; (softmax - onehot) / n (10 lines)")


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
        ValueError: if d_logits does not have the logits' shape (the message names ``d_logits`` and its
            shape).

    See docs: chapter 10, step 10.15.
    """
    raise NotImplementedError("10.15 transformer_backward: W_out, final LN, blocks reversed, np.add.at (14 lines)")


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
    raise NotImplementedError("10.16 transformer_loss_and_grads: forward, cross_entropy, backward (3 lines)")


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
        ValueError: if data is empty (the message says "empty"), a pair is bad (as
            ``transformer_loss_and_grads``), lr is not a finite number or epochs is not a whole number ≥ 0:
            -1, 2.0 or True (the message names ``lr`` or ``epochs`` and its value). epochs = 0 is allowed:
            the parameters come back unchanged, with no losses.

    See docs: chapter 10, step 10.17.
    """
    raise NotImplementedError("10.17 train_transformer: per epoch one step on the MEAN gradient (15 lines)")


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
        ValueError: if n_new is not a whole number ≥ 0: -1, 2.0 or True (the message names ``n_new`` and its
            value; n_new = 0 gives the prompt back), the result would be longer than max_len, the number of
            rows of pos_emb (the message says "max_len"), or the prompt is bad (as ``embed``).

    See docs: chapter 10, step 10.18.
    """
    raise NotImplementedError("10.18 generate: n_new times, append argmax of the last logits row (8 lines)")
