"""Audit of chapter 19's worksheet (quantization): every input, `exact` and mistake value of the key.

Written from the formulas on the page with plain Python — loops over entries, ``max``, ``abs`` and the
built-in ``round`` — independent of ``solutions/`` and of NumPy, so the answer key cannot inherit a bug of the
reference. Python's ``round`` rounds half to even, as NumPy's does (``round(2.5) == 2``, ``round(-3.5) ==
-4``): the rule the chapter states. Every scale of the worksheet is a power of two, so every division below is
exact and the ties are true ties. Integer overflow (an int8, int16 or uint8 that wraps around) is written out
as arithmetic modulo 2⁸ or 2¹⁶.

Run by ``python -m kata.authoring.audit 19``, which prints every step; its ``--check`` compares with the key.
"""

from __future__ import annotations

import math

from kata.authoring.audit import four_decimals

# the worksheet's inputs (the page's tables)
W = [[2.5, 127.0], [-31.75, -100.5], [0.625, 90.5], [0.875, -3.5]]  # 19.1-19.4, 19.9: 4 inputs, 2 outputs
X = [[7.9375, -6.25, 7.9375, 1.0]]  # 19.13-19.14: an activation row, its scale 7.9375 / 127 = 1/16
WIDE = [[8.5, -7.5, 0.03125, -9.0]]  # 19.5: an activation beyond the range of the scale 1/16
A = [[-1.0, 0.5, 3.0, 62.75]]  # 19.6: the activation row that sets the uint8 scale and zero point
B = [[-2.0, 0.375, 2.625, 70.0]]  # 19.7: the next row, quantized with them
W4 = [[0.5, -7.0], [-3.5, 2.5], [1.75, 14.0], [0.375, -5.0]]  # 19.10-19.12: int4, groups of two rows
GROUP = 2


# -- the formulas, entry by entry ----------------------------------------------------------------------------
def qmax(bits):
    """The largest integer of the symmetric grid: 2^(b−1) − 1."""
    return 2 ** (bits - 1) - 1


def cols(M):
    """The columns of a matrix, as lists."""
    return [[row[c] for row in M] for c in range(len(M[0]))]


def half_away(v):
    """Rounding half away from zero (a mistake here): 2.5 → 3, −3.5 → −4."""
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


def half_up(v):
    """Rounding half up, floor(v + 0.5) (a mistake here): 2.5 → 3, −3.5 → −3."""
    return math.floor(v + 0.5)


def clip(v, lo, hi):
    """The number v held inside lo … hi."""
    return max(lo, min(hi, v))


def wrap(v, bits, signed=True):
    """The number v written into an integer of ``bits`` bits: modulo 2^bits, as NumPy's integer arithmetic does."""
    v %= 2 ** bits
    return v - 2 ** bits if signed and v >= 2 ** (bits - 1) else v


def sym(M, scales, bits=8, rounding=round, clipped=True):
    """Symmetric quantization of a matrix, one scale per column: clip(round(x / s), −qmax, qmax)."""
    top = qmax(bits)
    return [[clip(rounding(x / s), -top, top) if clipped else rounding(x / s) for x, s in zip(row, scales,
                                                                                         strict=True)]
            for row in M]


def matmul(P, Q):
    """The exact (Python int or float) matrix product."""
    return [[sum(p * q for p, q in zip(row, col, strict=True)) for col in cols(Q)] for row in P]


