"""Chapter 13, written from the docstrings: every row, entry and head by explicit loops with math; caches as objects."""

import math
import numbers

import numpy as np

from .chapter04_attention import causal_mask, scaled_dot_product_attention  # noqa: F401
from .chapter07_backprop import attention_backward, linear_backward  # noqa: F401
from .chapter11_multi_head_attention import merge_heads, split_heads  # noqa: F401
from .chapter12_rope import apply_rope, rope_backward  # noqa: F401

ATTENTION_KEYS = ("WQ", "WK", "WV", "WO")
BLOCK_KEYS = ("g1", "WQ", "WK", "WV", "WO", "g2", "W_gate", "W_up", "W_down")


# -- small helpers -------------------------------------------------------------------------------------------
def _mm(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A @ B, one dot product at a time."""
    n, k = A.shape
    m = B.shape[1]
    out = np.zeros((n, m))
    for i in range(n):
        for j in range(m):
            out[i, j] = math.fsum(float(A[i, t]) * float(B[t, j]) for t in range(k))
    return out


def _t(A: np.ndarray) -> np.ndarray:
    """The transpose, entry by entry."""
    out = np.zeros((A.shape[1], A.shape[0]))
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            out[j, i] = A[i, j]
    return out


def _sigmoid(v: float) -> float:
    """σ(v) without ever taking exp of a large positive number."""
    if v >= 0:
        return 1.0 / (1.0 + math.exp(-v))
    e = math.exp(v)
    return e / (1.0 + e)


def _shaped(name: str, a, want: tuple) -> np.ndarray:
    shape = np.shape(a)
    if shape != want:
        raise ValueError(f"{name} has shape {shape}, expected {want}")
    return np.asarray(a, dtype=np.float64)


def _features(x, g) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0 or x.shape[-1] == 0:
        raise ValueError(f"x must have a feature axis with at least one entry, got shape {x.shape}")
    return x, _shaped("g", g, (x.shape[-1],))


# -- RMSNorm -------------------------------------------------------------------------------------------------
def rms_norm(x: np.ndarray, g: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Row by row: r = sqrt(mean of squares + eps), then g_k * x_k / r."""
    x, g = _features(x, g)
    d = x.shape[-1]
    out = np.zeros(x.shape)
    for row in np.ndindex(x.shape[:-1]):
        r = math.sqrt(math.fsum(float(v) * float(v) for v in x[row]) / d + eps)
        for k in range(d):
            out[row + (k,)] = g[k] * x[row + (k,)] / r
    return out


def rms_norm_backward(x: np.ndarray, g: np.ndarray, d_out: np.ndarray,
                      eps: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """Row by row: dx = (u - x̂ mean(u x̂)) / r with u = d_out g; dg sums d_out x̂ over every row."""
    x, g = _features(x, g)
    d_out = np.asarray(d_out, dtype=np.float64)
    if d_out.shape != x.shape:
        raise ValueError(f"d_out has shape {d_out.shape}, but x has shape {x.shape}")
    d = x.shape[-1]
    dx, dg = np.zeros(x.shape), np.zeros(d)
    for row in np.ndindex(x.shape[:-1]):
        r = math.sqrt(math.fsum(float(v) * float(v) for v in x[row]) / d + eps)
        x_hat = [float(x[row + (k,)]) / r for k in range(d)]
        u = [float(d_out[row + (k,)]) * float(g[k]) for k in range(d)]
        mean_ux = math.fsum(u[k] * x_hat[k] for k in range(d)) / d
        for k in range(d):
            dx[row + (k,)] = (u[k] - x_hat[k] * mean_ux) / r
            dg[k] += float(d_out[row + (k,)]) * x_hat[k]
    return dx, dg


# -- SiLU ----------------------------------------------------------------------------------------------------
def silu(x: np.ndarray) -> np.ndarray:
    """v * σ(v), entry by entry."""
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros(x.shape)
    for i in np.ndindex(x.shape):
        v = float(x[i])
        out[i] = v * _sigmoid(v)
    return out


def silu_backward(x: np.ndarray, d_out: np.ndarray) -> np.ndarray:
    """d_out * (σ(v) + v σ(v)(1 - σ(v))), entry by entry."""
    x = np.asarray(x, dtype=np.float64)
    d_out = np.asarray(d_out, dtype=np.float64)
    if x.shape != d_out.shape:
        raise ValueError(f"x has shape {x.shape} but d_out has shape {d_out.shape}")
    dx = np.zeros(x.shape)
    for i in np.ndindex(x.shape):
        v = float(x[i])
        s = _sigmoid(v)
        dx[i] = float(d_out[i]) * (s + v * s * (1.0 - s))
    return dx


# -- SwiGLU --------------------------------------------------------------------------------------------------
class _SwiGLUCache(tuple):
    """x, W_gate, W_up, W_down, a, b, h: a tuple, as the docstring promises, with names to read it by."""

    def __new__(cls, **parts):
        obj = super().__new__(cls, tuple(parts.values()))
        obj.__dict__.update(parts)
        return obj


def _rows(name: str, x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"{name} must be 2-D (seq, d_model) with at least one row and column, got shape {x.shape}")
    return x


def swiglu(x: np.ndarray, W_gate: np.ndarray, W_up: np.ndarray, W_down: np.ndarray) -> tuple[np.ndarray, tuple]:
    """a = x W_gate, b = x W_up, h = SiLU(a) b entry by entry, out = h W_down."""
    x = _rows("x", x)
    d_model = x.shape[1]
    gate_shape = np.shape(W_gate)
    if len(gate_shape) != 2 or gate_shape[0] != d_model or gate_shape[1] < 1:
        raise ValueError(f"W_gate has shape {gate_shape}, expected ({d_model}, d_ff) with d_ff >= 1")
    d_ff = gate_shape[1]
    W_gate = np.asarray(W_gate, dtype=np.float64)
    W_up = _shaped("W_up", W_up, (d_model, d_ff))
    W_down = _shaped("W_down", W_down, (d_ff, d_model))
    a, b = _mm(x, W_gate), _mm(x, W_up)
    h = np.zeros(a.shape)
    for i in range(a.shape[0]):
        for j in range(d_ff):
            v = float(a[i, j])
            h[i, j] = v * _sigmoid(v) * b[i, j]
    return _mm(h, W_down), _SwiGLUCache(x=x, W_gate=W_gate, W_up=W_up, W_down=W_down, a=a, b=b, h=h)


def swiglu_backward(d_out: np.ndarray, cache: tuple) -> dict:
    """The product rule on h = SiLU(a) b, then each projection's two gradients."""
    c = cache
    d_out = _shaped("d_out", d_out, c.x.shape)
    dh = _mm(d_out, _t(c.W_down))
    da, db = np.zeros(dh.shape), np.zeros(dh.shape)
    for i in range(dh.shape[0]):
        for j in range(dh.shape[1]):
            v = float(c.a[i, j])
            s = _sigmoid(v)
            db[i, j] = dh[i, j] * v * s
            da[i, j] = dh[i, j] * c.b[i, j] * (s + v * s * (1.0 - s))
    dx = _mm(da, _t(c.W_gate)) + _mm(db, _t(c.W_up))
    return {"x": dx, "W_gate": _mm(_t(c.x), da), "W_up": _mm(_t(c.x), db), "W_down": _mm(_t(c.h), d_out)}


# -- rotary multi-head attention -----------------------------------------------------------------------------
def _head_width(d_model: int, n_heads) -> int:
    if isinstance(n_heads, bool) or not isinstance(n_heads, numbers.Integral) or n_heads < 1:
        raise ValueError(f"n_heads must be a whole number >= 1, got n_heads = {n_heads!r}")
    if d_model % n_heads:
        raise ValueError(f"d_model = {d_model} is not divisible by n_heads = {n_heads}")
    d_head = d_model // int(n_heads)
    if d_head % 2:
        raise ValueError(f"d_head = {d_head} is odd; rotary positions turn pairs of features")
    return d_head


def _attention_weights(params, d_model: int) -> dict:
    if not isinstance(params, dict):
        raise ValueError(f"params must be a dict of weights, not {type(params).__name__}")
    W = {}
    for key in ATTENTION_KEYS:
        if key not in params:
            raise ValueError(f"params has no {key}")
        W[key] = _shaped(key, params[key], (d_model, d_model))
    return W


def _turn(pair0: float, pair1: float, angle: float, back: bool = False) -> tuple[float, float]:
    """One 2-D rotation by angle (or its transpose, the rotation back)."""
    c, s = math.cos(angle), math.sin(angle)
    if back:
        return pair0 * c + pair1 * s, -pair0 * s + pair1 * c
    return pair0 * c - pair1 * s, pair0 * s + pair1 * c


class _AttentionCache(tuple):
    """x, W, the rotated Q and K, V, the weights, merged, base and the heads' sizes."""

    def __new__(cls, **parts):
        obj = super().__new__(cls, tuple(parts.values()))
        obj.__dict__.update(parts)
        return obj


def rope_multi_head_attention(x: np.ndarray, params: dict, n_heads: int,
                              base: float = 10000.0) -> tuple[np.ndarray, tuple]:
    """Project; in every head rotate each query and key pair by position·base^(-2i/d_head); attend causally."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 1:
        raise ValueError(f"x must be 2-D (seq, d_model) with at least one row, got shape {x.shape}")
    seq, d_model = x.shape
    d_head = _head_width(d_model, n_heads)
    W = _attention_weights(params, d_model)
    Q, K, V = _mm(x, W["WQ"]), _mm(x, W["WK"]), _mm(x, W["WV"])
    Qr, Kr = Q.copy(), K.copy()  # rotated, head by head, pair by pair
    for h in range(int(n_heads)):
        for p in range(seq):
            for i in range(d_head // 2):
                angle = p * float(base) ** (-2.0 * i / d_head)
                c0 = h * d_head + 2 * i
                Qr[p, c0], Qr[p, c0 + 1] = _turn(Q[p, c0], Q[p, c0 + 1], angle)
                Kr[p, c0], Kr[p, c0 + 1] = _turn(K[p, c0], K[p, c0 + 1], angle)
    P = np.zeros((int(n_heads), seq, seq))
    merged = np.zeros((seq, d_model))
    for h in range(int(n_heads)):
        cols = range(h * d_head, (h + 1) * d_head)
        for i in range(seq):
            scores = [math.fsum(Qr[i, c] * Kr[j, c] for c in cols) / math.sqrt(d_head) for j in range(i + 1)]
            top = max(scores)
            exps = [math.exp(s - top) for s in scores]
            total = math.fsum(exps)
            for j in range(i + 1):
                P[h, i, j] = exps[j] / total
            for c in cols:
                merged[i, c] = math.fsum(P[h, i, j] * V[j, c] for j in range(i + 1))
    cache = _AttentionCache(x=x, W=W, Qr=Qr, Kr=Kr, V=V, P=P, merged=merged, base=float(base),
                            n_heads=int(n_heads), d_head=d_head)
    return _mm(merged, W["WO"]), cache


def rope_multi_head_attention_backward(d_out: np.ndarray, cache: tuple) -> dict:
    """Back through W_O, each head's softmax, the rotations (turned back) and the three projections."""
    c = cache
    d_out = _shaped("d_out", d_out, c.x.shape)
    seq, d_model = c.x.shape
    d_merged = _mm(d_out, _t(c.W["WO"]))
    dQr, dKr, dV = np.zeros((seq, d_model)), np.zeros((seq, d_model)), np.zeros((seq, d_model))
    for h in range(c.n_heads):
        cols = range(h * c.d_head, (h + 1) * c.d_head)
        for i in range(seq):
            dP = [math.fsum(d_merged[i, col] * c.V[j, col] for col in cols) for j in range(i + 1)]
            mean = math.fsum(c.P[h, i, j] * dP[j] for j in range(i + 1))
            for j in range(i + 1):
                dS = c.P[h, i, j] * (dP[j] - mean) / math.sqrt(c.d_head)
                for col in cols:
                    dV[j, col] += c.P[h, i, j] * d_merged[i, col]
                    dQr[i, col] += dS * c.Kr[j, col]
                    dKr[j, col] += dS * c.Qr[i, col]
    dQ, dK = dQr.copy(), dKr.copy()
    for h in range(c.n_heads):
        for p in range(seq):
            for i in range(c.d_head // 2):
                angle = p * c.base ** (-2.0 * i / c.d_head)
                c0 = h * c.d_head + 2 * i
                dQ[p, c0], dQ[p, c0 + 1] = _turn(dQr[p, c0], dQr[p, c0 + 1], angle, back=True)
                dK[p, c0], dK[p, c0 + 1] = _turn(dKr[p, c0], dKr[p, c0 + 1], angle, back=True)
    xT = _t(c.x)
    dx = _mm(dQ, _t(c.W["WQ"])) + _mm(dK, _t(c.W["WK"])) + _mm(dV, _t(c.W["WV"]))
    return {"x": dx, "WQ": _mm(xT, dQ), "WK": _mm(xT, dK), "WV": _mm(xT, dV), "WO": _mm(_t(c.merged), d_out)}


# -- the pre-norm block --------------------------------------------------------------------------------------
class _BlockCache:
    """What the backward pass needs, by name (opaque to the caller)."""

    def __init__(self, **parts):
        self.__dict__.update(parts)


def _block_gains(params, d_model: int) -> tuple[np.ndarray, np.ndarray]:
    """Checks params holds exactly BLOCK_KEYS; returns g1 and g2, each (d_model,) (the rest is checked where used)."""
    if not isinstance(params, dict):
        raise ValueError(f"params must be a dict, not {type(params).__name__}")
    for key in BLOCK_KEYS:
        if key not in params:
            raise ValueError(f"params has no {key}")
    for key in params:
        if key not in BLOCK_KEYS:
            raise ValueError(f"params has a key that does not belong: {key}")
    return _shaped("g1", params["g1"], (d_model,)), _shaped("g2", params["g2"], (d_model,))


def prenorm_block(x: np.ndarray, params: dict, n_heads: int) -> tuple[np.ndarray, tuple]:
    """x1 = x + attention(rms_norm(x, g1)); y = x1 + swiglu(rms_norm(x1, g2))."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 1:
        raise ValueError(f"x must be 2-D (seq, d_model) with at least one row, got shape {x.shape}")
    g1, g2 = _block_gains(params, x.shape[1])
    h1 = rms_norm(x, g1)
    attn, attn_cache = rope_multi_head_attention(h1, params, n_heads)
    x1 = x + attn
    h2 = rms_norm(x1, g2)
    ffn, ffn_cache = swiglu(h2, params["W_gate"], params["W_up"], params["W_down"])
    cache = _BlockCache(x=x, x1=x1, g1=g1, g2=g2, attn=attn_cache, ffn=ffn_cache)
    return x1 + ffn, (cache,)


def prenorm_block_backward(d_y: np.ndarray, cache: tuple) -> dict:
    """Each residual: the gradient straight through plus the gradient through the norm and the sub-layer."""
    (c,) = cache
    d_y = _shaped("d_y", d_y, c.x.shape)
    ffn = swiglu_backward(d_y, c.ffn)
    d_branch2, dg2 = rms_norm_backward(c.x1, c.g2, ffn["x"])
    dx1 = d_y + d_branch2
    attn = rope_multi_head_attention_backward(dx1, c.attn)
    d_branch1, dg1 = rms_norm_backward(c.x, c.g1, attn["x"])
    grads = {"x": dx1 + d_branch1, "g1": dg1, "g2": dg2}
    for key in ATTENTION_KEYS:
        grads[key] = attn[key]
    for key in ("W_gate", "W_up", "W_down"):
        grads[key] = ffn[key]
    return grads
