"""Audit of chapter 12's worksheet (rotary position embeddings): every `exact` and mistake value of the key.

Written from the formulas on the page with Python's ``math`` and plain loops over pairs and positions,
independent of ``solutions/`` and of NumPy, so the answer key cannot inherit a bug of the reference.

Run by ``python -m kata.authoring.audit 12``, which prints every step; its ``--check`` compares with the key.
"""

from __future__ import annotations

import math

DEFAULT_BASE = 10000.0  # step 12.1: the default
BASE = 100.0  # steps 12.2 and on: θ = [1, 0.1] at d = 4, a second pair that visibly turns

# the worksheet's inputs (the page's tables)
D = 4
START = 2  # steps 12.2, 12.4 and 12.7: three new positions after two already cached
POSITIONS = (0, 1, 2)  # rows; rope_scores and rope_attention count them from 0
X_REPEATED = [1.0, 0.0, 1.0, 0.0]  # 12.4: the same token at every position
Q_ROW, K_ROW = [1.0, 2.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0]  # 12.5, 12.6
V_ROWS = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]  # 12.6: the output reads off the weights
DY_ROW = [0.0, 1.0, 0.0, 1.0]  # 12.7


# -- the formulas, pair by pair ------------------------------------------------------------------------------
def thetas(d, exponent=2.0, first=0, base=BASE):
    """θ_i = base^(−exponent·(i + first)/d) for the d/2 pairs; exponent 2 and first 0 are right."""
    return [base ** (-exponent * (i + first) / d) for i in range(d // 2)]


def turn(x0, x1, phi):
    """The pair (x0, x1) turned counter-clockwise by phi radians."""
    return x0 * math.cos(phi) - x1 * math.sin(phi), x0 * math.sin(phi) + x1 * math.cos(phi)


def rope_row(x, m, sign=1.0, exponent=2.0, halves=False, base=BASE):
    """One row at position m, adjacent pairs (2i, 2i+1), or the halves convention (i, i + d/2)."""
    d = len(x)
    out = list(x)
    for i, theta in enumerate(thetas(d, exponent, base=base)):
        a, b = (i, i + d // 2) if halves else (2 * i, 2 * i + 1)
        out[a], out[b] = turn(x[a], x[b], sign * m * theta)
    return out


def dot(a, b):
    """The dot product of two rows, summed exactly."""
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def softmax(xs):
    """Weights from scores, the largest subtracted first."""
    top = max(xs)
    e = [math.exp(x - top) for x in xs]
    return [v / math.fsum(e) for v in e]


def causal_row(q_rows, k_rows, v_rows, m, causal=True):
    """Output row m of causal attention (scores scaled by 1/√d) of already rotated queries and keys.

    ``causal=False``: the mistake, every position seen (the mask left out).
    """
    d = len(q_rows[0])
    seen = m + 1 if causal else len(k_rows)
    w = softmax([dot(q_rows[m], k_rows[n]) / math.sqrt(d) for n in range(seen)])
    return [math.fsum(w[n] * v_rows[n][j] for n in range(seen)) for j in range(len(v_rows[0]))]


def attention(q_rows, k_rows, v_rows, causal=True):
    """Every output row of causal attention of already rotated queries and keys."""
    return [causal_row(q_rows, k_rows, v_rows, m, causal) for m in range(len(q_rows))]


# -- the worksheet ---------------------------------------------------------------------------------------------
def audit() -> dict[str, dict]:
    """{step id: {"exact": value, "mistakes": {name: value}}}, the names as in the key."""
    start_ignored, base_ignored = "start ignored (every call counted from position 0)", \
        "the base argument ignored (10000 used)"
    at = [START + m for m in POSITIONS]  # the positions of steps 12.2, 12.4 and 12.7
    steps: dict[str, dict] = {}
    steps["12.1"] = {"inputs": {"d": D}, "exact": thetas(D, base=DEFAULT_BASE), "mistakes": {
        "the frequency exponent without its factor 2: base^(−i/d)": thetas(D, 1.0, base=DEFAULT_BASE),
        "the frequency exponent with the factor 2 twice: base^(−4i/d) (at d = 4 the same as exponents spaced "
        "evenly from 0 to 1, both ends included: the last pair must stop short of base^(−1))":
            thetas(D, 4.0, base=DEFAULT_BASE),
        "the pair index counted from 1: base^(−2(i+1)/d), so not even the first pair turns at 1":
            thetas(D, first=1, base=DEFAULT_BASE),
        "the exponent's sign flipped: base^(+2i/d), frequencies that grow from pair to pair":
            thetas(D, -2.0, base=DEFAULT_BASE)}}

    steps["12.2"] = {"inputs": {"seq_len": len(POSITIONS), "d": D, "base": BASE, "start": START},
                     "exact": [[p * t for t in thetas(D)] for p in at], "mistakes": {
        "positions counted from 1": [[(p + 1) * t for t in thetas(D)] for p in at],
        "the frequency exponent without its factor 2": [[p * t for t in thetas(D, 1.0)] for p in at],
        start_ignored: [[m * t for t in thetas(D)] for m in POSITIONS],
        base_ignored: [[p * t for t in thetas(D, base=DEFAULT_BASE)] for p in at]}}

    steps["12.3"] = {"exact": [list(turn(1.0, 2.0, 1.0))], "mistakes": {
        "the angle's sign flipped (turned clockwise)": [list(turn(1.0, 2.0, -1.0))],
        "the second feature computed from the already turned first one (x0 overwritten before x1 used it)":
            [[turn(1.0, 2.0, 1.0)[0], turn(1.0, 2.0, 1.0)[0] * math.sin(1.0) + 2.0 * math.cos(1.0)]]}}

    steps["12.4"] = {"inputs": {"X": [list(X_REPEATED) for _ in POSITIONS], "base": BASE, "start": START},
                     "exact": [rope_row(X_REPEATED, p) for p in at], "mistakes": {
        "the halves pairing convention (x_i with x_{i+d/2}) instead of adjacent pairs":
            [rope_row(X_REPEATED, p, halves=True) for p in at],
        "the angle's sign flipped": [rope_row(X_REPEATED, p, sign=-1.0) for p in at],
        "positions counted from 1": [rope_row(X_REPEATED, p + 1) for p in at],
        "the frequency exponent without its factor 2": [rope_row(X_REPEATED, p, exponent=1.0) for p in at],
        start_ignored: [rope_row(X_REPEATED, m) for m in POSITIONS],
        base_ignored: [rope_row(X_REPEATED, p, base=DEFAULT_BASE) for p in at]}}

    Qr = [rope_row(Q_ROW, m) for m in POSITIONS]
    Kr = [rope_row(K_ROW, m) for m in POSITIONS]
    Qd = [rope_row(Q_ROW, m, base=DEFAULT_BASE) for m in POSITIONS]
    Kd = [rope_row(K_ROW, m, base=DEFAULT_BASE) for m in POSITIONS]
    QK = {"Q": [list(Q_ROW) for _ in POSITIONS], "K": [list(K_ROW) for _ in POSITIONS], "base": BASE}
    steps["12.5"] = {"inputs": dict(QK), "exact": [dot(Qr[1], Kr[0]), dot(Qr[2], Kr[1])], "mistakes": {
        "the keys were not rotated (only the queries)": [dot(Qr[1], K_ROW), dot(Qr[2], K_ROW)],
        "the halves pairing convention instead of adjacent pairs": [
            dot(rope_row(Q_ROW, 1, halves=True), rope_row(K_ROW, 0, halves=True)),
            dot(rope_row(Q_ROW, 2, halves=True), rope_row(K_ROW, 1, halves=True))],
        "scaled by 1/√d as attention is (rope_scores returns the raw scores)": [
            dot(Qr[1], Kr[0]) / math.sqrt(len(Q_ROW)), dot(Qr[2], Kr[1]) / math.sqrt(len(Q_ROW))],
        base_ignored: [dot(Qd[1], Kd[0]), dot(Qd[2], Kd[1])]}}

    V = [list(r) for r in V_ROWS]
    Vr = [rope_row(V_ROWS[m], m) for m in POSITIONS]
    plain = [list(Q_ROW) for _ in POSITIONS], [list(K_ROW) for _ in POSITIONS]
    steps["12.6"] = {"inputs": {**QK, "V": V}, "exact": attention(Qr, Kr, V), "mistakes": {
        "the causal mask was left out (every position saw the later ones)": attention(Qr, Kr, V, causal=False),
        "V was rotated too (RoPE belongs on Q and K only)": attention(Qr, Kr, Vr),
        "no rotation at all (every position looks alike)": attention(*plain, V),
        "the halves pairing convention instead of adjacent pairs": attention(
            [rope_row(Q_ROW, m, halves=True) for m in POSITIONS],
            [rope_row(K_ROW, m, halves=True) for m in POSITIONS], V),
        base_ignored: attention(Qd, Kd, V)}}

    steps["12.7"] = {"inputs": {"dY": [list(DY_ROW) for _ in POSITIONS], "base": BASE, "start": START},
                     "exact": [rope_row(DY_ROW, p, sign=-1.0) for p in at], "mistakes": {
        "the forward rotation instead of its inverse (the angle's sign)": [rope_row(DY_ROW, p) for p in at],
        "positions counted from 1": [rope_row(DY_ROW, p + 1, sign=-1.0) for p in at],
        start_ignored: [rope_row(DY_ROW, m, sign=-1.0) for m in POSITIONS],
        base_ignored: [rope_row(DY_ROW, p, sign=-1.0, base=DEFAULT_BASE) for p in at]}}
    return steps


def printed(value):
    """How the worksheet prints a value: a whole number as it is, else 4 decimals.

    A value exact at 4 decimals loses its trailing zeros (0.01); one that 4 decimals would round to a whole
    number (cos 0.01 = 0.99995) keeps 5 significant digits.
    """
    if isinstance(value, list):
        return [printed(v) for v in value]
    if value == int(value):
        return str(int(value))
    text = f"{value:.4f}"
    if math.isclose(float(text), value, rel_tol=1e-12):  # 4 decimals say it all (0.01, 3 × 0.1): no zeros after
        return text.rstrip("0")
    return f"{value:.5g}" if float(text) == int(float(text)) else text
