"""Write the chapters' snapshots from solutions/: ``python -m kata.authoring.snapshots``.

Authors only (the student edition has neither this file nor solutions/). Each chapter's builder draws seeded
inputs, runs the reference implementation on them and stores inputs, results, central-difference gradients
and the values of classic mistakes (so a failure can still say "looks like: ...") in
``tests/snapshots/chapterNN.npz`` (``kata/judge/snapshots.py`` reads it). ``tests/test_snapshots.py`` fails
when a stored file is not what this module builds today.
"""

# ruff: noqa: B023 - every lambda here is called at once, inside its own loop iteration
from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

from kata.judge.checks import numerical_gradient
from kata.judge.snapshots import copy_tree, flatten, leaves, write


# -- helpers --------------------------------------------------------------------------------------------
class Store(dict):
    """What a builder returns, ``{path: array}`` (what ``kata.judge.snapshots`` reads), with its rng and ``put``.

    ``rng`` is seeded with the builder's own number (404 for chapter 4) unless a ``seed`` is given (the suite
    builds with other seeds to show the tests do not depend on one draw). ``put("forward/0", ids=ids,
    params={...})`` stores each value, a tree of dicts and lists flattened, under ``forward/0/<name>/...``.
    """

    def __init__(self, number: int, seed: int | None):
        super().__init__()
        self.rng = np.random.default_rng(number if seed is None else seed)

    def put(self, prefix: str, **values) -> None:
        """Store each value under ``<prefix>/<name>``."""
        for name, value in values.items():
            self.update(flatten(value, f"{prefix}/{name}"))


def tree_gradients(loss: Callable[[dict], float], params) -> list[tuple[str, np.ndarray]]:
    """Central differences of ``loss(params)`` for every leaf, as (path, gradient)."""
    out = []
    for path, leaf in leaves(params):
        def f(v, leaf=leaf):
            saved = leaf.copy()
            leaf[...] = v
            try:
                return loss(params)
            finally:
                leaf[...] = saved
        out.append((path, numerical_gradient(f, leaf)))
    return out


def unpath(grads: list[tuple[str, np.ndarray]], like):
    """Gradients given by path, as a tree shaped like ``like``."""
    tree = copy_tree(like)
    for path, g in grads:
        target = eval("tree" + path, {"tree": tree})  # noqa: S307 - paths made by `leaves`
        target[...] = g
    return tree


# -- chapter 4 -----------------------------------------------------------------------------------------
def chapter4(seed: int | None = None) -> dict[str, np.ndarray]:
    """Chapter 4: softmax and attention on seeded inputs of other shapes, and what classic mistakes give."""
    from solutions import chapter04_attention as s

    data = Store(404, seed)
    rng, put = data.rng, data.put

    for i, shape in enumerate([(3, 5), (6, 4), (1, 7)]):
        x = rng.normal(size=shape) * 3
        put(f"softmax/{i}", x=x, out=s.softmax(x), columns=s.softmax(x, axis=0),
            every_entry=s.softmax(x.ravel()).reshape(shape))
    x = rng.normal(size=(4, 3))
    put("softmax_axis0", x=x, out=s.softmax(x, axis=0), last_axis=s.softmax(x))

    for i, (n_q, n_k, d_k, d_v) in enumerate([(3, 3, 4, 5), (5, 5, 2, 3), (2, 6, 3, 1), (3, 3, 3, 5)]):
        Q, K, V = rng.normal(size=(n_q, d_k)), rng.normal(size=(n_k, d_k)), rng.normal(size=(n_k, d_v))
        output, weights = s.scaled_dot_product_attention(Q, K, V)
        unscaled = s.softmax(Q @ K.T)
        put(f"attention/{i}", Q=Q, K=K, V=V, output=output, weights=weights, no_scaling=unscaled,
            no_scaling_output=unscaled @ V, columns=s.softmax(Q @ K.T / np.sqrt(d_k), axis=0))
        if n_q == n_k == d_k:  # Q @ K is computable: the missing transpose gives a wrong answer of the right shape
            put(f"attention/{i}", k_not_transposed_output=s.softmax(Q @ K / np.sqrt(d_k)) @ V)

    for i, n in enumerate([3, 5]):
        Q, K, V = rng.normal(size=(n, 4)), rng.normal(size=(n, 4)), rng.normal(size=(n, 3))
        mask = np.tril(np.ones((n, n), dtype=bool))
        output, weights = s.scaled_dot_product_attention(Q, K, V, mask=mask)
        _, unmasked = s.scaled_dot_product_attention(Q, K, V)
        put(f"masked/{i}", Q=Q, K=K, V=V, mask=mask, output=output, weights=weights, mask_ignored=unmasked)

    # worksheet-sized (2×2) but asymmetric: the worksheet's 0.1·I hides a missing transpose
    Q, K, V = np.array([[1.0, 2.0], [3.0, -1.0]]), np.array([[0.5, -2.0], [1.5, 0.25]]), np.array([[2.0, -1.0],
                                                                                                 [0.5, 3.0]])
    output, weights = s.scaled_dot_product_attention(Q, K, V)
    put("asym", Q=Q, K=K, V=V, output=output, k_not_transposed=s.softmax(Q @ K / np.sqrt(2)) @ V,
        columns=s.softmax(Q @ K.T / np.sqrt(2), axis=0) @ V, weights_transposed=weights.T @ V)
    return data


