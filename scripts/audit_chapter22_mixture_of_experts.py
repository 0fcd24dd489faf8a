"""Audit of chapter 22's worksheet (mixture of experts): every `exact` and mistake value of the key.

Written from the formulas on the page in exact fractions (``fractions.Fraction``) with plain loops, independent
of ``solutions/`` and of NumPy, so the answer key cannot inherit a bug of the reference. The router's logits are
logarithms of whole numbers, so e^logit is that whole number and every probability, gate, output and gradient is
a fraction; only dx, which multiplies the router's gradient by W_r's logarithms, is a float (``math.log``). Each
classic mistake is a switch of the one computation written here, and the audit asserts that each one changes its
own step and no earlier one.

Run by ``python -m kata.authoring.audit 22``, which prints every step; its ``--check`` compares with the key.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

from kata.authoring.audit import four_decimals

# the worksheet's inputs (the page's tables): four tokens of width 2, three experts, k = 2
X = [[1, 0], [0, 1], [1, 1], [2, 0]]
EXP_ROUTER = [[1, 2, 1], [1, 1, 3]]  # e^(W_r): W_r = [[0, ln 2, 0], [0, 0, ln 3]]
W_ROUTER = [[math.log(v) for v in row] for row in EXP_ROUTER]
W_EXPERTS = [[[1, 2], [0, 1]], [[2, 0], [1, 1]], [[0, 1], [2, 0]]]  # expert e computes x W_e
N, K, CAPACITY = 3, 2, 2
D_Y = [[1, 2], [1, 0], [0, 1], [1, 1]]  # 22.9-22.11: the gradient of the loss with respect to y

AXIS0 = "softmax over the tokens (down each column) instead of over the experts (along each row)"
NO_SOFTMAX = "the logits x W_r themselves, not their softmax"
HIGH_TIE = "a tie broken toward the higher expert id (an ascending sort, reversed)"
LEAST = "the k least probable experts (an ascending sort, not reversed)"
NO_RENORM = "no renormalisation: the chosen probabilities as they are, not divided by their sum"
SOFTMAX_AFTER = ("softmax after the top-k: the chosen probabilities put through a softmax again instead of "
                 "divided by their sum")
FLOOR = "capacity off by one: rounded down (floor) instead of up"
NO_K = "k forgotten: tokens · k assignments share the experts, not tokens"
PLUS_ONE = "capacity off by one: an expert takes capacity + 1 assignments (≤ instead of <)"
MINUS_ONE = "capacity off by one: an expert takes capacity − 1 assignments"
TOKEN_ORDER = "token by token: a token's second choice taken before a later token's first choice"
FROM_ONE = "places numbered from 1: the first place of an expert's buffer is 0"
DROPPED_KEPT = "the dropped assignments still combined: past its capacity an expert does not run"
RENORM_KEPT = "the gates renormalised over the kept experts only: a dropped expert's share is lost, not moved"
TRANSPOSED = "each expert's matrix transposed: x W_eᵀ instead of x W_e"
F_GATES = "f_i taken from the gates instead of the assignments: f counts where tokens are sent"
F_PROBS = "f_i taken from the probabilities instead of the assignments: f counts where tokens are sent"
P_GATES = ("P_i from the gates (a softmax after the top-k) instead of the router's probabilities over all N "
           "experts")
NO_N = "the factor N forgotten: N · Σ f_i P_i is 1 when the load is even"
PER_TOKEN = "f divided by the tokens, not by tokens · k: the f_i must sum to 1"
SLOT_COLUMN = "each gradient written at its slot's column s instead of its expert's column e"
NO_JACOBIAN = "dg passed on as it is: the softmax's backward within the k left out"
NO_SUM = "the softmax's shared sum left out: g ∘ dg is only the diagonal of its Jacobian"
NO_ROUTER = "the router given no gradient: the gates depend on the logits"
NO_GATE = "the gate left out of the expert's gradient: the expert's output was multiplied by g"
DROPPED_GRAD = "the dropped assignments given a gradient: an expert that did not run learns nothing from them"
DW_TRANSPOSED = "dW_e transposed: its factors the wrong way round (rule 1 on x W_e)"
FULL_SOFTMAX = ("the gradient taken through the softmax over all N (the gates as if not renormalised) instead "
                "of through the k renormalised gates")
DROPPED_DG = "a gate gradient for a dropped assignment: its expert never ran, so y does not depend on its gate"
EXPERTS_ONLY = "dx through the experts only: the router's path left out (x also makes the router's logits)"


# -- the forward, in fractions ----------------------------------------------------------------------------------
def matmul(a, b):
    """A plain matrix product of nested lists."""
    return [[sum(a[i][m] * b[m][j] for m in range(len(b))) for j in range(len(b[0]))] for i in range(len(a))]


def transpose(a):
    """Rows become columns."""
    return [list(col) for col in zip(*a, strict=True)]


def exp_logits():
    """e^(x W_r), token by token: the product of EXP_ROUTER's rows raised to x's entries (whole numbers)."""
    return [[F(EXP_ROUTER[0][e]) ** x[0] * F(EXP_ROUTER[1][e]) ** x[1] for e in range(N)] for x in X]


def probabilities(axis0=False, raw=False):
    """The router's softmax, one row per token; the mistakes as switches."""
    if raw:
        return [[float(v) for v in row] for row in matmul(X, W_ROUTER)]
    e = exp_logits()
    if axis0:
        cols = [sum(e[t][c] for t in range(len(e))) for c in range(N)]
        return [[e[t][c] / cols[c] for c in range(N)] for t in range(len(e))]
    return [[v / sum(row) for v in row] for row in e]


