"""Chapter 17, written from the docstrings: one query row at a time, plain math, the pairs as a list."""

import math
import numbers

import numpy as np

from .chapter04_attention import scaled_dot_product_attention, softmax  # noqa: F401


def _whole(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a whole number, got {value!r}")


def _lengths(n_q, n_k, causal):
    for value, name in ((n_q, "n_q"), (n_k, "n_k")):
        _whole(value, name)
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    if not isinstance(causal, (bool, np.bool_)):
        raise ValueError(f"causal must be True or False, got {causal!r}")
    if causal and n_q != n_k:
        raise ValueError(f"causal needs n_q = {n_q} equal to n_k = {n_k}")


def online_softmax_step(m, ell, acc, S, V):
    """Row by row: the new maximum, the rescale factor, the tile's terms."""
    m, ell, acc, S, V = (np.array(a, dtype=np.float64) for a in (m, ell, acc, S, V))
    if m.ndim != 1 or ell.shape != m.shape or acc.ndim != 2 or S.ndim != 2 or V.ndim != 2 or len(acc) != len(m) \
            or len(S) != len(m) or S.shape[1] < 1 or V.shape != (S.shape[1], acc.shape[1]):
        raise ValueError(f"shapes m {m.shape}, ell {ell.shape}, acc {acc.shape}, S {S.shape}, V {V.shape} do not fit")
    m2, ell2, acc2 = np.empty_like(m), np.empty_like(ell), np.empty_like(acc)
    for a in range(len(m)):
        top = max(m[a], max(S[a]))
        shift = 0.0 if top == -math.inf else top
        alpha = math.exp(m[a] - shift)
        p = [math.exp(s - shift) for s in S[a]]
        m2[a], ell2[a] = top, alpha * ell[a] + math.fsum(p)
        for c in range(acc.shape[1]):
            acc2[a, c] = alpha * acc[a, c] + math.fsum(p[b] * V[b, c] for b in range(len(p)))
    return m2, ell2, acc2


def tile_pairs(n_q, n_k, tile, causal=False):
    """Every (i, j), j ≤ i when causal."""
    _lengths(n_q, n_k, causal)
    _whole(tile, "tile")
    if tile < 1:
        raise ValueError(f"tile must be at least 1, got tile = {tile}")
    n_i, n_j = math.ceil(n_q / tile), math.ceil(n_k / tile)
    pairs = [[i, j] for i in range(n_i) for j in range(n_j) if not causal or j <= i]
    return np.array(pairs, dtype=int).reshape(len(pairs), 2)


def tile_scores(Q, K, i, j, tile, causal=False):
    """Entry by entry: query i·tile + a against key j·tile + b."""
    Q, K = np.array(Q, dtype=np.float64), np.array(K, dtype=np.float64)
    if Q.ndim != 2 or K.ndim != 2 or Q.shape[1] != K.shape[1] or Q.size == 0 or K.size == 0:
        raise ValueError(f"Q {Q.shape} and K {K.shape} must be 2-D with the same width")
    _lengths(len(Q), len(K), causal)
    for value, name in ((i, "i"), (j, "j"), (tile, "tile")):
        _whole(value, name)
    if tile < 1 or not 0 <= i * tile < len(Q) or not 0 <= j * tile < len(K):
        raise ValueError(f"no tile i = {i}, j = {j} of size tile = {tile}")
    rows = range(i * tile, min(len(Q), (i + 1) * tile))
    cols = range(j * tile, min(len(K), (j + 1) * tile))
    S = np.empty((len(rows), len(cols)))
    for a, r in enumerate(rows):  # one query row at a time against the tile's keys
        S[a] = K[cols.start:cols.stop] @ Q[r] / math.sqrt(Q.shape[1])
        if causal:
            for b, c in enumerate(cols):
                if c > r:
                    S[a, b] = -math.inf
    return S


def _attention_inputs(Q, K, V, causal):
    Q, K, V = (np.array(a, dtype=np.float64) for a in (Q, K, V))
    if Q.ndim != 2 or K.ndim != 2 or V.ndim != 2 or Q.shape[1] != K.shape[1] or len(V) != len(K) \
            or 0 in Q.shape + K.shape + V.shape:
        raise ValueError(f"Q {Q.shape}, K {K.shape}, V {V.shape} do not fit")
    _lengths(len(Q), len(K), causal)
    return Q, K, V


def flash_attention_forward(Q, K, V, tile, causal=False):
    """The running state of every row, tile pair by tile pair."""
    Q, K, V = _attention_inputs(Q, K, V, causal)
    m, ell, acc = np.full(len(Q), -math.inf), np.zeros(len(Q)), np.zeros((len(Q), V.shape[1]))
    for i, j in tile_pairs(len(Q), len(K), tile, causal):
        r0, r1 = i * tile, min(len(Q), (i + 1) * tile)
        c0, c1 = j * tile, min(len(K), (j + 1) * tile)
        S = tile_scores(Q, K, int(i), int(j), tile, causal)
        m[r0:r1], ell[r0:r1], acc[r0:r1] = online_softmax_step(m[r0:r1], ell[r0:r1], acc[r0:r1], S, V[c0:c1])
    out = np.empty_like(acc)
    for a in range(len(Q)):
        out[a] = acc[a] / ell[a]
    return out, np.array([m[a] + math.log(ell[a]) for a in range(len(Q))])


def softmax_delta(dO, out):
    """Σ_c dO[a, c] O[a, c], row by row."""
    dO, out = np.array(dO, dtype=np.float64), np.array(out, dtype=np.float64)
    if dO.ndim != 2 or dO.shape != out.shape:
        raise ValueError(f"dO {dO.shape} and out {out.shape} must be the same 2-D shape")
    return np.array([math.fsum(dO[a] * out[a]) for a in range(len(dO))])


def flash_attention_backward(dO, Q, K, V, out, lse, tile, causal=False):
    """Tile pair by tile pair, the weights recomputed from lse."""
    Q, K, V = _attention_inputs(Q, K, V, causal)
    dO, out = np.array(dO, dtype=np.float64), np.array(out, dtype=np.float64)
    lse = np.array(lse, dtype=np.float64)
    if dO.shape != out.shape or out.shape != (len(Q), V.shape[1]) or lse.shape != (len(Q),):
        raise ValueError(f"dO {dO.shape}, out {out.shape}, lse {lse.shape} do not fit Q {Q.shape}, V {V.shape}")
    D = softmax_delta(dO, out)
    dQ, dK, dV = np.zeros(Q.shape), np.zeros(K.shape), np.zeros(V.shape)
    scale = 1 / math.sqrt(Q.shape[1])
    for i, j in tile_pairs(len(Q), len(K), tile, causal):
        S = tile_scores(Q, K, int(i), int(j), tile, causal)
        c0, c1 = j * tile, j * tile + S.shape[1]
        for a in range(S.shape[0]):  # one query row at a time against the tile's keys
            r = i * tile + a
            p = np.exp(S[a] - lse[r])  # (keys of the tile,)
            dV[c0:c1] += np.outer(p, dO[r])
            ds = p * (V[c0:c1] @ dO[r] - D[r])
            dQ[r] += ds @ K[c0:c1] * scale
            dK[c0:c1] += np.outer(ds, Q[r]) * scale
    return dQ, dK, dV
