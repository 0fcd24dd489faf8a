"""Audit of chapter 18's worksheet (grouped-query attention, sliding windows, the KV cache's memory).

Written from the formulas on the page with Python's ``math`` and plain loops over heads, positions and keys,
independent of ``solutions/`` and of NumPy, so the answer key cannot inherit a bug of the reference. Heads have
width 1 here, so every head's query, key and value is one number per position and a score is a product.

Run by ``python -m kata.authoring.audit 18``, which prints every step; its ``--check`` compares with the key.
"""

from __future__ import annotations

import math

N_HEADS, N_KV, SEQ = 4, 2, 3
GROUP = N_HEADS // N_KV

# the worksheet's inputs (the page's tables): one number per position and head (d_head = 1)
Q = [[1.0, 0.0, 0.0, 1.0]] * SEQ  # query heads 0 and 3 ask with 1, heads 1 and 2 with 0, at every position
K = [[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]  # key/value head 0: keys 0, 1, 1; head 1: keys 1, 0, 1
V = [[1.0, 2.0], [0.0, 4.0], [3.0, 0.0]]  # head 0: values 1, 0, 3; head 1: values 2, 4, 0
D_H = [[[1.0], [2.0]], [[3.0], [4.0]], [[5.0], [6.0]], [[7.0], [8.0]]]  # 18.5: (4 heads, 2 positions, 1)
CACHE = {"n_layers": 2, "n_kv_heads": 2, "d_head": 4, "seq": 8, "bytes_per_number": 2}  # 18.8


def contiguous(h):
    """The key/value head query head h reads: ⌊h / g⌋."""
    return h // GROUP


def interleaved(h):
    """The classic mistake: h mod n_kv_heads, heads dealt out like cards."""
    return h % N_KV


def sees(i, j, window=None):
    """Whether query i sees key j: causal, and within the last `window` positions when a window is given."""
    return j <= i and (window is None or j > i - window)


def weights(h, i, kv=contiguous, window=None):
    """Head h's softmax weights of query i over keys 0 … SEQ − 1 (0 where masked); scale 1/√1."""
    g = kv(h)
    e = [math.exp(Q[i][h] * K[j][g]) if sees(i, j, window) else 0.0 for j in range(SEQ)]
    return [x / math.fsum(e) for x in e]


def output(kv=contiguous, window=None):
    """Every head's output at every position: Σ_j weight · value of the head it reads, heads side by side."""
    return [[math.fsum(w * V[j][kv(h)] for j, w in enumerate(weights(h, i, kv, window))) for h in range(N_HEADS)]
            for i in range(SEQ)]


def mask(n, window):
    """The sliding-window mask as lists of booleans."""
    return [[sees(i, j, window) for j in range(n)] for i in range(n)]


def d_values(heads_of_group):
    """The gradient dV of every key/value head, dO all ones: Σ over the chosen query heads of their column sums."""
    return [[math.fsum(weights(h, i)[j] for h in heads_of_group(g) for i in range(SEQ)) for g in range(N_KV)]
            for j in range(SEQ)]


def audit() -> dict[str, dict]:
    """{step id: {"exact": value, "mistakes": {name: value}}}, the names as in the key."""
    steps: dict[str, dict] = {}
    qkv = {"Q": Q, "K": K, "V": V, "n_heads": N_HEADS, "n_kv_heads": N_KV}
    steps["18.1"] = {"inputs": {"n_heads": N_HEADS, "n_kv_heads": N_KV},
                     "exact": [float(contiguous(h)) for h in range(N_HEADS)], "mistakes": {
        "groups interleaved instead of contiguous: h mod n_kv_heads": [float(interleaved(h)) for h in range(N_HEADS)]}}

    steps["18.2"] = {"inputs": {"n": 4, "window": 2}, "printed": None, "exact": mask(4, 2), "mistakes": {
        "the window off by one: window + 1 positions seen": mask(4, 3),
        "the window off by one: window − 1 positions seen": mask(4, 1),
        "a band on both sides: the window without the causal part": [[abs(i - j) < 2 for j in range(4)]
                                                                     for i in range(4)]}}

    steps["18.3"] = {"inputs": qkv, "exact": output(), "mistakes": {
        "groups interleaved instead of contiguous: h mod n_kv_heads": output(interleaved)}}

    steps["18.4"] = {"inputs": {**qkv, "window": 2}, "exact": output(window=2), "mistakes": {
        "the window off by one: window + 1 positions seen": output(window=3),
        "the window off by one: window − 1 positions seen": output(window=1),
        "groups interleaved instead of contiguous: h mod n_kv_heads": output(interleaved, window=2)}}

    def own(g):
        return [h for h in range(N_HEADS) if contiguous(h) == g]

    def group_sum(heads):
        return [[[math.fsum(D_H[h][t][0] for h in heads(g))] for t in range(2)] for g in range(N_KV)]

    steps["18.5"] = {"inputs": {"dH": D_H, "n_kv_heads": N_KV}, "exact": group_sum(own), "mistakes": {
        "the gradient of a shared head taken from one query head only (the first of its group)":
            group_sum(lambda g: [g * GROUP]),
        "the gradient of a shared head taken from one query head only (the last of its group)":
            group_sum(lambda g: [g * GROUP + GROUP - 1]),
        "groups interleaved instead of contiguous: h mod n_kv_heads":
            group_sum(lambda g: [h for h in range(N_HEADS) if interleaved(h) == g]),
        "the group averaged instead of summed": [[[x[0] / GROUP] for x in pos] for pos in group_sum(own)]}}

    steps["18.6"] = {"inputs": {**qkv, "dO": [[1.0] * N_HEADS] * SEQ}, "exact": d_values(own),
                     "mistakes": {
        "the gradient of a shared head taken from one query head only (the first of its group)":
            d_values(lambda g: [g * GROUP]),
        "the gradient of a shared head taken from one query head only (the last of its group)":
            d_values(lambda g: [g * GROUP + GROUP - 1])}}

    steps["18.7"] = {"inputs": {**qkv, "window": 2}, "exact": [output(window=2)[2]], "mistakes": {
        "the window off by one: the cache keeps window + 1 positions": [output(window=3)[2]],
        "the window off by one: the cache keeps window − 1 positions": [output(window=1)[2]]}}

    c = CACHE
    per_position = c["n_layers"] * c["n_kv_heads"] * c["d_head"] * c["bytes_per_number"]
    steps["18.8"] = {"inputs": dict(c), "exact": float(2 * per_position * c["seq"]), "mistakes": {
        "the factor 2 for keys and values forgotten": float(per_position * c["seq"])}}
    return steps


def printed(value):
    """How the worksheet prints a value: booleans and whole numbers as they are, else 4 decimals."""
    if isinstance(value, list):
        return [printed(v) for v in value]
    if isinstance(value, bool):
        return str(value)
    if value == int(value):
        return str(int(value))
    return f"{value:.4f}"