# -- the worksheet ---------------------------------------------------------------------------------------------
def audit() -> dict[str, dict]:
    """{step id: {"exact": value, "inputs": {...}, "mistakes": {name: value}}}, the names as in the key."""
    steps: dict[str, dict] = {}
    top_w = max(abs(x) for row in W for x in row)
    steps["19.1"] = {"inputs": {"W": W}, "exact": top_w / qmax(8), "mistakes": {
        "divided by 2⁸⁻¹ = 128 instead of 2⁸⁻¹ − 1 = 127 (the grid is −127 … 127)": top_w / 128,
        "divided by 255, the uint8 range (symmetric int8 ends at 127)": top_w / 255}}

    per_col = [max(abs(x) for x in col) / qmax(8) for col in cols(W)]
    steps["19.2"] = {"inputs": {"W": W}, "exact": per_col, "mistakes": {
        "divided by 128 instead of 127": [max(abs(x) for x in col) / 128 for col in cols(W)]}}

    tensor = sym(W, [1.0, 1.0])
    steps["19.3"] = {"inputs": {"W": W, "scale": 1.0}, "exact": tensor, "mistakes": {
        "rounding half away from zero: NumPy's round (and Python's) rounds half to even, 2.5 → 2":
            sym(W, [1.0, 1.0], rounding=half_away),
        "rounding half up, floor(x + 0.5): ties go to the even integer, 2.5 → 2 and 90.5 → 90":
            sym(W, [1.0, 1.0], rounding=half_up),
        "truncated toward zero instead of rounded": sym(W, [1.0, 1.0], rounding=int)}}

    steps["19.4"] = {"inputs": {"W": W, "scale": per_col}, "exact": sym(W, per_col), "mistakes": {
        "one scale for the whole tensor instead of one per column": tensor,
        "rounding half away from zero: ties go to the even integer, 2.5 → 2":
            sym(W, per_col, rounding=half_away)}}

    s_x = max(abs(x) for x in X[0]) / qmax(8)  # 1/16
    wide = sym(WIDE, [s_x] * 4, clipped=False)
    steps["19.5"] = {"inputs": {"x": WIDE, "scale": s_x}, "exact": sym(WIDE, [s_x] * 4), "mistakes": {
        "no clipping to the range: 136 and −144 written into int8 wrap around to −120 and 112":
            [[wrap(v, 8) for v in row] for row in wide],
        "no clipping to the range: 136 and −144 lie beyond −127 … 127": wide,
        "clipped to −128 … 127: the symmetric grid is −127 … 127": [[clip(v, -128, 127) for v in row] for row in wide],
        "rounding half away from zero: 0.5 rounds to the even 0": sym(WIDE, [s_x] * 4, rounding=half_away)}}

    lo, hi = min(min(A[0]), 0.0), max(max(A[0]), 0.0)
    s_a = (hi - lo) / 255
    z = round(-lo / s_a)
    steps["19.6"] = {"inputs": {"x": A}, "exact": [s_a, z], "mistakes": {
        "the zero point's sign: z = round(−ℓ / s), the integer that stands for 0.0, is ≥ 0": [s_a, round(lo / s_a)],
        "the range divided by 256 instead of 255 (0 … 255 is 255 steps)":
            [(hi - lo) / 256, round(-lo * 256 / (hi - lo))]}}

    def affine(row, sign=1, clipped=True, wrapped=False):
        out = [round(x / s_a) + sign * z for x in row]
        return [clip(v, 0, 255) if clipped else wrap(v, 8, signed=False) if wrapped else v for v in out]

    steps["19.7"] = {"inputs": {"x": B, "scale": s_a, "zero_point": z}, "exact": [affine(B[0])], "mistakes": {
        "no clipping to the range: 284 and −4 written into uint8 wrap around to 28 and 252":
            [affine(B[0], clipped=False, wrapped=True)],
        "no clipping to the range: 284 and −4 lie beyond 0 … 255": [affine(B[0], clipped=False)],
        "the zero point's sign: q = round(x / s) + z": [affine(B[0], sign=-1)],
        "the zero point's sign (and no clipping): q = round(x / s) + z": [affine(B[0], sign=-1, clipped=False)],
        "rounding half away from zero: 10.5 rounds to the even 10":
            [[clip(half_away(x / s_a) + z, 0, 255) for x in B[0]]]}}

    q_b = affine(B[0])
    steps["19.8"] = {"inputs": {"q": [q_b], "scale": s_a, "zero_point": z},
                     "exact": [[(q - z) * s_a for q in q_b]], "mistakes": {
        "the zero point's sign: x̂ = (q − z) s": [[(q + z) * s_a for q in q_b]],
        "q − z computed in uint8: 0 − 4 wraps around to 252": [[wrap(q - z, 8, signed=False) * s_a for q in q_b]],
        "the zero point not taken off": [[q * s_a for q in q_b]]}}

    q_c = sym(W, per_col)
    steps["19.9"] = {"inputs": {"q": q_c, "scale": per_col, "W": W},
                     "exact": [[q * s for q, s in zip(row, per_col, strict=True)] for row in q_c], "mistakes": {
        "dequantised with the wrong scale: the integers divided by the scales, not multiplied":
            [[q / s for q, s in zip(row, per_col, strict=True)] for row in q_c],
        "dequantised with the wrong scale: column 1's scale for every column":
            [[q * per_col[1] for q in row] for row in q_c]}}

    groups = [[W4[r][c] for r in range(g, g + GROUP)] for g in range(0, len(W4), GROUP) for c in range(2)]
    scales = [[max(abs(x) for x in groups[2 * g + c]) / qmax(4) for c in range(2)] for g in range(2)]
    steps["19.10"] = {"inputs": {"W": W4, "group_size": GROUP}, "exact": scales, "mistakes": {
        "divided by 2⁴⁻¹ = 8 instead of 7 (int4's grid is −7 … 7)":
            [[s * qmax(4) / 8 for s in row] for row in scales],
        "divided by 127: int8's largest integer, not int4's":
            [[s * qmax(4) / 127 for s in row] for row in scales],
        "scales along the wrong axis: each group's maximum taken across the columns (along a row), not down them":
            [[max(abs(x) for x in W4[r]) / qmax(4) for r in range(g, g + GROUP)] for g in range(0, len(W4), GROUP)]}}

    def grouped(rounding=round, by_row=False, whole_column=False):
        out = []
        for r, row in enumerate(W4):
            if by_row:  # each row a group: the groups along the wrong axis
                s = [max(abs(x) for x in row) / qmax(4)] * 2
            elif whole_column:
                s = [max(abs(x) for x in col) / qmax(4) for col in cols(W4)]
            else:
                s = scales[r // GROUP]
            out.append([clip(rounding(x / t), -qmax(4), qmax(4)) for x, t in zip(row, s, strict=True)])
        return out

    q4 = grouped()
    steps["19.11"] = {"inputs": {"W": W4, "group_size": GROUP}, "exact": q4, "mistakes": {
        "scales along the wrong axis: each group is G consecutive entries of a column (down the rows), not of a row":
            grouped(by_row=True),
        "one scale per column instead of one per group": grouped(whole_column=True),
        "rounding half away from zero: 2.5 rounds to the even 2": grouped(rounding=half_away)}}

    steps["19.12"] = {"inputs": {"q": q4, "scales": scales, "group_size": GROUP},
                      "exact": [[q * s for q, s in zip(row, scales[r // GROUP], strict=True)]
                                for r, row in enumerate(q4)], "mistakes": {
        "dequantised with the wrong scale: row r given group r mod 2's scale (rows interleaved), not group ⌊r / G⌋'s":
            [[q * s for q, s in zip(row, scales[r % 2], strict=True)] for r, row in enumerate(q4)]}}

    x_q = sym(X, [s_x] * 4)
    acc = matmul(x_q, q_c)
    steps["19.13"] = {"inputs": {"Xq": x_q, "Wq": q_c}, "exact": acc, "mistakes": {
        "accumulating in int8 (overflow): the sums wrap around modulo 256; accumulate in int32":
            [[wrap(v, 8) for v in row] for row in acc],
        "accumulating in int16 (overflow): 37495 wraps around to −28041; accumulate in int32":
            [[wrap(v, 16) for v in row] for row in acc]}}

    def rescale(a, sx=s_x, sw=per_col):
        return [[v * sx * s for v, s in zip(row, sw, strict=True)] for row in a]

    steps["19.14"] = {"inputs": {"Xq": x_q, "x_scale": s_x, "Wq": q_c, "w_scale": per_col}, "exact": rescale(acc),
                      "mistakes": {
        "dequantised with the wrong scale: the activation's scale s_x forgotten": rescale(acc, sx=1.0),
        "dequantised with the wrong scale: the weight's scales s_w forgotten": rescale(acc, sw=[1.0, 1.0]),
        "dequantised with the wrong scale: divided by the scales, not multiplied":
            [[v / s_x / s for v, s in zip(row, per_col, strict=True)] for row in acc],
        "accumulating in int16 (overflow): the sum 37495 wrapped around to −28041":
            rescale([[wrap(v, 16) for v in row] for row in acc]),
        "accumulating in int8 (overflow)": rescale([[wrap(v, 8) for v in row] for row in acc])}}
    return steps


def printed(value):
    """How the worksheet prints a value: a whole number as it is, else as few decimals as it needs (≤ 4)."""
    return four_decimals(value, zeros=False)
