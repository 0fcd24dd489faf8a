"""Chapter 15, written from the docstrings: whole-array AdamW, the global norm as einsum dot products.

The schedule through np.cos, checkpoints through np.savez with a file object opened here.
"""

import numpy as np

FORMAT = "kata-adamw-checkpoint-1"


def _arrays(tree, name):
    if not isinstance(tree, dict):
        raise ValueError(f"{name} must be a dict of arrays, not {type(tree).__name__}")
    return {key: np.asarray(value, dtype=np.float64).copy() for key, value in tree.items()}


def _same(params, other, what):
    extra = sorted(set(other) - set(params))
    missing = sorted(set(params) - set(other))
    if missing or extra:
        raise ValueError(f"{what} and params differ: missing {', '.join(map(str, missing)) or 'nothing'}, "
                         f"extra {', '.join(map(str, extra)) or 'nothing'}")
    bad = [(k, np.shape(other[k]), params[k].shape) for k in params if np.shape(other[k]) != params[k].shape]
    if bad:
        k, got, want = bad[0]
        raise ValueError(f"shape mismatch for {k}: {what} {got}, params {want}")


def _t(state, params):
    if not isinstance(state, dict) or not {"step", "m", "v"} <= set(state):
        raise ValueError("state must be a dict holding 'step', 'm' and 'v' "
                         f"(got {sorted(state) if isinstance(state, dict) else type(state).__name__})")
    for part in ("m", "v"):
        _same(params, _arrays(state[part], part), f"state {part}")
    t = np.asarray(state["step"])
    if t.shape != () or t.dtype.kind not in "iu" or t < 0:
        raise ValueError(f"step must be a whole number >= 0, got {state['step']!r}")
    return int(t)


def adamw_init(params: dict) -> dict:
    """np.zeros_like of every parameter, twice."""
    params = _arrays(params, "params")
    return {"step": 0, "m": {k: np.zeros_like(w) for k, w in params.items()},
            "v": {k: np.zeros_like(w) for k, w in params.items()}}


def adamw_step(params: dict, grads: dict, state: dict, lr: float, *, beta1: float = 0.9, beta2: float = 0.999,
               eps: float = 1e-8, weight_decay: float = 0.01) -> tuple[dict, dict]:
    """Whole arrays at once; the decay taken off first (w·(1 − lr·λ)), then the Adam step."""
    params, grads = _arrays(params, "params"), _arrays(grads, "grads")
    _same(params, grads, "grads")
    t = _t(state, params) + 1
    if lr <= 0:
        raise ValueError(f"lr = {lr} must be positive")
    m = {k: beta1 * np.asarray(state["m"][k], dtype=np.float64) + (1 - beta1) * grads[k] for k in params}
    v = {k: beta2 * np.asarray(state["v"][k], dtype=np.float64) + (1 - beta2) * np.square(grads[k]) for k in params}
    new = {}
    for k, w in params.items():
        update = (m[k] / (1 - beta1**t)) / (np.sqrt(v[k] / (1 - beta2**t)) + eps)
        new[k] = w - lr * weight_decay * w - lr * update
    return new, {"step": t, "m": m, "v": v}


def lr_at(step: int, *, max_lr: float, warmup_steps: int, total_steps: int, min_lr: float = 0.0) -> float:
    """np.where-free piecewise schedule, np.cos for the decay."""
    for name, value in (("step", step), ("warmup_steps", warmup_steps), ("total_steps", total_steps)):
        if type(value) is bool or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")
    if total_steps == 0:
        raise ValueError("total_steps must be at least 1")
    if warmup_steps > total_steps:
        raise ValueError(f"warmup_steps = {warmup_steps} exceeds total_steps = {total_steps}")
    if not max_lr > 0:
        raise ValueError(f"max_lr = {max_lr} must be > 0")
    if not 0 <= min_lr <= max_lr:
        raise ValueError(f"min_lr = {min_lr} must lie in [0, max_lr]")
    if step < warmup_steps:
        return float((step + 1) / warmup_steps * max_lr)
    if step < total_steps:
        p = (step - warmup_steps) / (total_steps - warmup_steps)
        return float(min_lr + (max_lr - min_lr) * 0.5 * (1.0 + np.cos(np.pi * p)))
    return float(min_lr)


def clip_by_global_norm(grads: dict, max_norm: float) -> tuple[dict, float]:
    """The squared norm as a sum of einsum dot products."""
    grads = _arrays(grads, "grads")
    if max_norm <= 0:
        raise ValueError(f"max_norm = {max_norm} must be > 0")
    norm = float(np.sqrt(sum(np.einsum("i,i->", g.ravel(), g.ravel()) for g in grads.values())))
    if norm <= max_norm:
        return grads, norm
    return {k: g * (max_norm / norm) for k, g in grads.items()}, norm


def save_checkpoint(path: str, params: dict, state: dict) -> None:
    """One np.savez into a file opened here."""
    if not str(path).endswith(".npz"):
        raise ValueError(f"{path!r} does not end in .npz")
    params = _arrays(params, "params")
    t = _t(state, params)
    slashed = [k for k in params if "/" in k]
    if slashed:
        raise ValueError(f"a parameter name may not hold '/': {slashed[0]}")
    arrays = {"format": np.asarray(FORMAT), "step": np.asarray(t, dtype=np.int64)}
    arrays.update({f"params/{k}": w for k, w in params.items()})
    arrays.update({f"m/{k}": np.asarray(state["m"][k], dtype=np.float64) for k in params})
    arrays.update({f"v/{k}": np.asarray(state["v"][k], dtype=np.float64) for k in params})
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def load_checkpoint(path: str, like: dict | None = None) -> tuple[dict, dict]:
    """np.load(..., allow_pickle=False) on an open file; the marker; then like."""
    with open(path, "rb") as f:
        try:
            archive = np.load(f, allow_pickle=False)
        except (ValueError, EOFError):
            raise ValueError(f"{path}: not a checkpoint (neither .npy nor .npz, or it needs pickle)") from None
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise ValueError(f"{path}: not a checkpoint (one .npy array)")
        try:
            data = {name: archive[name] for name in archive.files}
        except ValueError:
            raise ValueError(f"{path}: not a checkpoint, it holds a pickle") from None
    marker = data.get("format")
    if marker is None or marker.shape != () or str(marker) != FORMAT:
        raise ValueError(f"{path}: not a checkpoint (its format marker is missing or wrong)")
    keys = sorted(name.split("/", 1)[1] for name in data if name.startswith("params/"))
    params = {k: data["params/" + k].astype(np.float64) for k in keys}
    state = {"step": int(data["step"]), "m": {k: data["m/" + k].astype(np.float64) for k in keys},
             "v": {k: data["v/" + k].astype(np.float64) for k in keys}}
    if like is not None:
        like = _arrays(like, "like")
        _same(like, params, "the checkpoint")
    return params, state
