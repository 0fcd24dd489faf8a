"""Chapter 16's snapshot builder: ``python -m kata.authoring.snapshots 16`` writes ``build()`` to chapter16.npz.

Authors only: it runs solutions/, and the student edition leaves it out. ``tests/test_snapshots.py`` checks that
the stored file is what ``build()`` makes today.
"""

from __future__ import annotations

import numpy as np

from kata.authoring.snapshots import Store


def random_prenorm_block(d_model, d_ff, rng):
    """A chapter 13 block with weights scaled so that the residual stream stays of order 1."""
    W = {k: rng.normal(size=(d_model, d_model)) / np.sqrt(d_model) for k in ("WQ", "WK", "WV", "WO")}
    return {"g1": 1 + 0.2 * rng.normal(size=d_model), **W, "g2": 1 + 0.2 * rng.normal(size=d_model),
            "W_gate": rng.normal(size=(d_model, d_ff)) / np.sqrt(d_model),
            "W_up": rng.normal(size=(d_model, d_ff)) / np.sqrt(d_model),
            "W_down": rng.normal(size=(d_ff, d_model)) / np.sqrt(d_ff)}


def random_gpt(vocab, d_model, d_ff, n_blocks, rng):
    """Chapter 16's model layout: tok_emb, blocks, g_final, W_out."""
    return {"tok_emb": rng.normal(size=(vocab, d_model)),
            "blocks": [random_prenorm_block(d_model, d_ff, rng) for _ in range(n_blocks)],
            "g_final": 1 + 0.2 * rng.normal(size=d_model), "W_out": rng.normal(size=(d_model, vocab))}


