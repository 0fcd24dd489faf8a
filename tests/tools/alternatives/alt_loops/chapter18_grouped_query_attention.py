"""Chapter 18, written from the docstrings: explicit loops over heads, positions and keys, plain math."""

import math
import numbers

import numpy as np

from .chapter04_attention import causal_mask, scaled_dot_product_attention  # noqa: F401
from .chapter07_backprop import attention_backward  # noqa: F401
from .chapter11_multi_head_attention import merge_heads, split_heads  # noqa: F401


def _whole(value, name, least=None):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if least is not None and value < least:
        raise ValueError(f"{name} must be at least {least}, got {value}")


def kv_head_of(n_heads, n_kv_heads):
    """One head at a time: count how many query heads each group holds, then hand them out in order."""
    _whole(n_heads, "n_heads", 1)
    _whole(n_kv_heads, "n_kv_heads", 1)
    if n_heads % n_kv_heads != 0:
        raise ValueError(f"n_heads {n_heads} must be divisible by n_kv_heads {n_kv_heads}")
    size = n_heads // n_kv_heads
    out = []
    for g in range(n_kv_heads):
        out.extend([g] * size)
    return np.array(out, dtype=np.int64)


def sliding_window_mask(n, window):
    """Entry by entry."""
    _whole(n, "n", 1)
    _whole(window, "window")
    if window < 1:
        raise ValueError(f"window must be at least 1, got window = {window}")
    mask = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(max(0, i - window + 1), i + 1):
            mask[i, j] = True
    return mask