# -- chapter 5 -----------------------------------------------------------------------------------------
def chapter5(seed: int | None = None) -> dict[str, np.ndarray]:
    """Chapter 5: the forward pass of random models of other sizes, every intermediate, and classic mistakes."""
    from solutions import chapter04_attention as a
    from solutions import chapter05_forward_pass as s

    data = Store(505, seed)
    rng, put = data.rng, data.put

    def model(seq, d_model, d_k, d_v, vocab):
        E = rng.normal(size=(vocab, d_model))
        params = {"WQ": rng.normal(size=(d_model, d_k)), "WK": rng.normal(size=(d_model, d_k)),
                  "WV": rng.normal(size=(d_model, d_v)), "WO": rng.normal(size=(d_v, vocab))}
        return np.array([int(i) for i in rng.integers(0, vocab, size=seq)]), E, params

    def mistakes(f, WO):
        """What the classic mistakes give, from the reference's own intermediates."""
        n, d_k = len(f["X"]), f["K"].shape[1]
        c0 = f["output"][0]
        out_u, w_u = a.scaled_dot_product_attention(f["Q"], f["K"], f["V"])  # no mask
        out_s, w_s = a.scaled_dot_product_attention(f["Q"] * np.sqrt(d_k), f["K"], f["V"], mask=a.causal_mask(n))
        return {"first": {"context": c0, "logits": c0 @ WO, "probs": a.softmax(c0 @ WO)},
                "unmasked": {"weights": w_u, "output": out_u},
                "unscaled": {"weights": w_s, "context": out_s[-1]}}

    for i, shape in enumerate([(3, 3, 3, 3, 5), (4, 5, 2, 3, 7), (5, 2, 4, 6, 9), (6, 4, 3, 2, 12)]):
        ids, E, params = model(*shape)
        f = s.forward(ids, params, embeddings=E)
        put(f"forward/{i}", ids=ids, E=E, params=params, want={k: f[k] for k in sorted(f)},
            mistakes=mistakes(f, params["WO"]))
    for i, (seq, vocab) in enumerate([(3, 6), (5, 8), (6, 5)]):
        ids, E, params = model(seq, 3, 2, 4, vocab)
        f = s.forward(ids, params, embeddings=E)
        put(f"probs/{i}", ids=ids, E=E, params=params, probs=f["probs"],
            first=mistakes(f, params["WO"])["first"]["probs"])
    for i, ids in enumerate([[2, 3], [0, 1, 2], [3, 3, 1, 0], [2]]):
        f = s.forward(ids, s.toy_params())
        put(f"toy/{i}", ids=np.array(ids), X=f["X"], probs=f["probs"],
            first=mistakes(f, s.toy_params()["WO"])["first"]["probs"])
    ids, E, params = model(6, 3, 3, 3, 7)
    f = s.forward(ids, params, embeddings=E)
    put("prefix", ids=ids, E=E, params=params, unmasked_rows=mistakes(f, params["WO"])["unmasked"]["output"][:4])
    return data


# -- chapter 6 -----------------------------------------------------------------------------------------
def chapter6(seed: int | None = None) -> dict[str, np.ndarray]:
    """Chapter 6: the loss gradient and one training step of W_O on random models, and classic mistakes."""
    from solutions import chapter04_attention as a
    from solutions import chapter05_forward_pass as f5
    from solutions import chapter06_training_step as s

    data = Store(606, seed)
    rng, put = data.rng, data.put

    for i, vocab in enumerate([5, 7, 9]):
        z = rng.normal(size=vocab)
        t = int(rng.integers(0, vocab))
        p = a.softmax(z)
        onehot = np.eye(vocab)[t]
        put(f"dlogits/{i}", z=z, target=t, probs=p,
            numerical=numerical_gradient(lambda v, t=t: float(-np.log(a.softmax(v)[t])), z),
            without_minus_one=p, sign_flipped=-(p - onehot))

    for i, (seq, d_model, d_k, d_v, vocab) in enumerate([(3, 3, 3, 3, 5), (4, 5, 2, 3, 7), (6, 4, 3, 2, 9)]):
        E = rng.normal(size=(vocab, d_model))
        params = {"WQ": rng.normal(size=(d_model, d_k)), "WK": rng.normal(size=(d_model, d_k)),
                  "WV": rng.normal(size=(d_model, d_v)) * 0.5, "WO": rng.normal(size=(d_v, vocab))}
        ids = np.array([int(k) for k in rng.integers(0, vocab, size=seq)])
        target = int(rng.integers(0, vocab))
        lr = 0.3
        new, loss = s.train_output_step(ids.tolist(), target, params, lr, embeddings=E)
        f = f5.forward(ids.tolist(), params, embeddings=E)
        c, p = f["context"], f["probs"]
        onehot = np.eye(vocab)[target]
        c0 = f["output"][0]
        p0 = a.softmax(c0 @ params["WO"])
        put(f"train/{i}", ids=ids, target=target, E=E, params=params, lr=lr, WO=new["WO"], loss=loss,
            mistakes={"adds": params["WO"] + lr * np.outer(c, p - onehot),
                      "without_minus_one": params["WO"] - lr * np.outer(c, p),
                      "first_position": params["WO"] - lr * np.outer(c0, p0 - onehot)})
    return data