def build(seed: int | None = None) -> dict[str, np.ndarray]:
    """Chapter 16: sampling on other sizes, and the KV cache against chapter 13's full forward; classic mistakes.

    Every KV-cache oracle is computed without a cache, from chapters 12 and 13 of solutions/ (the full forward
    over the whole sequence); the mistakes from a cached decode of this builder's own with the mistake planted.
    """
    from solutions import chapter16_sampling as s
    from solutions.chapter12_rope import apply_rope
    from solutions.chapter13_modern_block import prenorm_block, rms_norm, rope_multi_head_attention, swiglu

    data = Store(1616, seed)
    rng, put = data.rng, data.put

    def softmax(z):
        e = np.exp(z - z.max())
        return e / e.sum()

    def keep(p, idx, renormalise=True):
        out = np.zeros_like(p)
        out[idx] = p[idx]
        return out / out.sum() if renormalise else out

    # -- sampling on other sizes
    for i, (n, T) in enumerate([(7, 0.5), (12, 1.7), (30, 1.0), (3, 0.05)]):
        z = rng.normal(size=n) * 3
        put(f"temperature/{i}", logits=z, temperature=T, out=s.softmax_with_temperature(z, T),
            multiplied=softmax(z * T), ignored=softmax(z))

    def tied(n):
        """Probabilities from three values, shuffled: ties everywhere, in more tokens than a sort keeps stable."""
        p = rng.permutation(np.resize([4.0, 2.0, 1.0], n))
        return p / p.sum()

    for i, (n, k) in enumerate([(7, 3), (12, 1), (30, 10), (6, 4), (40, 18)]):
        p = rng.dirichlet(np.ones(n))
        if i == 3:  # a tie at the boundary: tokens 1 and 4 share the 4th place, the lower index is kept
            p = np.array([0.3, 0.1, 0.25, 0.05, 0.1, 0.2])
        if i == 4:  # 40 tokens in three tied groups of 14, 13, 13: k = 18 cuts through the second
            p = tied(n)
        order = np.argsort(-p, kind="stable")
        put(f"top_k/{i}", probs=p, k=k, out=s.top_k_filter(p, k), no_renorm=keep(p, order[:k], False),
            first_k=keep(p, np.arange(k)), tie_upper=keep(p, np.argsort(p, kind="stable")[::-1][:k]))
    for i, (n, top) in enumerate([(7, 0.5), (12, 0.9), (30, 0.75), (5, 0.3), (6, 0.65), (40, 0.7)]):
        p = rng.dirichlet(np.ones(n))
        if i == 4:  # ties: 0.2 three times, the lower indices first
            p = np.array([0.2, 0.1, 0.2, 0.2, 0.25, 0.05])
        if i == 5:  # 40 tokens in three tied groups: p = 0.7 cuts through the second
            p = tied(n)
        order = np.argsort(-p, kind="stable")
        c = np.cumsum(p[order])
        n_keep = min(int(np.searchsorted(c, top)) + 1, n)
        put(f"top_p/{i}", probs=p, p=top, out=s.top_p_filter(p, top), dropped=keep(p, order[:max(n_keep - 1, 1)]),
            no_renorm=keep(p, order[:n_keep], False),
            index_order=keep(p, np.arange(min(int(np.searchsorted(np.cumsum(p), top)) + 1, n))))
    def in_1024ths(q):
        """Q rounded to whole 1024ths that add up to 1: every running sum is then exact, added in any order."""
        w = np.floor(q * 1024)
        w[np.argmax(w)] += 1024 - w.sum()
        return w / 1024

    dyadic = np.array([0.125, 0.375, 0.0, 0.25, 0.25])  # every running sum exact: boundaries are hit exactly
    for i, p in enumerate([dyadic, in_1024ths(rng.dirichlet(np.ones(9))),
                           in_1024ths(rng.dirichlet(np.ones(20) * 0.3))]):
        us = np.r_[np.linspace(0, 1, 401)[:-1], np.cumsum(p)[:-1]]
        us = us[us < 1]
        c = np.cumsum(p)
        put(f"sample/{i}", probs=p, us=us, out=np.array([s.sample_index(p, float(u)) for u in us]),
            at_most=np.array([min(int(np.searchsorted(c, u, side="left")), len(p) - 1) for u in us]))
    settings = [(9, 0.8, None, 0.9), (12, 1.3, 4, None), (15, 0.6, 5, 0.7), (6, 0.0, None, None)]
    for i, (n, T, k, top) in enumerate(settings):
        z = rng.normal(size=n) * 2
        us = rng.uniform(size=25)
        kw = {"temperature": T, "top_k": k, "top_p": top}
        put(f"choose/{i}", logits=z, us=us, temperature=T, top_k=-1 if k is None else k,
            top_p=-1.0 if top is None else top, out=np.array([s.choose_next(z, float(u), **kw) for u in us]))
        if T:  # greedy (T = 0) has no temperature to multiply: the test names no mistake then
            put(f"choose/{i}", multiplied=np.array([s.choose_next(z * T * T, float(u), **kw) for u in us]))

    # -- the KV cache: a decode of our own, mistakes planted; the oracles from the full forward, no cache
    def heads(M, n):
        return M.reshape(len(M), n, -1).transpose(1, 0, 2)

    def cached_attention(x_new, W, n, K_old, V_old, mode=None):
        t, m = K_old.shape[1], len(x_new)
        start = 0 if mode == "restart" else t
        Q = apply_rope(heads(x_new @ W["WQ"], n), start=start)
        K_new = apply_rope(heads(x_new @ W["WK"], n), start=0 if mode == "keys_at_zero" else start)
        if mode == "twice" and t:
            K_old = apply_rope(K_old)
        K, V = np.concatenate([K_old, K_new], axis=1), np.concatenate([V_old, heads(x_new @ W["WV"], n)], axis=1)
        if mode == "keys_first":
            K = np.concatenate([K_new, K_old], axis=1)
        S = Q @ K.transpose(0, 2, 1) / np.sqrt(Q.shape[-1])
        if mode != "unmasked":
            S = np.where(np.arange(t + m)[None, :] <= t + np.arange(m)[:, None], S, -np.inf)
        P = np.exp(S - S.max(axis=-1, keepdims=True))
        P /= P.sum(axis=-1, keepdims=True)
        return (P @ V).transpose(1, 0, 2).reshape(m, -1) @ W["WO"], K, V

    def cached_block(x, params, n, cache, mode=None):
        a, K, V = cached_attention(rms_norm(x, params["g1"]), params, n, *cache, mode=mode)
        x1 = x + a
        f, _ = swiglu(rms_norm(x1, params["g2"]), params["W_gate"], params["W_up"], params["W_down"])
        return x1 + f, (K, V)

    def decode(model, ids, chunks, n, mode=None):
        d_head = model["tok_emb"].shape[1] // n
        caches = [(np.zeros((n, 0, d_head)), np.zeros((n, 0, d_head)))] * len(model["blocks"])
        rows, at = [], 0
        for size in chunks:
            x = model["tok_emb"][ids[at:at + size]]
            old, caches = caches, list(caches)
            for j, params in enumerate(model["blocks"]):  # "block0_cache": every block reads block 0's old cache
                x, caches[j] = cached_block(x, params, n, old[0 if mode == "block0_cache" else j], mode)
            rows.append(rms_norm(x, model["g_final"]) @ model["W_out"])
            at += size
        return np.vstack(rows)

    def full_forward(model, ids, n):
        x = model["tok_emb"][np.asarray(ids)]
        for params in model["blocks"]:
            x, _ = prenorm_block(x, params, n)
        return rms_norm(x, model["g_final"]) @ model["W_out"]

    for i, (t, m, d_model, n) in enumerate([(3, 1, 8, 2), (4, 3, 8, 2), (0, 5, 4, 1), (6, 2, 16, 4), (2, 2, 12, 3)]):
        x = rng.normal(size=(t + m, d_model))
        W = {k: rng.normal(size=(d_model, d_model)) / np.sqrt(d_model) for k in ("WQ", "WK", "WV", "WO")}
        K_all = apply_rope(heads(x @ W["WK"], n))  # every position's key, rotated at its own position
        V_all = heads(x @ W["WV"], n)
        K_old, V_old = K_all[:, :t], V_all[:, :t]
        put(f"attention/{i}", x=x, params=W, n_heads=n, t=t, K=K_all, V=V_all,
            out=rope_multi_head_attention(x, W, n)[0][t:],
            **{mode: cached_attention(x[t:], W, n, K_old, V_old, mode)[0]
               for mode in ("restart", "twice", "unmasked", "keys_at_zero", "keys_first")})
    for i, (t, m, d_model, d_ff, n) in enumerate([(3, 1, 8, 12, 2), (2, 3, 4, 6, 1), (5, 2, 16, 8, 4)]):
        x = rng.normal(size=(t + m, d_model))
        params = random_prenorm_block(d_model, d_ff, rng)
        h = rms_norm(x, params["g1"])
        K_all, V_all = apply_rope(heads(h @ params["WK"], n)), heads(h @ params["WV"], n)
        put(f"block/{i}", x=x, params=params, n_heads=n, t=t, K=K_all, V=V_all, y=prenorm_block(x, params, n)[0][t:],
            restart=cached_block(x[t:], params, n, (K_all[:, :t], V_all[:, :t]), "restart")[0],
            g1_twice=prenorm_block(x, {**params, "g2": params["g1"]}, n)[0][t:])  # the first norm right: no cache
    models = [(11, 8, 12, 2, 2, [3, 1, 1, 1, 1]), (13, 16, 8, 4, 1, [1, 1, 1, 1, 1, 1]), (7, 4, 6, 1, 3, [2, 3, 1, 1]),
              (17, 12, 16, 3, 2, [4, 2, 1, 1, 1])]
    for i, (vocab, d_model, d_ff, n, n_blocks, chunks) in enumerate(models):
        model = random_gpt(vocab, d_model, d_ff, n_blocks, rng)
        ids = rng.integers(0, vocab, size=sum(chunks))
        put(f"model/{i}", model=model, n_heads=n, ids=ids, chunks=np.array(chunks), logits=full_forward(model, ids, n),
            **{mode: decode(model, ids, chunks, n, mode)
               for mode in ("restart", "twice", "unmasked", "keys_at_zero", "keys_first", "block0_cache")})
    for i, (vocab, d_model, n, prompt_len, n_new, T, k, top) in enumerate(
            [(11, 8, 2, 3, 8, 1.0, None, None), (13, 4, 1, 1, 6, 1.5, 2, None), (9, 12, 3, 4, 7, 1.5, None, 0.5),
             (10, 8, 4, 2, 5, 0.0, None, None)]):
        model = random_gpt(vocab, d_model, 2 * d_model, 2, rng)
        prompt = [int(v) for v in rng.integers(0, vocab, size=prompt_len)]
        us = rng.uniform(size=n_new)
        kw = {"temperature": T, "top_k": k, "top_p": top}
        seq, wrong = list(prompt), list(prompt)
        for j, u in enumerate(us):  # the oracle: the full forward again for every token, no cache
            seq.append(s.choose_next(full_forward(model, seq, n)[-1], float(u), **kw))
            wrong.append(s.choose_next(full_forward(model, wrong, n)[0 if j == 0 else -1], float(u), **kw))
        put(f"generate/{i}", model=model, n_heads=n, prompt=np.array(prompt), us=us, temperature=T,
            top_k=-1 if k is None else k, top_p=-1.0 if top is None else top, ids=np.array(seq[prompt_len:]),
            first_row=np.array(wrong[prompt_len:]))
    return data