def top_k(probs, k=K, rule="right"):
    """Each token's k experts, largest first, a tie to the lower id (``rule`` switches to the mistakes)."""
    out = []
    for row in probs:
        if rule == "right":
            order = sorted(range(N), key=lambda e: (-row[e], e))
        elif rule == "high_tie":
            order = sorted(range(N), key=lambda e: (row[e], e))[::-1]
        else:  # the least probable
            order = sorted(range(N), key=lambda e: (row[e], e))
        out.append(order[:k])
    return out


def gates(probs, experts, how="renormalise"):
    """The chosen probabilities divided by their sum (``how`` switches to the mistakes)."""
    out = []
    for row, chosen in zip(probs, experts, strict=True):
        p = [row[e] for e in chosen]
        if how == "raw":
            out.append(p)
        elif how == "softmax":
            w = [math.exp(float(v)) for v in p]
            out.append([v / math.fsum(w) for v in w])
        else:
            out.append([v / sum(p) for v in p])
    return out


def capacity(tokens, n, k, factor, floor=False, no_k=False):
    """⌈factor · tokens · k / n⌉, in fractions."""
    share = F(factor) * tokens * (1 if no_k else k) / n
    return math.floor(share) if floor else math.ceil(share)


def dispatch(experts, cap, token_order=False, plus=0, first=0):
    """Each assignment's place in its expert's buffer, or −1; first choices first unless ``token_order``."""
    k = len(experts[0])
    order = [(t, s) for t in range(len(experts)) for s in range(k)] if token_order else \
        [(t, s) for s in range(k) for t in range(len(experts))]
    taken, slots = [0] * N, [[-1] * k for _ in experts]
    for t, s in order:
        e = experts[t][s]
        if taken[e] < cap + plus:
            slots[t][s] = taken[e] + first
            taken[e] += 1
    return slots


def expert_out(x, e, transposed=False):
    """The expert's output for one token: x W_e (or x W_eᵀ)."""
    w = transpose(W_EXPERTS[e]) if transposed else W_EXPERTS[e]
    return [sum(x[i] * w[i][j] for i in range(len(x))) for j in range(len(w[0]))]


def forward(mistake=None):
    """y, from the page's rule; ``mistake`` switches one thing."""
    probs = probabilities()
    experts = top_k(probs)
    g = gates(probs, experts)
    slots = dispatch(experts, CAPACITY)
    y = []
    for t, x in enumerate(X):
        kept = [s for s in range(K) if slots[t][s] >= 0 or mistake == DROPPED_KEPT]
        total = sum(g[t][s] for s in kept) if mistake == RENORM_KEPT else 1
        row = [F(0), F(0)]
        for s in kept:
            o = expert_out(x, experts[t][s], transposed=mistake == TRANSPOSED)
            row = [row[j] + g[t][s] / total * o[j] for j in range(2)]
        y.append(row)
    return y


def balance(f_from="assignments", p_from="probs", n_factor=True, per_token=False):
    """N · Σ f_i P_i, with the mistakes as switches."""
    probs = probabilities()
    experts = top_k(probs)
    g = gates(probs, experts)
    tokens = len(X)
    scatter = [[F(0)] * N for _ in range(tokens)]
    for t in range(tokens):
        for s in range(K):
            scatter[t][experts[t][s]] = g[t][s]
    counts = [sum(row.count(i) for row in experts) for i in range(N)]
    if f_from == "probs":
        f = [sum(probs[t][i] for t in range(tokens)) / tokens for i in range(N)]
    elif f_from == "gates":
        f = [sum(scatter[t][i] for t in range(tokens)) / tokens for i in range(N)]
    else:
        f = [F(c, tokens if per_token else tokens * K) for c in counts]
    source = scatter if p_from == "gates" else probs
    P = [sum(source[t][i] for t in range(tokens)) / tokens for i in range(N)]
    return (N if n_factor else 1) * sum(a * b for a, b in zip(f, P, strict=True))


