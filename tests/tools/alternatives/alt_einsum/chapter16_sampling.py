"""Chapter 16, written from the docstrings: log-sum-exp, masks by comparison, np.einsum over all heads at once."""

import numbers

import numpy as np

from .chapter04_attention import scaled_dot_product_attention, softmax  # noqa: F401
from .chapter11_multi_head_attention import merge_heads, split_heads  # noqa: F401
from .chapter12_rope import apply_rope  # noqa: F401
from .chapter13_modern_block import BLOCK_KEYS, _attention_weights, _check, _d_head, rms_norm, swiglu

ATTENTION_KEYS = ("WQ", "WK", "WV", "WO")
MODEL_KEYS = ("tok_emb", "blocks", "g_final", "W_out")


def _scalar(value) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, np.ndarray):
        return value.ndim == 0 and np.issubdtype(value.dtype, np.number)
    return isinstance(value, numbers.Real)


def _vector(a, name: str) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 1 or len(a) == 0:
        raise ValueError(f"{name} must be 1-D with at least one entry, got shape {a.shape}")
    return a


def _distribution(probs) -> np.ndarray:
    p = _vector(probs, "probs")
    if not np.isfinite(p).all() or (p < 0).any() or not np.isclose(p.sum(), 1.0, rtol=0, atol=1e-6):
        raise ValueError("probs must be finite, non-negative and sum to 1")
    return p


def _check_temperature(temperature, zero_ok: bool) -> None:
    ok = _scalar(temperature) and np.isfinite(temperature) and (temperature > 0 or zero_ok and temperature == 0)
    if not ok:
        raise ValueError(f"temperature must be finite and {'>= 0' if zero_ok else '> 0'}, got {temperature!r}")


def _keep(p: np.ndarray, mask: np.ndarray) -> np.ndarray:
    kept = np.where(mask, p, 0.0)
    return kept / kept.sum()


def _ranks(p: np.ndarray) -> np.ndarray:
    """rank[i] = where token i stands when sorted most likely first, ties by index (lexsort on (index, -p))."""
    order = np.lexsort((np.arange(len(p)), -p))
    rank = np.empty(len(p), dtype=int)
    rank[order] = np.arange(len(p))
    return rank


def softmax_with_temperature(logits: np.ndarray, temperature: float) -> np.ndarray:
    """exp(z/T − logsumexp(z/T))."""
    z = _vector(logits, "logits")
    if not np.isfinite(z).all():
        raise ValueError("logits has a nan or inf entry")
    _check_temperature(temperature, zero_ok=False)
    s = z / temperature
    top = s.max()
    return np.exp(s - top - np.log(np.exp(s - top).sum()))


def top_k_filter(probs: np.ndarray, k: int) -> np.ndarray:
    """Keep the tokens whose rank is below k."""
    p = _distribution(probs)
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a whole number >= 1, got {k!r}")
    return _keep(p, _ranks(p) < k)


def top_p_filter(probs: np.ndarray, p: float) -> np.ndarray:
    """Keep a token when the mass ranked strictly before it is still below p."""
    q = _distribution(probs)
    if not _scalar(p) or not (0 < p <= 1):
        raise ValueError(f"p must satisfy 0 < p <= 1, got {p!r}")
    order = np.lexsort((np.arange(len(q)), -q))
    before = np.concatenate([[0.0], np.cumsum(q[order])[:-1]])  # mass ranked before each token
    keep_sorted = before < p  # every token until (and including) the one that reaches p
    mask = np.zeros(len(q), dtype=bool)
    mask[order] = keep_sorted
    return _keep(q, mask)


def sample_index(probs: np.ndarray, u: float) -> int:
    """The number of running sums at or below u is the index drawn."""
    p = _distribution(probs)
    if not _scalar(u) or not (0 <= u < 1):
        raise ValueError(f"u must satisfy 0 <= u < 1, got {u!r}")
    i = int(np.count_nonzero(np.cumsum(p) <= u))
    return i if i < len(p) else int(np.nonzero(p > 0)[0].max())


def choose_next(logits: np.ndarray, u: float, temperature: float = 1.0, top_k: int | None = None,
                top_p: float | None = None) -> int:
    """Greedy at 0; otherwise the filters in order, then the draw."""
    z = _vector(logits, "logits")
    if not np.isfinite(z).all():
        raise ValueError("logits has a nan or inf entry")
    _check_temperature(temperature, zero_ok=True)
    if temperature == 0:
        return int(np.flatnonzero(z == z.max())[0])
    p = softmax_with_temperature(z, temperature)
    p = p if top_k is None else top_k_filter(p, top_k)
    p = p if top_p is None else top_p_filter(p, top_p)
    return sample_index(p, u)


