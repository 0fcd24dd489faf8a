"""Audit chapter 11's worksheet: every exact value and every named mistake, in plain NumPy, from first principles.

Independent of ``solutions/`` and of ``kata/``: each head is cut out of the projections by explicit column
slices, its scores and softmax are written out with loops over positions, and the backward pass is the chain
rule written entry by entry for the one softmax row at a time. ``python scripts/audit_chapter11.py`` prints
the values for ``reference/chapter11_multi_head_attention.toml`` (``repr`` precision and the 4-decimal
printed strings); ``tests/test_audit_chapter11.py`` runs ``audit()`` and checks the key holds the same.
"""

from __future__ import annotations

import math
import sys

import numpy as np

# -- the worksheet: three tokens A B C, d_model 4, two heads of d_head 2 ---------------------------------
X = np.array([[1.0, 0.0, 0.0, 1.0],   # A
              [0.0, 2.0, 1.0, 0.0],   # B
              [0.0, 1.0, 0.0, 2.0]])  # C
SWAP = np.array([[0.0, 1.0], [1.0, 0.0]])
ZERO = np.zeros((2, 2))
WQ = 2.0 * np.block([[SWAP, ZERO], [ZERO, SWAP]])  # each head's query looks for the OTHER feature of its pair
WK = np.eye(4)
WV = np.eye(4)
WO = 0.5 * np.array([[1.0, 0.0, 1.0, 0.0],
                     [0.0, 1.0, 0.0, 1.0],
                     [1.0, 0.0, -1.0, 0.0],
                     [0.0, 1.0, 0.0, -1.0]])  # first half: the heads' average; second half: half their difference
D_OUT = np.array([[0.0, 0.0, 0.0, 0.0],
                  [0.0, 0.0, 0.0, 0.0],
                  [1.0, 0.0, 0.0, 0.0]])  # the loss reads C's first output feature only
N_HEADS = 2


def matmul(A, B):
    """A @ B by the definition (sums of products), so nothing of NumPy's stands between us and the numbers."""
    A, B = np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64)
    return np.array([[math.fsum(A[i, k] * B[k, j] for k in range(A.shape[1])) for j in range(B.shape[1])]
                     for i in range(A.shape[0])])


def heads_of(M, n_heads):
    """Head h = columns h*d_head:(h+1)*d_head, by explicit slices."""
    d_head = M.shape[1] // n_heads
    return [M[:, h * d_head:(h + 1) * d_head].copy() for h in range(n_heads)]


def side_by_side(heads):
    """The heads' columns next to each other again."""
    return np.hstack(heads)


def softmax_row(scores, allowed):
    """One softmax row over the allowed positions; the others get exactly 0."""
    top = max(s for s, a in zip(scores, allowed, strict=True) if a)
    e = [math.exp(s - top) if a else 0.0 for s, a in zip(scores, allowed, strict=True)]
    total = math.fsum(e)
    return [v / total for v in e]


def attend(q, k, v, scale, causal=True):
    """One head: weights (seq, seq) and output (seq, d_v), row by row."""
    n = len(q)
    P = np.zeros((n, n))
    for i in range(n):
        scores = [math.fsum(q[i, d] * k[j, d] for d in range(q.shape[1])) / scale for j in range(n)]
        P[i] = softmax_row(scores, [j <= i or not causal for j in range(n)])
    return P, matmul(P, v)


def forward(x, WQ, WK, WV, WO, n_heads, *, scale=None, masked_heads=None, use_WO=True):
    """Multi-head attention with knobs for the classic mistakes; returns every intermediate."""
    d_model = x.shape[1]
    d_head = d_model // n_heads
    Q, K, V = matmul(x, WQ), matmul(x, WK), matmul(x, WV)
    Qh, Kh, Vh = heads_of(Q, n_heads), heads_of(K, n_heads), heads_of(V, n_heads)
    Ps, outs = [], []
    for h in range(n_heads):
        causal = masked_heads is None or h in masked_heads
        P, o = attend(Qh[h], Kh[h], Vh[h], math.sqrt(d_head) if scale is None else scale, causal)
        Ps.append(P)
        outs.append(o)
    merged = side_by_side(outs)
    out = matmul(merged, WO) if use_WO else merged
    return {"Q": Q, "K": K, "V": V, "Qh": Qh, "Kh": Kh, "Vh": Vh, "P": Ps, "heads": outs, "merged": merged,
            "out": out}


def sequence_split(x, WQ, WK, WV, WO, n_heads):
    """The mistake: heads cut along the positions (np.array_split of the rows), every feature in each."""
    Q, K, V = matmul(x, WQ), matmul(x, WK), matmul(x, WV)
    chunks = np.array_split(np.arange(len(x)), n_heads)
    rows = []
    for c in chunks:
        _, o = attend(Q[c], K[c], V[c], math.sqrt(x.shape[1]))
        rows.append(o)
    return matmul(np.vstack(rows), WO)


def reshape_split(x, WQ, WK, WV, WO, n_heads):
    """The mistake: each projection cut by a reshape straight to (n_heads, seq, d_head), no transpose."""
    seq, d_model = x.shape
    d_head = d_model // n_heads
    cut = [matmul(x, W).reshape(n_heads, seq, d_head) for W in (WQ, WK, WV)]
    outs = [attend(cut[0][h], cut[1][h], cut[2][h], math.sqrt(d_head))[1] for h in range(n_heads)]
    return matmul(side_by_side(outs), WO)


