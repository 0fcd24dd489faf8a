"""Chapter 24, written from the docstrings: whole arrays, np.einsum for the masked sums, log-ratios kept as logs."""

import numbers

import numpy as np


def _num(value, name):
    value = value.item() if isinstance(value, np.ndarray) and value.ndim == 0 else value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    return float(value)


def _arr(a, name, ndim):
    x = np.asarray(a)
    if x.dtype.kind not in "iuf" or x.ndim != ndim or x.size == 0 or not np.isfinite(x).all():
        raise ValueError(f"{name} must be a non-empty {ndim}-D array of finite numbers, got shape {x.shape}")
    return x.astype(np.float64)


def _msk(mask, shape, name="values"):
    m = np.asarray(mask)
    if m.dtype.kind not in "biuf" or m.shape != shape or not np.isin(m, (0, 1)).all():
        raise ValueError(f"mask of shape {m.shape} must be 0/1 with the shape {shape} of {name}")
    return m.astype(np.float64)


def _tok(logp, logp_old, advantages, clip_eps):
    lp, lo, adv = _arr(logp, "logp", 2), _arr(logp_old, "logp_old", 2), _arr(advantages, "advantages", 1)
    if lo.shape != lp.shape:
        raise ValueError(f"logp_old {lo.shape} must match logp {lp.shape}")
    if adv.shape != lp.shape[:1]:
        raise ValueError(f"advantages {adv.shape} needs one entry per row of logp {lp.shape}")
    e = _num(clip_eps, "clip_eps")
    if not 0 < e < 1:
        raise ValueError(f"clip_eps = {e} is not in (0, 1)")
    return lp, lo, adv, e


def group_advantages(rewards, group_size, eps=1e-4):
    """A (B/G, G) view, einsum means and variances, back to (B,)."""
    r = _arr(rewards, "rewards", 1)
    if isinstance(group_size, (bool, np.bool_)) or not isinstance(group_size, numbers.Integral) or group_size < 1:
        raise ValueError(f"group_size must be a whole number >= 1, not {group_size!r}")
    e = _num(eps, "eps")
    if not e > 0:
        raise ValueError(f"eps must be > 0, got {e}")
    if r.size % group_size:
        raise ValueError(f"group_size {group_size} does not divide B = {r.size}")
    g = r.reshape(r.size // group_size, group_size)
    d = g - np.einsum("gi->g", g)[:, None] / group_size
    sd = np.sqrt(np.einsum("gi,gi->g", d, d) / group_size)
    return (d / (sd[:, None] + e)).ravel()


def clipped_surrogate(logp, logp_old, advantages, clip_eps=0.2):
    """ρA and clip(ρ)A as two arrays, then their elementwise minimum."""
    lp, lo, adv, e = _tok(logp, logp_old, advantages, clip_eps)
    rho = np.exp(lp - lo)
    return np.minimum(np.einsum("bt,b->bt", rho, adv), np.einsum("bt,b->bt", np.clip(rho, 1 - e, 1 + e), adv))


def k3_kl(logp, logp_ref):
    """expm1 of the log-ratio less the log-ratio: x − 1 − log x without cancelling in 1 + tiny − 1."""
    lp, lr = _arr(logp, "logp", 2), _arr(logp_ref, "logp_ref", 2)
    if lr.shape != lp.shape:
        raise ValueError(f"logp_ref {lr.shape} must match logp {lp.shape}")
    d = lr - lp
    return np.expm1(d) - d


def masked_mean(values, mask):
    """einsum of mask and values over t, over the einsum count."""
    v = _arr(values, "values", 2)
    m = _msk(mask, v.shape)
    n = np.einsum("bt->b", m)
    if (n == 0).any():
        raise ValueError(f"no response token in row {int(np.flatnonzero(n == 0)[0])} of the mask")
    return np.einsum("bt,bt->b", m, v) / n


def _batch(logp, logp_old, logp_ref, advantages, mask, clip_eps, beta):
    lp, lo, adv, e = _tok(logp, logp_old, advantages, clip_eps)
    lr = _arr(logp_ref, "logp_ref", 2)
    if lr.shape != lp.shape:
        raise ValueError(f"logp_ref {lr.shape} must match logp {lp.shape}")
    m = _msk(mask, lp.shape, "logp")
    if (np.einsum("bt->b", m) == 0).any():
        raise ValueError("a row of the mask has no response token")
    b = _num(beta, "beta")
    if not b >= 0:
        raise ValueError(f"beta must be >= 0, got {b}")
    return lp, lo, lr, adv, m, e, b


def grpo_loss(logp, logp_old, logp_ref, advantages, mask, clip_eps=0.2, beta=0.04):
    """−mean of the per-response masked means of s − β k3."""
    lp, lo, lr, adv, m, e, b = _batch(logp, logp_old, logp_ref, advantages, mask, clip_eps, beta)
    per_token = clipped_surrogate(lp, lo, adv, e) - b * k3_kl(lp, lr)
    return float(-np.einsum("b->", masked_mean(per_token, m)) / len(adv))


def grpo_loss_grad(logp, logp_old, logp_ref, advantages, mask, clip_eps=0.2, beta=0.04):
    """The slope of the min picked by comparing the two terms: ρA where ρA is the smaller, else 0."""
    lp, lo, lr, adv, m, e, b = _batch(logp, logp_old, logp_ref, advantages, mask, clip_eps, beta)
    rho = np.exp(lp - lo)
    unclipped, clipped = rho * adv[:, None], np.clip(rho, 1 - e, 1 + e) * adv[:, None]
    ds = np.where(unclipped <= clipped, unclipped, 0.0)
    dk = -np.expm1(lr - lp)
    w = m / np.einsum("bt->b", m)[:, None] / len(adv)
    return -w * (ds - b * dk)
