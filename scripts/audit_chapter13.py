"""Audit chapter 13's worksheet: every exact number and every named mistake's value, from scratch.

Independent of ``solutions/``: each formula is written out again here with Python loops and ``math`` (a
row at a time, a feature at a time), the way the page asks a learner to work it by hand. The answer key
``reference/chapter13_modern_block.toml`` must agree with what this prints: its ``inputs``, its ``exact``
values (to 1e-12), its ``printed`` strings (the exact value rounded to four decimals) and every named
mistake's value; ``tests/test_audit_chapter13.py`` runs this script and checks all four.

Usage: ``python scripts/audit_chapter13.py`` (every step, as TOML lines to compare with the key).
"""

from __future__ import annotations

import math
import sys

EPS = 1e-6  # rms_norm's default eps
DIGITS = 4  # the worksheet prints four decimals


# -- the pieces, by hand ----------------------------------------------------------------------------------
def matmul(A, B):
    """Rows of A times columns of B, one sum at a time."""
    return [[sum(A[i][k] * B[k][j] for k in range(len(B))) for j in range(len(B[0]))] for i in range(len(A))]


def transpose(A):
    """Rows become columns."""
    return [list(col) for col in zip(*A, strict=True)]


def add(A, B):
    """Entry by entry."""
    return [[a + b for a, b in zip(ra, rb, strict=True)] for ra, rb in zip(A, B, strict=True)]


def times(A, B):
    """Entry by entry."""
    return [[a * b for a, b in zip(ra, rb, strict=True)] for ra, rb in zip(A, B, strict=True)]


def sigmoid(v: float) -> float:
    """1 / (1 + e^(−v)); the worksheet's inputs are small, so no overflow."""
    return 1.0 / (1.0 + math.exp(-v))


def silu(v: float) -> float:
    """v·σ(v)."""
    return v * sigmoid(v)


def silu_slope(v: float) -> float:
    """The derivative of v·σ(v)."""
    s = sigmoid(v)
    return s + v * s * (1.0 - s)  # product rule: σ(v)·1 + v·σ'(v), σ' = σ(1 − σ)


def rms(row, eps=EPS, outside=False):
    """√(mean square + ε) of one row (or, the mistake, √(mean square) + ε)."""
    mean_square = sum(v * v for v in row) / len(row)
    return math.sqrt(mean_square) + eps if outside else math.sqrt(mean_square + eps)


def rms_norm(X, g, eps=EPS, outside=False, centre=False, gain=True):
    """RMSNorm row by row (g ⊙ x / r), or one of the mistakes the flags name."""
    out = []
    for row in X:
        if centre:  # the LayerNorm mistake: subtract the mean first
            mu = sum(row) / len(row)
            row = [v - mu for v in row]
        r = rms(row, eps, outside)
        out.append([(g[i] if gain else 1.0) * row[i] / r for i in range(len(row))])
    return out


def rms_norm_dx(X, g, D, eps=EPS, direct_only=False, gain=True, centre=False):
    """The dx of Σ D ⊙ RMSNorm(X), row by row: dx_k = u_k/r − x_k Σ_j u_j x_j / (d r³), u = D ⊙ g."""
    out = []
    for row, drow in zip(X, D, strict=True):
        d = len(row)
        u = [drow[i] * (g[i] if gain else 1.0) for i in range(d)]
        if centre:  # LayerNorm's backward (no β): the mean path too
            mu = sum(row) / d
            c = [v - mu for v in row]
            s = math.sqrt(sum(v * v for v in c) / d + EPS)
            xh = [v / s for v in c]
            u_mean = sum(u) / d
            ux = sum(u[i] * xh[i] for i in range(d)) / d
            out.append([(u[k] - u_mean - xh[k] * ux) / s for k in range(d)])
            continue
        r = rms(row, eps)
        if direct_only:
            out.append([u[k] / r for k in range(d)])
            continue
        ux = sum(u[j] * row[j] for j in range(d))
        out.append([u[k] / r - row[k] * ux / (d * r**3) for k in range(d)])
    return out


def swiglu(X, Wg, Wu, Wd, gate_on_up=False):
    """(SiLU(X Wg) ⊙ X Wu) Wd, or the gate on the other branch."""
    a, b = matmul(X, Wg), matmul(X, Wu)
    if gate_on_up:  # the mistake: SiLU on the other branch
        a, b = b, a
    h = [[silu(p) * q for p, q in zip(ra, rb, strict=True)] for ra, rb in zip(a, b, strict=True)]
    return matmul(h, Wd)


def swiglu_dx(X, Wg, Wu, Wd, D, no_product_rule=False, ungated_up=False):
    """The dx of Σ D ⊙ SwiGLU(X), or one of the mistakes the flags name."""
    a, b = matmul(X, Wg), matmul(X, Wu)
    dh = matmul(D, transpose(Wd))
    slope = (lambda v: sigmoid(v)) if no_product_rule else silu_slope
    da = [[dh[i][j] * b[i][j] * slope(a[i][j]) for j in range(len(a[0]))] for i in range(len(a))]
    db = [[dh[i][j] * (1.0 if ungated_up else silu(a[i][j])) for j in range(len(a[0]))] for i in range(len(a))]
    return add(matmul(da, transpose(Wg)), matmul(db, transpose(Wu)))