def backward(f, d_out, x, WQ, WK, WV, WO, n_heads, *, scale=None, through_WO=True):
    """The chain rule, entry by entry: dWO, dWQ, dWK, dWV and dx."""
    d_head = x.shape[1] // n_heads
    scale = math.sqrt(d_head) if scale is None else scale
    dWO = matmul(f["merged"].T, d_out)
    d_merged = matmul(d_out, WO.T) if through_WO else d_out
    d_heads = heads_of(d_merged, n_heads)
    dQh, dKh, dVh = [], [], []
    for h in range(n_heads):
        P, q, k, v, g = f["P"][h], f["Qh"][h], f["Kh"][h], f["Vh"][h], d_heads[h]
        n = len(P)
        dV = matmul(P.T, g)
        dP = matmul(g, v.T)
        dS = np.zeros((n, n))
        for i in range(n):  # softmax backward, one row: dS_ij = P_ij (dP_ij − Σ_k P_ik dP_ik)
            avg = math.fsum(P[i, j] * dP[i, j] for j in range(n))
            for j in range(n):
                dS[i, j] = P[i, j] * (dP[i, j] - avg) / scale
        dQh.append(matmul(dS, k))
        dKh.append(matmul(dS.T, q))
        dVh.append(dV)
    dQ, dK, dV = side_by_side(dQh), side_by_side(dKh), side_by_side(dVh)
    dx = matmul(dQ, WQ.T) + matmul(dK, WK.T) + matmul(dV, WV.T)
    return {"WO": dWO, "WQ": matmul(x.T, dQ), "WK": matmul(x.T, dK), "WV": matmul(x.T, dV), "x": dx,
            "dx_value_path": matmul(dV, WV.T)}


def audit() -> dict[str, dict]:
    """Every step's exact value and the values of its named mistakes, keyed by step id."""
    args = (X, WQ, WK, WV, WO, N_HEADS)
    f = forward(*args)
    root_d_model = math.sqrt(X.shape[1])
    wide = forward(*args, scale=root_d_model)
    one_mask = forward(*args, masked_heads={0})
    no_mask = forward(*args, masked_heads=set())
    no_WO = forward(*args, use_WO=False)
    Q = f["Q"]
    steps = {}
    steps["11.1"] = {"X": Q, "exact": np.stack(heads_of(Q, N_HEADS)),
                     "mistakes": {"reshape": Q.reshape(2, 3, 2),
                                  "interleaved": np.stack([Q[:, h::N_HEADS] for h in range(N_HEADS)])}}
    Qh, Kh, Vh = np.stack(f["Qh"]), np.stack(f["Kh"]), np.stack(f["Vh"])
    steps["11.2"] = {"Qh": Qh, "Kh": Kh, "Vh": Vh, "exact": np.stack(f["P"]),
                     "mistakes": {"d_model": np.stack(wide["P"]), "one_mask": np.stack(one_mask["P"]),
                                  "no_mask": np.stack(no_mask["P"])}}
    steps["11.3"] = {"exact": np.stack(f["heads"]),
                     "mistakes": {"d_model": np.stack(wide["heads"]), "one_mask": np.stack(one_mask["heads"]),
                                  "no_mask": np.stack(no_mask["heads"])}}
    H = np.stack(f["heads"])
    steps["11.4"] = {"H": H, "exact": f["merged"], "mistakes": {"reshape": H.reshape(3, 4)}}
    steps["11.5"] = {"exact": f["out"],
                     "mistakes": {"no_WO": no_WO["out"], "d_model": wide["out"], "one_mask": one_mask["out"],
                                  "no_mask": no_mask["out"],
                                  "sequence": sequence_split(*args),
                                  "split_reshape": reshape_split(*args),
                                  "merge_reshape": matmul(np.stack(f["heads"]).reshape(3, 4), WO)}}
    g = backward(f, D_OUT, *args)
    g_wide = backward(wide, D_OUT, *args, scale=root_d_model)  # √d_model in both passes: the forward mistake
    g_back = backward(f, D_OUT, *args, scale=root_d_model)  # right forward, √d_model only on the way back
    g_noWO = backward(f, D_OUT, *args, through_WO=False)
    steps["11.6"] = {"exact": g["WO"], "mistakes": {"transposed": matmul(D_OUT.T, f["merged"])}}
    steps["11.7"] = {"exact": g["WV"], "mistakes": {"no_WO_T": g_noWO["WV"], "d_model": g_wide["WV"]}}
    steps["11.8"] = {"exact": g["x"], "mistakes": {"value_only": g["dx_value_path"], "no_WO_T": g_noWO["x"],
                                                  "back_d_model": g_back["x"]}}
    steps["_other"] = {"WQ": g["WQ"], "WK": g["WK"]}
    return steps


def printed(a, decimals=4):
    """Strings as the page prints them: rounded half away from zero, '-0.0000' written as '0.0000'."""
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 0:
        s = f"{float(a):.{decimals}f}"
        return "0." + "0" * decimals if float(s) == 0 else s
    return [printed(v, decimals) for v in a]


def main() -> int:
    """Print every step's inputs, exact value, printed strings and mistakes."""
    for sid, step in audit().items():
        print(f"[{sid}]")
        for key, value in step.items():
            if key == "mistakes":
                for name, v in value.items():
                    print(f"  mistake {name} = {np.asarray(v).tolist()!r}")
            else:
                print(f"  {key} = {np.asarray(value).tolist()!r}")
            if key == "exact":
                print(f"  printed = {printed(value)}".replace("'", '"'))
    return 0


if __name__ == "__main__":
    sys.exit(main())
