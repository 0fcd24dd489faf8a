"""Audit chapter 11's worksheet: every exact value and every named mistake, in plain NumPy, from first principles.

Independent of ``solutions/`` (``kata/authoring/audit.py`` only compares): each head is cut out of the
projections by explicit column slices, its scores and softmax are written out with loops over positions, and
the backward pass is the chain rule written entry by entry for the one softmax row at a time.
Run by ``python -m kata.authoring.audit 11``, which prints every step; its ``--check`` compares with the key.
"""

from __future__ import annotations

import math

import numpy as np

# -- the worksheet: three tokens A B C, d_model 4, two heads of d_head 2 ---------------------------------
X = np.array([[0.0, 1.0, 0.0, 1.0],   # A
              [1.0, 0.0, 2.0, 0.0],   # B
              [0.0, 2.0, 1.0, 0.0]])  # C
# W_K = W_V reorder x's features to (x3, x2, x0, x1); W_Q reorders them to (x2, x3, x1, x0) and doubles them, so
# in each head the query holds the key's two features swapped: it looks for the OTHER feature of its pair.
# None of the three is symmetric, so a projection transposed (x Wᵀ) shows on the worksheet.
WK = np.array([[0.0, 0.0, 1.0, 0.0],
               [0.0, 0.0, 0.0, 1.0],
               [0.0, 1.0, 0.0, 0.0],
               [1.0, 0.0, 0.0, 0.0]])
WV = WK.copy()
WQ = 2.0 * np.array([[0.0, 0.0, 0.0, 1.0],
                     [0.0, 0.0, 1.0, 0.0],
                     [1.0, 0.0, 0.0, 0.0],
                     [0.0, 1.0, 0.0, 0.0]])
WO = np.array([[0.5, 0.0, -1.0, 0.0],
               [0.0, 0.5, 0.0, -1.0],
               [0.5, 0.0, 1.0, 0.0],
               [0.0, 0.5, 0.0, 1.0]])  # first half: the heads' average; second half: head 1 minus head 0
# W_O is not symmetric, so a W_O transposed (forward or backward) shows on the worksheet
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


def softmax_row(scores, allowed, mask="add"):
    """One softmax row over the allowed positions; the others get exactly 0.

    ``mask`` names how the causal mask is applied: "add" (−∞ where not allowed: right), or the mistakes
    "multiply" (the scores times the 0/1 mask, then a softmax over every position) and "after" (a softmax
    over every position, then the weights times the mask, rows no longer summing to 1).
    """
    if mask == "multiply":
        scores, allowed = [s * a for s, a in zip(scores, allowed, strict=True)], [True] * len(scores)
    keep = allowed
    if mask == "after":
        allowed = [True] * len(scores)
    top = max(s for s, a in zip(scores, allowed, strict=True) if a)
    e = [math.exp(s - top) if a else 0.0 for s, a in zip(scores, allowed, strict=True)]
    total = math.fsum(e)
    return [v / total if k else 0.0 for v, k in zip(e, keep, strict=True)]


def attend(q, k, v, scale, causal=True, mask="add"):
    """One head: weights (seq, seq) and output (seq, d_v), row by row."""
    n = len(q)
    P = np.zeros((n, n))
    for i in range(n):
        scores = [math.fsum(q[i, d] * k[j, d] for d in range(q.shape[1])) / scale for j in range(n)]
        P[i] = softmax_row(scores, [j <= i or not causal for j in range(n)], mask)
    return P, matmul(P, v)


def forward(x, WQ, WK, WV, WO, n_heads, *, scale=None, masked_heads=None, use_WO=True, mask="add",
            projections_T=False):
    """Multi-head attention with knobs for the classic mistakes; returns every intermediate.

    ``projections_T``: the mistake x W_Qᵀ, x W_Kᵀ, x W_Vᵀ (each weight's rows read as its columns).
    """
    d_model = x.shape[1]
    d_head = d_model // n_heads
    if projections_T:
        WQ, WK, WV = WQ.T, WK.T, WV.T
    Q, K, V = matmul(x, WQ), matmul(x, WK), matmul(x, WV)
    Qh, Kh, Vh = heads_of(Q, n_heads), heads_of(K, n_heads), heads_of(V, n_heads)
    Ps, outs = [], []
    for h in range(n_heads):
        causal = masked_heads is None or h in masked_heads
        P, o = attend(Qh[h], Kh[h], Vh[h], math.sqrt(d_head) if scale is None else scale, causal, mask)
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


