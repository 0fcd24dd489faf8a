"""Chapter 13, written from the docstrings: every product an einsum, heads as an axis, rotations as complex numbers."""

import numbers

import numpy as np

from .chapter04_attention import causal_mask, scaled_dot_product_attention  # noqa: F401
from .chapter07_backprop import attention_backward, linear_backward  # noqa: F401
from .chapter11_multi_head_attention import merge_heads, split_heads  # noqa: F401
from .chapter12_rope import apply_rope, rope_backward  # noqa: F401

ATTENTION_KEYS = ("WQ", "WK", "WV", "WO")
BLOCK_KEYS = ("g1", "WQ", "WK", "WV", "WO", "g2", "W_gate", "W_up", "W_down")


def _check(name: str, a, shape: tuple) -> np.ndarray:
    if np.shape(a) != tuple(shape):
        raise ValueError(f"{name}: shape {np.shape(a)} where {tuple(shape)} is needed")
    return np.asarray(a)


def _float(a) -> np.ndarray:
    """Floating inputs keep their dtype; anything else becomes float64."""
    a = np.asarray(a)
    return a if np.issubdtype(a.dtype, np.floating) else a.astype(np.float64)


def _inverse_rms(x: np.ndarray, eps: float) -> np.ndarray:
    """1 / sqrt(mean of squares + eps) per row, as a trailing axis of length 1."""
    d = x.shape[-1]
    return (np.einsum("...k,...k->...", x, x) / d + eps)[..., None] ** -0.5


def _features(x, g) -> tuple[np.ndarray, np.ndarray]:
    x = _float(x)
    if x.ndim < 1 or x.shape[-1] < 1:
        raise ValueError(f"rms_norm: x of shape {x.shape} has no feature axis with entries")
    return x, _check("g", g, (x.shape[-1],))


