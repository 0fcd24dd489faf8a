"""Chapter 7's snapshot builder: ``python -m kata.authoring.snapshots 7`` writes ``build()`` to chapter07.npz.

Authors only: it runs solutions/, and the student edition leaves it out. ``tests/test_snapshots.py`` checks that
the stored file is what ``build()`` makes today.
"""

from __future__ import annotations

import numpy as np

from kata.authoring.snapshots import Store
from kata.judge.gradient import numerical_gradient


def build(seed: int | None = None) -> dict[str, np.ndarray]:
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

    # worksheet-sized (two positions, width 2) but asymmetric: the worksheet's Q = K and X = I hide a gradient
    # taken with the wrong factor (dRᵀ K for dK, dQ for dW_Q), so steps 7.9–7.14 check these cases too
    Q, K = np.array([[0.2, -0.1], [0.3, 0.4]]), np.array([[0.5, 0.1], [-0.2, 0.3]])
    V, G = np.array([[1.0, -0.5], [0.25, 2.0]]), np.array([[0.2, 0.1], [0.6, -0.3]])
    _, A = causal(Q, K, V)

    def f(Q=Q, K=K, V=V):
        return float((G * causal(Q, K, V)[0]).sum())

    mask = a.causal_mask(2)
    dR = numerical_gradient(lambda R: float((G * (a.softmax(np.where(mask, R / np.sqrt(2), -np.inf)) @ V)).sum()),
                            Q @ K.T)
    put("asym_attention", Q=Q, K=K, V=V, weights=A, d_output=G, dQ=numerical_gradient(lambda v: f(Q=v), Q),
        dK=numerical_gradient(lambda v: f(K=v), K), dV=numerical_gradient(lambda v: f(V=v), V),
        mistakes={"dQ_unscaled": dR @ K * np.sqrt(2), "dQ_scaled_up": dR @ K * 2.0, "dQ_transposed": dR.T @ K,
                  "dQ_K_transposed": dR @ K.T,
                  "dK_unscaled": dR.T @ Q * np.sqrt(2), "dK_transposed": dR @ Q, "dK_keys": dR.T @ K,
                  "dV_transposed": A @ G})

    from solutions import chapter07_backprop as b7

    table = np.array([[1.0, 0.5], [-0.5, 1.0], [1.0, 1.0], [0.0, 0.0]])  # A and B no longer the identity
    params = {"WQ": np.array([[0.3, -0.2], [0.1, 0.4]]), "WK": np.array([[0.2, 0.5], [-0.3, 0.1]]),
              "WV": np.array([[0.5, 0.1], [-0.2, 0.3]]),
              "WO": np.array([[0.4, -0.1, 0.2, 0.0], [0.1, 0.3, -0.2, 0.5]])}
    ids, target = [0, 1], 2
    tr = b7.backward_trace(ids, target, params, embeddings=table)
    X = tr["X"]
    put("asym_model", table=table, params=params, ids=np.array(ids), target=target,
        grads=grads(ids, target, params, table),
        mistakes={"WQ_is_dQ": tr["dQ"], "WK_is_dK": tr["dK"], "WV_is_dV": tr["dV"],
                  "WK_keys": X.T @ (tr["d_raw_scores"].T @ tr["K"])})
    return data
