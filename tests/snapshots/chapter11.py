"""Chapter 11's snapshot builder: ``python -m kata.authoring.snapshots 11`` writes ``build()`` to chapter11.npz.

Authors only: it runs solutions/, and the student edition leaves it out. ``tests/test_snapshots.py`` checks that
the stored file is what ``build()`` makes today.
"""

from __future__ import annotations

import numpy as np

from kata.authoring.snapshots import Store
from kata.judge.gradient import numerical_gradient


def build(seed: int | None = None) -> dict[str, np.ndarray]:
    """Chapter 11: heads split and merged, attended and mixed on other shapes; central-difference gradients."""
    from solutions import chapter04_attention as a
    from solutions import chapter07_backprop as b
    from solutions import chapter11_multi_head_attention as s

    data = Store(1111, seed)
    rng, put = data.rng, data.put

    def weights(d):
        return {k: rng.normal(size=(d, d)) / np.sqrt(d) * 1.5 for k in s.PARAM_NAMES}

    def attend(Qh, Kh, Vh, scale, masked, how="add"):
        """Every head's softmax(Q Kᵀ / scale) V, with the causal mask in the heads listed in ``masked``.

        ``how``: "add" (−∞ above the diagonal: right), or the mistakes "multiply" (the scores times the 0/1
        mask) and "after" (the weights times the mask, after the softmax).
        """
        n = Qh.shape[1]
        outs, probs = [], []
        for h in range(len(Qh)):
            S = Qh[h] @ Kh[h].T / scale
            if h in masked and how == "add":
                S = np.where(a.causal_mask(n), S, -np.inf)
            elif h in masked and how == "multiply":
                S = S * a.causal_mask(n)
            P = a.softmax(S)
            if h in masked and how == "after":
                P = P * a.causal_mask(n)
            outs.append(P @ Vh[h])
            probs.append(P)
        return np.stack(outs), np.stack(probs)

    # split and merge: (seq, d_model, n_heads), never the worksheet's (3, 4, 2)
    for i, (seq, d, n) in enumerate([(5, 6, 3), (8, 16, 4), (3, 4, 1), (7, 10, 2), (1, 8, 4), (4, 12, 2)]):
        X = rng.normal(size=(seq, d))
        H = rng.normal(size=(n, seq, d // n))
        put(f"split/{i}", X=X, n_heads=np.array(n), heads=s.split_heads(X, n),
            reshape=X.reshape(n, seq, d // n), interleaved=np.stack([X[:, h::n] for h in range(n)]),
            H=H, merged=s.merge_heads(H), merge_reshape=H.reshape(seq, d), merge_reversed=s.merge_heads(H[::-1]),
            merge_interleaved=H.transpose(1, 2, 0).reshape(seq, d))

    # every head on its own: (n_heads, seq, d_head)
    for i, (n, seq, dh) in enumerate([(2, 5, 3), (4, 8, 4), (1, 6, 5), (3, 4, 2)]):
        Qh, Kh, Vh = (rng.normal(size=(n, seq, dh)) * 1.5 for _ in range(3))
        out, P = s.attend_heads(Qh, Kh, Vh)
        wide = attend(Qh, Kh, Vh, np.sqrt(n * dh), range(n))
        one = attend(Qh, Kh, Vh, np.sqrt(dh), {0})
        times = attend(Qh, Kh, Vh, np.sqrt(dh), range(n), "multiply")
        after = attend(Qh, Kh, Vh, np.sqrt(dh), range(n), "after")
        put(f"heads/{i}", Qh=Qh, Kh=Kh, Vh=Vh, out=out, weights=P, d_model_out=wide[0], d_model_weights=wide[1],
            one_mask_out=one[0], one_mask_weights=one[1], times_mask_out=times[0], times_mask_weights=times[1],
            after_mask_out=after[0], after_mask_weights=after[1])

    # the whole layer, with what the classic mistakes give
    for i, (seq, d, n) in enumerate([(5, 8, 2), (8, 16, 4), (6, 6, 1), (4, 12, 4), (7, 9, 3), (2, 4, 2), (1, 8, 4)]):
        x, W = rng.normal(size=(seq, d)), weights(d)
        out, _ = s.multi_head_attention(x, W, n)
        Qh, Kh, Vh = (s.split_heads(x @ W[k], n) for k in ("WQ", "WK", "WV"))
        by_rows = [a.scaled_dot_product_attention(x[c] @ W["WQ"], x[c] @ W["WK"], x[c] @ W["WV"],
                                                  mask=a.causal_mask(len(c)))[0]
                   for c in np.array_split(np.arange(seq), n) if len(c)]
        cut = [(x @ W[k]).reshape(n, seq, d // n) for k in ("WQ", "WK", "WV")]
        merged = attend(Qh, Kh, Vh, np.sqrt(d // n), range(n))[0]
        put(f"mha/{i}", x=x, params=W, n_heads=np.array(n), out=out,
            WO_T=s.merge_heads(merged) @ W["WO"].T, merge_reversed=s.merge_heads(merged[::-1]) @ W["WO"],
            projections_T=s.merge_heads(attend(*(s.split_heads(x @ W[k].T, n) for k in ("WQ", "WK", "WV")),
                                               np.sqrt(d // n), range(n))[0]) @ W["WO"],
            no_WO=s.merge_heads(attend(Qh, Kh, Vh, np.sqrt(d // n), range(n))[0]),
            d_model=s.merge_heads(attend(Qh, Kh, Vh, np.sqrt(d), range(n))[0]) @ W["WO"],
            one_mask=s.merge_heads(attend(Qh, Kh, Vh, np.sqrt(d // n), {0})[0]) @ W["WO"],
            sequence=np.vstack(by_rows) @ W["WO"],
            split_reshape=s.merge_heads(attend(*cut, np.sqrt(d // n), range(n))[0]) @ W["WO"],
            merge_reshape=attend(Qh, Kh, Vh, np.sqrt(d // n), range(n))[0].reshape(seq, d) @ W["WO"])

    # the backward pass against central differences of Σ R ⊙ out, for x and every weight
    for i, (seq, d, n) in enumerate([(4, 8, 2), (5, 16, 4), (3, 6, 1), (6, 12, 3), (8, 16, 4), (2, 4, 2)]):
        x, W, R = rng.normal(size=(seq, d)), weights(d), rng.normal(size=(seq, d))
        grads = {"x": numerical_gradient(lambda v: np.sum(R * s.multi_head_attention(v, W, n)[0]), x)}
        for k in s.PARAM_NAMES:
            grads[k] = numerical_gradient(
                lambda v, k=k: np.sum(R * s.multi_head_attention(x, {**W, k: v}, n)[0]), W[k])
        _, (_, _, Qh, Kh, Vh, P, _) = s.multi_head_attention(x, W, n)
        d_heads = s.split_heads(R @ W["WO"].T, n)
        dV = s.merge_heads(np.stack([b.attention_backward(q, k, v, p, g)[2]
                                     for q, k, v, p, g in zip(Qh, Kh, Vh, P, d_heads, strict=True)]))
        put(f"backward/{i}", x=x, params=W, n_heads=np.array(n), d_out=R, grads=grads,
            value_only=dV @ W["WV"].T)
    return data
