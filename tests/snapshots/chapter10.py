"""Chapter 10's snapshot builder: ``python -m kata.authoring.snapshots 10`` writes ``build()`` to chapter10.npz.

Authors only: it runs solutions/, and the student edition leaves it out. ``tests/test_snapshots.py`` checks that
the stored file is what ``build()`` makes today.
"""

from __future__ import annotations

import numpy as np

from kata.authoring.snapshots import Store, tree_gradients, unpath
from kata.judge.gradient import numerical_gradient
from kata.judge.snapshots import leaves


def random_block(d_model, d_ff, rng):
    return {"ln1_gamma": 1 + 0.3 * rng.normal(size=d_model), "ln1_beta": 0.3 * rng.normal(size=d_model),
            "WQ": rng.normal(size=(d_model, d_model)), "WK": rng.normal(size=(d_model, d_model)),
            "WV": rng.normal(size=(d_model, d_model)),
            "ln2_gamma": 1 + 0.3 * rng.normal(size=d_model), "ln2_beta": 0.3 * rng.normal(size=d_model),
            "W1": rng.normal(size=(d_model, d_ff)), "b1": 0.3 * rng.normal(size=d_ff),
            "W2": rng.normal(size=(d_ff, d_model)) / np.sqrt(d_ff), "b2": 0.3 * rng.normal(size=d_model)}


def random_model(vocab, d_model, d_ff, n_layers, max_len, rng):
    return {"tok_emb": rng.normal(size=(vocab, d_model)), "pos_emb": rng.normal(size=(max_len, d_model)),
            "blocks": [random_block(d_model, d_ff, rng) for _ in range(n_layers)],
            "lnf_gamma": 1 + 0.3 * rng.normal(size=d_model), "lnf_beta": 0.3 * rng.normal(size=d_model),
            "WO": rng.normal(size=(d_model, vocab))}


