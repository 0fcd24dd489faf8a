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
attending to the cached keys and its own, with RoPE at its true position (chapter 12's start: how many
are cached). The logits come out the same as the full forward's, at a fraction of the work.

The model is chapter 13's pre-norm block repeated: a dict ``model`` with ``"tok_emb"`` (vocab, d_model),
``"blocks"`` (a list of chapter 13 block dicts, keys ``BLOCK_KEYS``), ``"g_final"`` (d_model,), the final
RMSNorm's gain, and ``"W_out"`` (d_model, vocab), the unembedding; no position embedding (RoPE, base 10000,
gives positions). One block's cache is a dict with the keys ``"K"`` and ``"V"``, each of shape (n_heads, t,
d_head), holding t positions, or None for none yet.

Worksheet: this course's own (Part II goes beyond the book): see docs/chapters/16-sampling.md.

Types, as every docstring below uses them: an array is a NumPy array (ids may be a list of ints); a number (a
temperature, p, u) is a Python or NumPy int or float or a 0-d array of one, never a bool or a string; a whole
number is a Python or NumPy int (not a bool, not a float). The checks given above each stub's ``raise`` refuse
anything else.
"""

import math

import numpy as np

from .chapter04_attention import scaled_dot_product_attention, softmax  # noqa: F401 - yours to use
from .chapter11_multi_head_attention import merge_heads, split_heads  # noqa: F401 - yours to use
from .chapter12_rope import apply_rope  # noqa: F401 - yours to use
from .chapter13_modern_block import (  # noqa: F401 - BLOCK_KEYS: the stub binds it for the learner
    BLOCK_KEYS,  # noqa: F401 - yours to use
    _check_block,
    _check_heads,
    _check_rows,
    _check_weights,
    rms_norm,  # noqa: F401 - yours to use
    swiglu,  # noqa: F401 - yours to use
)

ATTENTION_KEYS = ("WQ", "WK", "WV", "WO")
MODEL_KEYS = ("tok_emb", "blocks", "g_final", "W_out")


def softmax_with_temperature(logits: np.ndarray, temperature: float) -> np.ndarray:
    r"""Probabilities of the next token: the softmax of the logits divided by the temperature.

    $$p_i = \frac{e^{z_i / T}}{\sum_j e^{z_j / T}}$$

    T = 1 is the model's own distribution; T < 1 sharpens it (towards the argmax), T > 1 flattens it
    (towards uniform). Divide, never multiply: z·T would sharpen where it should flatten.

    Args:
        logits: one score per token of the vocabulary, shape (vocab,), every entry finite.
        temperature: T, a finite number > 0.

    Returns:
        Probabilities, float64, shape (vocab,), summing to 1. logits is not modified.

    Raises:
        ValueError: if temperature is 0 or negative (the message names ``temperature``): yours to write, T = 0
            is greedy, ``choose_next``'s, and z / T has no meaning there. Logits that are not 1-D, non-empty
            and finite, and a temperature that is not a finite number, are refused by the checks given above
            the ``raise``, which hand you the logits as a float64 array ``z``.

    See docs: chapter 16, step 16.1.
    """
    z = _check_logits(logits)  # noqa: F841 - yours to use
    _check_number(temperature, "temperature")
    raise NotImplementedError("16.1 softmax_with_temperature: chapter 4's softmax of the logits over T, refusing a T not above 0 (greedy is choose_next's) (3 lines)")


def top_k_filter(probs: np.ndarray, k: int) -> np.ndarray:
    r"""Keep the k most likely tokens, zero the others, and renormalise.

    $$\tilde p_i = \frac{p_i\,[i \in \mathrm{top}_k]}{\sum_{j \in \mathrm{top}_k} p_j}$$

    Ties at the boundary: the token with the lower index is kept. With k at least the vocabulary's size every
    token is kept.

    Args:
        probs: a distribution, shape (vocab,): every entry finite and ≥ 0, summing to 1 (within 1e-6).
        k: how many tokens to keep, a whole number ≥ 1.

    Returns:
        A new distribution, float64, shape (vocab,), summing to 1, zero outside the k kept tokens. probs is
        not modified.

    Raises:
        ValueError: if probs is not such a distribution or k is not a whole number ≥ 1: the checks given above
            the ``raise``, which hand you probs as a float64 array ``p``.

    See docs: chapter 16, step 16.2.
    """
    p = _check_probs(probs)  # noqa: F841 - yours to use
    _check_count(k, "k")
    raise NotImplementedError("16.2 top_k_filter: the k most likely tokens' probabilities renormalised and the rest zero, a tie going to the lower index as a stable sort gives (4 lines)")


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
        ValueError: if probs is not a distribution or p is not a number with 0 < p ≤ 1: the checks given above
            the ``raise``, which hand you probs as a float64 array ``q``.

    See docs: chapter 16, step 16.3.
    """
    q = _check_probs(probs)  # noqa: F841 - yours to use
    _check_mass(p)
    raise NotImplementedError("16.3 top_p_filter: the fewest most likely tokens (ranked as top_k_filter ranks) whose probabilities reach p, renormalised with the rest zero (6 lines)")


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
        ValueError: if probs is not a distribution or u is not a number with 0 ≤ u < 1: the checks given above
            the ``raise``, which hand you probs as a float64 array ``q``.

    See docs: chapter 16, step 16.4.
    """
    q = _check_probs(probs)  # noqa: F841 - yours to use
    _check_draw(u)
    raise NotImplementedError("16.4 sample_index: the lowest index whose running sum is strictly above u, or the last token of non-zero probability if rounding leaves none (5 lines)")


def choose_next(logits: np.ndarray, u: float, temperature: float = 1.0, top_k: int | None = None,
                top_p: float | None = None) -> int:
    r"""Choose the next token from the logits: greedy at temperature 0, otherwise a filtered draw.

    $$\begin{aligned}
      T = 0&:\ i = \arg\max_i z_i, \\
      T > 0&:\ i = \mathrm{sample}\bigl(\mathrm{top\_p}(\mathrm{top\_k}(\mathrm{softmax}(z / T))),\ u\bigr)
    \end{aligned}$$

    At temperature 0 the answer is the argmax (the first index on ties) and u, top_k and top_p are not used.
    Otherwise it is the token u picks by the inverse CDF (as ``sample_index`` reads u) from the distribution
    softmax(z / T), cut to its top_k most likely tokens when top_k is given and then to its top_p nucleus when
    top_p is given, renormalised after each cut: top-k before top-p, as in the formula (either cut left out
    when not given). The distributions are those of ``softmax_with_temperature``, ``top_k_filter`` and
    ``top_p_filter``.

    Args:
        logits: shape (vocab,), every entry finite.
        u: the uniform draw, 0 ≤ u < 1 (not used at temperature 0).
        temperature: a finite number ≥ 0 (default 1.0); 0 means greedy.
        top_k: None (no top-k filter) or a whole number ≥ 1.
        top_p: None (no top-p filter) or a number with 0 < top_p ≤ 1.

    Returns:
        The chosen token's index, a Python int in 0 … vocab − 1.

    Raises:
        ValueError: as ``softmax_with_temperature`` for a negative temperature (the message names
            ``temperature``), and as ``top_k_filter``, ``top_p_filter`` and ``sample_index`` for top_k, top_p
            and u. Logits that are not 1-D, non-empty and finite, and a temperature that is not a finite
            number, are refused by the checks given above the ``raise``, which hand you the logits as a float64
            array ``z``.

    See docs: chapter 16, step 16.5.
    """
    z = _check_logits(logits)  # noqa: F841 - yours to use
    _check_number(temperature, "temperature")
    raise NotImplementedError("16.5 choose_next: the greedy pick at temperature 0 (the lowest index of the largest logit), otherwise a draw with u from the filtered softmax (8 lines)")


def attention_with_cache(x_new: np.ndarray, params: dict, n_heads: int, cache: dict | None) -> tuple[np.ndarray, dict]:
    r"""Causal multi-head rotary attention for new rows, reading and extending one block's KV cache.

    The new rows sit at positions t … t+m−1 after the t cached ones. Their queries and keys are cut into
    heads and rotated from position t (chapter 12's start, set to t); the keys and values are appended to the
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
        cache: None (no position seen yet, t = 0) or a dict with the keys ``"K"`` and ``"V"``, two arrays of
            shape (n_heads, t, d_head), the keys already rotated.

    Returns:
        (out, new_cache): out has shape (m, d_model); new_cache is a new dict with the keys ``"K"`` and ``"V"``,
        new arrays of shape (n_heads, t+m, d_head). Neither x_new, params nor cache is modified.

    Raises:
        ValueError: if x_new, n_heads, a weight or the cache does not fit: the checks given above the
            ``raise``, which hand you x_new as a float64 array ``x``, the weights ``W`` and the cached keys and
            values as arrays of shape (n_heads, t, d_head) (t = 0 for None).

    See docs: chapter 16, step 16.6.
    """
    x = _check_rows(x_new, "attention_with_cache: x_new")  # noqa: F841 - yours to use
    _check_heads(x.shape[1], n_heads)
    W = _check_weights(params, ATTENTION_KEYS, x.shape[1])  # noqa: F841 - yours to use
    K_old, V_old = _check_cache(cache, n_heads, x.shape[1] // n_heads)  # noqa: F841 - yours to use
    raise NotImplementedError("16.6 attention_with_cache: the new rows' attention over every position so far, and the grown cache (8 lines)")


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
        ValueError: if x_new or params does not fit: the checks given above the ``raise``, which hand you
            x_new as a float64 array ``x``; or as ``attention_with_cache``.

    See docs: chapter 16, step 16.7.
    """
    x = _check_rows(x_new, "block_with_cache: x_new")  # noqa: F841 - yours to use
    _check_block(params, x.shape[1], "block_with_cache")
    raise NotImplementedError("16.7 block_with_cache: chapter 13's pre-norm block with attention_with_cache in place of its attention, the new cache handed back (4 lines)")


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
        ValueError: if the model, the ids or the caches do not fit: the checks given above the ``raise``,
            which hand you the embedding ``E`` (vocab, d_model) as a float64 array, the ids as an integer
            array and the caches as a list with one entry per block (each None for caches None); or as
            ``block_with_cache``.

    See docs: chapter 16, steps 16.8 and 16.9.
    """
    E = _check_model(model)  # noqa: F841 - yours to use
    idx = _check_ids(ids, len(E))  # noqa: F841 - yours to use
    caches = _check_caches(caches, model["blocks"])
    raise NotImplementedError("16.8 gpt_forward: the logits of the new ids with every block reading and growing its own cache, and the new caches (6 lines)")


def generate(prompt_ids, model: dict, n_heads: int, us, temperature: float = 1.0, top_k: int | None = None,
             top_p: float | None = None) -> list[int]:
    r"""Generate one token per draw u after a prompt: prefill once, then one token at a time from the KV cache.

    $$i_n = \mathrm{choose\_next}\bigl(z(\mathrm{prompt}, i_1, \dots, i_{n-1})_{\text{last}},\ u_n\bigr),
      \qquad n = 1, \dots, N,$$

    where $z(\cdot)$ is the model's logits for a sequence and $N$ the number of draws: token $n$ is what
    ``choose_next`` picks with the $n$-th u (and temperature, top_k, top_p) from the last row of the logits of
    the prompt followed by the tokens before it. The prompt is read once and each later token through the KV
    caches (``gpt_forward`` with caches), never the whole sequence again; the result is what the full forward
    would choose at every step.

    Args:
        prompt_ids: the prompt, at least one id (as ``gpt_forward``'s ids).
        model: as ``gpt_forward``.
        n_heads: as ``attention_with_cache``.
        us: the uniform draws, one per token to generate, each 0 ≤ u < 1 (a list or a 1-D array; may be empty).
        temperature: as ``choose_next``.
        top_k: as ``choose_next``.
        top_p: as ``choose_next``.

    Returns:
        The new ids, one per u (the prompt not included), a list of Python ints. Nothing given is modified.

    Raises:
        ValueError: if prompt_ids is empty: the check given above the ``raise``; or as ``gpt_forward`` and
            ``choose_next``.

    See docs: chapter 16, steps 16.10 and 16.11.
    """
    _check_prompt(prompt_ids)
    raise NotImplementedError("16.10 generate: one token per u by choose_next, the prompt read once and each new token fed alone through the caches (7 lines)")


# -- input checks: the course's, given in the stubs (CONTRIBUTING.md, "The stub") -----------------------------
def _check_number(value, name: str) -> None:
    """Refuse what is not a finite number: an int or a float (NumPy's too) or a 0-d array of one; not a bool."""
    dtype = np.asarray(value).dtype
    if np.ndim(value) != 0 or not (np.issubdtype(dtype, np.integer) or np.issubdtype(dtype, np.floating)):
        raise ValueError(f"{name} must be a number (an int or a float), got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def _check_mass(p) -> None:
    """Refuse a p that is not a number with 0 < p ≤ 1 (nan and inf included)."""
    _check_number(p, "p")
    if not 0 < p <= 1:
        raise ValueError(f"p must be a number with 0 < p <= 1, got {p!r}")


def _check_draw(u) -> None:
    """Refuse a u that is not a number with 0 ≤ u < 1 (nan and inf included)."""
    _check_number(u, "u")
    if not 0 <= u < 1:
        raise ValueError(f"u must be a number with 0 <= u < 1, got {u!r}")


def _check_count(value, name: str) -> None:
    """Refuse what is not a whole number ≥ 1 (a Python or NumPy int, not a bool, not a float)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")


def _check_logits(logits) -> np.ndarray:
    """The logits as a float64 array, after checking they are 1-D, non-empty and finite."""
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim != 1 or len(z) < 1:
        raise ValueError(f"logits must be 1-D (vocab,) with at least one entry, got shape {z.shape}")
    if not np.all(np.isfinite(z)):
        raise ValueError(f"logits has an entry that is not finite (nan or inf): {z}")
    return z


def _check_probs(probs) -> np.ndarray:
    """The probabilities as a float64 array, after checking they are 1-D, finite, ≥ 0 and sum to 1 (1e-6)."""
    q = np.asarray(probs, dtype=np.float64)
    if q.ndim != 1 or len(q) < 1:
        raise ValueError(f"probs must be 1-D (vocab,) with at least one entry, got shape {q.shape}")
    if not np.all(np.isfinite(q)) or np.any(q < 0) or abs(q.sum() - 1.0) > 1e-6:
        raise ValueError(f"probs must be a distribution: finite, >= 0 and summing to 1 (sum {q.sum()!r})")
    return q


def _check_cache(cache, n_heads: int, d_head: int) -> tuple[np.ndarray, np.ndarray]:
    """The cached (K, V), each (n_heads, t, d_head), after checking them; two empty ones (t = 0) for None."""
    if cache is None:
        return np.zeros((n_heads, 0, d_head)), np.zeros((n_heads, 0, d_head))
    if not isinstance(cache, dict):
        raise ValueError(f"cache must be None or a dict with the keys K and V, got {type(cache).__name__}")
    for k in ("K", "V"):
        if k not in cache:
            raise ValueError(f"cache lacks {k}: a cache is a dict with the keys K and V, or None")
    K, V = np.asarray(cache["K"]), np.asarray(cache["V"])
    if K.ndim != 3 or K.shape[0] != n_heads or K.shape[2] != d_head:
        raise ValueError(f"cache K has shape {K.shape}, expected (n_heads, t, d_head) = ({n_heads}, t, {d_head})")
    if V.shape != K.shape:
        raise ValueError(f"cache V has shape {V.shape}, expected K's shape {K.shape}")
    return K, V


def _check_ids(ids, vocab: int) -> np.ndarray:
    """The ids as an integer array, after checking they are 1-D, non-empty, whole numbers in 0 … vocab − 1."""
    a = np.asarray(ids)
    if a.ndim != 1 or len(a) < 1 or not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"ids must be a 1-D array of whole numbers with at least one id, got {ids!r}")
    for i in a:
        if not 0 <= i < vocab:
            raise ValueError(f"ids: id {i} is outside the vocabulary of {vocab} tokens")
    return a


def _check_model(model) -> np.ndarray:
    """The embedding (vocab, d_model) as a float64 array, after checking the model's keys and shapes."""
    if not isinstance(model, dict):
        raise ValueError(f"model must be a dict with the keys {MODEL_KEYS}, got {type(model).__name__}")
    for k in MODEL_KEYS:
        if k not in model:
            raise ValueError(f"model lacks {k}: a model is a dict with the keys {MODEL_KEYS}")
    E = np.asarray(model["tok_emb"], dtype=np.float64)
    if E.ndim != 2:
        raise ValueError(f"model['tok_emb'] must be 2-D (vocab, d_model), got shape {E.shape}")
    vocab, d_model = E.shape
    blocks = model["blocks"]
    if not isinstance(blocks, (list, tuple)) or not blocks:
        raise ValueError(f"model['blocks'] must be a non-empty list of block dicts, got {blocks!r:.80}")
    if np.shape(model["g_final"]) != (d_model,):
        raise ValueError(f"model['g_final'] has shape {np.shape(model['g_final'])}, expected {(d_model,)}")
    if np.shape(model["W_out"]) != (d_model, vocab):
        raise ValueError(f"model['W_out'] has shape {np.shape(model['W_out'])}, expected {(d_model, vocab)}")
    return E


def _check_caches(caches, blocks: list) -> list:
    """The caches as a list with one entry per block (each None for caches None), after checking their number."""
    if caches is None:
        return [None] * len(blocks)
    if not isinstance(caches, (list, tuple)):
        raise ValueError(f"caches must be None or a list with one cache per block, got {type(caches).__name__}")
    if len(caches) != len(blocks):
        raise ValueError(f"caches holds {len(caches)} caches, but the model has {len(blocks)} blocks: one cache each")
    return list(caches)


def _check_prompt(prompt_ids) -> None:
    """Refuse an empty prompt: generation needs at least one id to start from."""
    if np.size(prompt_ids) < 1:
        raise ValueError(f"generate: prompt_ids must hold at least one id, got {prompt_ids!r}")