def _rotate(H: np.ndarray, start: int) -> np.ndarray:
    """(n_heads, m, d_head) turned pair by pair, row j at position start + j, as complex numbers."""
    d = H.shape[-1]
    theta = 10000.0 ** (-np.arange(d // 2) * 2.0 / d)
    turn = np.exp(1j * np.einsum("m,p->mp", start + np.arange(H.shape[-2]), theta))
    z = (H[..., 0::2] + 1j * H[..., 1::2]) * turn
    out = np.empty(H.shape)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


def attention_with_cache(x_new: np.ndarray, params: dict, n_heads: int, cache: dict | None) -> tuple[np.ndarray, dict]:
    """All heads at once with einsum; the mask compares key and query positions."""
    x = np.asarray(x_new)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"x_new must be 2-D with at least one row, got shape {x.shape}")
    m, d_model = x.shape
    d_head = _d_head(d_model, n_heads)
    W = _attention_weights(params, d_model)
    if cache is None:
        K0 = V0 = np.zeros((n_heads, 0, d_head))
    elif not isinstance(cache, dict) or "K" not in cache or "V" not in cache:
        raise ValueError(f"cache must be None or a dict with K and V, got {type(cache).__name__}")
    else:
        K0, V0 = np.asarray(cache["K"]), np.asarray(cache["V"])
        if K0.ndim != 3 or K0.shape[0] != n_heads or K0.shape[2] != d_head:
            raise ValueError(f"cache K has shape {K0.shape}, not (n_heads={n_heads}, t, d_head={d_head})")
        if V0.shape != K0.shape:
            raise ValueError(f"cache V has shape {V0.shape}, K has {K0.shape}")
    t = K0.shape[1]
    per_head = {k: np.einsum("md,dhe->hme", x, W[k].reshape(d_model, n_heads, d_head)) for k in ("WQ", "WK", "WV")}
    Q = _rotate(per_head["WQ"], t)
    K = np.concatenate([K0, _rotate(per_head["WK"], t)], axis=1)
    V = np.concatenate([V0, per_head["WV"]], axis=1)
    S = np.einsum("hme,hne->hmn", Q, K) / np.sqrt(d_head)
    visible = np.arange(t + m)[None, :] - np.arange(m)[:, None] <= t
    S = np.where(visible, S, -np.inf)
    S = S - S.max(axis=-1, keepdims=True)
    P = np.exp(S - np.log(np.exp(S).sum(axis=-1, keepdims=True)))
    heads = np.einsum("hmn,hne->mhe", P, V).reshape(m, d_model)
    return np.einsum("md,de->me", heads, W["WO"]), {"K": K, "V": V}


def block_with_cache(x_new: np.ndarray, params: dict, n_heads: int, cache: dict | None) -> tuple[np.ndarray, dict]:
    """The pre-norm block, the attention reading the cache."""
    x = np.asarray(x_new)
    if x.ndim != 2 or x.shape[0] < 1:
        raise ValueError(f"x_new must be 2-D with at least one row, got shape {x.shape}")
    if not isinstance(params, dict):
        raise ValueError(f"params must be a dict, got {type(params).__name__}")
    if set(params) != set(BLOCK_KEYS):
        odd = sorted(set(BLOCK_KEYS) - set(params)) or sorted(map(str, set(params) - set(BLOCK_KEYS)))
        raise ValueError(f"params must have exactly the block's keys: {', '.join(odd)} missing or not belonging")
    for k in ("g1", "g2"):
        _check(f"params[{k!r}]", params[k], (x.shape[1],))
    a, new_cache = attention_with_cache(rms_norm(x, params["g1"]), params, n_heads, cache)
    x1 = x + a
    return x1 + swiglu(rms_norm(x1, params["g2"]), params["W_gate"], params["W_up"], params["W_down"])[0], new_cache


def gpt_forward(ids, model: dict, n_heads: int, caches: list | None = None) -> tuple[np.ndarray, list]:
    """tok_emb rows, the blocks with their caches, RMSNorm_g_final, W_out."""
    if not isinstance(model, dict):
        raise ValueError(f"model must be a dict, not a {type(model).__name__}")
    if any(k not in model for k in MODEL_KEYS):
        lacking = [k for k in MODEL_KEYS if not isinstance(model, dict) or k not in model]
        raise ValueError(f"model must be a dict with {', '.join(MODEL_KEYS)}; it lacks {', '.join(lacking)}")
    E = np.asarray(model["tok_emb"])
    if E.ndim != 2:
        raise ValueError(f"model['tok_emb'] must be (vocab, d_model), got shape {E.shape}")
    vocab, d_model = E.shape
    if not isinstance(model["blocks"], (list, tuple)) or not model["blocks"]:
        raise ValueError("model['blocks'] must be a non-empty list")
    g = _check("model['g_final']", model["g_final"], (d_model,))
    W_out = _check("model['W_out']", model["W_out"], (d_model, vocab))
    idx = np.asarray(ids)
    if idx.ndim != 1 or idx.size == 0 or not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"ids must be 1-D whole numbers, at least one, got {ids!r}")
    bad = idx[(idx < 0) | (idx >= vocab)]
    if bad.size:
        raise ValueError(f"ids holds {bad[0]}, outside 0 … {vocab - 1}")
    n_blocks = len(model["blocks"])
    caches = [None] * n_blocks if caches is None else caches
    if not isinstance(caches, (list, tuple)):
        raise ValueError(f"caches must be a list, got a {type(caches).__name__}")
    if len(caches) != n_blocks:
        raise ValueError(f"caches needs {n_blocks} entries (one per block), got {len(caches)}")
    x = E[idx]
    out = []
    for params, cache in zip(model["blocks"], caches, strict=True):
        x, cache = block_with_cache(x, params, n_heads, cache)
        out.append(cache)
    return np.einsum("md,dv->mv", rms_norm(x, g), W_out), out


def generate(prompt_ids, model: dict, n_heads: int, us, temperature: float = 1.0, top_k: int | None = None,
             top_p: float | None = None) -> list[int]:
    """One prefill; every later call is one id with the caches (the last choice needs no forward)."""
    prompt = np.asarray(prompt_ids)
    if prompt.size == 0:
        raise ValueError("prompt_ids is empty")
    logits, caches = gpt_forward(prompt, model, n_heads)
    chosen: list[int] = []
    us = list(us)
    while len(chosen) < len(us):
        chosen.append(choose_next(logits[-1], us[len(chosen)], temperature, top_k, top_p))
        if len(chosen) < len(us):
            logits, caches = gpt_forward(np.array(chosen[-1:]), model, n_heads, caches)
    return chosen
