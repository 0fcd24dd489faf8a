"""Chapter 15, written from the docstrings: AdamW entry by entry, with math.sqrt.

The schedule and the norm in plain Python, checkpoints through np.savez_compressed and one pass over the
archive's names.
"""

import math
import numbers

import numpy as np

FORMAT = "kata-adamw-checkpoint-1"


def _whole(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _dict(tree, name):
    if not isinstance(tree, dict):
        raise ValueError(f"{name} must be a dict, got a {type(tree).__name__}")
    return {k: np.array(v, dtype=np.float64) for k, v in tree.items()}


def _match(params, other, name):
    for k in list(params) + list(other):
        if k not in params or k not in other:
            raise ValueError(f"the key {k} is in {'params' if k in params else name} but not in "
                             f"{name if k in params else 'params'}")
        if np.shape(other[k]) != params[k].shape:
            raise ValueError(f"{name} {k} has shape {np.shape(other[k])} where params {k} has shape {params[k].shape}")


def _checked_state(state, params):
    if not isinstance(state, dict):
        raise ValueError(f"state must be a dict, got a {type(state).__name__}")
    for part in ("step", "m", "v"):
        if part not in state:
            raise ValueError(f"the state has no {part!r}")
    for part in ("m", "v"):
        _match(params, _dict(state[part], f"state {part}"), f"state {part}")
    t = state["step"]
    if isinstance(t, np.ndarray) and t.shape == ():
        t = t.item()
    if not _whole(t) or t < 0:
        raise ValueError(f"the state's step must be a whole number >= 0, got {t!r}")
    return int(t)


def adamw_init(params: dict) -> dict:
    """Zeros for m and v, step 0."""
    params = _dict(params, "params")
    m, v = {}, {}
    for k, w in params.items():
        m[k] = np.zeros(w.shape)
        v[k] = np.zeros(w.shape)
    return {"step": 0, "m": m, "v": v}


def adamw_step(params: dict, grads: dict, state: dict, lr: float, *, beta1: float = 0.9, beta2: float = 0.999,
               eps: float = 1e-8, weight_decay: float = 0.01) -> tuple[dict, dict]:
    """Every entry of every parameter, one at a time."""
    params, grads = _dict(params, "params"), _dict(grads, "grads")
    _match(params, grads, "grads")
    t = _checked_state(state, params) + 1
    if not (isinstance(lr, numbers.Real) and lr > 0):
        raise ValueError(f"lr must be a number > 0, got lr = {lr!r}")
    c1, c2 = 1.0 - beta1**t, 1.0 - beta2**t
    out, new_m, new_v = {}, {}, {}
    for k, w in params.items():
        m_old = np.array(state["m"][k], dtype=np.float64).ravel()
        v_old = np.array(state["v"][k], dtype=np.float64).ravel()
        g, flat_w = grads[k].ravel(), w.ravel()
        w_new, m_new, v_new = np.empty(w.size), np.empty(w.size), np.empty(w.size)
        for i in range(w.size):
            mi = beta1 * float(m_old[i]) + (1.0 - beta1) * float(g[i])
            vi = beta2 * float(v_old[i]) + (1.0 - beta2) * float(g[i]) * float(g[i])
            step = (mi / c1) / (math.sqrt(vi / c2) + eps)
            w_new[i] = float(flat_w[i]) - lr * (step + weight_decay * float(flat_w[i]))
            m_new[i], v_new[i] = mi, vi
        out[k], new_m[k], new_v[k] = w_new.reshape(w.shape), m_new.reshape(w.shape), v_new.reshape(w.shape)
    return out, {"step": t, "m": new_m, "v": new_v}


def lr_at(step: int, *, max_lr: float, warmup_steps: int, total_steps: int, min_lr: float = 0.0) -> float:
    """Warm-up, cosine, floor."""
    if not _whole(step) or step < 0:
        raise ValueError(f"step must be a whole number >= 0, got step = {step!r}")
    if not _whole(warmup_steps) or warmup_steps < 0:
        raise ValueError(f"warmup_steps must be a whole number >= 0, got {warmup_steps!r}")
    if not _whole(total_steps) or total_steps < 1:
        raise ValueError(f"total_steps must be a whole number >= 1, got {total_steps!r}")
    if warmup_steps > total_steps:
        raise ValueError(f"warmup_steps ({warmup_steps}) > total_steps ({total_steps})")
    if max_lr <= 0:
        raise ValueError(f"max_lr must be > 0, got max_lr = {max_lr}")
    if min_lr < 0 or min_lr > max_lr:
        raise ValueError(f"min_lr = {min_lr} is not between 0 and max_lr = {max_lr}")
    if step >= total_steps and step >= warmup_steps:
        return float(min_lr)
    if step < warmup_steps:
        return float(max_lr) * (step + 1) / warmup_steps
    angle = math.pi * (step - warmup_steps) / (total_steps - warmup_steps)
    return float(min_lr) + (float(max_lr) - float(min_lr)) * (1.0 + math.cos(angle)) / 2.0


def clip_by_global_norm(grads: dict, max_norm: float) -> tuple[dict, float]:
    """Sum every square, one by one; one factor for all."""
    grads = _dict(grads, "grads")
    if not max_norm > 0:
        raise ValueError(f"max_norm must be > 0, got max_norm = {max_norm}")
    total = 0.0
    for g in grads.values():
        for x in g.ravel():
            total += float(x) * float(x)
    norm = math.sqrt(total)
    factor = max_norm / norm if norm > max_norm else 1.0
    return {k: np.array(g * factor, dtype=np.float64) for k, g in grads.items()}, norm


def save_checkpoint(path: str, params: dict, state: dict) -> None:
    """params/, m/, v/, step and format in one compressed .npz."""
    if not isinstance(path, str) or not path.endswith(".npz"):
        raise ValueError(f"the path must end in .npz: {path!r}")
    params = _dict(params, "params")
    t = _checked_state(state, params)
    entries = {"format": np.array(FORMAT), "step": np.array(t)}
    for k in params:
        if "/" in k:
            raise ValueError(f"the key {k} holds a '/'")
        entries["params/" + k] = params[k]
        entries["m/" + k] = np.array(state["m"][k], dtype=np.float64)
        entries["v/" + k] = np.array(state["v"][k], dtype=np.float64)
    np.savez_compressed(path, **entries)


def load_checkpoint(path: str, like: dict | None = None) -> tuple[dict, dict]:
    """Every array read with allow_pickle=False, then the marker, then like."""
    try:
        loaded = np.load(path, allow_pickle=False)
    except (ValueError, EOFError) as err:
        raise ValueError(f"{path} is not a checkpoint: {err}") from None
    if not hasattr(loaded, "files"):
        raise ValueError(f"{path} is not a checkpoint: a single array")
    arrays = {}
    try:
        for name in loaded.files:
            arrays[name] = loaded[name]
    except ValueError as err:
        raise ValueError(f"{path} is not a checkpoint: an array in it needs pickle") from err
    finally:
        loaded.close()
    if "format" not in arrays or arrays["format"].ndim != 0 or arrays["format"].item() != FORMAT:
        raise ValueError(f"{path} is not a checkpoint (no format marker)")
    params, m, v = {}, {}, {}
    for name, a in arrays.items():
        part, _, key = name.partition("/")
        if part == "params":
            params[key] = np.array(a, dtype=np.float64)
            m[key] = np.array(arrays["m/" + key], dtype=np.float64)
            v[key] = np.array(arrays["v/" + key], dtype=np.float64)
    if like is not None:
        like = _dict(like, "like")
        for k in like:
            if k not in params:
                raise ValueError(f"parameter {k} is missing from the checkpoint")
        for k in params:
            if k not in like:
                raise ValueError(f"parameter {k} is in the checkpoint but not in the run")
            if params[k].shape != like[k].shape:
                raise ValueError(f"parameter {k}: checkpoint shape {params[k].shape}, run shape {like[k].shape}")
    return params, {"step": int(arrays["step"].item()), "m": m, "v": v}
