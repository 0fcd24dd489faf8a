"""Chapter 16: Sampling and the KV Cache — choosing the next token, and generating without recomputing.

A language model gives one score (a logit) per token of its vocabulary for the next position. Turning the
scores into a choice is **sampling**: divide the logits by a **temperature** (below 1 sharpens, above 1
flattens) and take their softmax; optionally keep only the **top k** tokens, or the smallest set of most
likely tokens whose probabilities add up to **p** (top-p, "nucleus"), renormalised; then pick one with a
uniform draw u through the inverse of the cumulative distribution. Temperature 0 is **greedy**: the
argmax. Every draw here is an explicit ``u`` in [0, 1), so every result is reproducible.

Generating token after token with the full forward recomputes every earlier position's keys and values
again and again. A **KV cache** keeps, per block, the keys (already rotated) and values of the positions
seen so far: the prompt is fed once (prefill), then each new token is one row through the model, its query
attending to the cached keys and its own, with RoPE at its true position (``start`` = how many are cached).
The logits come out the same as the full forward's, at a fraction of the work.

The model is chapter 13's pre-norm block repeated: a dict ``model`` with ``"tok_emb"`` (vocab, d_model),
``"blocks"`` (a list of chapter 13 block dicts, keys ``BLOCK_KEYS``), ``"g_final"`` (d_model,), the final
RMSNorm's gain, and ``"W_out"`` (d_model, vocab), the unembedding; no position embedding (RoPE, base 10000,
gives positions). One block's cache is a dict ``{"K": (n_heads, t, d_head), "V": (n_heads, t, d_head)}``
holding t positions, or None for none yet.

Worksheet: this course's own (Part II goes beyond the book): see docs/chapters/16-sampling.md.

Types, as every docstring below uses them: an array is a NumPy array (a Python list where an array is
documented fails its checks, saying so; ids may be a list of ints); a float may be any NumPy float or a
0-d array; a number (a temperature, p, u) is a Python or NumPy int or float or a 0-d array of one, never a bool
or a string; a whole number is a Python or NumPy int (not a bool, not a float).
"""

import math  # noqa: F401 - yours to use

import numpy as np

from .chapter04_attention import scaled_dot_product_attention, softmax  # noqa: F401 - yours to use
from .chapter11_multi_head_attention import merge_heads, split_heads  # noqa: F401 - yours to use
from .chapter12_rope import apply_rope  # noqa: F401 - yours to use
from .chapter13_modern_block import BLOCK_KEYS, _check_block, _check_heads, _check_weights, rms_norm, swiglu  # noqa: F401 - yours to use

ATTENTION_KEYS = ("WQ", "WK", "WV", "WO")
MODEL_KEYS = ("tok_emb", "blocks", "g_final", "W_out")


def softmax_with_temperature(logits: np.ndarray, temperature: float) -> np.ndarray:
    r"""Probabilities of the next token: the softmax of the logits divided by the temperature.

    $$p_i = \frac{e^{z_i / T}}{\sum_j e^{z_j / T}}$$

    T = 1 is the model's own distribution; T < 1 sharpens it (towards the argmax), T > 1 flattens it
    (towards uniform). Divide, never multiply: z·T would sharpen where it should flatten.

    Args:
        logits: one score per token of the vocabulary, shape (vocab,), every entry finite.
        temperature: T, a finite number > 0 (a number as the module says: not a bool, not a string).

    Returns:
        Probabilities, float64, shape (vocab,), summing to 1. logits is not modified.

    Raises:
        ValueError: if logits is not 1-D with at least one entry or has an entry that is not finite (the
            message names ``logits``), or if temperature is not a finite number > 0: 0, negative, nan and
            inf are refused (the message names ``temperature``).

    See docs: chapter 16, step 16.1.
    """
    raise NotImplementedError("16.1 softmax_with_temperature: check T > 0, then chapter 4's softmax of logits / T (4 lines)")


def top_k_filter(probs: np.ndarray, k: int) -> np.ndarray:
    r"""Keep the k most likely tokens, zero the others, and renormalise.

    $$\tilde p_i = \frac{p_i\,[i \in \mathrm{top}_k]}{\sum_{j \in \mathrm{top}_k} p_j}$$

    Ties at the boundary: the token with the lower index is kept (a stable sort on −p). With k at least the
    vocabulary's size every token is kept.

    Args:
        probs: a distribution, shape (vocab,): every entry finite and ≥ 0, summing to 1 (within 1e-6).
        k: how many tokens to keep, a whole number ≥ 1.

    Returns:
        A new distribution, float64, shape (vocab,), summing to 1, zero outside the k kept tokens. probs is
        not modified.

    Raises:
        ValueError: if probs is not such a distribution (the message names ``probs``) or k is not a whole
            number ≥ 1 (the message names ``k``).

    See docs: chapter 16, step 16.2.
    """
    raise NotImplementedError("16.2 top_k_filter: a stable argsort of -probs, keep the first k, divide by their sum (8 lines)")


