"""Chapter 9's snapshot builder: ``python -m kata.authoring.snapshots 9`` writes ``build()`` to chapter09.npz.

Authors only: it runs solutions/, and the student edition leaves it out. ``tests/test_snapshots.py`` checks that
the stored file is what ``build()`` makes today.
"""

from __future__ import annotations

import numpy as np

from kata.authoring.snapshots import Store
from kata.judge.gradient import numerical_gradient


def build(seed: int | None = None) -> dict[str, np.ndarray]:
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
