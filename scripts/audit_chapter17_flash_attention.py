"""Audit of chapter 17's worksheet (online softmax and tiled attention): every `exact` and mistake value of the key.

Written from the formulas on the page with Python's ``math`` and plain loops over rows, keys and tiles,
independent of ``solutions/`` and of NumPy, so the answer key cannot inherit a bug of the reference. The
reference point for every tiled value is the plain softmax of a whole row (chapter 4), computed here too.

Run by ``python -m kata.authoring.audit 17``, which prints every step; its ``--check`` compares with the key.
"""

from __future__ import annotations

import math

from kata.authoring.audit import four_decimals

INF = math.inf
D = 4  # the width of a query: scores are divided by √4 = 2
TILE = 2
N_PAIRS = 3  # 17.4: three causal positions in tiles of two, the last tile shorter

# the worksheet's inputs (the page's tables)
ROW = [0.0, 1.0, 2.0, 1.0]  # 17.1-17.3: one row of four scores, tiles [0, 1] and [2, 1]
V = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0]]  # the four value rows (d_v = 2)
Q2 = [[2.0, 0.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0]]  # 17.5-17.7, 17.9-17.10: two queries
K = [[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [2.0, 0.0, 0.0, 0.0], [1.0, 2.0, 0.0, 0.0]]  # four keys
Q4 = [[2.0, 0.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0], [2.0, 0.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0]]  # 17.8, causal
DO = [[1.0, 0.0], [1.0, 1.0]]  # 17.9-17.10: the gradient of the loss with respect to the output


# -- the formulas, one row at a time --------------------------------------------------------------------------
def dot(a, b):
    """The dot product of two rows, summed exactly."""
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def scores(Q, Kt, causal=False, scale=True):
    """The (masked) scores of every query against every key, divided by √d unless told not to."""
    s = 1 / math.sqrt(D) if scale else 1.0
    return [[dot(q, k) * s if not causal or b <= a else -INF for b, k in enumerate(Kt)] for a, q in enumerate(Q)]


def step(state, tile_scores, tile_values, rescale_sum=True, rescale_acc=True, per_tile=False, guard=True):
    """One row's (m, ℓ, acc) after one tile: the page's update, with the classic mistakes as switches."""
    m, ell, acc = state
    new = max([m, *tile_scores])
    shift = 0.0 if (guard and new == -INF) else new
    alpha = math.exp(m - shift) if not (m == -INF and shift == -INF) else math.nan
    p = [math.exp(s - shift) if not (s == -INF and shift == -INF) else math.nan for s in tile_scores]
    total = math.fsum(p)
    w = [x / total for x in p] if per_tile else p
    ell = (alpha if rescale_sum else 1.0) * ell + total
    a = alpha if rescale_acc else 1.0
    acc = [a * acc[c] + math.fsum(w[b] * tile_values[b][c] for b in range(len(p))) for c in range(len(acc))]
    return new, ell, acc


def start(width):
    """The state of a row before any tile: m = −∞, ℓ = 0, acc = 0."""
    return -INF, 0.0, [0.0] * width


def flat(state):
    """(m, ℓ, acc) of one row as the test compares it: [m, ℓ, acc_0, acc_1]."""
    return [state[0], state[1], *state[2]]


def tiled_row(row, values, pairs=None, **mistake):
    """One row through its tiles (all of them, or the key tiles listed): the final (m, ℓ, acc)."""
    state = start(len(values[0]))
    for j in range(0, len(row), TILE) if pairs is None else [TILE * j for j in pairs]:
        state = step(state, row[j:j + TILE], values[j:j + TILE], **mistake)
    return state


def forward(S, values, **mistake):
    """(O, lse) of every row, tile by tile; the log-sum-exp m + log ℓ."""
    states = [tiled_row(row, values, **mistake) for row in S]
    return [[x / ell for x in acc] for _, ell, acc in states], [m + math.log(ell) for m, ell, _ in states]


def softmax(row):
    """Chapter 4's softmax of a whole row, the reference point: the largest subtracted first."""
    top = max(row)
    e = [math.exp(x - top) if x != -INF else 0.0 for x in row]
    return [v / math.fsum(e) for v in e]


def attention(S, values):
    """Chapter 4's attention of already scaled (and masked) scores: softmax(S) V."""
    return [[math.fsum(w * values[b][c] for b, w in enumerate(softmax(row))) for c in range(len(values[0]))]
            for row in S]


def backward_dq(S, values, out, lse, dout, tile_delta=False):
    """The gradient dQ, tile pair by tile pair; D from O, or from the tile's P (a mistake)."""
    delta = [dot(dout[a], out[a]) for a in range(len(S))]
    dq = [[0.0] * D for _ in S]
    for a, row in enumerate(S):
        for j in range(0, len(row), TILE):
            p = [math.exp(s - lse[a]) for s in row[j:j + TILE]]
            dp = [dot(dout[a], values[j + b]) for b in range(len(p))]
            d = math.fsum(x * y for x, y in zip(p, dp, strict=True)) if tile_delta else delta[a]
            ds = [p[b] * (dp[b] - d) for b in range(len(p))]
            for c in range(D):
                dq[a][c] += math.fsum(ds[b] * K[j + b][c] for b in range(len(p))) / math.sqrt(D)
    return dq


# -- the worksheet ---------------------------------------------------------------------------------------------
def audit() -> dict[str, dict]:
    """{step id: {"exact": value, "mistakes": {name: value}}}, the names as in the key."""
    steps: dict[str, dict] = {}
    first = step(start(2), ROW[:2], V[:2])
    steps["17.1"] = {"exact": flat(first), "mistakes": {
        "the tile normalised by its own sum (normalising per tile): divide once, at the very end":
            flat(step(start(2), ROW[:2], V[:2], per_tile=True))}}

    steps["17.2"] = {"exact": flat(step(first, ROW[2:], V[2:])), "mistakes": {
        "the accumulator not rescaled by exp(m_old − m_new) when the maximum grew":
            flat(step(first, ROW[2:], V[2:], rescale_acc=False)),
        "the sum ℓ not rescaled by exp(m_old − m_new) when the maximum grew":
            flat(step(first, ROW[2:], V[2:], rescale_sum=False))}}

    masked = step(start(2), [-INF, -INF], V[:2])
    steps["17.3"] = {"exact": flat(step(masked, ROW[2:], V[2:])), "mistakes": {}}

    # three causal positions: ⌈3 / 2⌉ = 2 tiles, the last one shorter. Its mistakes have other shapes (4 pairs,
    # 1 pair, the 1 pair of one tile when the count is rounded down): the test names them
    tiles = -(-N_PAIRS // TILE)
    steps["17.4"] = {"inputs": {"n_q": N_PAIRS, "n_k": N_PAIRS, "tile": TILE, "causal": True},
                     "exact": [[i, j] for i in range(tiles) for j in range(tiles) if j <= i], "mistakes": {}}

    S2 = scores(Q2, K)
    steps["17.5"] = {"exact": [row[2:4] for row in S2], "mistakes": {
        "not divided by √d": [row[2:4] for row in scores(Q2, K, scale=False)],
        "the first key tile instead of tile j = 1 (the columns start at j·tile)": [row[0:2] for row in S2]}}

    out, lse = forward(S2, V)
    assert all(abs(x - y) < 1e-15 for r, s in zip(out, attention(S2, V), strict=True) for x, y in zip(r, s,
                                                                                                      strict=True))
    steps["17.6"] = {"exact": out, "mistakes": {
        "the tile normalised by its own sum (normalising per tile)": forward(S2, V, per_tile=True)[0],
        "the accumulator not rescaled by exp(m_old − m_new)": forward(S2, V, rescale_acc=False)[0],
        "not divided by √d": forward(scores(Q2, K, scale=False), V)[0]}}

    steps["17.7"] = {"exact": lse, "mistakes": {
        "the log-sum-exp as log ℓ without m (it is m + log ℓ)":
            [math.log(ell) for _, ell, _ in (tiled_row(row, V) for row in S2)],
        "the running maximum m alone (log ℓ forgotten)": [m for m, _, _ in (tiled_row(row, V) for row in S2)]}}

    S4 = scores(Q4, K, causal=True)
    unmasked = scores(Q4, K)
    steps["17.8"] = {"exact": forward(S4, V)[0], "mistakes": {
        "the diagonal tile not masked (only the tiles above it skipped)":
            [attention([unmasked[a]], V)[0] if a >= 2 else attention([unmasked[a][:2]], V[:2])[0] for a in range(4)],
        "no causal mask at all": attention(unmasked, V)}}
    assert all(abs(x - y) < 1e-15 for r, s in zip(steps["17.8"]["exact"], attention(S4, V), strict=True)
               for x, y in zip(r, s, strict=True))

    steps["17.9"] = {"exact": [dot(DO[a], out[a]) for a in range(2)], "mistakes": {
        "summed down the columns instead of along each row": [math.fsum(DO[a][c] * out[a][c] for a in range(2))
                                                              for c in range(2)]}}

    steps["17.10"] = {"exact": backward_dq(S2, V, out, lse, DO), "mistakes": {
        "D computed from the tile's P (Σ over one tile of P ∘ dP) instead of from O: D = rowsum(dO ∘ O)":
            backward_dq(S2, V, out, lse, DO, tile_delta=True),
        "dQ without its 1/√d": [[x * math.sqrt(D) for x in r] for r in backward_dq(S2, V, out, lse, DO)]}}
    return steps


def printed(value):
    """How the worksheet prints a value: a whole number as it is, else 4 decimals."""
    return four_decimals(value)