# -- the worksheet ------------------------------------------------------------------------------------------
X1 = [[1.0, 2.0, 2.0, 4.0], [2.0, -2.0, 2.0, -2.0]]
G1 = [1.0, 0.5, 2.0, 1.0]
X2 = [[0.001, 0.001, -0.001, -0.001]]
G2 = [1.0, 1.0, 1.0, 1.0]
X3, D3 = [[1.0, 2.0, 2.0, 4.0]], [[0.0, 1.0, 0.0, 0.0]]
Z = [-2.0, -1.0, 0.0, 1.0, 2.0]
XS = [[1.0, -1.0], [2.0, 1.0]]
W_GATE = [[1.0, 0.0, 1.0], [0.0, 1.0, -1.0]]
W_UP = [[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]
W_DOWN = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
DS = [[1.0, 0.0], [0.0, 1.0]]


def steps() -> dict[str, dict]:
    """Every step: its inputs, its exact value and the value of every mistake the key names."""
    sw = {"x": XS, "W_gate": W_GATE, "W_up": W_UP, "W_down": W_DOWN}
    return {
        "13.1": {"inputs": {"x": X1, "g": G1}, "exact": rms_norm(X1, G1), "mistakes": {
            "the mean subtracted first: that is LayerNorm (with β = 0), not RMSNorm": rms_norm(X1, G1, centre=True),
            "the gain g left out": rms_norm(X1, G1, gain=False),
            "one root mean square for the whole array instead of one per row":
                [[G1[i] * v / rms([w for r in X1 for w in r]) for i, v in enumerate(row)] for row in X1],
        }},
        "13.2": {"inputs": {"x": X2, "g": G2}, "exact": rms_norm(X2, G2), "mistakes": {
            "ε added outside the square root (to the root mean square instead of the mean square)":
                rms_norm(X2, G2, outside=True),
            "ε left out: every row would come out with root mean square exactly 1":
                rms_norm(X2, G2, eps=0.0),
        }},
        "13.3": {"inputs": {"x": X3, "g": G1, "d_out": D3}, "exact": rms_norm_dx(X3, G1, D3), "mistakes": {
            "only the direct path g·d_out/r: r also depends on x": rms_norm_dx(X3, G1, D3, direct_only=True),
            "the gain g left out of the backward": rms_norm_dx(X3, G1, D3, gain=False),
            "LayerNorm's backward (a mean path RMSNorm does not have)": rms_norm_dx(X3, G1, D3, centre=True),
        }},
        "13.4": {"inputs": {"x": Z}, "exact": [silu(v) for v in Z], "mistakes": {
            "the sigmoid σ(x) alone, not x·σ(x)": [sigmoid(v) for v in Z],
            "ReLU instead of SiLU": [max(v, 0.0) for v in Z],
        }},
        "13.5": {"inputs": {"x": Z, "d_out": [1.0] * 5}, "exact": [silu_slope(v) for v in Z], "mistakes": {
            "σ(x) only: the product rule's second term x·σ(x)(1 − σ(x)) left out": [sigmoid(v) for v in Z],
            "the sigmoid's own slope σ(x)(1 − σ(x))": [sigmoid(v) * (1 - sigmoid(v)) for v in Z],
            "SiLU itself instead of its slope": [silu(v) for v in Z],
        }},
        "13.6": {"inputs": sw, "exact": swiglu(XS, W_GATE, W_UP, W_DOWN), "mistakes": {
            "the gate on the wrong branch: SiLU(x W_up) ⊙ x W_gate": swiglu(XS, W_GATE, W_UP, W_DOWN, gate_on_up=True),
            "no gate: SiLU(x W_gate) W_down (the up branch left out)":
                matmul([[silu(v) for v in row] for row in matmul(XS, W_GATE)], W_DOWN),
        }},
        "13.7": {"inputs": {**sw, "d_out": DS}, "exact": swiglu_dx(XS, W_GATE, W_UP, W_DOWN, DS), "mistakes": {
            "σ(a) as SiLU's slope: the product rule's second term left out":
                swiglu_dx(XS, W_GATE, W_UP, W_DOWN, DS, no_product_rule=True),
            "the up branch's gradient not multiplied by the gate SiLU(a)":
                swiglu_dx(XS, W_GATE, W_UP, W_DOWN, DS, ungated_up=True),
            "only the gate branch: x also feeds W_up": matmul(
                [[dh * b * silu_slope(a) for dh, b, a in zip(rdh, rb, ra, strict=True)]
                 for rdh, rb, ra in zip(matmul(DS, transpose(W_DOWN)), matmul(XS, W_UP), matmul(XS, W_GATE),
                                        strict=True)], transpose(W_GATE)),
        }},
    }


def printed(value):
    """The exact value as the worksheet prints it: four decimals, and never "-0.0000"."""
    if isinstance(value, list):
        return [printed(v) for v in value]
    text = f"{value:.{DIGITS}f}"
    return text[1:] if text == "-" + f"{0:.{DIGITS}f}" else text


def main() -> int:
    """Print every step's printed and exact values and its mistakes, as TOML lines."""
    for step_id, step in steps().items():
        print(f"# {step_id}")
        print(f"printed = {printed(step['exact'])}".replace("'", '"'))
        print(f"exact = {step['exact']!r}")
        for name, value in step["mistakes"].items():
            print(f"#   mistake {name!r}\nvalue = {value!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