def rms_norm(x: np.ndarray, g: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """g ⊙ x · rsqrt(mean(x²) + eps) over the last axis."""
    x, g = _features(x, g)
    return np.einsum("...k,k->...k", x * _inverse_rms(x, eps), g)


def rms_norm_backward(x: np.ndarray, g: np.ndarray, d_out: np.ndarray,
                      eps: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """dx = (u - x̂ ⟨u, x̂⟩/d)/r with u = d_out ⊙ g; dg = Σ_rows d_out ⊙ x̂."""
    x, g = _features(x, g)
    d_out = _check("d_out", d_out, x.shape)
    inv = _inverse_rms(x, eps)
    x_hat = x * inv
    u = np.einsum("...k,k->...k", d_out, g)
    proj = np.einsum("...k,...k->...", u, x_hat)[..., None] / x.shape[-1]
    d = x.shape[-1]
    return (u - x_hat * proj) * inv, np.einsum("rk,rk->k", d_out.reshape(-1, d), x_hat.reshape(-1, d))


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    """log σ(x) = -log(1 + e^(-x)), as -logaddexp(0, -x)."""
    return -np.logaddexp(0.0, -x)


def silu(x: np.ndarray) -> np.ndarray:
    """x · exp(log σ(x))."""
    x = _float(x)
    return x * np.exp(_log_sigmoid(x))


def silu_backward(x: np.ndarray, d_out: np.ndarray) -> np.ndarray:
    """d_out ⊙ (σ + x σ (1 − σ)), with 1 − σ(x) = σ(−x)."""
    x = _float(x)
    d_out = np.asarray(d_out)
    if d_out.shape != x.shape:
        raise ValueError(f"silu_backward: x is {x.shape}, d_out is {d_out.shape}")
    s, s_neg = np.exp(_log_sigmoid(x)), np.exp(_log_sigmoid(-x))
    return d_out * s * (1.0 + x * s_neg)


def swiglu(x: np.ndarray, W_gate: np.ndarray, W_up: np.ndarray, W_down: np.ndarray) -> tuple[np.ndarray, tuple]:
    """(SiLU(x W_gate) ⊙ x W_up) W_down, by einsum."""
    x = _float(x)
    if x.ndim != 2 or 0 in x.shape:
        raise ValueError(f"swiglu: x must be a non-empty 2-D (seq, d_model), got shape {x.shape}")
    d = x.shape[1]
    if np.ndim(W_gate) != 2 or np.shape(W_gate)[0] != d or np.shape(W_gate)[1] == 0:
        raise ValueError(f"swiglu: W_gate has shape {np.shape(W_gate)}; it must be ({d}, d_ff), d_ff > 0")
    f = np.shape(W_gate)[1]
    W_gate = _float(W_gate)
    W_up = _float(_check("W_up", W_up, (d, f)))
    W_down = _float(_check("W_down", W_down, (f, d)))
    a = np.einsum("sd,df->sf", x, W_gate)
    b = np.einsum("sd,df->sf", x, W_up)
    h = silu(a) * b
    return np.einsum("sf,fd->sd", h, W_down), (x, W_gate, W_up, W_down, a, b, h)


def swiglu_backward(d_out: np.ndarray, cache: tuple) -> dict:
    """dh = d_out W_downᵀ, then the product rule on SiLU(a) ⊙ b, then the two projections."""
    x, W_gate, W_up, W_down, a, b, h = cache
    d_out = _float(_check("d_out", d_out, x.shape))
    dh = np.einsum("sd,fd->sf", d_out, W_down)
    db = dh * silu(a)
    da = silu_backward(a, dh * b)
    return {"x": np.einsum("sf,df->sd", da, W_gate) + np.einsum("sf,df->sd", db, W_up),
            "W_gate": np.einsum("sd,sf->df", x, da), "W_up": np.einsum("sd,sf->df", x, db),
            "W_down": np.einsum("sf,sd->fd", h, d_out)}


def _d_head(d_model: int, n_heads) -> int:
    if isinstance(n_heads, bool) or not isinstance(n_heads, numbers.Integral) or n_heads < 1:
        raise ValueError(f"n_heads = {n_heads!r}: it must be a whole number >= 1")
    if d_model % n_heads:
        raise ValueError(f"d_model {d_model} must be divisible by n_heads {n_heads}")
    d_head = d_model // int(n_heads)
    if d_head % 2:
        raise ValueError(f"d_head = {d_head} is odd: RoPE needs pairs")
    return d_head


def _attention_weights(params, d_model: int) -> dict[str, np.ndarray]:
    """params' four attention weights, each (d_model, d_model), in their own dtype."""
    if not isinstance(params, dict):
        raise ValueError(f"params must be a dict, got {type(params).__name__}")
    missing = [k for k in ATTENTION_KEYS if k not in params]
    if missing:
        raise ValueError(f"params is missing {', '.join(missing)}")
    return {k: _check(k, params[k], (d_model, d_model)) for k in ATTENTION_KEYS}


def _rotation(seq: int, d_head: int, base: float, sign: int) -> np.ndarray:
    """e^(±i·p·θ_k): one unit complex number per position and pair, (seq, d_head/2)."""
    theta = float(base) ** (-np.arange(0, d_head, 2) / d_head)
    return np.exp(sign * 1j * np.einsum("p,k->pk", np.arange(seq, dtype=np.float64), theta))


def _rotate(H: np.ndarray, turn: np.ndarray) -> np.ndarray:
    """(n, seq, d_head) real → pairs as complex numbers, times turn, → real again."""
    z = H[..., 0::2] + 1j * H[..., 1::2]
    z = np.einsum("hpk,pk->hpk", z, turn)
    out = np.empty(H.shape)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


def rope_multi_head_attention(x: np.ndarray, params: dict, n_heads: int,
                              base: float = 10000.0) -> tuple[np.ndarray, tuple]:
    """Heads as an einsum axis: rotate Q and K per head, masked log-sum-exp softmax, merge, W_O."""
    x = _float(x)
    if x.ndim != 2 or x.shape[0] == 0:
        raise ValueError(f"x: shape {x.shape}, but (seq, d_model) with seq >= 1 is needed")
    seq, d_model = x.shape
    d_head = _d_head(d_model, n_heads)
    W = {k: _float(w) for k, w in _attention_weights(params, d_model).items()}
    n = int(n_heads)
    proj = {k: np.einsum("sd,de->se", x, W[k]).reshape(seq, n, d_head).transpose(1, 0, 2) for k in ("WQ", "WK", "WV")}
    turn = _rotation(seq, d_head, base, +1)
    Qr, Kr, Vh = _rotate(proj["WQ"], turn), _rotate(proj["WK"], turn), proj["WV"]
    scores = np.einsum("hid,hjd->hij", Qr, Kr) / np.sqrt(d_head)
    scores = np.where(np.tril(np.ones((seq, seq), dtype=bool)), scores, -np.inf)
    top = scores.max(axis=-1, keepdims=True)
    log_z = top + np.log(np.exp(scores - top).sum(axis=-1, keepdims=True))
    P = np.exp(scores - log_z)
    merged = np.einsum("hij,hjd->ihd", P, Vh).reshape(seq, d_model)
    return np.einsum("sd,de->se", merged, W["WO"]), (x, W, Qr, Kr, Vh, P, merged, float(base))


def rope_multi_head_attention_backward(d_out: np.ndarray, cache: tuple) -> dict:
    """All heads at once; the rotated gradients turned back by the conjugate rotation."""
    x, W, Qr, Kr, Vh, P, merged, base = cache
    d_out = _float(_check("d_out", d_out, x.shape))
    n, seq, d_head = Qr.shape
    dH = np.einsum("se,de->sd", d_out, W["WO"]).reshape(seq, n, d_head).transpose(1, 0, 2)
    dVh = np.einsum("hij,hid->hjd", P, dH)
    dP = np.einsum("hid,hjd->hij", dH, Vh)
    dS = P * (dP - np.einsum("hij,hij->hi", P, dP)[..., None]) / np.sqrt(d_head)
    back = _rotation(seq, d_head, base, -1)
    dQh = _rotate(np.einsum("hij,hjd->hid", dS, Kr), back)
    dKh = _rotate(np.einsum("hij,hid->hjd", dS, Qr), back)
    dQ, dK, dV = (a.transpose(1, 0, 2).reshape(seq, n * d_head) for a in (dQh, dKh, dVh))
    return {"x": np.einsum("sd,ed->se", dQ, W["WQ"]) + np.einsum("sd,ed->se", dK, W["WK"])
            + np.einsum("sd,ed->se", dV, W["WV"]),
            "WQ": np.einsum("sd,se->de", x, dQ), "WK": np.einsum("sd,se->de", x, dK),
            "WV": np.einsum("sd,se->de", x, dV), "WO": np.einsum("sd,se->de", merged, d_out)}


def prenorm_block(x: np.ndarray, params: dict, n_heads: int) -> tuple[np.ndarray, tuple]:
    """Two residuals, each around a norm and a sub-layer."""
    x = _float(x)
    if x.ndim != 2 or x.shape[0] == 0:
        raise ValueError(f"x: shape {x.shape}, but (seq, d_model) with seq >= 1 is needed")
    if not isinstance(params, dict):
        raise ValueError(f"params must be a dict, got {type(params).__name__}")
    missing = [k for k in BLOCK_KEYS if k not in params]
    extra = [k for k in params if k not in BLOCK_KEYS]
    if missing or extra:
        raise ValueError(f"params: missing {missing}, not belonging {extra}")
    d = x.shape[1]
    g1, g2 = _check("g1", params["g1"], (d,)), _check("g2", params["g2"], (d,))
    attn, attn_cache = rope_multi_head_attention(rms_norm(x, g1), params, n_heads)
    x1 = x + attn
    ffn, ffn_cache = swiglu(rms_norm(x1, g2), params["W_gate"], params["W_up"], params["W_down"])
    return x1 + ffn, (x, x1, g1, g2, attn_cache, ffn_cache)


def prenorm_block_backward(d_y: np.ndarray, cache: tuple) -> dict:
    """dx1 = d_y + the branch's share; dx = dx1 + the first branch's share."""
    x, x1, g1, g2, attn_cache, ffn_cache = cache
    d_y = _float(_check("d_y", d_y, x.shape))
    ffn = swiglu_backward(d_y, ffn_cache)
    d2, dg2 = rms_norm_backward(x1, g2, ffn.pop("x"))
    dx1 = d_y + d2
    attn = rope_multi_head_attention_backward(dx1, attn_cache)
    d1, dg1 = rms_norm_backward(x, g1, attn.pop("x"))
    return {"x": dx1 + d1, "g1": dg1, "g2": dg2, **attn, **ffn}
