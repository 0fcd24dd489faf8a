"""Chapter 16, written from the docstrings: sampling token by token with math, the cache head by head, row by row."""

import math
import numbers

import numpy as np

from .chapter04_attention import scaled_dot_product_attention, softmax  # noqa: F401
from .chapter11_multi_head_attention import merge_heads, split_heads  # noqa: F401
from .chapter12_rope import apply_rope  # noqa: F401
from .chapter13_modern_block import (  # noqa: F401
    BLOCK_KEYS,
    _attention_weights,
    _block_gains,
    _head_width,
    _shaped,
    rms_norm,
    swiglu,
)

ATTENTION_KEYS = ("WQ", "WK", "WV", "WO")
MODEL_KEYS = ("tok_emb", "blocks", "g_final", "W_out")


# -- checks --------------------------------------------------------------------------------------------------
def _real(value) -> bool:
    """A real number that is not a bool (a 0-d array of one counts)."""
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, np.ndarray):
        return value.ndim == 0 and value.dtype.kind in "fiu"
    return isinstance(value, numbers.Real)


def _logit_list(logits) -> list[float]:
    a = np.asarray(logits, dtype=np.float64)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"logits must be 1-D with at least one entry, got shape {a.shape}")
    values = [float(v) for v in a]
    if not all(math.isfinite(v) for v in values):
        raise ValueError("every entry of logits must be finite")
    return values


def _prob_list(probs) -> list[float]:
    a = np.asarray(probs, dtype=np.float64)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"probs must be 1-D with at least one entry, got shape {a.shape}")
    values = [float(v) for v in a]
    if not all(math.isfinite(v) and v >= 0 for v in values):
        raise ValueError("probs must be finite and >= 0")
    if abs(math.fsum(values) - 1.0) > 1e-6:
        raise ValueError(f"probs must sum to 1, they sum to {math.fsum(values)}")
    return values


def _positive_temperature(temperature, zero_allowed: bool) -> float:
    if not _real(temperature) or not math.isfinite(float(temperature)) or float(temperature) < 0 \
            or (float(temperature) == 0 and not zero_allowed):
        raise ValueError(f"temperature must be a finite number {'>= 0' if zero_allowed else '> 0'}, "
                         f"got {temperature!r}")
    return float(temperature)


def _ranking(p: list[float]) -> list[int]:
    """Most likely first, ties by the lower index."""
    return sorted(range(len(p)), key=lambda i: (-p[i], i))


def _renormalised(p: list[float], kept: set) -> np.ndarray:
    total = math.fsum(p[i] for i in kept)
    return np.array([p[i] / total if i in kept else 0.0 for i in range(len(p))])


# -- sampling ------------------------------------------------------------------------------------------------
def softmax_with_temperature(logits: np.ndarray, temperature: float) -> np.ndarray:
    """exp((z_i - max z) / T) over their sum, one token at a time."""
    z = _logit_list(logits)
    T = _positive_temperature(temperature, zero_allowed=False)
    top = max(z)
    e = [math.exp((v - top) / T) for v in z]
    total = math.fsum(e)
    return np.array([v / total for v in e])


def top_k_filter(probs: np.ndarray, k: int) -> np.ndarray:
    """The first k of the ranking kept, renormalised."""
    p = _prob_list(probs)
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a whole number >= 1, got {k!r}")
    return _renormalised(p, set(_ranking(p)[:int(k)]))


def top_p_filter(probs: np.ndarray, p: float) -> np.ndarray:
    """Walk the ranking adding probabilities; the token that reaches p is the last one kept."""
    q = _prob_list(probs)
    if not _real(p) or not 0 < float(p) <= 1:
        raise ValueError(f"p must be a number with 0 < p <= 1, got {p!r}")
    kept, running = set(), 0.0
    for i in _ranking(q):
        kept.add(i)
        running += q[i]
        if running >= p:
            break
    return _renormalised(q, kept)


