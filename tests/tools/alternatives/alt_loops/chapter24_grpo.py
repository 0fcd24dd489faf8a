"""Chapter 24, written from the docstrings: explicit loops over responses and tokens, plain ``math``."""

import math
import numbers

import numpy as np


def _number(value, name):
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, not {value!r}")
    return float(value)


def _table(a, name, ndim):
    """A nested list of floats (1-D: a list; 2-D: a list of rows)."""
    arr = np.asarray(a)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number) or arr.ndim != ndim or arr.size == 0:
        raise ValueError(f"{name} must be a {ndim}-D array of real numbers with entries, got {arr.shape}")
    out = arr.astype(float).tolist()
    for x in (out if ndim == 1 else [v for row in out for v in row]):
        if not math.isfinite(x):
            raise ValueError(f"{name} holds {x}, not a finite number")
    return out


def _mask(mask, rows, cols, name="values"):
    arr = np.asarray(mask)
    if arr.shape != (rows, cols) or not np.issubdtype(arr.dtype, np.number) and arr.dtype != bool:
        raise ValueError(f"mask {arr.shape} does not fit {name} ({rows}, {cols})")
    out = [[float(v) for v in row] for row in arr.tolist()]
    if any(v not in (0.0, 1.0) for row in out for v in row):
        raise ValueError("mask must hold only 0s and 1s")
    return out


def _same(a, b, name_a, name_b):
    if len(a) != len(b) or len(a[0]) != len(b[0]):
        raise ValueError(f"{name_a} ({len(a)}, {len(a[0])}) and {name_b} ({len(b)}, {len(b[0])}) differ in shape")


def _clip_eps(clip_eps):
    e = _number(clip_eps, "clip_eps")
    if not 0 < e < 1:
        raise ValueError(f"clip_eps must lie strictly between 0 and 1, got {e}")
    return e


def group_advantages(rewards, group_size, eps=1e-4):
    """Loop over the groups; the population variance by a sum of squares over G."""
    r = _table(rewards, "rewards", 1)
    if isinstance(group_size, (bool, np.bool_)) or not isinstance(group_size, numbers.Integral) or group_size < 1:
        raise ValueError(f"group_size must be a whole number of at least 1, got {group_size!r}")
    e = _number(eps, "eps")
    if not e > 0:
        raise ValueError(f"eps must be positive, got {e}")
    if len(r) % group_size != 0:
        raise ValueError(f"B = {len(r)} rewards are not whole groups of group_size = {group_size}")
    out = []
    for start in range(0, len(r), group_size):
        group = r[start:start + group_size]
        mean = math.fsum(group) / group_size
        std = math.sqrt(math.fsum((x - mean) ** 2 for x in group) / group_size)
        out.extend((x - mean) / (std + e) for x in group)
    return np.array(out)


def clipped_surrogate(logp, logp_old, advantages, clip_eps=0.2):
    """Token by token: the smaller of ρA and the clipped ratio times A."""
    lp, lo = _table(logp, "logp", 2), _table(logp_old, "logp_old", 2)
    _same(lp, lo, "logp", "logp_old")
    adv = _table(advantages, "advantages", 1)
    if len(adv) != len(lp):
        raise ValueError(f"advantages has {len(adv)} entries for {len(lp)} rows of logp")
    e = _clip_eps(clip_eps)
    out = []
    for row_p, row_o, a in zip(lp, lo, adv, strict=True):
        row = []
        for p, o in zip(row_p, row_o, strict=True):
            rho = math.exp(p - o)
            row.append(min(rho * a, max(1 - e, min(1 + e, rho)) * a))
        out.append(row)
    return np.array(out)


def k3_kl(logp, logp_ref):
    """x − log x − 1 with x = π_ref/π, one token at a time."""
    lp, lr = _table(logp, "logp", 2), _table(logp_ref, "logp_ref", 2)
    _same(lp, lr, "logp", "logp_ref")
    return np.array([[math.exp(r - p) - (r - p) - 1 for p, r in zip(rp, rr, strict=True)]
                     for rp, rr in zip(lp, lr, strict=True)])


def masked_mean(values, mask):
    """Per row: the masked sum over the count of 1s."""
    v = _table(values, "values", 2)
    m = _mask(mask, len(v), len(v[0]))
    out = []
    for b, (row, keep) in enumerate(zip(v, m, strict=True)):
        n = sum(keep)
        if n == 0:
            raise ValueError(f"row {b} has no response token")
        out.append(math.fsum(x for x, k in zip(row, keep, strict=True) if k) / n)
    return np.array(out)


def _batch(logp, logp_old, logp_ref, advantages, mask, clip_eps, beta):
    clipped_surrogate(logp, logp_old, advantages, clip_eps)  # its checks
    k3_kl(logp, logp_ref)
    lp = _table(logp, "logp", 2)
    m = _mask(mask, len(lp), len(lp[0]), "logp")
    for b, keep in enumerate(m):
        if sum(keep) == 0:
            raise ValueError(f"row {b} of the mask has no response token")
    bt = _number(beta, "beta")
    if not bt >= 0:
        raise ValueError(f"beta must be at least 0, got {bt}")
    return m, bt


def grpo_loss(logp, logp_old, logp_ref, advantages, mask, clip_eps=0.2, beta=0.04):
    """Minus the mean over rows of each row's masked mean of s − β k3."""
    m, bt = _batch(logp, logp_old, logp_ref, advantages, mask, clip_eps, beta)
    s, k = clipped_surrogate(logp, logp_old, advantages, clip_eps), k3_kl(logp, logp_ref)
    means = masked_mean([[s[b][t] - bt * k[b][t] for t in range(len(m[0]))] for b in range(len(m))], m)
    return -math.fsum(means) / len(means)


def grpo_loss_grad(logp, logp_old, logp_ref, advantages, mask, clip_eps=0.2, beta=0.04):
    """Token by token: 0 or ρA for the surrogate, 1 − π_ref/π for k3, weighted −1/(B n_b)."""
    m, bt = _batch(logp, logp_old, logp_ref, advantages, mask, clip_eps, beta)
    e = float(clip_eps)
    lp, lo, lr = (_table(x, n, 2) for x, n in ((logp, "logp"), (logp_old, "logp_old"), (logp_ref, "logp_ref")))
    adv = _table(advantages, "advantages", 1)
    grad = []
    for b, a in enumerate(adv):
        n, row = sum(m[b]), []
        for t in range(len(m[b])):
            rho = math.exp(lp[b][t] - lo[b][t])
            active = (a > 0 and rho > 1 + e) or (a < 0 and rho < 1 - e)
            ds = 0.0 if active else rho * a
            dk = 1 - math.exp(lr[b][t] - lp[b][t])
            row.append(-m[b][t] / (len(adv) * n) * (ds - bt * dk))
        grad.append(row)
    return np.array(grad)