def backward(f, d_out, x, WQ, WK, WV, WO, n_heads, *, scale=None, through_WO=True, WO_T=True, cut="columns",
             reverse_merge=False, swap_qk=False, qk_args=False, proj_T=True):
    """The chain rule, entry by entry: dWO, dWQ, dWK, dWV and dx; the knobs plant the classic mistakes.

    ``WO_T=False``: d merged = d_out W_O (the transpose forgotten); ``cut="reshape"``: d merged cut into heads by
    a reshape straight to (n_heads, seq, d_head); ``reverse_merge``: dQ, dK and dV put together head 1 first;
    ``swap_qk``: the query path's gradient sent through W_K and the key path's through W_Q; ``qk_args``: each
    head's queries and keys handed to chapter 7's attention backward the wrong way round, so its query gradient
    comes out as dS q_h and its key gradient as dSᵀ k_h (each head's own queries and keys); ``proj_T=False``:
    dx = dQ W_Q + dK W_K + dV W_V (the projections' transposes forgotten).
    """
    d_head = x.shape[1] // n_heads
    scale = math.sqrt(d_head) if scale is None else scale
    dWO = matmul(f["merged"].T, d_out)
    d_merged = (matmul(d_out, WO.T) if WO_T else matmul(d_out, WO)) if through_WO else d_out
    if cut == "reshape":
        d_heads = list(d_merged.reshape(n_heads, x.shape[0], d_head))
    else:
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
        dQh.append(matmul(dS, q if qk_args else k))
        dKh.append(matmul(dS.T, k if qk_args else q))
        dVh.append(dV)
    if reverse_merge:
        dQh, dKh, dVh = dQh[::-1], dKh[::-1], dVh[::-1]
    dQ, dK, dV = side_by_side(dQh), side_by_side(dKh), side_by_side(dVh)
    if swap_qk:
        dQ, dK = dK, dQ
    if not proj_T:
        WQ, WK, WV = WQ.T, WK.T, WV.T
    dx = matmul(dQ, WQ.T) + matmul(dK, WK.T) + matmul(dV, WV.T)
    return {"WO": dWO, "WQ": matmul(x.T, dQ), "WK": matmul(x.T, dK), "WV": matmul(x.T, dV), "x": dx,
            "dx_value_path": matmul(dV, WV.T)}


def computed() -> dict[str, dict]:
    """Every step's exact value, its own inputs and the values of its mistakes by the audit's labels."""
    args = (X, WQ, WK, WV, WO, N_HEADS)
    f = forward(*args)
    root_d_model = math.sqrt(X.shape[1])
    wide = forward(*args, scale=root_d_model)
    one_mask = forward(*args, masked_heads={0})
    no_mask = forward(*args, masked_heads=set())
    no_WO = forward(*args, use_WO=False)
    times_mask = forward(*args, mask="multiply")
    after_mask = forward(*args, mask="after")
    Q = f["Q"]
    steps = {}
    steps["11.1"] = {"X": Q, "exact": np.stack(heads_of(Q, N_HEADS)),
                     "mistakes": {"reshape": Q.reshape(2, 3, 2),
                                  "interleaved": np.stack([Q[:, h::N_HEADS] for h in range(N_HEADS)]),
                                  "reversed": np.stack(heads_of(Q, N_HEADS)[::-1])}}
    Qh, Kh, Vh = np.stack(f["Qh"]), np.stack(f["Kh"]), np.stack(f["Vh"])
    steps["11.2"] = {"Qh": Qh, "Kh": Kh, "Vh": Vh, "exact": np.stack(f["P"]),
                     "mistakes": {"d_model": np.stack(wide["P"]), "one_mask": np.stack(one_mask["P"]),
                                  "no_mask": np.stack(no_mask["P"]), "times_mask": np.stack(times_mask["P"]),
                                  "after_mask": np.stack(after_mask["P"])}}
    steps["11.3"] = {"exact": np.stack(f["heads"]),
                     "mistakes": {"d_model": np.stack(wide["heads"]), "one_mask": np.stack(one_mask["heads"]),
                                  "no_mask": np.stack(no_mask["heads"]), "times_mask": np.stack(times_mask["heads"]),
                                  "after_mask": np.stack(after_mask["heads"])}}
    H = np.stack(f["heads"])
    steps["11.4"] = {"H": H, "exact": f["merged"],
                     "mistakes": {"reshape": H.reshape(3, 4), "reversed": side_by_side(list(H[::-1])),
                                  "interleaved": np.array([[H[h, i, j] for j in range(2) for h in range(2)]
                                                           for i in range(3)])}}
    steps["11.5"] = {"exact": f["out"],
                     "mistakes": {"no_WO": no_WO["out"], "d_model": wide["out"], "one_mask": one_mask["out"],
                                  "no_mask": no_mask["out"],
                                  "sequence": sequence_split(*args),
                                  "split_reshape": reshape_split(*args),
                                  "merge_reshape": matmul(np.stack(f["heads"]).reshape(3, 4), WO),
                                  "WO_T": matmul(f["merged"], WO.T),
                                  "merge_reversed": matmul(side_by_side(f["heads"][::-1]), WO),
                                  "projections_T": forward(*args, projections_T=True)["out"]}}
    g = backward(f, D_OUT, *args)
    g_wide = backward(wide, D_OUT, *args, scale=root_d_model)  # √d_model in both passes: the forward mistake
    g_back = backward(f, D_OUT, *args, scale=root_d_model)  # right forward, √d_model only on the way back
    g_noWO = backward(f, D_OUT, *args, through_WO=False)
    g_WO = backward(f, D_OUT, *args, WO_T=False)
    g_cut = backward(f, D_OUT, *args, cut="reshape")
    g_rev = backward(f, D_OUT, *args, reverse_merge=True)
    g_swap = backward(f, D_OUT, *args, swap_qk=True)
    g_args = backward(f, D_OUT, *args, qk_args=True)
    g_proj = backward(f, D_OUT, *args, proj_T=False)
    steps["11.6"] = {"exact": g["WO"], "mistakes": {"transposed": matmul(D_OUT.T, f["merged"])}}
    steps["11.7"] = {"exact": g["WV"], "mistakes": {"no_WO_T": g_noWO["WV"], "d_model": g_wide["WV"],
                                                   "WO_not_T": g_WO["WV"], "cut_reshape": g_cut["WV"],
                                                   "merge_reversed": g_rev["WV"]}}
    steps["11.8"] = {"exact": g["x"], "mistakes": {"value_only": g["dx_value_path"], "no_WO_T": g_noWO["x"],
                                                  "back_d_model": g_back["x"], "WO_not_T": g_WO["x"],
                                                  "cut_reshape": g_cut["x"], "swap_qk": g_swap["x"],
                                                  "qk_args": g_args["x"],
                                                  "proj_not_T": g_proj["x"]}}
    steps["_other"] = {"WQ": g["WQ"], "WK": g["WK"]}
    return steps