def build(seed: int | None = None) -> dict[str, np.ndarray]:
    """Chapter 10: every function on seeded inputs of several shapes, numerical gradients, classic mistakes."""
    from kata.judge import answer_key
    from solutions import chapter10_transformer as s

    data = Store(1010, seed)
    rng, put = data.rng, data.put

    # 10.3: dgamma and dbeta of the worksheet's layer-norm backward
    step = answer_key.load(10).step("10.3")
    x, gamma, d_out = step.input("x"), step.input("gamma"), step.input("d_out")
    _, d_gamma, d_beta = s.layer_norm_backward(x, gamma, d_out)
    put("ws_10_3", d_gamma=d_gamma, d_beta=d_beta)

    for i, shape in enumerate([(3, 5), (6, 4), (2, 3, 7), (4, 1)]):
        x = rng.normal(size=shape) * 3 + 1
        gamma, beta = rng.normal(size=shape[-1]), rng.normal(size=shape[-1])
        out = s.layer_norm(x, gamma, beta)
        put(f"layer_norm/{i}", x=x, gamma=gamma, beta=beta, out=out)
        if shape[-1] > 1:  # one feature has no sample variance (n − 1 = 0): the test names no mistake then
            xc = x - x.mean(axis=-1, keepdims=True)
            sample = gamma * xc / np.sqrt(x.var(axis=-1, ddof=1, keepdims=True) + 1e-5) + beta
            put(f"layer_norm/{i}", sample_variance=sample)

    x = np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]])
    put("layer_norm_eps", x=x, out=s.layer_norm(x, np.ones(3), np.zeros(3)),
        out_eps1=s.layer_norm(x, np.ones(3), np.zeros(3), eps=1.0))

    for i, shape in enumerate([(3, 5), (4, 2), (2, 3, 6)]):
        x = rng.normal(size=shape)
        gamma, beta = rng.normal(size=shape[-1]), rng.normal(size=shape[-1])
        R = rng.normal(size=shape)
        put(f"layer_norm_backward/{i}", x=x, gamma=gamma, d_out=R,
            dx=numerical_gradient(lambda v: np.sum(R * s.layer_norm(v, gamma, beta)), x),
            d_gamma=numerical_gradient(lambda g: np.sum(R * s.layer_norm(x, g, beta)), gamma),
            d_beta=numerical_gradient(lambda b: np.sum(R * s.layer_norm(x, gamma, b)), beta),
            direct_path_only=gamma * R / np.sqrt(x.var(-1, keepdims=True) + 1e-5))

    for i, (seq, d) in enumerate([(5, 3), (2, 6), (1, 4), (4, 4)]):
        x = rng.normal(size=(seq, d))
        WQ, WK, WV = (rng.normal(size=(d, d)) for _ in range(3))
        out, _ = s.attention_forward(x, WQ, WK, WV)
        unscaled, _ = s.attention_forward(x, WQ * np.sqrt(d), WK, WV)  # scores QKᵀ, not divided by √d
        S = (x @ WQ) @ (x @ WK).T / np.sqrt(d)
        P = np.exp(S - S.max(axis=-1, keepdims=True))
        P /= P.sum(axis=-1, keepdims=True)
        put(f"attention/{i}", x=x, WQ=WQ, WK=WK, WV=WV, out=out, no_scaling=unscaled, no_mask=P @ (x @ WV))
        if seq == d:  # Q @ K is computable: the missing transpose gives a wrong answer of the right shape
            put(f"attention/{i}", k_not_transposed=s.softmax(np.where(
                np.tril(np.ones((seq, seq), dtype=bool)), (x @ WQ) @ (x @ WK) / np.sqrt(d), -np.inf)) @ (x @ WV))

    for i, (seq, d, d_ff) in enumerate([(4, 3, 7), (2, 5, 2)]):
        x = rng.normal(size=(seq, d))
        W1, b1 = rng.normal(size=(d, d_ff)), rng.normal(size=d_ff)
        W2, b2 = rng.normal(size=(d_ff, d)), rng.normal(size=d)
        out, _ = s.ffn_forward(x, W1, b1, W2, b2)
        put(f"ffn/{i}", x=x, W1=W1, b1=b1, W2=W2, b2=b2, out=out, no_relu=(x @ W1 + b1) @ W2 + b2)

    for i, (seq, d, d_ff) in enumerate([(4, 3, 7), (3, 5, 2)]):
        x = rng.normal(size=(seq, d))
        Ws = [rng.normal(size=(d, d)) for _ in range(3)]
        R = rng.normal(size=(seq, d))

        def attention(args):
            return np.sum(R * s.attention_forward(*args)[0])

        args = [x, *Ws]
        grads = [numerical_gradient(lambda v, k=k: attention([v if j == k else args[j] for j in range(4)]), args[k])
                 for k in range(4)]
        put(f"attention_backward/{i}", x=x, WQ=Ws[0], WK=Ws[1], WV=Ws[2], d_out=R, dx=grads[0], dWQ=grads[1],
            dWK=grads[2], dWV=grads[3])
        W1, b1 = rng.normal(size=(d, d_ff)), rng.normal(size=d_ff)
        W2, b2 = rng.normal(size=(d_ff, d)), rng.normal(size=d)
        ps = [x, W1, b1, W2, b2]
        grads = [numerical_gradient(lambda v, k=k: np.sum(R * s.ffn_forward(*[v if j == k else ps[j]
                                                                             for j in range(5)])[0]), ps[k])
                 for k in range(5)]
        put(f"ffn_backward/{i}", x=x, W1=W1, b1=b1, W2=W2, b2=b2, d_out=R,
            **dict(zip(("dx", "dW1", "db1", "dW2", "db2"), grads, strict=True)))

    # the ReLU's kink: z = x W1 + b1 is exactly 0 at [0, 1] (row 0 of x is zero, b1[1] is zero)
    x = np.vstack([np.zeros(3), rng.normal(size=3)])
    W1, b1, W2, b2 = rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=(4, 3)), rng.normal(size=3)
    b1[1] = 0.0
    R = rng.normal(size=(2, 3))
    _, cache = s.ffn_forward(x, W1, b1, W2, b2)
    dz = (R @ W2.T) * (x @ W1 + b1 >= 0)  # the mistake: slope 1 at exactly 0
    put("ffn_kink", x=x, W1=W1, b1=b1, W2=W2, b2=b2, d_out=R,
        grads=dict(zip(("dx", "dW1", "db1", "dW2", "db2"), s.ffn_backward(R, cache), strict=True)),
        slope_1_at_0={"dx": dz @ W1.T, "db1": dz.sum(axis=0)})

    for i, (seq, d, d_ff) in enumerate([(4, 3, 5), (2, 6, 4)]):
        x, block = rng.normal(size=(seq, d)), random_block(d, d_ff, rng)
        R = rng.normal(size=(seq, d))
        y, _ = s.block_forward(x, block)
        dx = numerical_gradient(lambda v: np.sum(R * s.block_forward(v, block)[0]), x)
        grads = {key: numerical_gradient(lambda v, key=key: np.sum(R * s.block_forward(x, {**block, key: v})[0]),
                                         block[key]) for key in block}
        put(f"block/{i}", x=x, block=block, d_y=R, y=y, dx=dx, grads=grads)

    for i, (vocab, d, d_ff, n_layers, seq) in enumerate([(5, 4, 6, 2, 5), (7, 3, 5, 1, 4)]):
        params = random_model(vocab, d, d_ff, n_layers, seq + 2, rng)
        ids = rng.integers(0, vocab, seq)
        ids[-1] = ids[0]  # a repeated token
        targets = rng.integers(0, vocab, seq)
        targets[1] = -1  # one position without a target
        loss, _ = s.transformer_loss_and_grads(ids, targets, params)
        grads = unpath(tree_gradients(lambda p: s.transformer_loss_and_grads(ids, targets, p)[0], params), params)
        put(f"model_grads/{i}", params=params, ids=ids, targets=targets, loss=loss, grads=grads)

    logits = rng.normal(size=(5, 7)) * 3
    targets = np.array([3, -1, 0, 6, -2])
    loss, d_logits = s.cross_entropy(logits, targets)
    put("cross_entropy", logits=logits, targets=targets, loss=loss, d_logits=d_logits)
    # rows on very different scales: each row must be shifted by its own maximum, not by the largest of all
    logits = np.array([[1000.0, 1001.0, 1002.0, 999.0], [0.0, 1.0, 2.0, -1.0], [-1000.0, -1001.0, -999.0, -1000.0]])
    targets = np.array([2, 0, 1])
    loss, d_logits = s.cross_entropy(logits, targets)
    put("cross_entropy_scales", logits=logits, targets=targets, loss=loss, d_logits=d_logits)

    for i, (vocab, d, n_layers, seq) in enumerate([(6, 5, 2, 4), (3, 2, 0, 3), (9, 8, 1, 7)]):
        params = random_model(vocab, d, 2 * d, n_layers, seq + 1, rng)
        ids = rng.integers(0, vocab, seq)
        logits, _ = s.transformer_forward(ids, params)
        put(f"forward/{i}", params=params, ids=ids, logits=logits, embedded=s.embed(ids, params),
            positions_left_out=params["tok_emb"][ids])

    params = random_model(3, 3, 4, 1, 4, rng)
    examples = [([0, 2, 1], [2, 1, -1]), ([1, 1, 0, 2], [-1, 0, 2, 1]), ([2], [0])]
    lr = 0.1
    numerical = [tree_gradients(lambda p, ids=ids, t=t: s.transformer_loss_and_grads(ids, t, p)[0], params)
                 for ids, t in examples]
    mean = [(path, sum(g[k][1] for g in numerical) / len(examples)) for k, (path, _) in enumerate(numerical[0])]
    stepped = unpath([(path, leaf - lr * g) for (path, leaf), (_, g) in zip(leaves(params), mean, strict=True)],
                     params)
    summed = unpath([(path, leaf - lr * g * len(examples))
                     for (path, leaf), (_, g) in zip(leaves(params), mean, strict=True)], params)
    losses = np.array([np.mean([s.transformer_loss_and_grads(ids, t, params)[0] for ids, t in examples])])
    put("train_one_epoch", params=params, examples=[{"ids": np.array(ids), "targets": np.array(t)}
                                                     for ids, t in examples],
        lr=lr, losses=losses, stepped=stepped, summed=summed)
    return data