def sample_index(probs: np.ndarray, u: float) -> int:
    """Add the probabilities up in index order until the running sum passes u."""
    p = _prob_list(probs)
    if not _real(u) or not 0 <= float(u) < 1:
        raise ValueError(f"u must be a number with 0 <= u < 1, got {u!r}")
    running = 0.0
    for i, pi in enumerate(p):
        running += pi
        if u < running:
            return i
    return max(i for i, pi in enumerate(p) if pi > 0)


def choose_next(logits: np.ndarray, u: float, temperature: float = 1.0, top_k: int | None = None,
                top_p: float | None = None) -> int:
    """Greedy at T = 0, else the chain temperature → top_k → top_p → draw."""
    z = _logit_list(logits)
    T = _positive_temperature(temperature, zero_allowed=True)
    if T == 0:
        best = 0
        for i, v in enumerate(z):
            if v > z[best]:
                best = i
        return best
    probs = softmax_with_temperature(np.array(z), T)
    if top_k is not None:
        probs = top_k_filter(probs, top_k)
    if top_p is not None:
        probs = top_p_filter(probs, top_p)
    return sample_index(probs, u)


# -- the KV cache --------------------------------------------------------------------------------------------
def _new_rows(x_new) -> np.ndarray:
    x = np.asarray(x_new, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"x_new must be 2-D with at least one row, got shape {x.shape}")
    return x


def _project(x: np.ndarray, W: np.ndarray) -> np.ndarray:
    out = np.zeros((x.shape[0], W.shape[1]))
    for i in range(x.shape[0]):
        for j in range(W.shape[1]):
            out[i, j] = math.fsum(float(x[i, k]) * float(W[k, j]) for k in range(x.shape[1]))
    return out


