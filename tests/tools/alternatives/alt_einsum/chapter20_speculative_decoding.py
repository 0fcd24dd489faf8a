"""Chapter 20, written from the docstrings: whole arrays at once, the first rejection by argmax, the draw by searchsorted."""

import numbers

import numpy as np

from .chapter16_sampling import sample_index  # noqa: F401


def _dist(d, name):
    if not isinstance(d, np.ndarray) or d.ndim != 1 or d.size == 0 or not np.issubdtype(d.dtype, np.number) \
            or d.dtype == bool:
        raise ValueError(f"{name} must be a 1-D NumPy array of probabilities, not a {type(d).__name__}")
    if not (np.isfinite(d).all() and (d >= 0).all() and np.isclose(d.sum(), 1.0, rtol=0, atol=1e-6)):
        raise ValueError(f"{name} is not a distribution: {d}")
    return d.astype(np.float64)


def _pair(p, q):
    p, q = _dist(p, "p"), _dist(q, "q")
    if p.shape != q.shape:
        raise ValueError(f"p {p.shape} and q {q.shape} differ in length")
    return p, q


def _draw(probs, u):
    """The first index whose running sum passes u (the last non-zero one if rounding leaves u past them all)."""
    c = np.cumsum(probs)
    i = int(np.searchsorted(c, u, side="right"))
    return i if i < len(probs) else int(np.nonzero(probs)[0][-1])


def acceptance_probability(p, q, token):
    """The ratio p/q of the token, clipped to [0, 1]."""
    p, q = _pair(p, q)
    if isinstance(token, (bool, np.bool_)) or not isinstance(token, numbers.Integral) or not 0 <= token < p.size:
        raise ValueError(f"token must be a whole number in 0 … {p.size - 1}, got {token!r}")
    if not q[token] > 0:
        raise ValueError(f"q[{token}] is 0: a token the draft cannot propose")
    return float(np.clip(p[token] / q[token], 0.0, 1.0))


def residual_distribution(p, q):
    """(p − q) clipped below at 0, divided by its total."""
    p, q = _pair(p, q)
    r = np.clip(p - q, 0.0, None)
    total = r.sum()
    if not total > 0:
        raise ValueError("no residual: p is nowhere above q")
    return r / total


def acceptance_rate(p, q):
    """Σ q·min(1, p/q) over the tokens q proposes: the overlap of the two distributions."""
    p, q = _pair(p, q)
    return float(np.einsum("i,i->", np.minimum(p, q), np.ones_like(p)))


def expected_tokens(alpha, k):
    """(1 − α^{k+1}) / (1 − α), or k + 1 at α = 1."""
    a = alpha.item() if isinstance(alpha, np.ndarray) and alpha.ndim == 0 else alpha
    if isinstance(a, (bool, np.bool_)) or not isinstance(a, numbers.Real) or not 0 <= a <= 1:
        raise ValueError(f"alpha must be a probability, got {alpha!r}")
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"k must be a whole number >= 1, got {k!r}")
    return float(k + 1) if a == 1 else float((1 - a ** (k + 1)) / (1 - a))


def speculative_step(draft, q, p, us):
    """Every acceptance at once; the first failure found by argmax; one draw with the last u."""
    x = np.asarray(draft)
    if x.ndim != 1 or x.size == 0 or x.dtype.kind not in "iu":
        raise ValueError(f"draft must be 1-D, non-empty, whole numbers: {draft!r}")
    k = x.size
    for name, a, n in (("q", q, k), ("p", p, k + 1)):
        if not isinstance(a, np.ndarray) or a.ndim != 2 or a.shape[0] != n:
            raise ValueError(f"{name} needs {n} rows, got shape {np.shape(a)}")
    if q.shape[1] != p.shape[1]:
        raise ValueError(f"q {q.shape} and p {p.shape}: not one vocabulary")
    q = np.stack([_dist(r, f"q[{i}]") for i, r in enumerate(q)])
    p = np.stack([_dist(r, f"p[{i}]") for i, r in enumerate(p)])
    u = np.asarray(us)
    if u.shape != (k + 1,):
        raise ValueError(f"us must have shape ({k + 1},), got {u.shape}")
    for i, v in enumerate(u.tolist()):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0 <= v < 1:
            raise ValueError(f"us[{i}] = {v!r} is not a draw in [0, 1)")
    if (x < 0).any() or (x >= q.shape[1]).any():
        i = int(np.argmax((x < 0) | (x >= q.shape[1])))
        raise ValueError(f"draft[{i}] = {x[i]} is not a token")
    rows = np.arange(k)
    qx, px = q[rows, x], p[rows, x]
    if (qx == 0).any():
        i = int(np.argmax(qx == 0))
        raise ValueError(f"draft[{i}] has probability 0 under q[{i}]")
    accept = u[:k] < np.minimum(1.0, px / qx)
    n = k if accept.all() else int(np.argmin(accept))  # how many pass before the first failure
    last = p[k] if n == k else residual_distribution(p[n], q[n])
    return [int(t) for t in x[:n]] + [_draw(last, float(u[k]))]
