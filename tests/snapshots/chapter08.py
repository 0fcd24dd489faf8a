"""Chapter 8's snapshot builder: ``python -m kata.authoring.snapshots 8`` writes ``build()`` to chapter08.npz.

Authors only: it runs solutions/, and the student edition leaves it out. ``tests/test_snapshots.py`` checks that
the stored file is what ``build()`` makes today.
"""

from __future__ import annotations

import numpy as np

from kata.authoring.snapshots import Store
from kata.judge.gradient import numerical_gradient


def build(seed: int | None = None) -> dict[str, np.ndarray]:
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
