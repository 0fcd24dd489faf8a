"""Chapter 4's snapshot builder: ``python -m kata.authoring.snapshots 4`` writes ``build()`` to chapter04.npz.

Authors only: it runs solutions/, and the student edition leaves it out. ``tests/test_snapshots.py`` checks that
the stored file is what ``build()`` makes today.
"""

from __future__ import annotations

import numpy as np

from kata.authoring.snapshots import Store


def build(seed: int | None = None) -> dict[str, np.ndarray]:
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
    S = Q @ K.T / np.sqrt(2)
    e = np.exp(S - S.max(axis=-1, keepdims=True))  # the max taken along the row, the sum down the column
    put("asym", sum_wrong_axis=(e / e.sum(axis=0, keepdims=True)) @ V)
    # the softmax of those scaled scores, two rows whose sums differ, and what a sum without keepdims gives:
    # the (2,) row sums broadcast along the last axis, so entry [i, j] is divided by row j's sum
    put("asym", scores=S, softmax=s.softmax(S), softmax_sum_not_kept=e / e.sum(axis=-1),
        softmax_columns=s.softmax(S, axis=0), softmax_sum_wrong_axis=e / e.sum(axis=0, keepdims=True))
    e = np.exp(S - S.max(axis=-1))  # the max not kept as a column either: row j's max taken from column j
    put("asym", softmax_nothing_kept=e / e.sum(axis=-1))
    return data