def _turned(row, position: int) -> list[float]:
    """One head's row with pair i turned by position · 10000^(-2i/d)."""
    d = len(row)
    out = [0.0] * d
    for i in range(d // 2):
        angle = position * 10000.0 ** (-2 * i / d)
        c, s = math.cos(angle), math.sin(angle)
        out[2 * i] = row[2 * i] * c - row[2 * i + 1] * s
        out[2 * i + 1] = row[2 * i] * s + row[2 * i + 1] * c
    return out


def attention_with_cache(x_new: np.ndarray, params: dict, n_heads: int, cache: dict | None) -> tuple[np.ndarray, dict]:
    """Head by head, row by row: the new query against the cached keys and the new keys up to itself."""
    x = _new_rows(x_new)
    m, d_model = x.shape
    d_head = _head_width(d_model, n_heads)
    W = _attention_weights(params, d_model)
    if cache is None:
        old_K, old_V = np.zeros((n_heads, 0, d_head)), np.zeros((n_heads, 0, d_head))
    else:
        if not isinstance(cache, dict):
            raise ValueError(f"cache must be None or a dict of K and V, got {type(cache).__name__}")
        for key in ("K", "V"):
            if key not in cache:
                raise ValueError(f"cache has no {key}")
        old_K, old_V = np.asarray(cache["K"], dtype=np.float64), np.asarray(cache["V"], dtype=np.float64)
        if old_K.ndim != 3 or old_K.shape[0] != n_heads or old_K.shape[2] != d_head:
            raise ValueError(f"cache K has shape {old_K.shape}, expected ({n_heads}, t, {d_head})")
        if old_V.shape != old_K.shape:
            raise ValueError(f"cache V has shape {old_V.shape}, expected {old_K.shape}")
    t = old_K.shape[1]
    Q, K, V = _project(x, W["WQ"]), _project(x, W["WK"]), _project(x, W["WV"])
    new_K = np.zeros((n_heads, t + m, d_head))
    new_V = np.zeros((n_heads, t + m, d_head))
    merged = np.zeros((m, d_model))
    for h in range(n_heads):
        cols = range(h * d_head, (h + 1) * d_head)
        keys = [list(old_K[h, j]) for j in range(t)] + [_turned([K[i, c] for c in cols], t + i) for i in range(m)]
        values = [list(old_V[h, j]) for j in range(t)] + [[V[i, c] for c in cols] for i in range(m)]
        new_K[h], new_V[h] = keys, values
        for i in range(m):
            q = _turned([Q[i, c] for c in cols], t + i)
            scores = [math.fsum(a * b for a, b in zip(q, keys[j], strict=True)) / math.sqrt(d_head)
                      for j in range(t + i + 1)]
            top = max(scores)
            weights = [math.exp(s - top) for s in scores]
            total = math.fsum(weights)
            for c in range(d_head):
                merged[i, h * d_head + c] = math.fsum(w * values[j][c] for j, w in enumerate(weights)) / total
    return _project(merged, W["WO"]), {"K": new_K, "V": new_V}


def block_with_cache(x_new: np.ndarray, params: dict, n_heads: int, cache: dict | None) -> tuple[np.ndarray, dict]:
    """x1 = x + A(RMSNorm(x)), y = x1 + SwiGLU(RMSNorm(x1)), A with the cache."""
    x = _new_rows(x_new)
    _block_gains(params, x.shape[1])
    a, new_cache = attention_with_cache(rms_norm(x, params["g1"]), params, n_heads, cache)
    x1 = x + a
    f = swiglu(rms_norm(x1, params["g2"]), params["W_gate"], params["W_up"], params["W_down"])[0]
    return x1 + f, new_cache


def gpt_forward(ids, model: dict, n_heads: int, caches: list | None = None) -> tuple[np.ndarray, list]:
    """Embed, run every block with its own cache, the final norm, the unembedding."""
    if not isinstance(model, dict):
        raise ValueError(f"model must be a dict, got {type(model).__name__}")
    for key in MODEL_KEYS:
        if key not in model:
            raise ValueError(f"model has no {key}")
    E = np.asarray(model["tok_emb"], dtype=np.float64)
    if E.ndim != 2 or 0 in E.shape:
        raise ValueError(f"model['tok_emb'] has shape {E.shape}, expected (vocab, d_model)")
    vocab, d_model = E.shape
    blocks = model["blocks"]
    if not isinstance(blocks, list) or not blocks:
        raise ValueError("model['blocks'] must be a non-empty list")
    g_final = _shaped("model['g_final']", model["g_final"], (d_model,))
    W_out = _shaped("model['W_out']", model["W_out"], (d_model, vocab))
    raw = np.asarray(ids)
    if raw.ndim != 1 or raw.size == 0 or raw.dtype.kind not in "iu":
        raise ValueError(f"ids must be a 1-D array of whole numbers with at least one id, got {ids!r}")
    for i in raw:
        if not 0 <= int(i) < vocab:
            raise ValueError(f"id {int(i)} in ids is not in 0 … {vocab - 1}")
    if caches is None:
        caches = [None for _ in blocks]
    if not isinstance(caches, list) or len(caches) != len(blocks):
        length = len(caches) if isinstance(caches, list) else type(caches).__name__
        raise ValueError(f"caches must hold one cache per block: {len(blocks)} blocks, got {length}")
    x = np.array([E[int(i)] for i in raw])
    new_caches = []
    for params, cache in zip(blocks, caches, strict=True):
        x, cache = block_with_cache(x, params, n_heads, cache)
        new_caches.append(cache)
    return _project(rms_norm(x, g_final), W_out), new_caches


def generate(prompt_ids, model: dict, n_heads: int, us, temperature: float = 1.0, top_k: int | None = None,
             top_p: float | None = None) -> list[int]:
    """Prefill once; then choose, and feed the choice alone with the caches."""
    if len(prompt_ids) == 0:
        raise ValueError("prompt_ids is empty: generate needs at least one id")
    logits, caches = gpt_forward(np.asarray(prompt_ids), model, n_heads)
    new_ids: list[int] = []
    for n, u in enumerate(us):
        new_ids.append(int(choose_next(logits[-1], u, temperature, top_k, top_p)))
        if n < len(us) - 1:
            logits, caches = gpt_forward(np.array([new_ids[-1]]), model, n_heads, caches)
    return new_ids
