"""Chapter 5's snapshot builder: ``python -m kata.authoring.snapshots 5`` writes ``build()`` to chapter05.npz.

Authors only: it runs solutions/, and the student edition leaves it out. ``tests/test_snapshots.py`` checks that
the stored file is what ``build()`` makes today.
"""

from __future__ import annotations

import numpy as np

from kata.authoring.snapshots import Store


def build(seed: int | None = None) -> dict[str, np.ndarray]:
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
        put(f"toy/{i}", ids=np.array(ids), probs=f["probs"],
            first=mistakes(f, s.toy_params()["WO"])["first"]["probs"])
    ids, E, params = model(6, 3, 3, 3, 7)
    f = s.forward(ids, params, embeddings=E)
    put("prefix", ids=ids, E=E, params=params, unmasked_rows=mistakes(f, params["WO"])["unmasked"]["output"][:4])
    return data
