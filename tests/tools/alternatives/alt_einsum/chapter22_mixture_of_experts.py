"""Chapter 22, written from the docstrings: np.einsum, a log-sum-exp softmax, one-hot masks, a cumulative sum."""

import math
import numbers

import numpy as np


def _num(a, name, ndim):
    if not isinstance(a, np.ndarray) or a.ndim != ndim or a.dtype.kind not in "iuf" or 0 in a.shape:
        raise ValueError(f"{name}: expected a {ndim}-D NumPy array of numbers, got {type(a).__name__} "
                         f"{np.shape(a)}")
    return a


def _whole(v, name, low):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral) or v < low:
        raise ValueError(f"{name} must be a whole number >= {low}, got {v!r}")


def _ids(experts, name, n, rows=None):
    if not isinstance(experts, np.ndarray) or experts.ndim != 2 or experts.dtype.kind not in "iu" \
            or experts.shape[1] < 1 or (rows is not None and len(experts) != rows) \
            or (experts.size and (experts.min() < 0 or experts.max() >= n)):
        raise ValueError(f"{name} must be integer ids below {n}, shape (tokens, k), got a "
                         f"{type(experts).__name__} of shape {np.shape(experts)}")
    return experts


def _onehot(experts, n):
    return (experts[..., None] == np.arange(n)).astype(float)  # (tokens, k, N)


def router_probabilities(x, W_router):
    _num(x, "x", 2)
    _num(W_router, "W_router", 2)
    if x.shape[1] != W_router.shape[0]:
        raise ValueError(f"x {x.shape} does not fit W_router {W_router.shape}")
    z = np.einsum("td,dn->tn", x, W_router)
    lse = np.log(np.sum(np.exp(z - z.max(axis=-1, keepdims=True)), axis=-1, keepdims=True)) + z.max(axis=-1,
                                                                                                    keepdims=True)
    return np.exp(z - lse)


def top_k_gates(probs, k):
    _num(probs, "probs", 2)
    if not np.all(np.isfinite(probs)) or np.any(probs < 0) or not np.allclose(probs.sum(-1), 1, rtol=0, atol=1e-6):
        raise ValueError("probs must be rows of probabilities")
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
        raise ValueError(f"k must be a whole number, got {k!r}")
    n = probs.shape[1]
    if not 0 < k <= n:
        raise ValueError(f"k must be in 1 … {n} (the experts), got k = {k}")
    # rank: how many experts beat e (larger, or equal with a lower id)
    beats = (probs[:, None, :] > probs[:, :, None]) | ((probs[:, None, :] == probs[:, :, None])
                                                       & (np.arange(n)[None, :] < np.arange(n)[:, None]))
    rank = beats.sum(axis=-1)  # (tokens, N)
    experts = np.argmax(rank[:, None, :] == np.arange(k)[None, :, None], axis=-1)  # (tokens, k)
    chosen = np.einsum("tkn,tn->tk", _onehot(experts, n), probs)
    return experts, chosen / np.einsum("tk->t", chosen)[:, None]


def expert_capacity(n_tokens, n_experts, k, factor):
    for v, name in ((n_tokens, "n_tokens"), (n_experts, "n_experts"), (k, "k")):
        _whole(v, name, 1)
    if k > n_experts:
        raise ValueError(f"k {k} > n_experts {n_experts}")
    if isinstance(factor, (bool, np.bool_)) or not isinstance(factor, numbers.Real) or not 0 < factor < math.inf:
        raise ValueError(f"factor must be a finite number > 0, got {factor!r}")
    return int(np.ceil(np.float64(factor) * n_tokens * k / n_experts))


def dispatch(experts, n_experts, capacity):
    _whole(n_experts, "n_experts", 1)
    _whole(capacity, "capacity", 0)
    _ids(experts, "experts", n_experts)
    order = np.swapaxes(_onehot(experts, n_experts), 0, 1).reshape(-1, n_experts)  # slot-major: (k·tokens, N)
    before = np.cumsum(order, axis=0) - order  # assignments to the same expert earlier in priority
    place = np.einsum("an,an->a", before, order).reshape(experts.shape[1], -1).T.astype(np.int64)
    return np.where(place < capacity, place, -1)


def moe_forward(x, W_router, W_experts, k, capacity):
    _num(W_experts, "W_experts", 3)
    probs = router_probabilities(x, W_router)
    if W_experts.shape[:2] != (W_router.shape[1], x.shape[1]):
        raise ValueError(f"W_experts {W_experts.shape} must be (n_experts, d, d_out) for W_router {W_router.shape}")
    experts, gates = top_k_gates(probs, k)
    slots = dispatch(experts, W_experts.shape[0], capacity)
    weight = np.einsum("tk,tkn->tn", gates * (slots >= 0), _onehot(experts, W_experts.shape[0]))
    y = np.einsum("tn,td,ndo->to", weight, x, W_experts)
    return y, (x, W_router, W_experts, experts, gates, slots)


def load_balancing_loss(probs, experts):
    _num(probs, "probs", 2)
    if np.any(probs < 0) or not np.allclose(probs.sum(-1), 1, rtol=0, atol=1e-6):
        raise ValueError("probs must be rows of probabilities")
    n = probs.shape[1]
    _ids(experts, "experts", n, rows=len(probs))
    f = np.einsum("tkn->n", _onehot(experts, n)) / experts.size
    return float(n * np.einsum("n,n->", f, np.einsum("tn->n", probs) / len(probs)))


def gates_backward(d_gates, gates, experts, n_experts):
    _whole(n_experts, "n_experts", 1)
    _num(d_gates, "d_gates", 2)
    _num(gates, "gates", 2)
    if d_gates.shape != gates.shape:
        raise ValueError(f"d_gates {d_gates.shape} and gates {gates.shape} differ")
    _ids(experts, "experts", n_experts, rows=len(gates))
    if experts.shape != gates.shape:
        raise ValueError(f"experts {experts.shape} and gates {gates.shape} differ")
    within = gates * (d_gates - np.einsum("tk,tk->t", gates, d_gates)[:, None])
    return np.einsum("tk,tkn->tn", within, _onehot(experts, n_experts))


def moe_backward(d_y, cache):
    if not isinstance(cache, tuple) or len(cache) < 6:
        raise ValueError("cache: the tuple moe_forward returned")
    x, W_router, W_experts, experts, gates, slots = cache
    if np.shape(d_y) != (len(x), W_experts.shape[2]):
        raise ValueError(f"d_y {np.shape(d_y)}: expected the output's shape {(len(x), W_experts.shape[2])}")
    n = W_experts.shape[0]
    hot = _onehot(experts, n) * (slots >= 0)[..., None]  # (tokens, k, N): kept assignments only
    out = np.einsum("td,ndo->tno", x, W_experts)
    d_gates = np.einsum("to,tno,tkn->tk", d_y, out, hot)
    weight = np.einsum("tk,tkn->tn", gates, hot)
    dW_experts = np.einsum("tn,td,to->ndo", weight, x, d_y)
    dz = gates_backward(d_gates, gates, experts, n)
    dx = np.einsum("tn,to,ndo->td", weight, d_y, W_experts) + np.einsum("tn,dn->td", dz, W_router)
    return dx, np.einsum("td,tn->dn", x, dz), dW_experts
