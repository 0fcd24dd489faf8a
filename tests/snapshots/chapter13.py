"""Chapter 13's snapshot builder: ``python -m kata.authoring.snapshots 13`` writes ``build()`` to chapter13.npz.

Authors only: it runs solutions/, and the student edition leaves it out. ``tests/test_snapshots.py`` checks that
the stored file is what ``build()`` makes today.
"""

from __future__ import annotations

import numpy as np

from kata.authoring.snapshots import Store
from kata.judge.gradient import numerical_gradient


def build(seed: int | None = None) -> dict[str, np.ndarray]:
    """Chapter 13: RMSNorm, SiLU, SwiGLU (and the block) on seeded inputs, numerical gradients, classic mistakes."""
    from kata.judge import answer_key
    from solutions import chapter13_modern_block as s

    data = Store(1313, seed)
    rng, put = data.rng, data.put

    def rms(x, eps=1e-6):
        return np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)

    # 13.3 and 13.7: the gradients the worksheet does not print
    step = answer_key.load(13).step("13.3")
    x, g, d_out, eps = step.input("x"), step.input("g"), step.input("d_out"), step.input("eps")
    put("ws_13_3", dg=numerical_gradient(lambda v: np.sum(d_out * s.rms_norm(x, v, eps=eps)), g),
        dg_features=np.sum(d_out * x / rms(x, eps), axis=-1))
    step = answer_key.load(13).step("13.7")
    args = [step.input(k) for k in ("x", "W_gate", "W_up", "W_down")]
    R = step.input("d_out")
    ws_13_7 = {k: numerical_gradient(lambda v, j=j: np.sum(R * s.swiglu(*[v if i == j else args[i]
                                                                          for i in range(4)])[0]), args[j])
               for j, k in enumerate(("W_gate", "W_up", "W_down"), start=1)}
    put("ws_13_7", **ws_13_7, swapped={"W_gate": ws_13_7["W_up"], "W_up": ws_13_7["W_gate"]},
        W_down_T=ws_13_7["W_down"].T)

    for i, shape in enumerate([(3, 5), (6, 4), (2, 3, 7), (4, 1), (8, 16), (5,)]):
        x = rng.normal(size=shape) * 2 + 1  # rows with a mean far from 0: LayerNorm's answer is far from ours
        g = rng.normal(size=shape[-1])
        xc = x - x.mean(axis=-1, keepdims=True)
        put(f"rms_norm/{i}", x=x, g=g, out=s.rms_norm(x, g), centred=g * xc / rms(xc),
            eps_outside=g * x / (np.sqrt(np.mean(x * x, axis=-1, keepdims=True)) + 1e-6),
            whole_array=g * x / np.sqrt(np.mean(x * x) + 1e-6))
    x, g = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 0.5]]), np.array([1.5, -1.0, 2.0])
    put("rms_norm_eps", x=x, g=g, out=s.rms_norm(x, g), out_eps=s.rms_norm(x, g, eps=0.5))

    for i, (shape, eps) in enumerate([((3, 5), 1e-6), ((4, 2), 1e-6), ((2, 3, 6), 0.5), ((8, 16), 1e-6)]):
        x, g, R = rng.normal(size=shape), rng.normal(size=shape[-1]), rng.normal(size=shape)
        put(f"rms_norm_backward/{i}", x=x, g=g, d_out=R, eps=eps,
            dx=numerical_gradient(lambda v: np.sum(R * s.rms_norm(v, g, eps=eps)), x),
            dg=numerical_gradient(lambda v: np.sum(R * s.rms_norm(x, v, eps=eps)), g),
            direct_path_only=g * R / rms(x, eps),
            eps_ignored=dict(zip(("dx", "dg"), s.rms_norm_backward(x, g, R), strict=True)),
            dg_first_axis=np.sum(R * x / rms(x, eps), axis=0))

    x = rng.uniform(-8, 8, size=(4, 6))
    put("silu", x=x, out=s.silu(x), sigmoid=1 / (1 + np.exp(-x)))
    x = np.array([-1000.0, -40.0, 40.0, 1000.0])
    put("silu_stable", out=s.silu(x), slope=s.silu_backward(x, np.ones(4)))
    x, R = rng.normal(size=(3, 5)) * 3, rng.normal(size=(3, 5))
    put("silu_backward", x=x, d_out=R, dx=numerical_gradient(lambda v: np.sum(R * s.silu(v)), x),
        sigmoid_only=R / (1 + np.exp(-x)), no_d_out=s.silu_backward(x, np.ones_like(x)))

    def swiglu_case(seq, d, d_ff):
        return (rng.normal(size=(seq, d)), rng.normal(size=(d, d_ff)), rng.normal(size=(d, d_ff)),
                rng.normal(size=(d_ff, d)))

    names = ("x", "W_gate", "W_up", "W_down")
    for i, (seq, d, d_ff) in enumerate([(3, 4, 6), (1, 3, 2), (8, 16, 12), (2, 1, 3), (3, 2, 1)]):
        x, Wg, Wu, Wd = swiglu_case(seq, d, d_ff)
        out, _ = s.swiglu(x, Wg, Wu, Wd)
        put(f"swiglu/{i}", x=x, W_gate=Wg, W_up=Wu, W_down=Wd, out=out, gate_on_up=(s.silu(x @ Wu) * (x @ Wg)) @ Wd)
    for i, (seq, d, d_ff) in enumerate([(3, 4, 6), (2, 5, 3), (8, 16, 12)]):
        args = list(swiglu_case(seq, d, d_ff))
        R = rng.normal(size=(seq, d))
        grads = {k: numerical_gradient(lambda v, j=j: np.sum(R * s.swiglu(*[v if i == j else args[i]
                                                                            for i in range(4)])[0]), args[j])
                 for j, k in enumerate(names)}
        put(f"swiglu_backward/{i}", **dict(zip(names, args, strict=True)), d_out=R, grads=grads)

    # -- rotary multi-head attention and the pre-norm block ---------------------------------------------------
    from solutions.chapter12_rope import apply_rope, rope_backward

    keys = ("WQ", "WK", "WV", "WO")

    def attention_params(d):
        return {k: rng.normal(size=(d, d)) / np.sqrt(d) * (2.0 if k in ("WQ", "WK") else 1.0) for k in keys}

    def heads(M, n):  # (seq, d) -> (n, seq, d / n)
        return M.reshape(len(M), n, -1).transpose(1, 0, 2)

    def attend(x, p, n, base=10000.0, rotate_v=False, rotate=True, whole=False, scale=None, mask=True):
        """An oracle written out with NumPy (ch. 12's apply_rope for the rotation): the values mistakes give."""
        Q, K, V = x @ p["WQ"], x @ p["WK"], x @ p["WV"]
        if whole:
            Q, K = apply_rope(Q, base), apply_rope(K, base)
        Qh, Kh, Vh = heads(Q, n), heads(K, n), heads(V, n)
        if rotate and not whole:
            Qh, Kh = apply_rope(Qh, base), apply_rope(Kh, base)
        if rotate_v:
            Vh = apply_rope(Vh, base)
        S = Qh @ Kh.transpose(0, 2, 1) / np.sqrt(scale or Qh.shape[-1])
        if mask:
            S = np.where(np.tril(np.ones((len(x), len(x)), dtype=bool)), S, -np.inf)
        P = np.exp(S - S.max(axis=-1, keepdims=True))
        P /= P.sum(axis=-1, keepdims=True)
        return (P @ Vh).transpose(1, 0, 2).reshape(x.shape) @ p["WO"]

    # 13.10: its forward pass, checked first (one head of width 4 at base 100), and with the base ignored
    step = answer_key.load(13).step("13.10")
    x, p = step.input("x"), {k: step.input(k) for k in keys}
    put("ws_13_10_by_hand", out=s.rope_multi_head_attention(x, p, step.inputs["n_heads"], base=step.inputs["base"])[0],
        base_10000=attend(x, p, step.inputs["n_heads"]))

    # 13.11 and 13.13: the weights' gradients the worksheet does not print (stored as ws_13_10 and ws_13_11, the
    # steps' numbers before the by-hand steps 13.10 and 13.12 came in front of them)
    for step_id, name in (("13.11", "ws_13_10"), ("13.13", "ws_13_11")):
        step = answer_key.load(13).step(step_id)
        x = step.input("x")
        if step_id == "13.11":
            p, R, fn = {k: step.input(k) for k in keys}, step.input("d_out"), s.rope_multi_head_attention
        else:
            p, R = {k: np.array(v, dtype=np.float64) for k, v in step.inputs["params"].items()}, step.input("d_y")
            fn = s.prenorm_block
        put(name, **{k: numerical_gradient(
            lambda v, k=k: np.sum(R * fn(x, {**p, k: v}, 2)[0]), p[k]) for k in p})

    for i, (seq, d, n, base) in enumerate([(5, 8, 2, 10000.0), (3, 4, 1, 10000.0), (8, 16, 4, 10000.0),
                                           (1, 6, 3, 10000.0), (6, 8, 2, 100.0)]):
        x, p = rng.normal(size=(seq, d)), attention_params(d)
        out, _ = s.rope_multi_head_attention(x, p, n, base=base)
        put(f"attention/{i}", x=x, params=p, n_heads=n, base=base, out=out,
            rotate_v=attend(x, p, n, base, rotate_v=True),
            no_rope=attend(x, p, n, base, rotate=False), whole_width=attend(x, p, n, base, whole=True),
            scale_d_model=attend(x, p, n, base, scale=d), no_mask=attend(x, p, n, base, mask=False),
            base_10000=attend(x, p, n))
    x, p = rng.normal(size=(6, 8)), attention_params(8)
    put("causal", x=x, params=p)

    for i, (seq, d, n, base) in enumerate([(3, 4, 2, 10000.0), (5, 8, 2, 100.0), (4, 6, 1, 10000.0)]):
        x, p, R = rng.normal(size=(seq, d)), attention_params(d), rng.normal(size=(seq, d))
        args = {"x": x, **p}

        def attention_loss(a):
            return np.sum(R * s.rope_multi_head_attention(a["x"], a, n, base=base)[0])

        grads = {k: numerical_gradient(lambda v, k=k: attention_loss({**args, k: v}), args[k]) for k in args}
        # the rotation not undone: the gradients of the rotated queries and keys taken as dQ and dK
        Qr, Kr = (apply_rope(heads(x @ p[k], n), base).transpose(1, 0, 2).reshape(seq, d) for k in ("WQ", "WK"))
        dQr = numerical_gradient(lambda Q: np.sum(R * attend_given(Q, Kr, x @ p["WV"], p["WO"], n)), Qr)
        dKr = numerical_gradient(lambda K: np.sum(R * attend_given(Qr, K, x @ p["WV"], p["WO"], n)), Kr)
        dV = numerical_gradient(lambda V: np.sum(R * attend_given(Qr, Kr, V, p["WO"], n)), x @ p["WV"])
        not_undone = {"x": dQr @ p["WQ"].T + dKr @ p["WK"].T + dV @ p["WV"].T, "WQ": x.T @ dQr, "WK": x.T @ dKr}
        # the base not passed on: turned back with rope_backward's default base 10000
        dQb, dKb = (rope_backward(heads(M, n)).transpose(1, 0, 2).reshape(seq, d) for M in (dQr, dKr))
        base_dropped = {"x": dQb @ p["WQ"].T + dKb @ p["WK"].T + dV @ p["WV"].T, "WQ": x.T @ dQb, "WK": x.T @ dKb}
        put(f"attention_backward/{i}", x=x, params=p, n_heads=n, base=base, d_out=R, grads=grads,
            not_undone=not_undone, base_dropped=base_dropped)

    def random_block(d, d_ff):
        return {"g1": 1 + 0.3 * rng.normal(size=d), **attention_params(d), "g2": 1 + 0.3 * rng.normal(size=d),
                "W_gate": rng.normal(size=(d, d_ff)) / np.sqrt(d), "W_up": rng.normal(size=(d, d_ff)) / np.sqrt(d),
                "W_down": rng.normal(size=(d_ff, d)) / np.sqrt(d_ff)}

    def post_norm(x, p, n):
        x1 = s.rms_norm(x + s.rope_multi_head_attention(x, p, n)[0], p["g1"])
        return s.rms_norm(x1 + s.swiglu(x1, p["W_gate"], p["W_up"], p["W_down"])[0], p["g2"])

    def no_residual(x, p, n):
        a = s.rope_multi_head_attention(s.rms_norm(x, p["g1"]), p, n)[0]
        return s.swiglu(s.rms_norm(a, p["g2"]), p["W_gate"], p["W_up"], p["W_down"])[0]

    for i, (seq, d, d_ff, n) in enumerate([(4, 8, 12, 2), (8, 16, 8, 4), (2, 4, 3, 1)]):
        x, p = rng.normal(size=(seq, d)), random_block(d, d_ff)
        y, _ = s.prenorm_block(x, p, n)
        put(f"block/{i}", x=x, params=p, n_heads=n, y=y, post_norm=post_norm(x, p, n), no_residual=no_residual(x, p, n),
            gains_swapped=s.prenorm_block(x, {**p, "g1": p["g2"], "g2": p["g1"]}, n)[0],
            g1_twice=s.prenorm_block(x, {**p, "g2": p["g1"]}, n)[0])

    for i, (seq, d, d_ff, n) in enumerate([(3, 4, 6, 2), (5, 8, 6, 4), (4, 6, 5, 1)]):
        x, p, R = rng.normal(size=(seq, d)), random_block(d, d_ff), rng.normal(size=(seq, d))
        args = {"x": x, **p}

        def block_loss(a):
            return np.sum(R * s.prenorm_block(a["x"], {k: a[k] for k in p}, n)[0])

        grads = {k: numerical_gradient(lambda v, k=k: block_loss({**args, k: v}), args[k]) for k in args}
        # dx without the residual paths: only the gradient through RMSNorm₁ and attention, of dx₁ through the branch
        h1 = s.rms_norm(x, p["g1"])
        x1 = x + s.rope_multi_head_attention(h1, p, n)[0]
        branch2 = numerical_gradient(lambda v: np.sum(R * s.swiglu(s.rms_norm(v, p["g2"]), p["W_gate"], p["W_up"],
                                                                     p["W_down"])[0]), x1)
        branch1 = numerical_gradient(lambda v: np.sum(branch2 * s.rope_multi_head_attention(s.rms_norm(v, p["g1"]), p,
                                                                                             n)[0]), x)
        put(f"block_backward/{i}", x=x, params=p, n_heads=n, d_y=R, grads=grads, no_residual_path=branch1)

    p = random_block(8, 6)
    p["WO"], p["W_down"] = np.zeros((8, 8)), np.zeros((6, 8))
    put("identity", x=rng.normal(size=(5, 8)), params=p, d_y=rng.normal(size=(5, 8)))
    return data


def attend_given(Q, K, V, WO, n):
    """Causal multi-head attention of given (already rotated) Q, K, V of shape (seq, d_model), then W_O."""
    seq, d = Q.shape
    Qh, Kh, Vh = (M.reshape(seq, n, -1).transpose(1, 0, 2) for M in (Q, K, V))
    S = np.where(np.tril(np.ones((seq, seq), dtype=bool)), Qh @ Kh.transpose(0, 2, 1) / np.sqrt(d // n), -np.inf)
    P = np.exp(S - S.max(axis=-1, keepdims=True))
    P /= P.sum(axis=-1, keepdims=True)
    return (P @ Vh).transpose(1, 0, 2).reshape(seq, d) @ WO
