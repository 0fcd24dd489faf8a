"""Chapter 23, written from the docstrings: whole arrays at once, a one-hot einsum to pick tokens, expit-free σ."""

import numbers

import numpy as np


def _array(a, name, ndim):
    if not isinstance(a, np.ndarray) or a.ndim != ndim or a.size == 0 or a.dtype == bool \
            or not np.issubdtype(a.dtype, np.number):
        raise ValueError(f"{name} must be a non-empty {ndim}-D NumPy array of numbers, not {type(a).__name__}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} must be finite")
    return a.astype(np.float64)


def _whole(value, name):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a whole number, got {value!r}")


def _sequence(logits, ids):
    logits = _array(logits, "logits", 2)
    ids = np.asarray(ids)
    if logits.shape[0] < 2:
        raise ValueError(f"logits {logits.shape}: at least 2 rows")
    if ids.shape != (logits.shape[0],) or ids.dtype.kind not in "iu":
        raise ValueError(f"ids must be {logits.shape[0]} whole numbers, got {ids!r}")
    if ((ids < 0) | (ids >= logits.shape[1])).any():
        raise ValueError(f"ids {ids} outside 0 … {logits.shape[1] - 1}")
    return logits, ids


def _beta(beta):
    if isinstance(beta, np.ndarray) and beta.ndim == 0:
        beta = beta.item()
    if isinstance(beta, (bool, np.bool_)) or not isinstance(beta, numbers.Real) or not np.isfinite(beta):
        raise ValueError(f"beta must be a finite number, got {beta!r}")
    return float(beta)


def token_log_probs(logits, ids):
    """log_softmax of rows 0 … seq − 2, picked at ids[1:] with a one-hot einsum."""
    logits, ids = _sequence(logits, ids)
    rows = logits[:-1]
    m = rows.max(axis=1, keepdims=True)
    log_softmax = rows - (m + np.log(np.exp(rows - m).sum(axis=1, keepdims=True)))
    one_hot = np.eye(rows.shape[1])[ids[1:]]
    return np.einsum("iv,iv->i", one_hot, log_softmax)


def response_mask(prompt_len, seq_len):
    """A step function over the scored positions 1 … seq_len − 1."""
    _whole(prompt_len, "prompt_len")
    _whole(seq_len, "seq_len")
    if seq_len < 2:
        raise ValueError(f"seq_len {seq_len} < 2")
    if not 0 < prompt_len < seq_len:
        raise ValueError(f"prompt_len {prompt_len} is not in 1 … {seq_len - 1}")
    return np.where(np.arange(1, seq_len) < prompt_len, 0.0, 1.0)


def sequence_log_prob(logits, ids, prompt_len):
    """The mask dotted with the next-token log-probabilities."""
    logits, ids = _sequence(logits, ids)
    _whole(prompt_len, "prompt_len")
    if not 0 < prompt_len < len(ids):
        raise ValueError(f"prompt_len {prompt_len} is not in 1 … {len(ids) - 1}")
    return float(np.einsum("i,i->", response_mask(prompt_len, len(ids)), token_log_probs(logits, ids)))


def sft_loss(log_probs, mask):
    """−⟨m, ℓ⟩ / Σ m by einsum."""
    lp, m = _array(log_probs, "log_probs", 2), _array(mask, "mask", 2)
    if lp.shape != m.shape:
        raise ValueError(f"log_probs {lp.shape} and mask {m.shape} must match")
    if not np.isin(m, (0.0, 1.0)).all():
        raise ValueError("mask must be 0s and 1s")
    n = m.sum()
    if n == 0:
        raise ValueError("no response token to average over")
    return float(-np.einsum("bi,bi->", m, lp) / n)


def implicit_reward(policy_logp, ref_logp, beta):
    """β (log π − log π_ref)."""
    p, r = _array(policy_logp, "policy_logp", 1), _array(ref_logp, "ref_logp", 1)
    if p.shape != r.shape:
        raise ValueError(f"policy_logp {p.shape} and ref_logp {r.shape} must match")
    beta = _beta(beta)
    if not beta > 0:
        raise ValueError(f"beta must be > 0: got {beta}")
    return beta * p - beta * r


def _z(arrays, beta):
    names = ("policy_chosen", "policy_rejected", "ref_chosen", "ref_rejected")
    a = [_array(x, n, 1) for x, n in zip(arrays, names, strict=True)]
    if any(x.shape != a[0].shape for x in a):
        raise ValueError("policy_chosen, policy_rejected, ref_chosen, ref_rejected: shapes "
                         + ", ".join(str(x.shape) for x in a))
    beta = _beta(beta)
    if beta <= 0:
        raise ValueError(f"beta must be > 0: got {beta}")
    pc, pr, rc, rr = a
    return beta * ((pc - pr) - (rc - rr)), beta


def dpo_loss(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta):
    """log(1 + e^−z) = max(0, −z) + log1p(e^−|z|), averaged."""
    z, _ = _z((policy_chosen, policy_rejected, ref_chosen, ref_rejected), beta)
    return float(np.mean(np.maximum(-z, 0.0) + np.log1p(np.exp(-np.abs(z)))))


def dpo_grad(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta):
    """σ(−z) from e^−|z|, which never overflows; ∓ β/B of it."""
    z, beta = _z((policy_chosen, policy_rejected, ref_chosen, ref_rejected), beta)
    e = np.exp(-np.abs(z))
    sig_minus_z = np.where(z >= 0, e / (1 + e), 1 / (1 + e))
    return -beta * sig_minus_z / z.size, beta * sig_minus_z / z.size
