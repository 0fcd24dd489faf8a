"""Chapter 22, written from the docstrings: plain loops over tokens, experts and slots, Python floats."""

import math
import numbers

import numpy as np


def _whole(value, name, low):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if value < low:
        raise ValueError(f"{name} is {value}, below {low}")


def _matrix(a, name, ndim=2):
    if not isinstance(a, np.ndarray):
        raise ValueError(f"{name} must be a NumPy array, not a {type(a).__name__}")
    if a.ndim != ndim or a.dtype.kind not in "iuf" or a.size == 0:
        raise ValueError(f"{name} has shape {a.shape}; a {ndim}-D array of numbers was expected")
    return a.astype(float).tolist()


def _ids(experts, name, n, rows=None):
    if not isinstance(experts, np.ndarray) or experts.ndim != 2 or experts.dtype.kind not in "iu" \
            or experts.shape[1] == 0 or (rows is not None and experts.shape[0] != rows):
        raise ValueError(f"{name} must be an integer array (tokens, k), got {type(experts).__name__} "
                         f"{np.shape(experts)}")
    out = [[int(e) for e in row] for row in experts]
    for row in out:
        for e in row:
            if not 0 <= e < n:
                raise ValueError(f"{name} holds expert {e}, not in 0 … {n - 1}")
    return out


def _probs(probs):
    p = _matrix(probs, "probs")
    for row in p:
        if any(not math.isfinite(v) or v < 0 for v in row) or abs(math.fsum(row) - 1) > 1e-6:
            raise ValueError(f"probs row {row} is not a distribution")
    return p


def _softmax_row(z):
    top = max(z)
    e = [math.exp(v - top) for v in z]
    s = math.fsum(e)
    return [v / s for v in e]


def router_probabilities(x, W_router):
    xs, W = _matrix(x, "x"), _matrix(W_router, "W_router")
    if len(W) != len(xs[0]):
        raise ValueError(f"x {np.shape(x)} and W_router {np.shape(W_router)} do not fit")
    n = len(W[0])
    return np.array([_softmax_row([math.fsum(row[i] * W[i][e] for i in range(len(row))) for e in range(n)])
                     for row in xs])


def top_k_gates(probs, k):
    p = _probs(probs)
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
        raise ValueError(f"k must be a whole number, got {k!r}")
    n = len(p[0])
    if k < 1 or k > n:
        raise ValueError(f"k = {k} is not between 1 and the {n} experts")
    experts, gates = [], []
    for row in p:
        order = sorted(range(n), key=lambda e, row=row: (-row[e], e))[:k]
        total = math.fsum(row[e] for e in order)
        experts.append(order)
        gates.append([row[e] / total for e in order])
    return np.array(experts, dtype=np.int64), np.array(gates)


def expert_capacity(n_tokens, n_experts, k, factor):
    _whole(n_tokens, "n_tokens", 1)
    _whole(n_experts, "n_experts", 1)
    _whole(k, "k", 1)
    if k > n_experts:
        raise ValueError(f"k {k} above n_experts {n_experts}")
    if isinstance(factor, (bool, np.bool_)) or not isinstance(factor, numbers.Real) or not math.isfinite(factor) \
            or factor <= 0:
        raise ValueError(f"factor must be a positive number, got {factor!r}")
    share = float(factor) * n_tokens * k / n_experts  # in float64, in the order the docstring writes
    whole = int(share)
    return whole if whole == share else whole + 1


def dispatch(experts, n_experts, capacity):
    _whole(n_experts, "n_experts", 1)
    _whole(capacity, "capacity", 0)
    e = _ids(experts, "experts", n_experts)
    taken = [0] * n_experts
    slots = [[-1] * len(e[0]) for _ in e]
    for s in range(len(e[0])):
        for t in range(len(e)):
            if taken[e[t][s]] < capacity:
                slots[t][s] = taken[e[t][s]]
                taken[e[t][s]] += 1
    return np.array(slots, dtype=np.int64)


