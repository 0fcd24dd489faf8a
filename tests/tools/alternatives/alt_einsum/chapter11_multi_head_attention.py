"""Chapter 11, written from the docstrings: heads as an einsum axis, a cache of named arrays."""

import numbers

import numpy as np

from .chapter04_attention import causal_mask, scaled_dot_product_attention  # noqa: F401
from .chapter07_backprop import attention_backward, linear_backward  # noqa: F401

PARAM_NAMES = ("WQ", "WK", "WV", "WO")


def _d_head(n_heads, d_model: int) -> int:
    if isinstance(n_heads, bool) or not isinstance(n_heads, numbers.Integral) or n_heads < 1:
        raise ValueError(f"n_heads must be a whole number >= 1, got {n_heads!r}")
    if d_model % n_heads:
        raise ValueError(f"d_model = {d_model} must be divisible by n_heads = {n_heads}")
    return d_model // int(n_heads)


def split_heads(X: np.ndarray, n_heads: int) -> np.ndarray:
    """(seq, n·d) → (n, seq, d) with einsum over a view of the columns."""
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    d = _d_head(n_heads, X.shape[1])
    return np.einsum("shd->hsd", X.reshape(X.shape[0], -1, d)).copy()


def merge_heads(H: np.ndarray) -> np.ndarray:
    """(n, seq, d) → (seq, n·d)."""
    H = np.asarray(H)
    if H.ndim != 3:
        raise ValueError(f"H must be 3-D, got shape {H.shape}")
    return np.einsum("hsd->shd", H).reshape(H.shape[1], -1).copy()


def attend_heads(Qh: np.ndarray, Kh: np.ndarray, Vh: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Masked scores by einsum, a log-sum-exp softmax, weighted values by einsum."""
    Qh, Kh, Vh = (np.asarray(a, dtype=np.float64) for a in (Qh, Kh, Vh))
    if Qh.ndim != 3 or Kh.shape != Qh.shape or Vh.shape != Qh.shape:
        raise ValueError(f"Qh {Qh.shape}, Kh {Kh.shape}, Vh {Vh.shape}: three equal 3-D shapes expected")
    seq = Qh.shape[1]
    scores = np.einsum("hid,hjd->hij", Qh, Kh) / np.sqrt(Qh.shape[2])
    scores = np.where(np.tri(seq, dtype=bool), scores, -np.inf)
    top = scores.max(axis=-1, keepdims=True)
    log_z = top + np.log(np.exp(scores - top).sum(axis=-1, keepdims=True))
    weights = np.exp(scores - log_z)
    return np.einsum("hij,hjd->hid", weights, Vh), weights


def multi_head_attention(x: np.ndarray, params: dict, n_heads: int) -> tuple[np.ndarray, tuple]:
    """Project with einsum, split, attend, merge, W_O."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or len(x) == 0:
        raise ValueError(f"x must be (seq, d_model) with seq >= 1, got shape {x.shape}")
    if not isinstance(params, dict):
        raise ValueError(f"params must be a dict of weights, not a {type(params).__name__}")
    missing = [k for k in PARAM_NAMES if k not in params]
    if missing:
        raise ValueError(f"params lacks {missing[0]}")
    d_model = x.shape[1]
    W = {k: np.asarray(params[k], dtype=np.float64) for k in PARAM_NAMES}
    for k, w in W.items():
        if w.shape != (d_model, d_model):
            raise ValueError(f"params[{k!r}] is {w.shape}; expected ({d_model}, {d_model})")
    _d_head(n_heads, d_model)
    Qh, Kh, Vh = (split_heads(np.einsum("sd,de->se", x, W[k]), n_heads) for k in ("WQ", "WK", "WV"))
    heads, P = attend_heads(Qh, Kh, Vh)
    merged = merge_heads(heads)
    return np.einsum("sd,de->se", merged, W["WO"]), (x, W, Qh, Kh, Vh, P, merged)


def multi_head_attention_backward(d_out: np.ndarray, cache: tuple) -> dict:
    """Every head at once: the softmax backward and the projections as einsums."""
    x, W, Qh, Kh, Vh, P, merged = cache
    d_out = np.asarray(d_out, dtype=np.float64)
    if d_out.shape != merged.shape:
        raise ValueError(f"d_out has shape {d_out.shape}; expected {merged.shape}")
    n = Qh.shape[0]
    dH = split_heads(np.einsum("se,de->sd", d_out, W["WO"]), n)
    dVh = np.einsum("hij,hid->hjd", P, dH)
    dP = np.einsum("hid,hjd->hij", dH, Vh)
    dS = P * (dP - np.einsum("hij,hij->hi", P, dP)[..., None]) / np.sqrt(Qh.shape[2])
    dQ = merge_heads(np.einsum("hij,hjd->hid", dS, Kh))
    dK = merge_heads(np.einsum("hij,hid->hjd", dS, Qh))
    dV = merge_heads(dVh)
    return {"x": np.einsum("sd,ed->se", dQ, W["WQ"]) + np.einsum("sd,ed->se", dK, W["WK"])
            + np.einsum("sd,ed->se", dV, W["WV"]),
            "WQ": np.einsum("sd,se->de", x, dQ), "WK": np.einsum("sd,se->de", x, dK),
            "WV": np.einsum("sd,se->de", x, dV), "WO": np.einsum("sd,se->de", merged, d_out)}