def _inputs(Q, K, V, n_heads, n_kv_heads, rows=None):
    _whole(n_heads, "n_heads", 1)
    _whole(n_kv_heads, "n_kv_heads", 1)
    Q, K, V = (np.array(a, dtype=np.float64) for a in (Q, K, V))
    ok = Q.ndim == 2 and K.ndim == 2 and V.ndim == 2 and Q.shape[0] == K.shape[0] == V.shape[0] >= 1
    ok = ok and Q.shape[1] >= 1 and Q.shape[1] % n_heads == 0 and K.shape == V.shape
    ok = ok and K.shape[1] == n_kv_heads * (Q.shape[1] // n_heads) and (rows is None or Q.shape[0] == rows)
    if not ok:
        raise ValueError(f"Q {Q.shape}, K {K.shape}, V {V.shape} do not fit {n_heads} query heads and "
                         f"{n_kv_heads} key/value heads")
    return Q, K, V, Q.shape[1] // n_heads


def _attend(q, keys, values):
    """One query row (list) against lists of key and value rows: softmax of the scaled dot products."""
    scores = [math.fsum(a * b for a, b in zip(q, k, strict=True)) / math.sqrt(len(q)) for k in keys]
    top = max(scores)
    e = [math.exp(s - top) for s in scores]
    total = math.fsum(e)
    w = [x / total for x in e]
    return [math.fsum(w[j] * values[j][c] for j in range(len(values))) for c in range(len(values[0]))], w


def grouped_query_attention(Q, K, V, n_heads, n_kv_heads, window=None):
    """Head by head, row by row, over the keys the row may see."""
    Q, K, V, d = _inputs(Q, K, V, n_heads, n_kv_heads)
    if window is not None:
        _whole(window, "window")
    seq = len(Q)
    mask = causal_mask(seq) if window is None else sliding_window_mask(seq, window)
    reads = kv_head_of(n_heads, n_kv_heads)
    out, weights = np.zeros(Q.shape), np.zeros((n_heads, seq, seq))
    for h in range(n_heads):
        g = int(reads[h])
        for i in range(seq):
            seen = [j for j in range(seq) if mask[i, j]]
            o, w = _attend(list(Q[i, h * d:(h + 1) * d]), [list(K[j, g * d:(g + 1) * d]) for j in seen],
                           [list(V[j, g * d:(g + 1) * d]) for j in seen])
            out[i, h * d:(h + 1) * d] = o
            for j, x in zip(seen, w, strict=True):
                weights[h, i, j] = x
    return out, weights


def group_sum(dH, n_kv_heads):
    """Add each query head's gradient into the key/value head it read."""
    dH = np.array(dH, dtype=np.float64)
    if dH.ndim != 3:
        raise ValueError(f"dH must be (n_heads, seq, d_head), got shape {dH.shape}")
    reads = kv_head_of(len(dH), n_kv_heads)
    out = np.zeros((n_kv_heads,) + dH.shape[1:])
    for h in range(len(dH)):
        out[int(reads[h])] += dH[h]
    return out


def grouped_query_attention_backward(dO, Q, K, V, weights, n_heads, n_kv_heads):
    """Chapter 7's backward head by head, added into the key/value head each one read."""
    Q, K, V, d = _inputs(Q, K, V, n_heads, n_kv_heads)
    dO, A = np.array(dO, dtype=np.float64), np.array(weights, dtype=np.float64)
    if dO.shape != Q.shape or A.shape != (n_heads, len(Q), len(Q)):
        raise ValueError(f"dO {dO.shape} must be Q's shape {Q.shape}, weights {A.shape} (n_heads, seq, seq)")
    reads = kv_head_of(n_heads, n_kv_heads)
    dQ, dK, dV = np.zeros(Q.shape), np.zeros(K.shape), np.zeros(V.shape)
    for h in range(n_heads):
        g = int(reads[h])
        qs, ks = slice(h * d, (h + 1) * d), slice(g * d, (g + 1) * d)
        dq, dk, dv = attention_backward(Q[:, qs], K[:, ks], V[:, ks], A[h], dO[:, qs])
        dQ[:, qs] += dq
        dK[:, ks] += dk
        dV[:, ks] += dv
    return dQ, dK, dV


def decode_step(q, k, v, cache, n_heads, n_kv_heads, window=None):
    """Lists of rows per key/value head, trimmed from the front, then one attention per query head."""
    q, k, v, d = _inputs(q, k, v, n_heads, n_kv_heads, rows=1)
    if window is not None:
        _whole(window, "window", 1)
    if cache is None:
        keys, values = [[] for _ in range(n_kv_heads)], [[] for _ in range(n_kv_heads)]
    else:
        if not isinstance(cache, dict) or "K" not in cache or "V" not in cache:
            raise ValueError(f"cache must be None or a dict with K and V, got {type(cache).__name__}")
        Kc, Vc = np.array(cache["K"], dtype=np.float64), np.array(cache["V"], dtype=np.float64)
        if Kc.ndim != 3 or Kc.shape[0] != n_kv_heads or Kc.shape[2] != d or Vc.shape != Kc.shape:
            raise ValueError(f"cache K {Kc.shape} and V {Vc.shape} must be ({n_kv_heads}, t, {d})")
        keys = [[list(r) for r in Kc[g]] for g in range(n_kv_heads)]
        values = [[list(r) for r in Vc[g]] for g in range(n_kv_heads)]
    for g in range(n_kv_heads):
        keys[g].append(list(k[0, g * d:(g + 1) * d]))
        values[g].append(list(v[0, g * d:(g + 1) * d]))
        while window is not None and len(keys[g]) > window:
            keys[g].pop(0)
            values[g].pop(0)
    reads = kv_head_of(n_heads, n_kv_heads)
    out = np.zeros((1, n_heads * d))
    for h in range(n_heads):
        g = int(reads[h])
        out[0, h * d:(h + 1) * d] = _attend(list(q[0, h * d:(h + 1) * d]), keys[g], values[g])[0]
    t = len(keys[0])
    new = {"K": np.array(keys, dtype=np.float64).reshape(n_kv_heads, t, d),
           "V": np.array(values, dtype=np.float64).reshape(n_kv_heads, t, d)}
    return out, new


def kv_cache_bytes(n_layers, n_kv_heads, d_head, seq, bytes_per_number, window=None):
    """Multiply step by step."""
    for name, value in (("n_layers", n_layers), ("n_kv_heads", n_kv_heads), ("d_head", d_head), ("seq", seq),
                        ("bytes_per_number", bytes_per_number)):
        _whole(value, name, 1)
    kept = seq
    if window is not None:
        _whole(window, "window", 1)
        kept = min(seq, window)
    total = 2  # a key and a value
    for factor in (n_layers, n_kv_heads, d_head, kept, bytes_per_number):
        total *= int(factor)
    return total
