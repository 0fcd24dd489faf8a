"""Audit of chapter 12's worksheet (rotary position embeddings): every `exact` and mistake value of the key.

Written from the formulas on the page with Python's ``math`` and plain loops over pairs and positions,
independent of ``solutions/`` and of NumPy, so the answer key cannot inherit a bug of the reference.

Run by ``python -m kata.authoring.audit 12``, which prints every step; its ``--check`` compares with the key.
"""

from __future__ import annotations

import math

BASE = 10000.0

# the worksheet's inputs (the page's tables)
D = 4
POSITIONS = (0, 1, 2)
X_REPEATED = [1.0, 0.0, 1.0, 0.0]  # 12.4: the same token at every position
Q_ROW, K_ROW = [1.0, 2.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0]  # 12.5, 12.6
V_ROWS = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]  # 12.6: the output reads off the weights
DY_ROW = [0.0, 1.0, 0.0, 1.0]  # 12.7


# -- the formulas, pair by pair ------------------------------------------------------------------------------
def thetas(d, exponent=2.0, first=0):
    """θ_i = base^(−exponent·(i + first)/d) for the d/2 pairs; exponent 2 and first 0 are right."""
    return [BASE ** (-exponent * (i + first) / d) for i in range(d // 2)]


def turn(x0, x1, phi):
    """The pair (x0, x1) turned counter-clockwise by phi radians."""
    return x0 * math.cos(phi) - x1 * math.sin(phi), x0 * math.sin(phi) + x1 * math.cos(phi)


def rope_row(x, m, sign=1.0, exponent=2.0, halves=False):
    """One row at position m, adjacent pairs (2i, 2i+1), or the halves convention (i, i + d/2)."""
    d = len(x)
    out = list(x)
    for i, theta in enumerate(thetas(d, exponent)):
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


def causal_row(q_rows, k_rows, v_rows, m):
    """Output row m of causal attention (scores scaled by 1/√d) of already rotated queries and keys."""
    d = len(q_rows[0])
    w = softmax([dot(q_rows[m], k_rows[n]) / math.sqrt(d) for n in range(m + 1)])
    return [math.fsum(w[n] * v_rows[n][j] for n in range(m + 1)) for j in range(len(v_rows[0]))]


# -- the worksheet ---------------------------------------------------------------------------------------------
def audit() -> dict[str, dict]:
    """{step id: {"exact": value, "mistakes": {name: value}}}, the names as in the key."""
    steps: dict[str, dict] = {}
    steps["12.1"] = {"exact": thetas(D), "mistakes": {
        "the frequency exponent without its factor 2: base^(−i/d)": thetas(D, 1.0),
        "the frequency exponent with the factor 2 twice: base^(−4i/d) (at d = 4 the same as exponents spaced "
        "evenly from 0 to 1 with np.linspace: the last pair must stop short of base^(−1))": thetas(D, 4.0),
        "the pair index counted from 1: base^(−2(i+1)/d), so not even the first pair turns at 1":
            thetas(D, first=1),
        "the exponent's sign flipped: base^(+2i/d), frequencies that grow from pair to pair": thetas(D, -2.0)}}

    steps["12.2"] = {"exact": [[m * t for t in thetas(D)] for m in POSITIONS], "mistakes": {
        "positions counted from 1": [[(m + 1) * t for t in thetas(D)] for m in POSITIONS],
        "the frequency exponent without its factor 2": [[m * t for t in thetas(D, 1.0)] for m in POSITIONS]}}

    steps["12.3"] = {"exact": [list(turn(1.0, 2.0, 1.0))], "mistakes": {
        "the angle's sign flipped (turned clockwise)": [list(turn(1.0, 2.0, -1.0))],
        "the second feature computed from the already turned first one (x0 overwritten before x1 used it)":
            [[turn(1.0, 2.0, 1.0)[0], turn(1.0, 2.0, 1.0)[0] * math.sin(1.0) + 2.0 * math.cos(1.0)]]}}

    steps["12.4"] = {"exact": [rope_row(X_REPEATED, m) for m in POSITIONS], "mistakes": {
        "the halves pairing convention (x_i with x_{i+d/2}) instead of adjacent pairs":
            [rope_row(X_REPEATED, m, halves=True) for m in POSITIONS],
        "the angle's sign flipped": [rope_row(X_REPEATED, m, sign=-1.0) for m in POSITIONS],
        "positions counted from 1": [rope_row(X_REPEATED, m + 1) for m in POSITIONS],
        "the frequency exponent without its factor 2": [rope_row(X_REPEATED, m, exponent=1.0) for m in POSITIONS]}}

    Qr = [rope_row(Q_ROW, m) for m in POSITIONS]
    Kr = [rope_row(K_ROW, m) for m in POSITIONS]
    steps["12.5"] = {"exact": [dot(Qr[1], Kr[0]), dot(Qr[2], Kr[1])], "mistakes": {
        "the keys were not rotated (only the queries)": [dot(Qr[1], K_ROW), dot(Qr[2], K_ROW)],
        "the halves pairing convention instead of adjacent pairs": [
            dot(rope_row(Q_ROW, 1, halves=True), rope_row(K_ROW, 0, halves=True)),
            dot(rope_row(Q_ROW, 2, halves=True), rope_row(K_ROW, 1, halves=True))],
        "scaled by 1/√d as attention is (rope_scores returns the raw scores)": [
            dot(Qr[1], Kr[0]) / math.sqrt(len(Q_ROW)), dot(Qr[2], Kr[1]) / math.sqrt(len(Q_ROW))]}}

    V = [list(r) for r in V_ROWS]
    Vr = [rope_row(V_ROWS[m], m) for m in POSITIONS]
    plain = [list(Q_ROW) for _ in POSITIONS], [list(K_ROW) for _ in POSITIONS]
    steps["12.6"] = {"exact": causal_row(Qr, Kr, V, 2), "mistakes": {
        "V was rotated too (RoPE belongs on Q and K only)": causal_row(Qr, Kr, Vr, 2),
        "no rotation at all (every position looks alike)": causal_row(*plain, V, 2),
        "the halves pairing convention instead of adjacent pairs": causal_row(
            [rope_row(Q_ROW, m, halves=True) for m in POSITIONS],
            [rope_row(K_ROW, m, halves=True) for m in POSITIONS], V, 2)}}

    steps["12.7"] = {"exact": [rope_row(DY_ROW, m, sign=-1.0) for m in POSITIONS], "mistakes": {
        "the forward rotation instead of its inverse (the angle's sign)": [rope_row(DY_ROW, m) for m in POSITIONS],
        "positions counted from 1": [rope_row(DY_ROW, m + 1, sign=-1.0) for m in POSITIONS]}}
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
    if float(text) == value:  # exactly representable at 4 decimals, e.g. θ_1 = 0.01: no trailing zeros
        return text.rstrip("0")
    return f"{value:.5g}" if float(text) == int(float(text)) else text