# -- chapter 7 -----------------------------------------------------------------------------------------
def chapter7(seed: int | None = None) -> dict[str, np.ndarray]:
    """Chapter 7: every backward function against central differences on seeded inputs, and classic mistakes."""
    from solutions import chapter04_attention as a
    from solutions import chapter05_forward_pass as f5

    data = Store(707, seed)
    rng, put = data.rng, data.put
    names = ("WQ", "WK", "WV", "WO")

    def causal(Q, K, V):
        return a.scaled_dot_product_attention(Q, K, V, mask=a.causal_mask(len(Q)))

    def model(d_model, d_k, d_v, vocab):
        table = rng.normal(size=(vocab, d_model))
        params = {"WQ": rng.normal(size=(d_model, d_k)), "WK": rng.normal(size=(d_model, d_k)),
                  "WV": rng.normal(size=(d_model, d_v)), "WO": rng.normal(size=(d_v, vocab))}
        return table, params

    def loss(ids, target, params, table):
        return float(-np.log(f5.forward(ids, params, embeddings=table)["probs"][target]))

    def grads(ids, target, params, table):
        return {n: numerical_gradient(lambda W, n=n: loss(ids, target, {**params, n: W}, table), params[n])
                for n in names}

    for i, (rows, n) in enumerate([(1, 5), (3, 4), (6, 3), (4, 7)]):
        x, G = rng.normal(size=(rows, n)) * 2, rng.normal(size=(rows, n))
        sm = a.softmax(x)
        dot = (sm * G).sum(axis=-1, keepdims=True)
        put(f"softmax_backward/{i}", probs=sm, dprobs=G,
            numerical=numerical_gradient(lambda v, G=G: float((G * a.softmax(v)).sum()), x),
            mistakes={"no_dot": sm * G, "no_s": G - dot,
                      "columns": sm * (G - (sm * G).sum(axis=0, keepdims=True))})
    x, g = rng.normal(size=6), rng.normal(size=6)
    put("softmax_backward_vector", probs=a.softmax(x), dprobs=g,
        numerical=numerical_gradient(lambda v: float(g @ a.softmax(v)), x))

    for i, (n, d_k, d_v) in enumerate([(3, 4, 2), (4, 3, 5), (5, 2, 3), (6, 5, 4)]):
        Q, K, V = rng.normal(size=(n, d_k)), rng.normal(size=(n, d_k)), rng.normal(size=(n, d_v))
        G = rng.normal(size=(n, d_v))
        _, A = causal(Q, K, V)
        mask = a.causal_mask(n)

        def f(Q=Q, K=K, V=V, G=G):
            return float((G * causal(Q, K, V)[0]).sum())

        dR = numerical_gradient(lambda R, G=G, V=V, mask=mask, d_k=d_k: float(
            (G * (a.softmax(np.where(mask, R / np.sqrt(d_k), -np.inf)) @ V)).sum()), Q @ K.T)
        put(f"attention_backward/{i}", Q=Q, K=K, V=V, weights=A, d_output=G,
            dQ=numerical_gradient(lambda v, f=f: f(Q=v), Q), dK=numerical_gradient(lambda v, f=f: f(K=v), K),
            dV=numerical_gradient(lambda v, f=f: f(V=v), V),
            mistakes={"dQ_unscaled": dR @ K * np.sqrt(d_k), "dQ_transposed": dR.T @ K,
                      "dK_unscaled": dR.T @ Q * np.sqrt(d_k), "dK_transposed": dR @ Q, "dV_transposed": A @ G})

    for i, (seq, d_model, d_k, d_v, vocab) in enumerate([(3, 3, 4, 2, 5), (4, 2, 3, 3, 4), (5, 4, 2, 5, 6),
                                                          (6, 3, 3, 4, 7)]):
        table, params = model(d_model, d_k, d_v, vocab)
        params = {k: v * 0.7 for k, v in params.items()}
        ids = np.array([int(k) for k in rng.integers(0, vocab, size=seq)])
        target = int(rng.integers(0, vocab))
        put(f"backward/{i}", table=table, params=params, ids=ids, target=target,
            loss=loss(ids.tolist(), target, params, table), grads=grads(ids.tolist(), target, params, table))

    table, params = model(3, 4, 3, 5)
    ids, target = [1, 4, 0, 2, 2], 3
    f = f5.forward(ids, params, embeddings=table)
    Q, K, V = f["Q"], f["K"], f["V"]

    def loss_from(Q=Q, K=K, V=V):
        return float(-np.log(a.softmax(causal(Q, K, V)[0][-1] @ params["WO"])[target]))

    mask = a.causal_mask(5)

    def loss_from_scores(S):
        H = a.softmax(np.where(mask, S, -np.inf)) @ V
        return float(-np.log(a.softmax(H[-1] @ params["WO"])[target]))

    d_scores = numerical_gradient(loss_from_scores, Q @ K.T / 2.0)  # d_k = 4
    d_output = np.zeros((5, 3))
    d_output[-1] = numerical_gradient(lambda c: float(-np.log(a.softmax(c @ params["WO"])[target])), f["context"])
    put("trace", table=table, params=params, ids=np.array(ids), target=target,
        dQ=numerical_gradient(lambda v: loss_from(Q=v), Q), dK=numerical_gradient(lambda v: loss_from(K=v), K),
        dV=numerical_gradient(lambda v: loss_from(V=v), V), d_scores=d_scores, d_raw_scores=d_scores / 2.0,
        d_output=d_output)

    for i in range(3):
        table, params = model(3, 3, 3, 5)
        ids, target = np.array([int(k) for k in rng.integers(0, 5, size=4)]), int(rng.integers(0, 5))
        g = grads(ids.tolist(), target, params, table)
        put(f"full_step/{i}", table=table, params=params, ids=ids, target=target, lr=0.01,
            loss=loss(ids.tolist(), target, params, table), grads=g,
            stepped={n: params[n] - 0.01 * g[n] for n in names})

    Q, K, V, G = (rng.normal(size=(4, 3)) for _ in range(4))
    put("untouched", Q=Q, K=K, V=V, d_output=G, weights=causal(Q, K, V)[1])
    return data