# -- the backward, in fractions ---------------------------------------------------------------------------------
def d_gates_of(dropped=False):
    """dg_ts = dy_t · (x_t W_e) for a kept assignment, 0 for a dropped one (unless ``dropped``: the mistake)."""
    probs = probabilities()
    experts = top_k(probs)
    slots = dispatch(experts, CAPACITY)
    dg = []
    for t, x in enumerate(X):
        dg.append([sum(F(a) * b for a, b in zip(D_Y[t], expert_out(x, experts[t][s]), strict=True))
                   if slots[t][s] >= 0 or dropped else F(0) for s in range(K)])
    return dg


def logits_grad(dg, g, experts, mistake=None):
    """dz: within each token's k, g_s (dg_s − Σ_r g_r dg_r), at the expert's column; the mistakes as switches."""
    dz = []
    for t in range(len(dg)):
        row = [F(0)] * N
        mean = sum(a * b for a, b in zip(g[t], dg[t], strict=True))
        for s in range(len(dg[t])):
            value = {NO_JACOBIAN: dg[t][s], NO_SUM: g[t][s] * dg[t][s], NO_ROUTER: F(0)}.get(
                mistake, g[t][s] * (dg[t][s] - mean))
            row[s if mistake == SLOT_COLUMN else experts[t][s]] = value
        dz.append(row)
    return dz


def full_softmax_grad(dg):
    """The wrong backward: dg scattered over all N, through the softmax of all N probabilities."""
    probs = probabilities()
    experts = top_k(probs)
    dz = []
    for t in range(len(dg)):
        u = [F(0)] * N
        for s in range(K):
            u[experts[t][s]] = dg[t][s]
        mean = sum(a * b for a, b in zip(probs[t], u, strict=True))
        dz.append([probs[t][e] * (u[e] - mean) for e in range(N)])
    return dz


def backward(mistake=None):
    """(dx, dW_r, dW_experts), from the page's rule; ``mistake`` switches one thing."""
    probs = probabilities()
    experts = top_k(probs)
    g = gates(probs, experts)
    slots = dispatch(experts, CAPACITY)
    dg = d_gates_of(dropped=mistake in (DROPPED_GRAD, DROPPED_DG))
    dW = [[[F(0)] * 2 for _ in range(2)] for _ in range(N)]
    dx = [[F(0)] * 2 for _ in X]
    for t, x in enumerate(X):
        for s in range(K):
            if slots[t][s] < 0 and mistake != DROPPED_GRAD:
                continue
            e, gate = experts[t][s], (F(1) if mistake == NO_GATE else g[t][s])
            for i in range(2):
                for j in range(2):
                    dW[e][i][j] += gate * (D_Y[t][i] * x[j] if mistake == DW_TRANSPOSED else x[i] * D_Y[t][j])
            for i in range(2):
                dx[t][i] += gate * sum(D_Y[t][j] * W_EXPERTS[e][i][j] for j in range(2))
    if mistake == FULL_SOFTMAX:
        dz = full_softmax_grad(dg)
    else:
        dz = logits_grad(dg, g, experts, mistake if mistake in (NO_ROUTER,) else None)
    dWr = [[sum(X[t][i] * dz[t][e] for t in range(len(X))) for e in range(N)] for i in range(2)]
    if mistake != EXPERTS_ONLY:
        dx = [[float(dx[t][i]) + math.fsum(float(dz[t][e]) * W_ROUTER[i][e] for e in range(N)) for i in range(2)]
              for t in range(len(X))]
    return dx, dWr, dW


def floats(value):
    """Fractions as float64 (a list stays a list)."""
    return [floats(v) for v in value] if isinstance(value, list) else float(value)


def distinct(steps: dict) -> None:
    """Every mistake differs from its step's answer and from the step's other mistakes."""
    for step, entry in steps.items():
        values = [repr(entry["exact"])] + [repr(v) for v in entry["mistakes"].values()]
        assert len(set(values)) == len(values), step