def top_p_filter(probs: np.ndarray, p: float) -> np.ndarray:
    r"""Nucleus filtering: keep the smallest set of most likely tokens whose probabilities reach p.

    Sort the tokens by probability, largest first (ties: the lower index first), and keep the prefix up to
    and including the first token at which the running sum is ≥ p — the token that crosses p is kept —
    then renormalise:

    $$n = \min\{\,n : p_{(1)} + \dots + p_{(n)} \ge p\,\},\qquad
      \tilde p_{(i)} = \frac{p_{(i)}\,[i \le n]}{\sum_{j \le n} p_{(j)}}$$

    With p = 1 every token of non-zero probability is kept (if rounding leaves the whole sum just below p,
    every token is kept).

    Args:
        probs: a distribution (as ``top_k_filter``), shape (vocab,).
        p: the mass to reach, a number with 0 < p ≤ 1.

    Returns:
        A new distribution, float64, shape (vocab,), summing to 1, zero outside the kept tokens. probs is
        not modified.

    Raises:
        ValueError: if probs is not a distribution (the message names ``probs``) or p is not a number with
            0 < p ≤ 1, nan included (the message names ``p``).

    See docs: chapter 16, step 16.3.
    """
    raise NotImplementedError("16.3 top_p_filter: sort, running sum, keep up to the first sum >= p (that one too), renormalise (9 lines)")


def sample_index(probs: np.ndarray, u: float) -> int:
    r"""Draw a token by the inverse of the cumulative distribution: the first index whose running sum passes u.

    $$i = \min\{\, i : u < c_i \,\},\qquad c_i = p_0 + p_1 + \dots + p_i$$

    The comparison is strict: u exactly on a boundary c_i belongs to the next token, so token i is drawn for
    u in [c_{i−1}, c_i), a slice as wide as p_i, and a token of probability 0 is never drawn. If rounding
    leaves u ≥ the last running sum, the answer is the last index with a non-zero probability.

    Args:
        probs: a distribution (as ``top_k_filter``), shape (vocab,).
        u: the uniform draw, a number with 0 ≤ u < 1.

    Returns:
        The index drawn, a Python int in 0 … vocab − 1.

    Raises:
        ValueError: if probs is not a distribution (the message names ``probs``) or u is not a number with
            0 ≤ u < 1, nan included (the message names ``u``).

    See docs: chapter 16, step 16.4.
    """
    raise NotImplementedError("16.4 sample_index: the first i with u < cumsum(probs)[i] (np.searchsorted, side='right') (7 lines)")


def choose_next(logits: np.ndarray, u: float, temperature: float = 1.0, top_k: int | None = None,
                top_p: float | None = None) -> int:
    r"""Choose the next token from the logits: greedy at temperature 0, otherwise a filtered draw.

    $$\begin{aligned}
      T = 0&:\ i = \arg\max_i z_i, \\
      T > 0&:\ i = \mathrm{sample}\bigl(\mathrm{top\_p}(\mathrm{top\_k}(\mathrm{softmax}(z / T))),\ u\bigr)
    \end{aligned}$$

    At temperature 0 the answer is the argmax (the first index on ties) and u, top_k and top_p are not used.
    Otherwise: ``softmax_with_temperature``, then ``top_k_filter`` if top_k is given, then ``top_p_filter``
    if top_p is given, then ``sample_index`` with u.

    Args:
        logits: shape (vocab,), every entry finite.
        u: the uniform draw, 0 ≤ u < 1 (not used at temperature 0).
        temperature: a finite number ≥ 0 (default 1.0); 0 means greedy.
        top_k: None (no top-k filter) or a whole number ≥ 1.
        top_p: None (no top-p filter) or a number with 0 < top_p ≤ 1.

    Returns:
        The chosen token's index, a Python int in 0 … vocab − 1.

    Raises:
        ValueError: if logits is not 1-D, non-empty and finite (the message names ``logits``); if temperature
            is negative or not finite (the message names ``temperature``); or as ``top_k_filter``,
            ``top_p_filter`` and ``sample_index`` for top_k, top_p and u.

    See docs: chapter 16, step 16.5.
    """
    raise NotImplementedError("16.5 choose_next: T = 0 is np.argmax; else temperature, top_k, top_p, then sample_index (10 lines)")


