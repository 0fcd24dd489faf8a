"""Chapter 15's snapshot builder: ``python -m kata.authoring.snapshots 15`` writes ``build()`` to chapter15.npz.

Authors only: it runs solutions/, and the student edition leaves it out. ``tests/test_snapshots.py`` checks that
the stored file is what ``build()`` makes today.
"""

from __future__ import annotations

import numpy as np

from kata.authoring.snapshots import Store


def build(seed: int | None = None) -> dict[str, np.ndarray]:
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