# -- the worksheet ---------------------------------------------------------------------------------------------
def audit() -> dict[str, dict]:
    """{step id: {"exact": value, "mistakes": {name: value}, "inputs": …}}, the names as in the key."""
    probs = probabilities()
    experts = top_k(probs)
    g = gates(probs, experts)
    slots = dispatch(experts, CAPACITY)
    steps: dict[str, dict] = {}
    steps["22.1"] = {"exact": floats(probs), "inputs": {"x": X, "W_router": W_ROUTER}, "mistakes": {
        AXIS0: floats(probabilities(axis0=True)), NO_SOFTMAX: probabilities(raw=True)}}
    steps["22.2"] = {"exact": experts, "inputs": {"probs": floats(probs), "k": K}, "mistakes": {
        HIGH_TIE: top_k(probs, rule="high_tie"), LEAST: top_k(probs, rule="least")}}
    steps["22.3"] = {"exact": floats(g), "inputs": {"probs": floats(probs), "k": K}, "mistakes": {
        NO_RENORM: floats(gates(probs, experts, "raw")), SOFTMAX_AFTER: gates(probs, experts, "softmax")}}
    steps["22.4"] = {"exact": capacity(4, N, K, 1.25), "inputs": {"n_tokens": 4, "n_experts": N, "k": K,
                                                                  "factor": 1.25}, "mistakes": {
        FLOOR: capacity(4, N, K, 1.25, floor=True), NO_K: capacity(4, N, K, 1.25, no_k=True)}}
    steps["22.5"] = {"exact": slots, "inputs": {"experts": experts, "n_experts": N, "capacity": CAPACITY},
                     "mistakes": {PLUS_ONE: dispatch(experts, CAPACITY, plus=1),
                                  MINUS_ONE: dispatch(experts, CAPACITY, plus=-1),
                                  TOKEN_ORDER: dispatch(experts, CAPACITY, token_order=True),
                                  FROM_ONE: dispatch(experts, CAPACITY, first=1)}}
    layer = {"x": X, "W_router": W_ROUTER, "W_experts": W_EXPERTS, "k": K, "capacity": CAPACITY}
    steps["22.6"] = {"exact": floats(forward()), "inputs": layer, "mistakes": {
        m: floats(forward(m)) for m in (DROPPED_KEPT, RENORM_KEPT, TRANSPOSED)}}
    steps["22.7"] = {"exact": float(balance()), "inputs": {"probs": floats(probs), "experts": experts},
                     "mistakes": {F_GATES: float(balance(f_from="gates")), F_PROBS: float(balance(f_from="probs")),
                                  P_GATES: float(balance(p_from="gates")),
                                  NO_N: float(balance(n_factor=False)), PER_TOKEN: float(balance(per_token=True))}}
    dg = d_gates_of()
    steps["22.8"] = {"exact": floats(logits_grad(dg, g, experts)),
                     "inputs": {"d_gates": floats(dg), "gates": floats(g), "experts": experts, "n_experts": N},
                     "mistakes": {m: floats(logits_grad(dg, g, experts, m))
                                  for m in (SLOT_COLUMN, NO_JACOBIAN, NO_SUM, NO_ROUTER)}}
    grads = {m: backward(m) for m in (None, NO_GATE, DROPPED_GRAD, DW_TRANSPOSED, NO_ROUTER, FULL_SOFTMAX,
                                      DROPPED_DG, EXPERTS_ONLY)}
    backward_inputs = {**layer, "d_y": D_Y}
    steps["22.9"] = {"exact": floats(grads[None][2]), "inputs": backward_inputs, "mistakes": {
        m: floats(grads[m][2]) for m in (NO_GATE, DROPPED_GRAD, DW_TRANSPOSED)}}
    steps["22.10"] = {"exact": floats(grads[None][1]), "inputs": backward_inputs, "mistakes": {
        m: floats(grads[m][1]) for m in (NO_ROUTER, FULL_SOFTMAX, DROPPED_DG)}}
    steps["22.11"] = {"exact": floats(grads[None][0]), "inputs": backward_inputs, "mistakes": {
        m: floats(grads[m][0]) for m in (EXPERTS_ONLY, NO_GATE)}}
    distinct(steps)
    # each backward mistake shows first where the key names it: dW_e is right under the router's mistakes
    for m in (NO_ROUTER, FULL_SOFTMAX, DROPPED_DG):
        assert grads[m][2] == grads[None][2], m
    assert grads[EXPERTS_ONLY][1] == grads[None][1] and grads[EXPERTS_ONLY][2] == grads[None][2]
    # the claims of the page, on these numbers: every token's gates sum to 1, the f_i sum to 1
    assert all(sum(row) == 1 for row in g)
    return steps


def printed(value):
    """How the worksheet prints a value: a whole number as it is, else 4 decimals."""
    return four_decimals(value, zeros=False)
