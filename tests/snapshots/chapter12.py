"""Chapter 12's snapshot builder: ``python -m kata.authoring.snapshots 12`` writes ``build()`` to chapter12.npz.

Authors only: it runs solutions/, and the student edition leaves it out. ``tests/test_snapshots.py`` checks that
the stored file is what ``build()`` makes today.
"""

from __future__ import annotations

import numpy as np

from kata.authoring.snapshots import Store
from kata.judge.gradient import numerical_gradient


def build(seed: int | None = None) -> dict[str, np.ndarray]:
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
        put(f"angles/{i}", n=n, d=d, base=base, start=start, out=s.rope_angles(n, d, base, start))

    X = rng.integers(-3, 4, size=(5, 6))  # whole numbers: the result is float64 all the same
    put("integers", X=X, out=s.apply_rope(X.astype(np.float64), start=1),
        start_ignored=s.apply_rope(X.astype(np.float64)))
    X, angles = rng.normal(size=(3, 4, 6)), rng.normal(size=(4, 3)) * 2
    put("rotate", X=X, angles=angles, sign=s.rotate_pairs(X, -angles))
    return data
