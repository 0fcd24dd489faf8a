"""Chapter 23, written from the docstrings: plain loops over rows, tokens and pairs, Python floats and ``math``."""

import math
import numbers

import numpy as np


def _whole(value, name):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a whole number, got {value!r}")


def _rows(a, name, ndim):
    if not isinstance(a, np.ndarray):
        raise ValueError(f"{name} must be a NumPy array, not a {type(a).__name__}")
    if a.dtype.kind not in "iuf" or a.ndim != ndim or a.size == 0:
        raise ValueError(f"{name} must be a non-empty {ndim}-D array of numbers, got {a.dtype} {a.shape}")
    values = a.astype(float).tolist()
    flat = [x for row in values for x in row] if ndim == 2 else values
    if not all(math.isfinite(x) for x in flat):
        raise ValueError(f"{name} holds a number that is not finite")
    return values


def _sequence(logits, ids):
    rows = _rows(logits, "logits", 2)
    if len(rows) < 2:
        raise ValueError(f"logits needs 2 rows or more, got shape {logits.shape}")
    tokens = ids.tolist() if isinstance(ids, np.ndarray) else ids
    if not isinstance(tokens, list) or (isinstance(ids, np.ndarray) and ids.dtype.kind not in "iu"):
        raise ValueError(f"ids must be a 1-D sequence of whole numbers, got {ids!r}")
    for t in tokens:
        _whole(t, "ids")
        if not 0 <= t < len(rows[0]):
            raise ValueError(f"ids holds {t}, outside the vocabulary of {len(rows[0])}")
    if len(tokens) != len(rows):
        raise ValueError(f"ids has {len(tokens)} tokens for {len(rows)} rows of logits")
    return rows, tokens


def _beta(beta):
    value = beta.item() if isinstance(beta, np.ndarray) and beta.ndim == 0 else beta
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"beta must be a finite number, got {beta!r}")
    return float(value)


def _four(arrays, beta):
    names = ("policy_chosen", "policy_rejected", "ref_chosen", "ref_rejected")
    lists = [_rows(a, n, 1) for a, n in zip(arrays, names, strict=True)]
    for n, values in zip(names, lists, strict=True):
        if len(values) != len(lists[0]):
            raise ValueError(f"{n} has {len(values)} entries, policy_chosen {len(lists[0])}: one shape for all four")
    b = _beta(beta)
    if b <= 0:
        raise ValueError(f"beta must be > 0, got {b}")
    return lists, b


def token_log_probs(logits, ids):
    """Each row but the last at the next token: its logit minus the row's log-sum-exp."""
    rows, tokens = _sequence(logits, ids)
    out = []
    for i in range(len(rows) - 1):
        top = max(rows[i])
        log_z = top + math.log(math.fsum(math.exp(x - top) for x in rows[i]))
        out.append(rows[i][tokens[i + 1]] - log_z)
    return np.array(out)


def response_mask(prompt_len, seq_len):
    """1.0 where the scored token, i + 1, is at prompt_len or after."""
    _whole(prompt_len, "prompt_len")
    _whole(seq_len, "seq_len")
    if seq_len < 2:
        raise ValueError(f"seq_len must be at least 2, got {seq_len}")
    if prompt_len < 1 or prompt_len >= seq_len:
        raise ValueError(f"prompt_len = {prompt_len} must lie in 1 … {seq_len - 1}")
    return np.array([1.0 if i + 1 >= prompt_len else 0.0 for i in range(seq_len - 1)])


def sequence_log_prob(logits, ids, prompt_len):
    """Σ of the log-probabilities of the response's tokens, one by one."""
    rows, tokens = _sequence(logits, ids)
    _whole(prompt_len, "prompt_len")
    if not 1 <= prompt_len < len(tokens):
        raise ValueError(f"prompt_len = {prompt_len} must lie in 1 … {len(tokens) - 1}")
    ell = token_log_probs(logits, ids)
    return math.fsum(float(ell[i]) for i in range(prompt_len - 1, len(tokens) - 1))


def sft_loss(log_probs, mask):
    """−Σ mℓ / Σ m, over every entry of the batch."""
    lp, m = _rows(log_probs, "log_probs", 2), _rows(mask, "mask", 2)
    if log_probs.shape != mask.shape:
        raise ValueError(f"log_probs {log_probs.shape} and mask {mask.shape} differ")
    picked, count = [], 0.0
    for row_lp, row_m in zip(lp, m, strict=True):
        for x, w in zip(row_lp, row_m, strict=True):
            if w not in (0.0, 1.0):
                raise ValueError(f"mask holds {w}: only 0 and 1")
            if w == 1.0:
                picked.append(x)
                count += 1
    if count == 0:
        raise ValueError("no response token in the mask")
    return -math.fsum(picked) / count


def implicit_reward(policy_logp, ref_logp, beta):
    """β (log π − log π_ref), answer by answer."""
    a, b = _rows(policy_logp, "policy_logp", 1), _rows(ref_logp, "ref_logp", 1)
    if len(a) != len(b):
        raise ValueError(f"policy_logp ({len(a)},) and ref_logp ({len(b)},) differ")
    beta = _beta(beta)
    if beta <= 0:
        raise ValueError(f"beta must be positive, got {beta}")
    return np.array([beta * (x - y) for x, y in zip(a, b, strict=True)])


def _margins(lists, beta):
    pc, pr, rc, rr = lists
    return [beta * ((a - c) - (b - d)) for a, b, c, d in zip(pc, pr, rc, rr, strict=True)]


def _softplus(x):
    """log(1 + e^x) without overflow: x + log(1 + e^−x) for x > 0."""
    return x + math.log1p(math.exp(-x)) if x > 0 else math.log1p(math.exp(x))


def dpo_loss(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta):
    """The mean over the pairs of −log σ(z) = log(1 + e^−z)."""
    lists, b = _four((policy_chosen, policy_rejected, ref_chosen, ref_rejected), beta)
    z = _margins(lists, b)
    return math.fsum(_softplus(-x) for x in z) / len(z)


def dpo_grad(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta):
    """∓(β / B) σ(−z), σ(−z) = 1 / (1 + e^z) taken from the side that cannot overflow."""
    lists, b = _four((policy_chosen, policy_rejected, ref_chosen, ref_rejected), beta)
    z = _margins(lists, b)
    weights = [math.exp(-x) / (1 + math.exp(-x)) if x > 0 else 1 / (1 + math.exp(x)) for x in z]
    d_chosen = np.array([-b * w / len(z) for w in weights])
    return d_chosen, -d_chosen
