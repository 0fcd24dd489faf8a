"""Chapter 17, written from the docstrings: np.einsum for every product, all queries against one key tile."""

import numpy as np

from .chapter04_attention import scaled_dot_product_attention, softmax  # noqa: F401


def _whole(value, name):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be a whole number, got {value!r}")


def _lengths(n_q, n_k, causal):
    for value, name in ((n_q, "n_q"), (n_k, "n_k")):
        _whole(value, name)
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    if not isinstance(causal, (bool, np.bool_)):
        raise ValueError(f"causal must be a bool, got {causal!r}")
    if causal and n_q != n_k:
        raise ValueError(f"causal attention: n_q = {n_q} but n_k = {n_k}")


def online_softmax_step(m, ell, acc, S, V):
    """The update, rows at once, with einsum."""
    m, ell, acc, S, V = (np.asarray(a, dtype=np.float64) for a in (m, ell, acc, S, V))
    if m.ndim != 1 or ell.shape != m.shape or acc.ndim != 2 or S.ndim != 2 or V.ndim != 2 or len(acc) != len(m) \
            or len(S) != len(m) or S.shape[1] < 1 or V.shape != (S.shape[1], acc.shape[1]):
        raise ValueError(f"m {m.shape}, ell {ell.shape}, acc {acc.shape}, S {S.shape}, V {V.shape} do not fit")
    new = np.fmax(m, S.max(axis=-1))
    safe = np.nan_to_num(new, neginf=0.0)
    alpha = np.exp(m - safe)
    P = np.exp(S - safe[:, None])
    return new, alpha * ell + np.einsum("nt->n", P), np.einsum("n,nd->nd", alpha, acc) + np.einsum("nt,td->nd", P, V)


def tile_pairs(n_q, n_k, tile, causal=False):
    """A lower triangle of the tile grid when causal."""
    _lengths(n_q, n_k, causal)
    _whole(tile, "tile")
    if tile < 1:
        raise ValueError(f"tile = {tile}; it must be at least 1")
    n_i, n_j = (n_q + tile - 1) // tile, (n_k + tile - 1) // tile
    grid = np.tril(np.ones((n_i, n_j), dtype=bool)) if causal else np.ones((n_i, n_j), dtype=bool)
    return np.argwhere(grid)


def tile_scores(Q, K, i, j, tile, causal=False):
    """One block of the scores, by einsum."""
    Q, K = np.asarray(Q, dtype=np.float64), np.asarray(K, dtype=np.float64)
    if Q.ndim != 2 or K.ndim != 2 or Q.shape[1] != K.shape[1] or not Q.size or not K.size:
        raise ValueError(f"Q {Q.shape} and K {K.shape} do not fit")
    _lengths(Q.shape[0], K.shape[0], causal)
    for value, name in ((i, "i"), (j, "j"), (tile, "tile")):
        _whole(value, name)
    if tile < 1 or i < 0 or j < 0 or i * tile >= Q.shape[0] or j * tile >= K.shape[0]:
        raise ValueError(f"tile i = {i}, j = {j} of size {tile} is out of range")
    q, k = Q[i * tile:(i + 1) * tile], K[j * tile:(j + 1) * tile]
    S = np.einsum("ad,bd->ab", q, k) / np.sqrt(Q.shape[1])
    if causal:
        rows = np.arange(i * tile, i * tile + len(q))
        cols = np.arange(j * tile, j * tile + len(k))
        S[cols[None, :] > rows[:, None]] = -np.inf
    return S


def _inputs(Q, K, V, causal):
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    if Q.ndim != 2 or K.ndim != 2 or V.ndim != 2 or Q.shape[1] != K.shape[1] or V.shape[0] != K.shape[0] \
            or min(Q.shape + K.shape + V.shape) == 0:
        raise ValueError(f"Q {Q.shape}, K {K.shape} and V {V.shape} do not fit")
    _lengths(Q.shape[0], K.shape[0], causal)
    return Q, K, V


def flash_attention_forward(Q, K, V, tile, causal=False):
    """Key tile by key tile, all queries of each query tile; the log-sum-exp at the end."""
    Q, K, V = _inputs(Q, K, V, causal)
    n = Q.shape[0]
    m, ell, acc = np.full(n, -np.inf), np.zeros(n), np.zeros((n, V.shape[1]))
    for i, j in tile_pairs(n, K.shape[0], tile, causal):
        r, c = slice(i * tile, (i + 1) * tile), slice(j * tile, (j + 1) * tile)
        m[r], ell[r], acc[r] = online_softmax_step(m[r], ell[r], acc[r], tile_scores(Q, K, i, j, tile, causal), V[c])
    return np.einsum("nd,n->nd", acc, 1.0 / ell), m + np.log(ell)


def softmax_delta(dO, out):
    """Row sums of the product, by einsum."""
    dO, out = np.asarray(dO, dtype=np.float64), np.asarray(out, dtype=np.float64)
    if dO.ndim != 2 or dO.shape != out.shape:
        raise ValueError(f"dO {dO.shape} and out {out.shape} differ")
    return np.einsum("nd,nd->n", dO, out)


def flash_attention_backward(dO, Q, K, V, out, lse, tile, causal=False):
    """FlashAttention-2's backward, every product by einsum."""
    Q, K, V = _inputs(Q, K, V, causal)
    dO, out, lse = (np.asarray(a, dtype=np.float64) for a in (dO, out, lse))
    if dO.shape != out.shape or out.shape != (Q.shape[0], V.shape[1]) or lse.shape != (Q.shape[0],):
        raise ValueError(f"dO {dO.shape}, out {out.shape} and lse {lse.shape} do not fit")
    D, scale = softmax_delta(dO, out), Q.shape[1] ** -0.5
    dQ, dK, dV = np.zeros(Q.shape), np.zeros(K.shape), np.zeros(V.shape)
    for i, j in tile_pairs(Q.shape[0], K.shape[0], tile, causal):
        r, c = slice(i * tile, (i + 1) * tile), slice(j * tile, (j + 1) * tile)
        P = np.exp(tile_scores(Q, K, i, j, tile, causal) - lse[r, None])
        dV[c] += np.einsum("ab,ad->bd", P, dO[r])
        dS = P * (np.einsum("ad,bd->ab", dO[r], V[c]) - D[r, None])
        dQ[r] += scale * np.einsum("ab,bd->ad", dS, K[c])
        dK[c] += scale * np.einsum("ab,ad->bd", dS, Q[r])
    return dQ, dK, dV