def moe_forward(x, W_router, W_experts, k, capacity):
    xs, W = _matrix(x, "x"), _matrix(W_router, "W_router")
    We = _matrix(W_experts, "W_experts", 3)
    n, d = len(W[0]), len(xs[0])
    if len(W) != d or len(We) != n or len(We[0]) != d:
        raise ValueError(f"x {np.shape(x)}, W_router {np.shape(W_router)} and W_experts {np.shape(W_experts)} "
                         "do not fit")
    experts, gates = top_k_gates(router_probabilities(x, W_router), k)
    slots = dispatch(experts, n, capacity)
    d_out = len(We[0][0])
    y = [[0.0] * d_out for _ in xs]
    for t, row in enumerate(xs):
        for s in range(k):
            if slots[t, s] >= 0:
                e = int(experts[t, s])
                for j in range(d_out):
                    y[t][j] += float(gates[t, s]) * math.fsum(row[i] * We[e][i][j] for i in range(d))
    cache = (np.asarray(x, dtype=float), np.asarray(W_router, dtype=float), np.asarray(W_experts, dtype=float),
             experts, gates, slots)
    return np.array(y), cache


def load_balancing_loss(probs, experts):
    p = _probs(probs)
    n = len(p[0])
    e = _ids(experts, "experts", n, rows=len(p))
    counts = [0] * n
    for row in e:
        for i in row:
            counts[i] += 1
    total = len(e) * len(e[0])
    return n * math.fsum(counts[i] / total * math.fsum(r[i] for r in p) / len(p) for i in range(n))


def gates_backward(d_gates, gates, experts, n_experts):
    _whole(n_experts, "n_experts", 1)
    dg, g = _matrix(d_gates, "d_gates"), _matrix(gates, "gates")
    if np.shape(d_gates) != np.shape(gates):
        raise ValueError(f"d_gates {np.shape(d_gates)} and gates {np.shape(gates)} differ")
    e = _ids(experts, "experts", n_experts, rows=len(g))
    if len(e[0]) != len(g[0]):
        raise ValueError(f"experts {np.shape(experts)} and gates {np.shape(gates)} differ")
    out = [[0.0] * n_experts for _ in g]
    for t in range(len(g)):
        mean = math.fsum(a * b for a, b in zip(g[t], dg[t], strict=True))
        for s in range(len(g[t])):
            out[t][e[t][s]] = g[t][s] * (dg[t][s] - mean)
    return np.array(out)


def moe_backward(d_y, cache):
    if not isinstance(cache, tuple) or len(cache) < 3:
        raise ValueError("cache must be moe_forward's tuple")
    x, W_router, W_experts, experts, gates, slots = cache
    if np.shape(d_y) != (len(x), W_experts.shape[2]):
        raise ValueError(f"d_y {np.shape(d_y)} is not the output's shape {(len(x), W_experts.shape[2])}")
    dy = np.asarray(d_y, dtype=float)
    tokens, d = x.shape
    n, _, d_out = W_experts.shape
    dx = [[0.0] * d for _ in range(tokens)]
    dWe = [[[0.0] * d_out for _ in range(d)] for _ in range(n)]
    dg = [[0.0] * experts.shape[1] for _ in range(tokens)]
    for t in range(tokens):
        for s in range(experts.shape[1]):
            if slots[t, s] < 0:
                continue
            e, g = int(experts[t, s]), float(gates[t, s])
            out = [math.fsum(x[t, i] * W_experts[e, i, j] for i in range(d)) for j in range(d_out)]
            dg[t][s] = math.fsum(dy[t, j] * out[j] for j in range(d_out))
            for i in range(d):
                for j in range(d_out):
                    dWe[e][i][j] += x[t, i] * g * dy[t, j]
                dx[t][i] += g * math.fsum(dy[t, j] * W_experts[e, i, j] for j in range(d_out))
    dz = gates_backward(np.array(dg), gates, experts, n)
    dWr = [[math.fsum(x[t, i] * dz[t, e] for t in range(tokens)) for e in range(n)] for i in range(d)]
    for t in range(tokens):
        for i in range(d):
            dx[t][i] += math.fsum(dz[t, e] * W_router[i, e] for e in range(n))
    return np.array(dx), np.array(dWr), np.array(dWe)
