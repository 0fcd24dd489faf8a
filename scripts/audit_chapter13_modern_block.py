"""Audit chapter 13's worksheet: every exact number and every named mistake's value, from scratch.

Independent of ``solutions/``: each formula is written out again here with Python loops and ``math`` (a
row at a time, a feature at a time), the way the page asks a learner to work it by hand. The answer key
``reference/chapter13_modern_block.toml`` must agree with what this prints: its ``inputs``, its ``exact``
values (to 1e-12), its ``printed`` strings (the exact value rounded to four decimals) and every named
mistake's value.

Run by ``python -m kata.authoring.audit 13``, which prints every step; its ``--check`` compares with the key.
"""

from __future__ import annotations

import cmath
import math

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
            s = math.sqrt(sum(v * v for v in c) / d + eps)
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


def swiglu_dx(X, Wg, Wu, Wd, D, no_product_rule=False, ungated_up=False, slope_only=False):
    """The dx of Σ D ⊙ SwiGLU(X), or one of the mistakes the flags name.

    slope_only: SiLU's backward ignored the gradient it was given, so da = SiLU′(a) without dh ⊙ b.
    """
    a, b = matmul(X, Wg), matmul(X, Wu)
    dh = matmul(D, transpose(Wd))
    slope = (lambda v: sigmoid(v)) if no_product_rule else silu_slope
    da = [[(1.0 if slope_only else dh[i][j] * b[i][j]) * slope(a[i][j]) for j in range(len(a[0]))]
          for i in range(len(a))]
    db = [[dh[i][j] * (1.0 if ungated_up else silu(a[i][j])) for j in range(len(a[0]))] for i in range(len(a))]
    return add(matmul(da, transpose(Wg)), matmul(db, transpose(Wu)))


# -- the block: complex-capable forward passes, differentiated by the complex step ---------------------------
# The backward steps (13.10–13.13) are not worked out by hand here: they are the forward passes below
# differentiated by the complex step, dL/dx_k = Im L(x + i·h·e_k) / h with h = 1e-30, exact to rounding
# (no subtraction, so no cancellation), and independent of any backward formula.
H = 1e-30


def c_rms_norm(X, g, eps=EPS):
    """RMSNorm row by row, for complex entries too."""
    out = []
    for row in X:
        r = cmath.sqrt(sum(v * v for v in row) / len(row) + eps)
        out.append([g[i] * row[i] / r for i in range(len(row))])
    return out