# -- chapter 8 -----------------------------------------------------------------------------------------
def chapter8(seed: int | None = None) -> dict[str, np.ndarray]:
    """Chapter 8: per-example results, mean gradients and training on random batches, and classic mistakes."""
    from solutions import chapter05_forward_pass as f5
    from solutions import chapter08_batch_training as s

    data = Store(808, seed)  # its rng is unused: each problem below draws from a generator of its own
    put = data.put

    def problem(n, vocab, d_model, d_k, rng):
        table = rng.normal(size=(vocab, d_model))
        p = {"WQ": rng.normal(size=(d_model, d_k)), "WK": rng.normal(size=(d_model, d_k)),
             "WV": rng.normal(size=(d_model, d_k)), "WO": rng.normal(size=(d_k, vocab))}
        examples = [([int(i) for i in rng.integers(0, vocab, size=rng.integers(1, 6))], int(rng.integers(0, vocab)))
                    for _ in range(n)]
        return examples, p, table

    def store_examples(examples):
        return [{"ids": np.array(ids), "target": t} for ids, t in examples]

    def mean_gradients(examples, p, table):
        return {name: numerical_gradient(lambda W, name=name: s.batch_loss(examples, {**p, name: W},
                                                                            embeddings=table), p[name])
                for name in ("WQ", "WK", "WV", "WO")}

    base = 808 if seed is None else seed
    for i, (n, vocab, d_model, d_k) in enumerate([(4, 6, 3, 2), (5, 5, 2, 4), (3, 7, 4, 3)]):
        examples, p, table = problem(n, vocab, d_model, d_k, np.random.default_rng(base + i))
        per = s.per_example(examples, p, embeddings=table)
        first = np.array([table[ids[0]] @ p["WV"] for ids, _ in examples])  # position 0 attends only to itself
        put(f"per_example/{i}", examples=store_examples(examples), params=p, table=table, want=per,
            context_first=first, mean=s.batch_loss(examples, p, embeddings=table))
        examples, p, table = problem(n, vocab, d_model, d_k, np.random.default_rng(base + 10 + i))
        put(f"gradients/{i}", examples=store_examples(examples), params=p, table=table,
            loss=s.batch_loss(examples, p, embeddings=table), grads=mean_gradients(examples, p, table))

    examples, p, table = problem(4, 5, 3, 2, np.random.default_rng(base + 20))
    lr, q, losses = 0.3, dict(p), []
    for _ in range(3):
        losses.append(s.batch_loss(examples, q, embeddings=table))
        g = mean_gradients(examples, q, table)
        q = {name: q[name] - lr * g[name] for name in q}
    put("train", examples=store_examples(examples), params=p, table=table, lr=lr, losses=np.array(losses), final=q,
        recorded_after=np.array(losses[1:] + [s.batch_loss(examples, q, embeddings=table)]))

    examples, p, table = problem(6, 5, 3, 3, np.random.default_rng(base + 30))
    predicted = [int(np.argmax(f5.forward(ids, p, embeddings=table)["probs"])) for ids, _ in examples]
    put("accuracy", examples=store_examples(examples), params=p, table=table, predicted=np.array(predicted))
    return data


# -- chapter 9 -----------------------------------------------------------------------------------------
def chapter9(seed: int | None = None) -> dict[str, np.ndarray]:
    """Chapter 9: the feed-forward layer and its gradients on seeded inputs, and what classic mistakes give."""
    from solutions import chapter09_feed_forward as s

    data = Store(909, seed)
    rng, put = data.rng, data.put

    def layer(seq, d_model, d_ff, bias=True):
        """Pre-activations of both signs, well away from the ReLU's kink (central differences need that)."""
        while True:
            x = rng.normal(size=(seq, d_model))
            W1, W2 = rng.normal(size=(d_model, d_ff)), rng.normal(size=(d_ff, d_model))
            b1, b2 = (rng.normal(size=d_ff), rng.normal(size=d_model)) if bias else (np.zeros(d_ff), np.zeros(d_model))
            h = x @ W1 + b1
            if (h > 0).any() and (h < 0).any() and np.abs(h).min() > 1e-3:
                return x, W1, W2, b1, b2

    def gradients(x, W1, W2, b1, b2, d_out, residual=False):
        def loss(*args):
            y = (s.residual_feed_forward if residual else s.feed_forward)(*args)
            return float(np.sum(d_out * y))
        args = [x, W1, W2, b1, b2]
        return {name: numerical_gradient(lambda v, k=k: loss(*[v if j == k else args[j] for j in range(5)]), args[k])
                for k, name in enumerate(("dx", "dW1", "dW2", "db1", "db2"))}

    def backward_mistakes(x, W1, W2, b1, d_out):
        h = x @ W1 + b1
        return {"relu_passed_through": (d_out @ W2.T) @ W1.T,
                "derivative_1_at_0": ((d_out @ W2.T) * (h >= 0)) @ W1.T,
                "times_relu_output": ((d_out @ W2.T) * s.relu(h)) @ W1.T}

    for i, (seq, d_model, d_ff) in enumerate([(3, 4, 8), (5, 2, 3), (1, 6, 4)]):
        x, W1, W2, b1, b2 = layer(seq, d_model, d_ff)
        out = s.feed_forward(x, W1, W2, b1, b2)
        put(f"ffn/{i}", x=x, W1=W1, W2=W2, b1=b1, b2=b2, out=out, out_no_bias=s.feed_forward(x, W1, W2),
            no_relu=s.linear(s.linear(x, W1, b1), W2, b2), relu_after=s.relu(s.linear(s.linear(x, W1, b1), W2, b2)),
            residual_inside=x + out, residual=s.residual_feed_forward(x, W1, W2, b1, b2))

    for i, (seq, d_model, d_ff) in enumerate([(3, 4, 8), (5, 2, 3), (2, 6, 5)]):
        x, W1, W2, b1, b2 = layer(seq, d_model, d_ff)
        d = rng.normal(size=(seq, d_model))
        put(f"backward/{i}", x=x, W1=W1, W2=W2, b1=b1, b2=b2, d_out=d, grads=gradients(x, W1, W2, b1, b2, d),
            mistakes=backward_mistakes(x, W1, W2, b1, d))
        x, W1, W2, b1, b2 = layer(seq, d_model, d_ff)
        d = rng.normal(size=(seq, d_model))
        put(f"residual_backward/{i}", x=x, W1=W1, W2=W2, b1=b1, b2=b2, d_out=d,
            grads=gradients(x, W1, W2, b1, b2, d, residual=True))

    for i, (seq, d_model, d_ff) in enumerate([(3, 4, 8), (4, 3, 2)]):
        x, W1, W2, b1, b2 = layer(seq, d_model, d_ff, bias=False)
        d = rng.normal(size=(seq, d_model))
        put(f"backward_no_bias/{i}", x=x, W1=W1, W2=W2, d_out=d, grads=gradients(x, W1, W2, b1, b2, d))
    return data


