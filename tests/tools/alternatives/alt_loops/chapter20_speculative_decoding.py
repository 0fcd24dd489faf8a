"""Chapter 20, written from the docstrings: plain loops over tokens and positions, Python floats."""

import math
import numbers

import numpy as np

from .chapter16_sampling import sample_index


def _real(value) -> bool:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _whole(value, name):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a whole number, got {value!r}")


def _dist(d, name) -> list[float]:
    if not isinstance(d, np.ndarray) or d.ndim != 1 or len(d) == 0 or d.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be a 1-D NumPy array of numbers, got {type(d).__name__} {d!r:.80}")
    values = [float(x) for x in d]
    if not all(math.isfinite(x) and x >= 0 for x in values) or abs(math.fsum(values) - 1) > 1e-6:
        raise ValueError(f"{name} is not a distribution (finite, >= 0, summing to 1): {values}")
    return values


def _pair(p, q):
    a, b = _dist(p, "p"), _dist(q, "q")
    if len(a) != len(b):
        raise ValueError(f"p has shape ({len(a)},) and q ({len(b)},): one vocabulary for both")
    return a, b


def acceptance_probability(p, q, token):
    """min(1, p(x) / q(x)), once q(x) > 0 is known."""
    a, b = _pair(p, q)
    _whole(token, "token")
    if not 0 <= token < len(a):
        raise ValueError(f"token {token} is not in 0 … {len(a) - 1}")
    if b[token] == 0:
        raise ValueError(f"q({token}) = 0: the draft never proposes token {token}")
    ratio = a[token] / b[token]
    return 1.0 if ratio > 1 else ratio


def residual_distribution(p, q):
    """max(0, p − q) token by token, over its total."""
    a, b = _pair(p, q)
    excess = [x - y if x > y else 0.0 for x, y in zip(a, b, strict=True)]
    total = math.fsum(excess)
    if total == 0:
        raise ValueError("p exceeds q nowhere: no residual to draw from")
    return np.array([e / total for e in excess])


def acceptance_rate(p, q):
    """1 − ½ Σ|p − q|."""
    a, b = _pair(p, q)
    return 1.0 - 0.5 * math.fsum(abs(x - y) for x, y in zip(a, b, strict=True))


def expected_tokens(alpha, k):
    """1 + α + … + α^k, term by term."""
    if not _real(alpha) or not 0 <= float(alpha) <= 1:
        raise ValueError(f"alpha must be a number in [0, 1], got {alpha!r}")
    _whole(k, "k")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    total, term = 0.0, 1.0
    for _ in range(k + 1):
        total += term
        term *= float(alpha)
    return total


def speculative_step(draft, q, p, us):
    """Accept in order, stop at the first rejection with a residual token, else add the bonus token."""
    ids = list(draft) if isinstance(draft, (list, tuple, np.ndarray)) else None
    if not ids or any(isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Integral) for x in ids) \
            or np.ndim(draft) != 1:
        raise ValueError(f"draft must be a non-empty 1-D list of token ids, got {draft!r}")
    k = len(ids)
    if not isinstance(q, np.ndarray) or q.ndim != 2 or q.shape[0] != k:
        raise ValueError(f"q must be an array of k = {k} rows, got shape {np.shape(q)}")
    if not isinstance(p, np.ndarray) or p.ndim != 2 or p.shape[0] != k + 1:
        raise ValueError(f"p must be an array of k + 1 = {k + 1} rows, got shape {np.shape(p)}")
    if q.shape[1] != p.shape[1]:
        raise ValueError(f"q {q.shape} and p {p.shape} disagree on the vocabulary")
    for i in range(k):
        _dist(q[i], f"q[{i}]")
    for i in range(k + 1):
        _dist(p[i], f"p[{i}]")
    draws = list(us) if isinstance(us, (list, tuple, np.ndarray)) else []
    if np.ndim(us) != 1 or len(draws) != k + 1:
        raise ValueError(f"us must hold k + 1 = {k + 1} draws, got {us!r}")
    for i, u in enumerate(draws):
        if not _real(u) or not 0 <= float(u) < 1:
            raise ValueError(f"us[{i}] = {u!r} is not in [0, 1)")
    for i, x in enumerate(ids):
        if not 0 <= x < q.shape[1] or q[i, x] == 0:
            raise ValueError(f"draft[{i}] = {x} is out of range or has q[{i}] probability 0")
    out = []
    for i, x in enumerate(ids):
        if float(draws[i]) < acceptance_probability(p[i], q[i], int(x)):
            out.append(int(x))
        else:
            out.append(sample_index(residual_distribution(p[i], q[i]), float(draws[k])))
            return out
    out.append(sample_index(p[k], float(draws[k])))
    return out