def attention_with_cache(x_new: np.ndarray, params: dict, n_heads: int, cache: dict | None) -> tuple[np.ndarray, dict]:
    r"""Causal multi-head rotary attention for new rows, reading and extending one block's KV cache.

    The new rows sit at positions t … t+m−1 after the t cached ones. Their queries and keys are cut into
    heads and rotated from position t (chapter 12's ``start = t``); the keys and values are appended to the
    cache's (the cached keys are stored already rotated and are not rotated again):

    $$\begin{gathered}
      K = [K_{cache};\ \mathrm{RoPE}_t(x W_K)],\quad V = [V_{cache};\ x W_V], \\
      \mathrm{head}_h = \mathrm{softmax}\!\left(\frac{\mathrm{RoPE}_t(Q_h) K_h^\top}{\sqrt{d_{head}}} + M\right)
      V_h,\qquad \mathrm{out} = [\mathrm{head}_0, \dots]\, W_O
    \end{gathered}$$

    M lets new row i (position t+i) see every cached position and the new rows 0 … i, not those after it.
    The output rows equal rows t … t+m−1 of chapter 13's ``rope_multi_head_attention`` over all t+m rows.

    Args:
        x_new: the (normalised) new rows, shape (m, d_model), m ≥ 1.
        params: a dict with the keys ``"WQ"``, ``"WK"``, ``"WV"``, ``"WO"``, each (d_model, d_model); other
            keys are ignored.
        n_heads: how many heads, a whole number ≥ 1 dividing d_model into heads of an even width d_head.
        cache: None (no position seen yet, t = 0) or a dict ``{"K": ..., "V": ...}`` of two arrays of shape
            (n_heads, t, d_head), the keys already rotated.

    Returns:
        (out, new_cache): out has shape (m, d_model); new_cache is a new dict ``{"K", "V"}`` of new arrays of
        shape (n_heads, t+m, d_head). Neither x_new, params nor cache is modified.

    Raises:
        ValueError: if x_new is not 2-D with at least one row (the message names ``x_new`` and its shape); if
            n_heads is not a whole number ≥ 1 (the message names ``n_heads``), does not divide d_model (the
            message says "divisible") or leaves an odd d_head (the message says "odd"); if params is not a
            dict (the message names ``params`` and the type it got, e.g. list), lacks a weight or has one of the
            wrong shape (the message names it, e.g. ``WO`` or ``WK``, and its shape); or if cache is neither None
            nor such
            a dict: not a dict (the message names ``cache`` and the type it got, e.g. list), without ``K`` or
            ``V``, or an array of another shape (the message names ``cache``, ``K`` or ``V`` and the shapes).

    See docs: chapter 16, step 16.6.
    """
    raise NotImplementedError("16.6 attention_with_cache: rotate the new q and k from start = t, append k and v to the cache, mask, attend (14 lines)")


def block_with_cache(x_new: np.ndarray, params: dict, n_heads: int, cache: dict | None) -> tuple[np.ndarray, dict]:
    r"""Chapter 13's pre-norm block for new rows, its attention reading and extending the block's KV cache.

    $$\begin{gathered}
      x_1 = x + \mathrm{AttentionWithCache}(\mathrm{RMSNorm}_{g_1}(x)), \\
      y = x_1 + \mathrm{SwiGLU}(\mathrm{RMSNorm}_{g_2}(x_1))
    \end{gathered}$$

    Only the attention looks at other positions; the norms and SwiGLU work row by row, so the new rows need
    nothing else from before. RMSNorm uses its default eps.

    Args:
        x_new: the residual stream's new rows, shape (m, d_model), m ≥ 1.
        params: a dict with exactly the keys ``BLOCK_KEYS`` (as chapter 13's ``prenorm_block``): g1 and g2
            (d_model,), WQ, WK, WV, WO (d_model, d_model), W_gate and W_up (d_model, d_ff), W_down
            (d_ff, d_model).
        n_heads: as ``attention_with_cache``.
        cache: this block's cache, as ``attention_with_cache``.

    Returns:
        (y, new_cache): y has shape (m, d_model); new_cache as ``attention_with_cache`` returns it. Neither
        x_new, params nor cache is modified.

    Raises:
        ValueError: if x_new is not 2-D with at least one row (the message names ``x_new``); if params is not
            a dict (the message names ``params`` and the type it got, e.g. list) or does not have exactly those
            keys (the message names a missing key, e.g. ``g2``, or one that does not belong, e.g. ``bias``); if
            a parameter has the wrong shape (the message names it, e.g. ``g1`` or ``W_up``, and its shape); or
            as ``attention_with_cache`` and chapter 13's ``swiglu``.

    See docs: chapter 16, step 16.7.
    """
    raise NotImplementedError("16.7 block_with_cache: chapter 13's prenorm_block with attention_with_cache in place of the attention (7 lines)")