def printed(a, decimals=4):
    """Strings as the page prints them: rounded half away from zero, '-0.0000' written as '0.0000'."""
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 0:
        s = f"{float(a):.{decimals}f}"
        return "0." + "0" * decimals if float(s) == 0 else s
    return [printed(v, decimals) for v in a]


# the key's name of each of the audit's mistakes, step by step
NAMES = {
    ('11.1', 'reshape'):
        'a reshape straight to (n_heads, seq, d_head), without the transpose: positions and heads mixed',
    ('11.1', 'interleaved'):
        'every n_heads-th column (interleaved) instead of a block of d_head neighbouring columns',
    ('11.1', 'reversed'):
        'the heads in the wrong order: head 1 first, then head 0',
    ('11.2', 'd_model'):
        'scaled by √d_model = 2 instead of √d_head = √2',
    ('11.2', 'one_mask'):
        'the causal mask in head 0 only: head 1 looked ahead',
    ('11.2', 'no_mask'):
        'no causal mask in any head: every position looked ahead',
    ('11.3', 'd_model'):
        'scaled by √d_model = 2 instead of √d_head = √2',
    ('11.3', 'one_mask'):
        'the causal mask in head 0 only: head 1 looked ahead',
    ('11.3', 'no_mask'):
        'no causal mask in any head: every position looked ahead',
    ('11.2', 'times_mask'):
        'masked by multiplying (scores × mask): a masked score becomes 0, not −∞, so the future keeps weight',
    ('11.2', 'after_mask'):
        'the mask applied after the softmax: the future was zeroed but the rows no longer sum to 1',
    ('11.3', 'times_mask'):
        'masked by multiplying (scores × mask): a masked score becomes 0, not −∞, so the future keeps weight',
    ('11.3', 'after_mask'):
        'the mask applied after the softmax: the future was zeroed but the rows no longer sum to 1',
    ('11.4', 'reshape'):
        'a reshape straight to (seq, d_model), without the transpose: positions and heads mixed',
    ('11.4', 'reversed'):
        'the heads merged in the wrong order: head 1 first, then head 0',
    ('11.4', 'interleaved'):
        'the heads merged interleaved (one column of each head in turn) instead of side by side',
    ('11.5', 'no_WO'):
        'W_O forgotten: the merged heads returned as they are',
    ('11.5', 'd_model'):
        'scaled by √d_model = 2 instead of √d_head = √2',
    ('11.5', 'one_mask'):
        'the causal mask in head 0 only: head 1 looked ahead',
    ('11.5', 'no_mask'):
        'no causal mask in any head: every position looked ahead',
    ('11.5', 'sequence'):
        'heads split along the sequence axis: each head got a block of positions with every feature',
    ('11.5', 'split_reshape'):
        'Q, K and V split by a reshape without the transpose: positions and heads mixed',
    ('11.5', 'merge_reshape'):
        'the heads merged by a reshape without the transpose: positions and heads mixed',
    ('11.5', 'WO_T'):
        'W_O transposed: merged W_Oᵀ instead of merged W_O',
    ('11.5', 'merge_reversed'):
        'the heads merged in the wrong order (head 1 first, then head 0): this W_O\'s second half, head 1 minus '
        'head 0, changed sign',
    ('11.5', 'projections_T'):
        'the projections transposed: x W_Qᵀ, x W_Kᵀ, x W_Vᵀ instead of x W_Q, x W_K, x W_V',
    ('11.6', 'transposed'):
        'transposed: dW_O with its factors the wrong way round (rule 1 on out = merged W_O)',
    ('11.7', 'no_WO_T'):
        'W_O forgotten on the way back: d merged taken as d_out itself',
    ('11.7', 'd_model'):
        'scaled by √d_model = 2 instead of √d_head = √2 (the forward weights are off, so the gradient is too)',
    ('11.7', 'WO_not_T'):
        'W_O not transposed on the way back (W_O is square: the shapes cannot tell)',
    ('11.7', 'cut_reshape'):
        'd merged cut into heads by a reshape without the transpose: positions and heads mixed',
    ('11.7', 'merge_reversed'):
        'the heads\' gradients merged in the wrong order: head 1 first, then head 0',
    ('11.8', 'WO_not_T'):
        'W_O not transposed on the way back (W_O is square: the shapes cannot tell)',
    ('11.8', 'cut_reshape'):
        'd merged cut into heads by a reshape without the transpose: positions and heads mixed',
    ('11.8', 'swap_qk'):
        'the query and key gradients swapped: dQ sent back through W_K and dK through W_Q',
    ('11.8', 'qk_args'):
        'the queries and keys handed to each head\'s attention backward the wrong way round: dQ_h came out as '
        'dS Q_h instead of dS K_h',
    ('11.8', 'proj_not_T'):
        'the projections not transposed on the way back (square weights: the shapes cannot tell)',
    ('11.8', 'value_only'):
        'only the value path: the query and key paths left out of dx',
    ('11.8', 'no_WO_T'):
        'W_O forgotten on the way back: d merged taken as d_out itself',
    ('11.8', 'back_d_model'):
        '√d_model instead of √d_head on the way back (the forward pass was right)',
}

