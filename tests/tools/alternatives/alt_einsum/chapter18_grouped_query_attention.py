"""Chapter 18, written from the docstrings: heads as an axis, einsum, the key/value heads repeated, log-sum-exp."""

import numbers

import numpy as np

from .chapter04_attention import causal_mask, scaled_dot_product_attention  # noqa: F401
from .chapter07_backprop import attention_backward  # noqa: F401
from .chapter11_multi_head_attention import merge_heads, split_heads  # noqa: F401


def _count(value, name, least=1):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise ValueError(f"{name} is not a whole number: {value!r}")
    if least is not None and value < least:
        raise ValueError(f"{name} = {value} must be at least {least}")


def kv_head_of(n_heads, n_kv_heads):
    """np.repeat of every key/value head over its group."""
    _count(n_heads, "n_heads")
    _count(n_kv_heads, "n_kv_heads")
    if n_heads % n_kv_heads:
        raise ValueError(f"n_heads ({n_heads}) is not divisible by n_kv_heads ({n_kv_heads})")
    return np.repeat(np.arange(n_kv_heads), n_heads // n_kv_heads)


def sliding_window_mask(n, window):
    """A difference of positions, compared once."""
    _count(n, "n")
    _count(window, "window", None)
    if window < 1:
        raise ValueError(f"window {window}: must be at least 1")
    diff = np.subtract.outer(np.arange(n), np.arange(n))  # i − j
    return (diff >= 0) & (diff < window)


def _heads(X, n):
    """(seq, n·d) -> (n, seq, d)."""
    return np.einsum("snd->nsd", X.reshape(len(X), n, -1))


def _check(Q, K, V, n_heads, n_kv_heads, rows=None):
    _count(n_heads, "n_heads")
    _count(n_kv_heads, "n_kv_heads")
    Q, K, V = np.asarray(Q, dtype=float), np.asarray(K, dtype=float), np.asarray(V, dtype=float)
    bad = not (Q.ndim == K.ndim == V.ndim == 2) or not (len(Q) == len(K) == len(V) >= 1) or Q.shape[1] == 0 \
        or Q.shape[1] % n_heads or K.shape != V.shape or K.shape[1] != n_kv_heads * (Q.shape[1] // n_heads) \
        or (rows is not None and len(Q) != rows)
    if bad:
        raise ValueError(f"shapes Q {Q.shape}, K {K.shape}, V {V.shape} do not fit n_heads {n_heads}, "
                         f"n_kv_heads {n_kv_heads}")
    return Q, K, V


def _softmax_rows(S):
    top = S.max(axis=-1, keepdims=True)
    lse = top + np.log(np.exp(S - top).sum(axis=-1, keepdims=True))
    return np.exp(S - lse)


def grouped_query_attention(Q, K, V, n_heads, n_kv_heads, window=None):
    """All heads at once: the key/value heads indexed by kv_head_of, einsum for the products."""
    Q, K, V = _check(Q, K, V, n_heads, n_kv_heads)
    if window is not None:
        _count(window, "window", None)
    seq, d = len(Q), Q.shape[1] // n_heads
    mask = causal_mask(seq) if window is None else sliding_window_mask(seq, window)
    reads = kv_head_of(n_heads, n_kv_heads)
    Qh, Kh, Vh = _heads(Q, n_heads), _heads(K, n_kv_heads)[reads], _heads(V, n_kv_heads)[reads]
    S = np.where(mask, np.einsum("hid,hjd->hij", Qh, Kh) / np.sqrt(d), -np.inf)
    W = _softmax_rows(S)
    return np.einsum("hij,hjd->ihd", W, Vh).reshape(seq, -1), W


def group_sum(dH, n_kv_heads):
    """np.add.at over the key/value head each query head read."""
    dH = np.asarray(dH, dtype=float)
    if dH.ndim != 3:
        raise ValueError(f"dH {dH.shape} is not 3-D")
    _count(n_kv_heads, "n_kv_heads")
    if len(dH) % n_kv_heads:
        raise ValueError(f"{len(dH)} heads are not divisible into {n_kv_heads} groups")
    out = np.zeros((n_kv_heads,) + dH.shape[1:])
    np.add.at(out, kv_head_of(len(dH), n_kv_heads), dH)
    return out


def grouped_query_attention_backward(dO, Q, K, V, weights, n_heads, n_kv_heads):
    """The softmax backward in einsum, for every head at once, then group_sum."""
    Q, K, V = _check(Q, K, V, n_heads, n_kv_heads)
    dO, W = np.asarray(dO, dtype=float), np.asarray(weights, dtype=float)
    if dO.shape != Q.shape or W.shape != (n_heads, len(Q), len(Q)):
        raise ValueError(f"dO {dO.shape} vs Q {Q.shape}; weights {W.shape} vs {(n_heads, len(Q), len(Q))}")
    seq, d = len(Q), Q.shape[1] // n_heads
    reads = kv_head_of(n_heads, n_kv_heads)
    Qh, Kh, Vh, dOh = _heads(Q, n_heads), _heads(K, n_kv_heads)[reads], _heads(V, n_kv_heads)[reads], \
        _heads(dO, n_heads)
    dVh = np.einsum("hij,hid->hjd", W, dOh)
    dW = np.einsum("hid,hjd->hij", dOh, Vh)
    dS = W * (dW - np.einsum("hij,hij->hi", W, dW)[..., None]) / np.sqrt(d)
    dQh, dKh = np.einsum("hij,hjd->hid", dS, Kh), np.einsum("hij,hid->hjd", dS, Qh)
    back = np.einsum  # the heads side by side again
    return (back("hsd->shd", dQh).reshape(seq, -1), back("hsd->shd", group_sum(dKh, n_kv_heads)).reshape(seq, -1),
            back("hsd->shd", group_sum(dVh, n_kv_heads)).reshape(seq, -1))


def decode_step(q, k, v, cache, n_heads, n_kv_heads, window=None):
    """Concatenate, keep the tail, one einsum per product."""
    q, k, v = _check(q, k, v, n_heads, n_kv_heads, rows=1)
    if window is not None:
        _count(window, "window")
    d = q.shape[1] // n_heads
    if cache is None:
        Kc, Vc = np.zeros((n_kv_heads, 0, d)), np.zeros((n_kv_heads, 0, d))
    elif not isinstance(cache, dict) or not {"K", "V"} <= set(cache):
        raise ValueError(f"cache is neither None nor a dict of K and V: {type(cache).__name__}")
    else:
        Kc, Vc = np.asarray(cache["K"], dtype=float), np.asarray(cache["V"], dtype=float)
        if Kc.ndim != 3 or Kc.shape[::2] != (n_kv_heads, d) or Vc.shape != Kc.shape:
            raise ValueError(f"cache K {Kc.shape}, V {Vc.shape}: expected ({n_kv_heads}, t, {d})")
    K = np.concatenate([Kc, _heads(k, n_kv_heads)], axis=1)
    V = np.concatenate([Vc, _heads(v, n_kv_heads)], axis=1)
    if window is not None and K.shape[1] > window:
        K, V = K[:, K.shape[1] - window:], V[:, V.shape[1] - window:]
    reads = kv_head_of(n_heads, n_kv_heads)
    S = np.einsum("hd,hjd->hj", _heads(q, n_heads)[:, 0], K[reads]) / np.sqrt(d)
    out = np.einsum("hj,hjd->hd", _softmax_rows(S), V[reads])
    return out.reshape(1, -1), {"K": K.copy(), "V": V.copy()}


def kv_cache_bytes(n_layers, n_kv_heads, d_head, seq, bytes_per_number, window=None):
    """np.prod of the sizes, as a Python int."""
    sizes = {"n_layers": n_layers, "n_kv_heads": n_kv_heads, "d_head": d_head, "seq": seq,
             "bytes_per_number": bytes_per_number}
    for name, value in sizes.items():
        _count(value, name)
    if window is not None:
        _count(window, "window")
        sizes["seq"] = min(seq, window)
    return int(np.prod([2, *sizes.values()], dtype=object))