def rope(rows, start=0, base=10000.0, sign=1):
    """Turn pair (2i, 2i+1) of the row at position p = start + m by p·base^(−2i/d) (sign −1: back)."""
    out = []
    for m, row in enumerate(rows):
        d, new = len(row), list(row)
        for i in range(d // 2):
            phi = sign * (start + m) * base ** (-2 * i / d)
            a, b = row[2 * i], row[2 * i + 1]
            new[2 * i], new[2 * i + 1] = a * math.cos(phi) - b * math.sin(phi), a * math.sin(phi) + b * math.cos(phi)
        out.append(new)
    return out


def by_heads(M, n_heads, sign=1, base=10000.0):
    """RoPE on each head's columns of a (seq, d_model) matrix, each head on its own (sign −1: back)."""
    dh = len(M[0]) // n_heads
    parts = [rope([row[h * dh:(h + 1) * dh] for row in M], base=base, sign=sign) for h in range(n_heads)]
    return [[v for h in range(n_heads) for v in parts[h][i]] for i in range(len(M))]


def mha(X, WQ, WK, WV, WO, n_heads, **flags):
    """Causal multi-head attention with RoPE on each head's queries and keys, or a mistake the flags name."""
    return attend(matmul(X, WQ), matmul(X, WK), matmul(X, WV), WO, n_heads, **flags)


def attend(Q, K, V, WO, n_heads, start=0, rotate=True, rotate_v=False, whole_width=False, scale_d_model=False,
           causal=True, base=10000.0):
    """The heads of Q, K, V attend causally (after RoPE unless rotate=False), merged and projected by WO."""
    d, seq = len(Q[0]), len(Q)
    dh = d // n_heads
    if whole_width:  # the mistake: rotate the whole d_model-wide rows, frequencies base^(−2i/d_model)
        Q, K = rope(Q, start, base), rope(K, start, base)
    merged = [[0.0] * d for _ in range(seq)]
    for h in range(n_heads):
        cols = range(h * dh, (h + 1) * dh)
        q, k, v = ([[row[c] for c in cols] for row in M] for M in (Q, K, V))
        if rotate and not whole_width:
            q, k = rope(q, start, base), rope(k, start, base)
        if rotate_v:
            v = rope(v, start, base)
        for i in range(seq):
            scale = math.sqrt(d if scale_d_model else dh)
            seen = i + 1 if causal else seq  # causal: j ≤ i
            scores = [sum(q[i][t] * k[j][t] for t in range(dh)) / scale for j in range(seen)]
            top = max(s.real for s in scores)  # a constant shift: softmax does not change
            e = [cmath.exp(s - top) for s in scores]
            total = sum(e)
            for t, c in enumerate(cols):
                merged[i][c] = sum(e[j] / total * v[j][t] for j in range(seen))
    return matmul(merged, WO)


def c_swiglu(X, Wg, Wu, Wd):
    """(SiLU(X Wg) ⊙ X Wu) Wd, for complex entries too."""
    a, b = matmul(X, Wg), matmul(X, Wu)
    h = [[p / (1 + cmath.exp(-p)) * q for p, q in zip(ra, rb, strict=True)] for ra, rb in zip(a, b, strict=True)]
    return matmul(h, Wd)


def block(X, P, n_heads, post_norm=False, residual=True, residual2=True, norm1=True, onto_norm=False, **attention):
    """x₁ = x + A(RMSNorm(x)); y = x₁ + F(RMSNorm(x₁)); or one of the mistakes the flags name.

    post_norm; no residuals (residual), the second only (residual2); no first RMSNorm (norm1); A added to the
    normalised copy instead of the stream (onto_norm).
    """
    if post_norm:  # the mistake: the norm after each residual addition
        x1 = c_rms_norm(add(X, mha(X, P["WQ"], P["WK"], P["WV"], P["WO"], n_heads, **attention)), P["g1"])
        return c_rms_norm(add(x1, c_swiglu(x1, P["W_gate"], P["W_up"], P["W_down"])), P["g2"])
    h1 = c_rms_norm(X, P["g1"]) if norm1 else X
    a = mha(h1, P["WQ"], P["WK"], P["WV"], P["WO"], n_heads, **attention)
    x1 = add(h1 if onto_norm else X, a) if residual else a
    f = c_swiglu(c_rms_norm(x1, P["g2"]), P["W_gate"], P["W_up"], P["W_down"])
    return add(x1, f) if residual and residual2 else f


def vjp(f, X, D):
    """The gradient of Σ D ⊙ f(X) with respect to X, by the complex step, one entry of X at a time."""
    grad = [[0.0] * len(X[0]) for _ in X]
    for i in range(len(X)):
        for j in range(len(X[0])):
            Xc = [[complex(v) for v in row] for row in X]
            Xc[i][j] += 1j * H
            Y = f(Xc)
            grad[i][j] = sum(D[a][b] * Y[a][b] for a in range(len(Y)) for b in range(len(Y[0]))).imag / H
    return grad


def real(M):
    """Real parts of a matrix (the forward passes above return complex numbers)."""
    return [[complex(v).real for v in row] for row in M]


# -- the worksheet ------------------------------------------------------------------------------------------
X1 = [[1.0, 2.0, 2.0, 4.0], [2.0, -2.0, 2.0, -2.0]]
G1 = [1.0, 0.5, 2.0, 1.0]
# 13.2 and 13.3 pass eps = 0.25 (not the default): a learner's rms_norm or rms_norm_backward that ignores its eps
# argument shows on the worksheet, and ε changes printed digits while every root stays one to take by hand
EPS_WS = 0.25
X2 = [[0.5, 0.5, -0.5, -0.5]]  # mean square 0.25 = ε
G2 = [1.0, 1.0, 1.0, 1.0]
X3, D3 = [[2.0, 4.0, 2.0, 0.0]], [[0.0, 1.0, 0.0, 0.0]]  # mean square 6, + ε = 6.25: r = 2.5
Z = [-2.0, -1.0, 0.0, 1.0, 2.0]
D5 = [2.0, 1.0, 1.0, 1.0, 0.5]  # not all ones: a slope that leaves d_out out shows
XS = [[1.0, -1.0], [2.0, 1.0]]
W_GATE = [[1.0, 0.0, 1.0], [0.0, 1.0, -1.0]]
W_UP = [[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]
W_DOWN = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
DS = [[1.0, 0.0], [0.0, 1.0]]


def audit() -> dict[str, dict]:
    """Every step: its inputs, its exact value and the value of every mistake the key names."""
    sw = {"x": XS, "W_gate": W_GATE, "W_up": W_UP, "W_down": W_DOWN}
    return {**pieces(sw), **block_steps()}


def pieces(sw: dict) -> dict[str, dict]:
    """Steps 13.1–13.7: RMSNorm, SiLU and SwiGLU."""
    return {
        "13.1": {"inputs": {"x": X1, "g": G1}, "exact": rms_norm(X1, G1), "mistakes": {
            "the mean subtracted first: that is LayerNorm (with β = 0), not RMSNorm": rms_norm(X1, G1, centre=True),
            "the gain g left out": rms_norm(X1, G1, gain=False),
            "one root mean square for the whole array instead of one per row":
                [[G1[i] * v / rms([w for r in X1 for w in r]) for i, v in enumerate(row)] for row in X1],
            "normalised over the wrong axis: each feature's root mean square down the rows (axis 0), not each "
            "row's": [[G1[i] * v / rms([r[i] for r in X1]) for i, v in enumerate(row)] for row in X1],
        }},
        "13.2": {"inputs": {"x": X2, "g": G2, "eps": EPS_WS}, "exact": rms_norm(X2, G2, EPS_WS), "mistakes": {
            "ε added outside the square root (to the root mean square instead of the mean square)":
                rms_norm(X2, G2, EPS_WS, outside=True),
            "ε left out: every row would come out with root mean square exactly 1":
                rms_norm(X2, G2, eps=0.0),
            "the eps argument was ignored (the default 10⁻⁶ used instead of 0.25)": rms_norm(X2, G2),
        }},
        "13.3": {"inputs": {"x": X3, "g": G1, "d_out": D3, "eps": EPS_WS}, "exact": rms_norm_dx(X3, G1, D3, EPS_WS),
                 "mistakes": {
            "only the direct path g·d_out/r: r also depends on x":
                rms_norm_dx(X3, G1, D3, EPS_WS, direct_only=True),
            "the gain g left out of the backward": rms_norm_dx(X3, G1, D3, EPS_WS, gain=False),
            "LayerNorm's backward (a mean path RMSNorm does not have)": rms_norm_dx(X3, G1, D3, EPS_WS, centre=True),
            "the eps argument was ignored (the default 10⁻⁶ used instead of 0.25)": rms_norm_dx(X3, G1, D3),
        }},
        "13.4": {"inputs": {"x": Z}, "exact": [silu(v) for v in Z], "mistakes": {
            "the sigmoid σ(x) alone, not x·σ(x)": [sigmoid(v) for v in Z],
            "ReLU instead of SiLU": [max(v, 0.0) for v in Z],
        }},
        "13.5": {"inputs": {"x": Z, "d_out": D5}, "exact": [d * silu_slope(v) for v, d in zip(Z, D5, strict=True)],
                 "mistakes": {
            "σ(x) only: the product rule's second term left out":
                [d * sigmoid(v) for v, d in zip(Z, D5, strict=True)],
            "the sigmoid's own slope σ(x)(1 − σ(x))":
                [d * sigmoid(v) * (1 - sigmoid(v)) for v, d in zip(Z, D5, strict=True)],
            "SiLU itself instead of its slope": [d * silu(v) for v, d in zip(Z, D5, strict=True)],
            "d_out left out: SiLU's slope returned as it is": [silu_slope(v) for v in Z],
        }},
        "13.6": {"inputs": sw, "exact": swiglu(XS, W_GATE, W_UP, W_DOWN), "mistakes": {
            "the gate on the wrong branch: SiLU(x W_up) ⊙ x W_gate": swiglu(XS, W_GATE, W_UP, W_DOWN, gate_on_up=True),
            "no gate: SiLU(x W_gate) W_down (the up branch left out)":
                matmul([[silu(v) for v in row] for row in matmul(XS, W_GATE)], W_DOWN),
            "SiLU of the product: SiLU(x W_gate ⊙ x W_up) instead of SiLU(x W_gate) ⊙ x W_up": matmul(
                [[silu(p * q) for p, q in zip(ra, rb, strict=True)]
                 for ra, rb in zip(matmul(XS, W_GATE), matmul(XS, W_UP), strict=True)], W_DOWN),
        }},
        "13.7": {"inputs": {**sw, "d_out": DS}, "exact": swiglu_dx(XS, W_GATE, W_UP, W_DOWN, DS), "mistakes": {
            "σ(a) as SiLU's slope: the product rule's second term left out":
                swiglu_dx(XS, W_GATE, W_UP, W_DOWN, DS, no_product_rule=True),
            "the up branch's gradient not multiplied by the gate SiLU(a)":
                swiglu_dx(XS, W_GATE, W_UP, W_DOWN, DS, ungated_up=True),
            "d_out left out of silu_backward: SiLU's slope alone taken as da":
                swiglu_dx(XS, W_GATE, W_UP, W_DOWN, DS, slope_only=True),
            "only the gate branch: x also feeds W_up": matmul(
                [[dh * b * silu_slope(a) for dh, b, a in zip(rdh, rb, ra, strict=True)]
                 for rdh, rb, ra in zip(matmul(DS, transpose(W_DOWN)), matmul(XS, W_UP), matmul(XS, W_GATE),
                                        strict=True)], transpose(W_GATE)),
        }},
    }


I4 = [[1.0 if i == j else 0.0 for j in range(4)] for i in range(4)]
XB = [[2.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [1.0, -1.0, -1.0, 1.0]]  # every row: root mean square 1
# the block's stream (13.9, 13.13): 2·XB, rows of root mean square 2 that RMSNorm₁ brings back to XB (to within
# ε), so step 13.8's attention is the block's first branch, and a block that skips RMSNorm₁ or adds the
# attention to the normalised copy instead of the stream shows on the worksheet
XBLOCK = [[2.0 * v for v in row] for row in XB]
ATTENTION = {"WQ": I4, "WK": I4, "WV": I4, "WO": [[0.5 * v for v in row] for row in I4]}
SWAP = [[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0]]
# g2 differs from g1, so a block that reads g1 in both norms, or swaps them, shows on the worksheet; its first
# entry is 1, so row 0 still gates [2, 0, 0, 0]
BLOCK = {"g1": [1.0] * 4, **ATTENTION, "g2": [1.0, 0.5, 2.0, 1.0], "W_gate": I4, "W_up": SWAP,
         "W_down": [[0.5 * v for v in row] for row in I4]}
DB = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]
N_HEADS = 2
# the by-hand sub-steps (13.10, 13.12): one head, all weights identities (W_O = I for the attention, 0.5·I in the
# block, W_down = 0.5·I). The attention (13.10): two positions, one head of width 4 at base 100, so its second pair
# turns by 100^(−2/4) = 0.1 radian per position and a base ignored (or not passed on to rope_backward) shows; the
# block (13.12): one position, d_model 2
I2 = [[1.0, 0.0], [0.0, 1.0]]
HALF = [[0.5, 0.0], [0.0, 0.5]]
BASE_SMALL = 100.0
X_SMALL, D_SMALL = [[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]], [[0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]
ATTENTION_SMALL = {"WQ": I4, "WK": I4, "WV": I4, "WO": I4}
X_ONE, D_ONE = [[1.0, 1.0]], [[1.0, 0.0]]
BLOCK_SMALL = {"g1": [1.0, 1.0], "WQ": I2, "WK": I2, "WV": I2, "WO": HALF, "g2": [1.0, 1.0], "W_gate": I2,
               "W_up": I2, "W_down": HALF}


def attention_backward(X, A, n_heads, D, base=10000.0) -> dict:
    """The dx of Σ D ⊙ Attention(X), and the values its rotation mistakes give (W_Q = W_K = W_V = I: Q = K = V = x)."""
    W = [A[k] for k in ("WQ", "WK", "WV", "WO")]

    def attention(Y):
        return mha(Y, *W, n_heads, base=base)

    # The gradients reaching the rotated queries and keys: a learner who forgets to rotate them back gets these
    # as dQ and dK. Rotated back, they add up to the exact dx.
    Qr = Kr = by_heads(X, n_heads, base=base)

    def core(Q, K, V):
        return attend(Q, K, V, A["WO"], n_heads, rotate=False)

    dQr, dKr, dV = vjp(lambda Q: core(Q, Kr, X), Qr, D), vjp(lambda K: core(Qr, K, X), Kr, D), vjp(
        lambda V: core(Qr, Kr, V), X, D)
    back = by_heads(dQr, n_heads, -1, base), by_heads(dKr, n_heads, -1, base)  # dQ and dK, turned back
    mistakes = {
        "the rotation not undone: the gradients of the rotated queries and keys used as dQ and dK":
            add(add(dQr, dKr), dV),
        "the rotation applied again instead of undone (rope instead of rope_backward)":
            add(add(by_heads(dQr, n_heads, base=base), by_heads(dKr, n_heads, base=base)), dV),
        "the rotation not undone for the queries' gradient (dK turned back, dQ not)": add(add(dQr, back[1]), dV),
        "the rotation not undone for the keys' gradient (dQ turned back, dK not)": add(add(back[0], dKr), dV),
        "the values' gradient turned back too (V was never rotated)":
            add(add(*back), by_heads(dV, n_heads, -1, base)),
    }
    if base != 10000.0:  # turned back at rope_backward's default base instead of the forward's
        mistakes["the base not passed on to rope_backward (turned back at its default 10000)"] = add(
            add(by_heads(dQr, n_heads, -1), by_heads(dKr, n_heads, -1)), dV)
    return {"exact": vjp(attention, X, D), "mistakes": mistakes}


BRANCH_ONLY = ("only the branch part of dx₁ fed into the attention's backward: dx₁ must be whole (d_y and the "
               "SwiGLU branch's part) before it goes in")


def block_backward(X, P, n_heads, D) -> dict:
    """The dx of Σ D ⊙ Block(X), and the values the residual forks' mistakes give."""
    W = [P[k] for k in ("WQ", "WK", "WV", "WO")]

    def attention(Y):
        return mha(Y, *W, n_heads)

    def sub_attention(Y):  # x ↦ A(RMSNorm(x)): the attention path of the block, without its residual
        return attention(c_rms_norm(Y, P["g1"]))

    def sub_ffn(Y):  # x₁ ↦ F(RMSNorm(x₁))
        return c_swiglu(c_rms_norm(Y, P["g2"]), P["W_gate"], P["W_up"], P["W_down"])

    x1 = real(add(X, sub_attention(X)))
    dx1_ffn = vjp(sub_ffn, x1, D)  # the gradient reaching x₁ through RMSNorm₂ and SwiGLU only
    dx1 = add(D, dx1_ffn)
    h1 = real(c_rms_norm(X, P["g1"]))  # what the block's attention reads
    return {"exact": vjp(lambda Y: block(Y, P, n_heads), X, D), "mistakes": {
        "the residual path missing from the backward (dx = only the gradient through RMSNorm₁ and attention)":
            vjp(sub_attention, X, dx1),
        "the residual path missing from the backward (dx₁ = only the gradient through RMSNorm₂ and SwiGLU)":
            add(dx1_ffn, vjp(sub_attention, X, dx1_ffn)),
        "the residual path missing from the backward (both residual paths dropped)": vjp(sub_attention, X, dx1_ffn),
        "only d_y sent back into the attention branch: its gradient is dx₁ (d_y and the SwiGLU branch's part)":
            add(dx1, vjp(sub_attention, X, D)),
        "RMSNorm₁ skipped on the way back: the attention's dx added as it is": add(dx1, vjp(attention, h1, dx1)),
        BRANCH_ONLY: add(dx1, vjp(sub_attention, X, dx1_ffn)),
    }}


def block_steps() -> dict[str, dict]:
    """Steps 13.8–13.13: rotary multi-head attention and the pre-norm block, forward and backward.

    Each backward comes twice: first a small case to work by hand (13.10, 13.12), then the worksheet's (13.11,
    13.13).
    """
    W = [ATTENTION[k] for k in ("WQ", "WK", "WV", "WO")]

    def attention(X, **flags):
        return mha(X, *W, N_HEADS, **flags)

    params = {"x": XB, **ATTENTION}
    small = [ATTENTION_SMALL[k] for k in ("WQ", "WK", "WV", "WO")]
    swapped = {**BLOCK, "g1": BLOCK["g2"], "g2": BLOCK["g1"]}
    return {
        "13.8": {"inputs": params, "exact": real(attention(XB)), "mistakes": {
            "RoPE applied to the values too": real(attention(XB, rotate_v=True)),
            "no RoPE: the heads attend by content alone": real(attention(XB, rotate=False)),
            "RoPE over the whole d_model row before splitting into heads (frequencies of the wrong width)":
                real(attention(XB, whole_width=True)),
            "scaled by √d_model instead of √d_head": real(attention(XB, scale_d_model=True)),
            "the mask left out: positions read the future": real(attention(XB, causal=False)),
        }},
        "13.9": {"inputs": {"x": XBLOCK, "params": BLOCK}, "exact": real(block(XBLOCK, BLOCK, N_HEADS)),
                 "mistakes": {
            "post-norm (the norm after each residual) instead of pre-norm":
                real(block(XBLOCK, BLOCK, N_HEADS, post_norm=True)),
            "no residual connections: y = F(RMSNorm(A(RMSNorm(x))))":
                real(block(XBLOCK, BLOCK, N_HEADS, residual=False)),
            "no RoPE in the block's attention": real(block(XBLOCK, BLOCK, N_HEADS, rotate=False)),
            "the second residual left out: y = SwiGLU(RMSNorm(x₁)) without x₁":
                real(block(XBLOCK, BLOCK, N_HEADS, residual2=False)),
            "the first RMSNorm left out: the attention read the raw stream x":
                real(block(XBLOCK, BLOCK, N_HEADS, norm1=False)),
            "the attention added to the normalised copy instead of the stream: x₁ = RMSNorm(x) + A(RMSNorm(x))":
                real(block(XBLOCK, BLOCK, N_HEADS, onto_norm=True)),
            "g1 used in the second RMSNorm too (g2 never read)":
                real(block(XBLOCK, {**BLOCK, "g2": BLOCK["g1"]}, N_HEADS)),
            "g1 and g2 swapped: g2 in the first RMSNorm, g1 in the second": real(block(XBLOCK, swapped, N_HEADS)),
        }},
        "13.10": {"inputs": {"x": X_SMALL, **ATTENTION_SMALL, "n_heads": 1, "base": BASE_SMALL, "d_out": D_SMALL},
                  **attention_backward(X_SMALL, ATTENTION_SMALL, 1, D_SMALL, BASE_SMALL)},
        # the forward pass of 13.10's case (step 13.8's third hint works it): the audit's own, printed for the hint
        "_13.10 forward": {"exact": real(mha(X_SMALL, *small, 1, base=BASE_SMALL)), "mistakes": {
            "the base argument ignored (10000 used)": real(mha(X_SMALL, *small, 1))}},
        "13.11": {"inputs": {**params, "d_out": DB}, **attention_backward(XB, ATTENTION, N_HEADS, DB)},
        "13.12": {"inputs": {"x": X_ONE, "params": BLOCK_SMALL, "n_heads": 1, "d_y": D_ONE},
                  **block_backward(X_ONE, BLOCK_SMALL, 1, D_ONE)},
        "13.13": {"inputs": {"x": XBLOCK, "params": BLOCK, "d_y": DB}, **block_backward(XBLOCK, BLOCK, N_HEADS, DB)},
    }


def printed(value):
    """The exact value as the worksheet prints it: four decimals, and never "-0.0000"."""
    if isinstance(value, list):
        return [printed(v) for v in value]
    text = f"{value:.{DIGITS}f}"
    return text[1:] if text == "-" + f"{0:.{DIGITS}f}" else text