INPUTS = {"11.1": ("X",), "11.2": ("Qh", "Kh", "Vh"), "11.3": ("Qh", "Kh", "Vh"), "11.4": ("H",)}


def audit() -> dict[str, dict]:
    """Every step as the key holds it: its inputs, its exact value and each mistake under the key's name."""
    found = computed()
    found["11.3"].update({name: found["11.2"][name] for name in ("Qh", "Kh", "Vh")})  # 11.3 reads 11.2's heads
    steps = {}
    for sid, step in found.items():
        if sid.startswith("_"):
            steps[sid] = step
            continue
        inputs = {name: step[name] for name in INPUTS.get(sid, ())}
        if sid == "11.1":
            inputs["n_heads"] = N_HEADS
        if sid == "11.5":
            inputs.update(x=X, WQ=WQ, WK=WK, WV=WV, WO=WO, n_heads=N_HEADS)
        if sid in ("11.6", "11.7", "11.8"):
            inputs["d_out"] = D_OUT
        steps[sid] = {"inputs": inputs, "exact": step["exact"],
                      "mistakes": {NAMES[(sid, label)]: value for label, value in step["mistakes"].items()}}
    steps["_page"] = page_table()
    return steps


def page_table() -> dict[str, list[str]]:
    """The page's table of the only exponentials the worksheet needs, row by row: {row label: its numbers}.

    Every scaled score of steps 11.2, 11.3 and 11.5–11.8 is 0, √2 or 2√2 (a query of 2 or 4 against a key
    of 1, over √2), so with e^0 = 1 these four numbers make every softmax a pencil step. Not part of the key:
    tests/test_audits.py checks that a page line holds each row's label and numbers, in order.
    """
    root2 = math.sqrt(2.0)
    return {"$x$": [f"{root2:.4f}", f"{2 * root2:.4f}"],
            "$e^{x}$": [f"{math.exp(root2):.4f}", f"{math.exp(2 * root2):.4f}"],
            "$e^{-x}$": [f"{math.exp(-root2):.4f}", f"{math.exp(-2 * root2):.4f}"]}