# -- chapter 10 ----------------------------------------------------------------------------------------
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


def chapter10(seed: int | None = None) -> dict[str, np.ndarray]:
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
        xc = x - x.mean(axis=-1, keepdims=True)
        sample = (gamma * xc / np.sqrt(x.var(axis=-1, ddof=1, keepdims=True) + 1e-5) + beta
                  if shape[-1] > 1 else out)
        put(f"layer_norm/{i}", x=x, gamma=gamma, beta=beta, out=out, sample_variance=sample)

    x = np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]])
    put("layer_norm_eps", x=x, out=s.layer_norm(x, np.ones(3), np.zeros(3)),
        out_eps1=s.layer_norm(x, np.ones(3), np.zeros(3), eps=1.0))

    for i, shape in enumerate([(3, 5), (4, 2), (2, 3, 6)]):
        x = rng.normal(size=shape)
        gamma, beta = rng.normal(size=shape[-1]), rng.normal(size=shape[-1])
        R = rng.normal(size=shape)
        put(f"layer_norm_backward/{i}", x=x, gamma=gamma, beta=beta, d_out=R,
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


# -- chapter 11 ----------------------------------------------------------------------------------------
def chapter11(seed: int | None = None) -> dict[str, np.ndarray]:
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


# -- chapter 12 ----------------------------------------------------------------------------------------
def chapter12(seed: int | None = None) -> dict[str, np.ndarray]:
    """Chapter 12: RoPE on seeded inputs of other shapes, its gradient, attention with it, classic mistakes."""
    from solutions import chapter04_attention as a
    from solutions import chapter12_rope as s

    data = Store(1212, seed)
    rng, put = data.rng, data.put

    def halves(X, base, start):
        """The other pairing convention: feature i with feature i + d/2."""
        d = X.shape[-1]
        adjacent = np.concatenate([X[..., : d // 2, None], X[..., d // 2:, None]], axis=-1).reshape(X.shape)
        Y = s.apply_rope(adjacent, base, start)
        return np.concatenate([Y[..., 0::2], Y[..., 1::2]], axis=-1)

    def mistakes(X, base, start):
        seq, d = X.shape[-2:]
        positions = start + np.arange(seq)
        return {"halves": halves(X, base, start),
                "sign": s.rotate_pairs(X, -s.rope_angles(seq, d, base, start)),
                "from_one": s.apply_rope(X, base, start + 1),
                "exponent": s.rotate_pairs(X, np.outer(positions, float(base) ** (-np.arange(d // 2) / d))),
                "start_ignored": s.apply_rope(X, base, 0),
                "base_ignored": s.apply_rope(X, 10000.0, start)}

    cases = [((3, 6), 10000.0, 0), ((5, 8), 10000.0, 2), ((8, 16), 100.0, 0), ((2, 4), 10000.0, 7),
             ((2, 3, 8), 10000.0, 0), ((4, 5, 6), 500.0, 3), ((1, 7, 2), 10000.0, 1), ((2, 2, 3, 4), 10000.0, 0)]
    for i, (shape, base, start) in enumerate(cases):
        X = rng.normal(size=shape)
        G = rng.normal(size=shape)
        put(f"rope/{i}", X=X, base=base, start=start, out=s.apply_rope(X, base, start),
            mistakes=mistakes(X, base, start))
        put(f"backward/{i}", dY=G, base=base, start=start,
            numerical=numerical_gradient(lambda v: float(np.sum(G * s.apply_rope(v, base, start))), X),
            forward=s.apply_rope(G, base, start), from_one=s.rope_backward(G, base, start + 1),
            start_ignored=s.rope_backward(G, base, 0), base_ignored=s.rope_backward(G, 10000.0, start))

    for i, (shape, base) in enumerate([((4, 6), 10000.0), ((6, 8), 10000.0), ((3, 5, 4), 100.0),
                                       ((2, 8, 16), 10000.0)]):
        Q, K = rng.normal(size=shape), rng.normal(size=shape)
        put(f"scores/{i}", Q=Q, K=K, base=base, out=s.rope_scores(Q, K, base),
            keys_unrotated=s.apply_rope(Q, base) @ np.swapaxes(K, -1, -2), plain=Q @ np.swapaxes(K, -1, -2),
            halves=halves(Q, base, 0) @ np.swapaxes(halves(K, base, 0), -1, -2),
            base_ignored=s.rope_scores(Q, K))

    for i, (seq, d, d_v, base) in enumerate([(4, 6, 3, 10000.0), (6, 8, 8, 10000.0), (3, 4, 5, 30.0),
                                             (5, 2, 2, 10000.0), (8, 16, 4, 10000.0)]):
        Q, K, V = rng.normal(size=(seq, d)) * 1.5, rng.normal(size=(seq, d)) * 1.5, rng.normal(size=(seq, d_v))
        mask = a.causal_mask(seq)
        Qr, Kr = s.apply_rope(Q, base), s.apply_rope(K, base)
        output, weights = s.rope_attention(Q, K, V, base)
        found = {"no_rope": a.scaled_dot_product_attention(Q, K, V, mask=mask)[0],
                 "unmasked": a.scaled_dot_product_attention(Qr, Kr, V)[0]}
        found_weights = {"no_rope": a.scaled_dot_product_attention(Q, K, V, mask=mask)[1],
                         "unmasked": a.scaled_dot_product_attention(Qr, Kr, V)[1]}
        if d_v % 2 == 0:
            found["v_rotated"] = a.scaled_dot_product_attention(Qr, Kr, s.apply_rope(V, base), mask=mask)[0]
        if base != 10000.0:
            found["base_ignored"] = s.rope_attention(Q, K, V)[0]
            found_weights["base_ignored"] = s.rope_attention(Q, K, V)[1]
        put(f"attention/{i}", Q=Q, K=K, V=V, base=base, output=output, weights=weights, mistakes=found,
            weight_mistakes=found_weights)

    for i, (n, d, base, start) in enumerate([(5, 6, 10000.0, 0), (3, 10, 10000.0, 4), (7, 2, 50.0, 1), (1, 8, 1e6, 0),
                                                  (4, 6, 1.5, 2)]):
        put(f"angles/{i}", n=n, d=d, base=base, start=start, out=s.rope_angles(n, d, base, start),
            frequencies=s.rope_frequencies(d, base))

    X = rng.integers(-3, 4, size=(5, 6))  # whole numbers: the result is float64 all the same
    put("integers", X=X, out=s.apply_rope(X.astype(np.float64), start=1),
        start_ignored=s.apply_rope(X.astype(np.float64)))
    X, angles = rng.normal(size=(3, 4, 6)), rng.normal(size=(4, 3)) * 2
    put("rotate", X=X, angles=angles, out=s.rotate_pairs(X, angles), sign=s.rotate_pairs(X, -angles))
    return data


# -- chapter 13 ----------------------------------------------------------------------------------------
def chapter13(seed: int | None = None) -> dict[str, np.ndarray]:
    """Chapter 13: RMSNorm, SiLU, SwiGLU (and the block) on seeded inputs, numerical gradients, classic mistakes."""
    from kata.judge import answer_key
    from solutions import chapter13_modern_block as s

    data = Store(1313, seed)
    rng, put = data.rng, data.put

    def rms(x, eps=1e-6):
        return np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)

    # 13.3 and 13.7: the gradients the worksheet does not print
    step = answer_key.load(13).step("13.3")
    x, g, d_out = step.input("x"), step.input("g"), step.input("d_out")
    put("ws_13_3", dg=numerical_gradient(lambda v: np.sum(d_out * s.rms_norm(x, v)), g),
        dg_features=np.sum(d_out * x / rms(x), axis=-1))
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


BUILDERS = {4: chapter4, 5: chapter5, 6: chapter6, 7: chapter7, 8: chapter8, 9: chapter9, 10: chapter10,
            11: chapter11, 12: chapter12, 13: chapter13}



def chapter14(seed: int | None = None) -> dict[str, np.ndarray]:
    """Chapter 14: byte-pair encoding on seeded texts (runs, ties, two- to four-byte characters), classic mistakes.

    Texts are stored as arrays of code points and merges as (k, 3) arrays of (a, b, new_id): a snapshot holds
    numbers only. The mistakes' values come from scripts/audit_chapter14_bpe.py's slow, obvious rules.
    """
    from kata.authoring.audit import script
    from solutions import chapter14_bpe as s

    audit = script(14)
    data = Store(1414, seed)
    rng = data.rng

    def ints(values):
        return np.asarray(list(values), dtype=np.int64).reshape(-1)

    def table(merges):
        return np.asarray([[a, b, t] for (a, b), t in merges], dtype=np.int64).reshape(-1, 3)

    def text(n, alphabet):
        return "".join(alphabet[int(i)] for i in rng.integers(0, len(alphabet), size=n))

    def points(t):
        return ints(ord(c) for c in t)

    def counts_table(counts):
        return np.asarray([[a, b, c] for (a, b), c in sorted(counts.items())], dtype=np.int64).reshape(-1, 3)

    small = "aab é🙂c"  # runs of a, ties, two- and four-byte characters
    wide = [chr(c) for c in (*range(32, 127), *range(0xA0, 0x180), *range(0x3041, 0x3097), *range(0x4E00, 0x4E40),
                             *range(0x1F600, 0x1F650), 0x10FFFF)]
    # to_byte_ids on any Unicode text
    for i, n in enumerate((0, 1, 7, 30)):
        t = text(n, wide)
        data[f"bytes/{i}/text"], data[f"bytes/{i}/ids"] = points(t), ints(s.to_byte_ids(t))
    # count_pairs on ids with runs
    for i, (n, k) in enumerate(((0, 3), (1, 3), (2, 2), (13, 2), (40, 3), (60, 5))):
        ids = [int(x) for x in rng.integers(0, k, size=n) * 40 + 60]
        data[f"pairs/{i}/ids"] = ints(ids)
        data[f"pairs/{i}/counts"] = counts_table(s.count_pairs(ids))
        data[f"pairs/{i}/non_overlapping"] = counts_table(audit.pair_counts(ids, overlapping=False))
        data[f"pairs/{i}/last_left_out"] = counts_table(audit.pair_counts(ids, last=False))
    # most_frequent_pair: ties at the top, stored in a shuffled order
    for i, (n_pairs, top) in enumerate(((1, 5), (4, 3), (9, 2), (16, 7))):
        pairs = {(int(a), int(b)) for a, b in rng.integers(0, 300, size=(3 * n_pairs, 2))}
        pairs = sorted(pairs)[:n_pairs]
        order = [pairs[int(j)] for j in rng.permutation(len(pairs))]
        counts = {p: top if j % 2 == 0 else int(rng.integers(1, top)) for j, p in enumerate(order)}
        data[f"best/{i}/counts"] = np.asarray([[a, b, c] for (a, b), c in counts.items()], dtype=np.int64)
        data[f"best/{i}/pair"] = ints(s.most_frequent_pair(counts))
        data[f"best/{i}/largest"] = ints(audit.best(counts, "largest"))
        data[f"best/{i}/first"] = ints(audit.best(counts, "first"))
        data[f"best/{i}/first_id"] = ints(audit.best(counts, "first id"))
    # merge_pair: a == b runs and a != b pairs
    for i, (n, k, pair) in enumerate(((0, 2, (1, 1)), (1, 2, (1, 1)), (9, 2, (1, 1)), (25, 3, (0, 2)),
                                     (40, 2, (0, 0)), (30, 4, (3, 1)), (2, 1, (0, 0)), (12, 3, (2, 1)))):
        ids = [int(x) for x in rng.integers(0, k, size=n)]
        if i >= 6:  # the pair at the very end
            ids[-2:] = pair
        new = 256 + i
        data[f"merge/{i}/ids"], data[f"merge/{i}/pair"], data[f"merge/{i}/new_id"] = ints(ids), ints(pair), ints([new])
        data[f"merge/{i}/out"] = ints(s.merge_pair(ids, pair, new))
        data[f"merge/{i}/from_right"] = ints(audit.replace(ids, pair, new, from_right=True))
        data[f"merge/{i}/last_dropped"] = ints(audit.replace(ids, pair, new, keep_last=False))
    # train_bpe: runs, ties, multi-byte characters; the last one runs out of pairs before vocab_size
    for i, (n, extra, alphabet) in enumerate(((40, 6, small), (120, 20, small), (200, 35, small), (80, 60, small),
                                               (3, 10, small), (90, 25, "\x01\x01\x01\x02 a"))):
        t = text(n, alphabet)
        merges = s.train_bpe(t, 256 + extra)
        data[f"train/{i}/text"], data[f"train/{i}/vocab_size"] = points(t), ints([256 + extra])
        data[f"train/{i}/merges"] = table(merges)
        for name, kw in (("largest", {"tie": "largest"}), ("first", {"tie": "first"}),
                         ("from_right", {"from_right": True}), ("non_overlapping", {"overlapping": False}),
                         ("first_id", {"tie": "first id"}), ("stopped", {"stop_at_one": True})):
            data[f"train/{i}/{name}"] = table(audit.train(t, 256 + extra, **kw))
        vocab = s.build_vocab(merges)
        data.update(flatten([ints(vocab[new]) for _, new in merges], f"train/{i}/tokens"))
        data.update(flatten([ints(vocab[b] + vocab[a]) for (a, b), _ in merges], f"train/{i}/right_first"))
        # encode and decode other texts with these merges
        other = text(n // 2 + 5, alphabet)
        ids = s.encode(other, merges)
        data[f"train/{i}/other"], data[f"train/{i}/encoded"] = points(other), ints(ids)
        data[f"train/{i}/by_frequency"] = ints(audit.encode(other, [[list(p), m] for p, m in merges],
                                                             by_frequency=True))
        data[f"train/{i}/reversed"] = ints(audit.encode(other, [[list(p), m] for p, m in reversed(merges)]))
        table_ = audit.token_bytes(merges)
        data[f"train/{i}/per_token"] = points(audit.decode(ids, table_, per_token=True))
    # round trips: random Unicode texts, encoded with merges learned on another one
    for i, n in enumerate((0, 1, 5, 40, 120)):
        data[f"roundtrip/{i}/text"] = points(text(n, wide))
    # most_frequent_pair: ties between pairs that share their first id, the larger second id counted first
    for i, counts in enumerate(({(97, 99): 3, (256, 97): 3, (97, 98): 3, (98, 97): 1},
                                {(300, 5): 2, (7, 400): 2, (7, 9): 2, (7, 8): 2, (6, 500): 1, (7, 7): 1}), start=4):
        data[f"best/{i}/counts"] = np.asarray([[a, b, c] for (a, b), c in counts.items()], dtype=np.int64)
        data[f"best/{i}/pair"] = ints(s.most_frequent_pair(counts))
        for name in ("largest", "first", "first id"):
            data[f"best/{i}/{name.replace(' ', '_')}"] = ints(audit.best(counts, name))
    return data


BUILDERS[14] = chapter14


# -- chapter 15 ----------------------------------------------------------------------------------------
def chapter15(seed: int | None = None) -> dict[str, np.ndarray]:
    """Chapter 15: AdamW runs, schedules and clipping on other shapes and settings; classic mistakes."""
    from solutions import chapter15_adamw as s

    data = Store(1515, seed)
    rng, put = data.rng, data.put

    def variant(params, grads_seq, lrs, hyper, mode):
        """The weights after the run with one classic mistake: "uncorrected", "coupled", "eps_inside", "decay_after"."""
        b1, b2, eps, lam = hyper["beta1"], hyper["beta2"], hyper["eps"], hyper["weight_decay"]
        w = {k: p.copy() for k, p in params.items()}
        m = {k: np.zeros_like(p) for k, p in params.items()}
        v = {k: np.zeros_like(p) for k, p in params.items()}
        for t, (grads, lr) in enumerate(zip(grads_seq, lrs, strict=True), start=1):
            for k in w:
                g = grads[k] + lam * w[k] if mode == "coupled" else grads[k]
                m[k] = b1 * m[k] + (1 - b1) * g
                v[k] = b2 * v[k] + (1 - b2) * g * g
                m_hat, v_hat = (m[k], v[k]) if mode == "uncorrected" else (m[k] / (1 - b1**t), v[k] / (1 - b2**t))
                root = np.sqrt(v_hat + eps) if mode == "eps_inside" else np.sqrt(v_hat) + eps
                if mode == "decay_after":  # the decay of the weight the Adam step has already moved
                    moved = w[k] - lr * m_hat / root
                    w[k] = moved - lr * lam * moved
                else:
                    w[k] = w[k] - lr * (m_hat / root + (0.0 if mode == "coupled" else lam * w[k]))
        return w

    cases = [({"W": (3, 5), "b": (5,)}, 3, 1.0, {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01}),
             ({"E": (4, 2, 3), "W": (2, 6), "g": (6,)}, 5, 1.0,
              {"beta1": 0.8, "beta2": 0.99, "eps": 1e-8, "weight_decay": 0.1}),
             ({"x": (7,)}, 2, 0.01, {"beta1": 0.9, "beta2": 0.999, "eps": 1e-3, "weight_decay": 0.0}),
             ({"W1": (5, 3), "W2": (3, 5)}, 4, 100.0, {"beta1": 0.5, "beta2": 0.9, "eps": 1e-6, "weight_decay": 0.5})]
    for i, (shapes, n_steps, scale, hyper) in enumerate(cases):
        params = {k: rng.normal(size=shape) for k, shape in shapes.items()}
        grads_seq = [{k: rng.normal(size=shape) * scale for k, shape in shapes.items()} for _ in range(n_steps)]
        lrs = [float(x) for x in rng.uniform(0.01, 0.1, size=n_steps)]
        w, state = params, s.adamw_init(params)
        for grads, lr in zip(grads_seq, lrs, strict=True):
            w, state = s.adamw_step(w, grads, state, lr, **hyper)
        put(f"adamw/{i}", params=params, grads=grads_seq, lrs=np.array(lrs), hyper=hyper, out=w, m=state["m"],
            v=state["v"],
            step=state["step"],
            mistakes={mode: variant(params, grads_seq, lrs, hyper, mode)
                      for mode in ("uncorrected", "coupled", "eps_inside", "decay_after")})

    schedules = [(3e-4, 3e-5, 10, 50), (1.0, 0.0, 0, 8), (0.5, 0.1, 6, 6), (2e-3, 2e-4, 1, 20), (1e-2, 1e-2, 3, 9)]
    def end_early(t, max_lr, min_lr, warmup, total, shorter):
        """The decay ending one step early: at total − 1 (``shorter``: its length counted one short, too)."""
        if t < warmup:
            return max_lr * (t + 1) / warmup
        if t >= total - 1:
            return min_lr
        p = (t - warmup) / (total - warmup - (1 if shorter else 0))
        return min_lr + 0.5 * (max_lr - min_lr) * (1 + np.cos(np.pi * p))

    for i, (max_lr, min_lr, warmup, total) in enumerate(schedules):
        kw = {"max_lr": max_lr, "min_lr": min_lr, "warmup_steps": warmup, "total_steps": total}
        steps = np.arange(total + 3)
        put(f"schedule/{i}", max_lr=max_lr, min_lr=min_lr, warmup=warmup, total=total, steps=steps,
            lr=np.array([s.lr_at(int(t), **kw) for t in steps]),
            off_by_one=np.array([0.0 if t == 0 else s.lr_at(int(t) - 1, **kw) for t in steps]),
            end_early=np.array([end_early(int(t), max_lr, min_lr, warmup, total, False) for t in steps]),
            end_shorter=np.array([end_early(int(t), max_lr, min_lr, warmup, total, True) for t in steps]))

    clips = [({"W": (3, 5), "b": (5,)}, 1.0), ({"E": (4, 2, 3), "W": (2, 6), "g": (6,)}, 2.5),
             ({"x": (7,)}, 0.5), ({"W1": (5, 3), "W2": (3, 5), "b": (1,)}, 100.0)]
    for i, (shapes, max_norm) in enumerate(clips):
        grads = {k: rng.normal(size=shape) for k, shape in shapes.items()}
        clipped, norm = s.clip_by_global_norm(grads, max_norm)
        put(f"clip/{i}", grads=grads, max_norm=max_norm, clipped=clipped, norm=norm,
            per_tensor={k: s.clip_by_global_norm({k: g}, max_norm)[0][k] for k, g in grads.items()},
            sum_of_norms=sum(float(np.linalg.norm(g)) for g in grads.values()),
            always={k: g * (max_norm / norm) for k, g in grads.items()}, clipped_norm=min(norm, max_norm))
    return data


BUILDERS[15] = chapter15


# -- chapter 16 ----------------------------------------------------------------------------------------
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


def chapter16(seed: int | None = None) -> dict[str, np.ndarray]:
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
            top_p=-1.0 if top is None else top, out=np.array([s.choose_next(z, float(u), **kw) for u in us]),
            multiplied=np.array([s.choose_next(z * T * T, float(u), **kw) if T else int(np.argmax(z)) for u in us]))

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
            caches = list(caches)
            for j, params in enumerate(model["blocks"]):
                x, caches[j] = cached_block(x, params, n, caches[j], mode)
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
            restart=cached_block(x[t:], params, n, (K_all[:, :t], V_all[:, :t]), "restart")[0])
    models = [(11, 8, 12, 2, 2, [3, 1, 1, 1, 1]), (13, 16, 8, 4, 1, [1, 1, 1, 1, 1, 1]), (7, 4, 6, 1, 3, [2, 3, 1, 1]),
              (17, 12, 16, 3, 2, [4, 2, 1, 1, 1])]
    for i, (vocab, d_model, d_ff, n, n_blocks, chunks) in enumerate(models):
        model = random_gpt(vocab, d_model, d_ff, n_blocks, rng)
        ids = rng.integers(0, vocab, size=sum(chunks))
        put(f"model/{i}", model=model, n_heads=n, ids=ids, chunks=np.array(chunks), logits=full_forward(model, ids, n),
            **{mode: decode(model, ids, chunks, n, mode)
               for mode in ("restart", "twice", "unmasked", "keys_at_zero", "keys_first")})
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


BUILDERS[16] = chapter16


def build(chapter: int, seed: int | None = None) -> dict[str, np.ndarray]:
    """The snapshot of one chapter, as {key: array}: the stored one, or fresh inputs drawn from ``seed``.

    The instructor's grade (``--seed``, with solutions/ at hand) draws fresh inputs for every run, so
    nothing a learner can read in the student edition predicts them.
    """
    return BUILDERS[chapter](seed)


def main(argv: list[str]) -> int:
    """Write every chapter's snapshot (or those given by number)."""
    for chapter in [int(a) for a in argv] or sorted(BUILDERS):
        target = write(chapter, build(chapter))
        print(f"wrote {target} ({target.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