def gpt_forward(ids, model: dict, n_heads: int, caches: list | None = None) -> tuple[np.ndarray, list]:
    r"""The whole model on new token ids, after the positions its caches hold: logits for every new row.

    $$\begin{gathered}
      x = E[\mathrm{ids}],\qquad x \leftarrow \mathrm{Block}_\ell(x)\ \ (\ell = 1 \dots L,\ \text{each with its
      cache}), \\
      \mathrm{logits} = \mathrm{RMSNorm}_{g_{final}}(x)\, W_{out}
    \end{gathered}$$

    With caches None it is the full forward over the sequence (the prefill); with the caches a call returned,
    the ids continue that sequence at positions t, t+1, … .

    Args:
        ids: the new token ids, shape (m,), m ≥ 1: a 1-D array of ints (or a list of ints), each 0 ≤ id < vocab.
        model: a dict with the keys ``"tok_emb"`` (vocab, d_model), ``"blocks"`` (a non-empty list of block
            dicts, as ``block_with_cache``), ``"g_final"`` (d_model,) and ``"W_out"`` (d_model, vocab).
        n_heads: as ``attention_with_cache``.
        caches: None (nothing seen yet) or a list with one cache per block (each as ``attention_with_cache``).

    Returns:
        (logits, new_caches): logits has shape (m, vocab), row i the scores of the token after position t+i;
        new_caches is a new list with one new cache per block, each holding t+m positions. Neither ids, model
        nor caches is modified.

    Raises:
        ValueError: if ids is not 1-D with at least one whole number (the message names ``ids``) or has an id
            outside 0 … vocab − 1 (the message names the id); if model is not a dict
            (the message names ``model`` and the type it got, e.g. list) or lacks a key (the message names it,
            e.g. ``W_out``); if tok_emb is not 2-D, g_final or W_out has the wrong shape, or blocks is not a
            non-empty list (the message names it, e.g. ``tok_emb`` or ``blocks``, and the shape it has); if
            caches is neither None nor a list (the message names ``caches`` and the type it got, e.g. dict) or
            has not one entry per block (the message names ``caches`` and both lengths); or as
            ``block_with_cache``.

    See docs: chapter 16, step 16.8.
    """
    raise NotImplementedError("16.8 gpt_forward: embed the ids, every block with its own cache, final RMSNorm, W_out (12 lines)")


def generate(prompt_ids, model: dict, n_heads: int, us, temperature: float = 1.0, top_k: int | None = None,
             top_p: float | None = None) -> list[int]:
    r"""Generate len(us) tokens after a prompt: prefill once, then one token at a time from the KV cache.

    $$\begin{gathered}
      (z, C) = \mathrm{gpt\_forward}(\mathrm{prompt}), \\
      i_n = \mathrm{choose\_next}(z_{\text{last}}, u_n),\qquad (z, C) = \mathrm{gpt\_forward}([i_n], C)
    \end{gathered}$$

    The prompt goes through ``gpt_forward`` once with caches None; each new token is ``choose_next`` of the
    last row of the latest logits with the next u (and temperature, top_k, top_p), and is then fed alone with
    the caches. The result is what the full forward over the prompt and the tokens so far would choose at
    every step.

    Args:
        prompt_ids: the prompt, at least one id (as ``gpt_forward``'s ids).
        model: as ``gpt_forward``.
        n_heads: as ``attention_with_cache``.
        us: the uniform draws, one per token to generate, each 0 ≤ u < 1 (a list or a 1-D array; may be empty).
        temperature: as ``choose_next``.
        top_k: as ``choose_next``.
        top_p: as ``choose_next``.

    Returns:
        The len(us) new ids (the prompt not included), a list of Python ints. Nothing given is modified.

    Raises:
        ValueError: if prompt_ids is empty (the message names ``prompt_ids``); or as ``gpt_forward`` and
            ``choose_next``.

    See docs: chapter 16, step 16.9.
    """
    raise NotImplementedError("16.9 generate: prefill the prompt once, then choose_next and feed each new id alone with the caches (9 lines)")


# -- checks and helpers (not part of the exercise) -----------------------------------------------------
