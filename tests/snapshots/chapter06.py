"""Chapter 6's snapshot builder: ``python -m kata.authoring.snapshots 6`` writes ``build()`` to chapter06.npz.

Authors only: it runs solutions/, and the student edition leaves it out. ``tests/test_snapshots.py`` checks that
the stored file is what ``build()`` makes today.
"""

from __future__ import annotations

import numpy as np

from kata.authoring.snapshots import Store
from kata.judge.gradient import numerical_gradient


def build(seed: int | None = None) -> dict[str, np.ndarray]:
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
        put(f"dlogits/{i}", target=t, probs=p,
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
