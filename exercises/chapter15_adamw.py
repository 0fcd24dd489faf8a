"""Chapter 15: AdamW, a learning-rate schedule, clipping and checkpoints — how real training runs are driven.

Chapter 8 moved every weight by ``lr × gradient``: one learning rate for all of them, and a step as large as
the gradient. AdamW keeps two running averages per weight — the gradient's (the first moment, m) and its
square's (the second moment, v) — and moves each weight by m / √v: about ``lr`` in the direction the
gradient has kept pointing, whatever the gradient's size. Weight decay shrinks every weight a little on
every step, apart from the gradient ("decoupled"). Around the optimizer: a schedule that warms the learning
rate up and then lets it decay along a cosine, clipping that scales all gradients down together when
their global norm is too large, and checkpoints that save the weights *and* the optimizer's state so that
a stopped run continues bit for bit.

Parameters and gradients are dicts of arrays, like chapter 10's ``params`` (any keys, any shapes). The
optimizer's state is a dict ``{"step": n, "m": {...}, "v": {...}}``: n whole steps taken so far, and one
first and one second moment per parameter, shaped like it.

Worksheet: this course's own (Part II goes beyond the book): see docs/chapters/15-adamw.md.

Types, as every docstring below uses them: an array is a NumPy array (a Python list where an array is
documented fails its checks, saying so); a float may be any NumPy float or a 0-d array.
"""

import math  # noqa: F401 - yours to use

import numpy as np

FORMAT = "kata-adamw-checkpoint-1"  # the marker every checkpoint of this chapter carries


def adamw_init(params: dict) -> dict:
    r"""The optimizer's state before the first step: no steps taken, both moments zero.

    $$t = 0,\qquad m_k = 0,\qquad v_k = 0 \quad\text{for every parameter } k$$

    Args:
        params: a dict of arrays, one per parameter (any names, any shapes).

    Returns:
        The state, a dict ``{"step": 0, "m": {k: zeros}, "v": {k: zeros}}``: ``"step"`` is the int 0, and
        ``"m"`` and ``"v"`` hold one float64 array of zeros per key of params, shaped like that parameter.
        params is not modified.

    Raises:
        ValueError: if params is not a dict: the check given above the ``raise``, which hands you params as
            new float64 arrays.

    See docs: chapter 15, step 15.1.
    """
    params = _check_tree(params, "params")
    raise NotImplementedError("15.1 adamw_init: step 0 and a dict of zeros shaped like each parameter for m and for v (4 lines)")


def adamw_step(params: dict, grads: dict, state: dict, lr: float, *, beta1: float = 0.9, beta2: float = 0.999,
               eps: float = 1e-8, weight_decay: float = 0.01) -> tuple[dict, dict]:
    r"""One AdamW step: moments, bias correction, and weight decay apart from the gradient.

    With t the state's step count plus one (the number of this step, counting from 1), for every parameter:

    $$m \leftarrow \beta_1 m + (1 - \beta_1)\,g, \qquad v \leftarrow \beta_2 v + (1 - \beta_2)\,g^2,$$
    $$\hat m = \frac{m}{1 - \beta_1^t}, \qquad \hat v = \frac{v}{1 - \beta_2^t}, \qquad
      w \leftarrow w - \mathrm{lr}\left(\frac{\hat m}{\sqrt{\hat v} + \varepsilon} + \lambda\, w\right)$$

    ε is added *after* the square root; the decay λw uses the weight before this step and never enters m or
    v (that would be Adam with an L2 penalty, not AdamW). On the first step m̂ = g and v̂ = g², so every
    weight moves by about lr (plus its decay), whatever the size of its gradient.

    Args:
        params: a dict of arrays, the weights (any names, any shapes).
        grads: a dict with exactly the keys of params, each gradient shaped like its parameter.
        state: the optimizer's state: ``{"step": n, "m": {...}, "v": {...}}`` as ``adamw_init`` or an
            earlier ``adamw_step`` returned it (n ≥ 0 steps taken; m and v with the keys and shapes of params).
        lr: the learning rate of this step, a float > 0.
        beta1: decay of the first moment, 0 ≤ beta1 < 1.
        beta2: decay of the second moment, 0 ≤ beta2 < 1.
        eps: added to √v̂, a float ≥ 0.
        weight_decay: λ, a float ≥ 0 (0 gives plain Adam).

    Returns:
        (new_params, new_state): new dicts of new float64 arrays, with the keys of params; new_state's
        ``"step"`` is the int t = n + 1, this step's number. Neither params, grads nor state (nor any array in
        them) is modified.

    Raises:
        ValueError: if params, grads or state is not a dict, grads or the moments do not have the keys and
            shapes of params, state's step is not a whole number ≥ 0 or lr is not > 0: the checks given above
            the ``raise``, which hand you params and grads as float64 arrays and the steps taken so far.

    See docs: chapter 15, steps 15.1 and 15.2.
    """
    params = _check_tree(params, "params")
    grads = _check_tree(grads, "grads")
    _check_same_keys(params, grads, "grads")
    taken = _check_state(state, params)  # noqa: F841 - yours to use
    _check_positive(lr, "lr")
    raise NotImplementedError("15.1 adamw_step: the new params and state after one AdamW step numbered from 1, each weight moved by lr·(m̂/(√v̂ + ε) + λ·w) (12 lines)")


def lr_at(step: int, *, max_lr: float, warmup_steps: int, total_steps: int, min_lr: float = 0.0) -> float:
    r"""The learning rate of step ``step``: a linear warm-up, then a cosine decay to a floor.

    Steps count from 0: ``step`` is the number of updates already taken, so the first update is step 0.

    $$\mathrm{lr}(s) = \begin{cases}
      \mathrm{max\_lr}\cdot\dfrac{s + 1}{\mathrm{warmup}} & s < \mathrm{warmup} \\[1ex]
      \begin{aligned}
        &\mathrm{min\_lr} + \tfrac12(\mathrm{max\_lr} - \mathrm{min\_lr}) \\
        &\quad \cdot \left(1 + \cos\pi\, \dfrac{s - \mathrm{warmup}}{\mathrm{total} - \mathrm{warmup}}\right)
      \end{aligned}
        & \mathrm{warmup} \le s < \mathrm{total} \\[1ex]
      \mathrm{min\_lr} & s \ge \mathrm{total}
    \end{cases}$$

    So step 0 gets max_lr / warmup (not 0), step warmup − 1 and step warmup both get max_lr, and from step
    total on the rate stays at min_lr. warmup 0 starts the decay at step 0.

    Args:
        step: the step, a whole number ≥ 0.
        max_lr: the peak rate, a float > 0.
        warmup_steps: how many steps the warm-up takes, a whole number ≥ 0.
        total_steps: the step where the decay reaches min_lr, a whole number ≥ warmup_steps and ≥ 1.
        min_lr: the floor, a float with 0 ≤ min_lr ≤ max_lr.

    Returns:
        The learning rate, a float.

    Raises:
        ValueError: if step, warmup_steps or total_steps is not a whole number ≥ 0, warmup_steps > total_steps,
            total_steps < 1, max_lr is not > 0 or min_lr is not between 0 and max_lr: the check given above
            the ``raise``.

    See docs: chapter 15, steps 15.3 and 15.4.
    """
    _check_schedule(step, warmup_steps, total_steps, max_lr, min_lr)
    raise NotImplementedError("15.3 lr_at: the rate at step, a linear warm-up of (step + 1)/warmup and a cosine decay down to the floor (6 lines)")


def clip_by_global_norm(grads: dict, max_norm: float) -> tuple[dict, float]:
    r"""Scale all gradients down together when their global norm is above ``max_norm``.

    $$\lVert g \rVert = \sqrt{\sum_k \sum_i g_{k,i}^2}, \qquad
      g_k \leftarrow g_k \cdot \frac{\mathrm{max\_norm}}{\lVert g \rVert}
      \ \text{ if } \lVert g \rVert > \mathrm{max\_norm}$$

    The norm is of ALL gradients together, as one long vector: every tensor is scaled by the same factor,
    so the step keeps its direction. At or below max_norm nothing changes.

    Args:
        grads: a dict of arrays, the gradients (any names, any shapes).
        max_norm: the largest global norm allowed, a float > 0.

    Returns:
        (clipped, norm): clipped is a new dict of new float64 arrays with the keys and shapes of grads;
        norm is the global norm before clipping, a float. grads is not modified.

    Raises:
        ValueError: if grads is not a dict or max_norm is not > 0: the checks given above the ``raise``,
            which hand you grads as new float64 arrays.

    See docs: chapter 15, steps 15.5 and 15.6.
    """
    grads = _check_tree(grads, "grads")
    _check_positive(max_norm, "max_norm")
    raise NotImplementedError("15.5 clip_by_global_norm: one norm over every number of every tensor, one factor for all (3 lines)")


def save_checkpoint(path: str, params: dict, state: dict) -> None:
    r"""Save the weights and the optimizer's state to one ``.npz`` file, without pickle.

    The file holds plain arrays only: ``params/<key>``, ``m/<key>``, ``v/<key>`` for every parameter, the
    step count ``step`` and a marker ``format`` saying the file is a checkpoint of this chapter. A resumed run
    (``load_checkpoint``, then ``adamw_step``) continues exactly as the unbroken run would have.

    Args:
        path: where to write, a str ending in ``.npz``.
        params: a dict of arrays, the weights (keys without ``/``).
        state: the optimizer's state for params (``{"step": n, "m": {...}, "v": {...}}``).

    Returns:
        None. Neither params nor state is modified.

    Raises:
        ValueError: if path does not end in ``.npz``, params or state is not a dict, a key holds ``/`` or the
            state does not fit params: the checks given above the ``raise``, which hand you params as float64
            arrays and the state's step count.

    See docs: chapter 15, step 15.7.
    """
    _check_npz_path(path)
    params = _check_tree(params, "params")
    t = _check_state(state, params)  # noqa: F841 - yours to use
    _check_names(params)
    raise NotImplementedError("15.7 save_checkpoint: one uncompressed NumPy archive holding the params and the state under their documented keys with a format marker (5 lines)")


def load_checkpoint(path: str, like: dict | None = None) -> tuple[dict, dict]:
    r"""Read a checkpoint ``save_checkpoint`` wrote: the weights and the optimizer's state, bit for bit.

    Every array of the file is read with pickles refused (NumPy's ``allow_pickle=False``) before anything
    else is checked: a file holding a pickled (object) array is refused, never unpickled (unpickling runs
    code of the file's choosing).

    Args:
        path: the checkpoint's file, a str.
        like: optional, the parameters the run expects (a dict of arrays): every key of like must be in the
            checkpoint with like's shape, and the checkpoint must hold no other parameter.

    Returns:
        (params, state): params a dict of float64 arrays; state ``{"step": n, "m": {...}, "v": {...}}``
        with n an int: exactly the numbers that were saved.

    Raises:
        ValueError: if the file is not a checkpoint of this chapter (not an ``.npz`` archive, holding a pickled
            array, or without the ``format`` marker) or does not fit like: the checks given above the
            ``raise``, which read every array of the file into ``data``, a dict by name (``"params/W"``,
            ``"m/W"``, ``"v/W"``, ``"step"``, ``"format"``), never unpickling one.

    See docs: chapter 15, step 15.7.
    """
    data = _check_checkpoint(path)  # noqa: F841 - yours to use
    _check_fits(data, like, path)
    raise NotImplementedError("15.7 load_checkpoint: the params and the state read back from data as float64 arrays (5 lines)")


# -- input checks: the course's, given in the stubs (CONTRIBUTING.md, "The stub") -----------------------------
def _check_tree(tree: dict, name: str) -> dict[str, np.ndarray]:
    """A dict of arrays, each as a new float64 array; refused when it is not a dict."""
    if not isinstance(tree, dict):
        raise ValueError(f"{name} must be a dict of arrays, got {type(tree).__name__}")
    return {k: np.array(v, dtype=np.float64) for k, v in tree.items()}


def _check_same_keys(params: dict, other: dict, name: str) -> None:
    """``other`` has exactly the keys of params, each of its parameter's shape."""
    for k in params:
        if k not in other:
            raise ValueError(f"{name} lacks the key {k} that params has")
    for k in other:
        if k not in params:
            raise ValueError(f"{name} has the key {k} that params lacks")
    for k, p in params.items():
        if np.shape(other[k]) != p.shape:
            raise ValueError(f"{name}[{k!r}] has shape {np.shape(other[k])}, but params[{k!r}] has shape {p.shape}")


def _check_state(state: dict, params: dict) -> int:
    """The state's step count, after checking that its moments fit params."""
    if not isinstance(state, dict):
        raise ValueError(f"state must be a dict with 'step', 'm' and 'v', got {type(state).__name__}")
    for part in ("step", "m", "v"):
        if part not in state:
            raise ValueError(f"state lacks {part!r}: it needs 'step', 'm' and 'v' (see adamw_init)")
    for part in ("m", "v"):
        if not isinstance(state[part], dict):
            raise ValueError(f"state[{part!r}] must be a dict of arrays, got {type(state[part]).__name__}")
        _check_same_keys(params, state[part], f"state[{part!r}]")
    t = state["step"]
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or t < 0:
        raise ValueError(f"state's step must be a whole number >= 0, got {t!r}")
    return int(t)


def _check_positive(value, name: str) -> None:
    """Refuse a value that is not > 0 (the message names it)."""
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")


def _check_schedule(step, warmup_steps, total_steps, max_lr, min_lr) -> None:
    """Whole numbers ≥ 0 for the steps, total_steps ≥ 1 and ≥ warmup_steps, max_lr > 0, 0 ≤ min_lr ≤ max_lr."""
    for name, value in (("step", step), ("warmup_steps", warmup_steps), ("total_steps", total_steps)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")
    if total_steps < 1:
        raise ValueError(f"total_steps must be >= 1, got {total_steps}")
    if warmup_steps > total_steps:
        raise ValueError(f"warmup_steps = {warmup_steps} is more than total_steps = {total_steps}")
    _check_positive(max_lr, "max_lr")
    if not 0 <= min_lr <= max_lr:
        raise ValueError(f"min_lr must be between 0 and max_lr = {max_lr!r}, got {min_lr!r}")


def _check_npz_path(path) -> None:
    """Refuse a path that does not end in .npz (np.savez would add the suffix, and the run would not find it)."""
    if not str(path).endswith(".npz"):
        raise ValueError(f"a checkpoint's path must end in .npz, got {path!r}")


def _check_names(params: dict) -> None:
    """Refuse a parameter name holding '/': it separates the parts of a checkpoint's names."""
    for k in params:
        if "/" in k:
            raise ValueError(f"parameter names cannot hold '/': {k!r}")


def _check_checkpoint(path) -> dict[str, np.ndarray]:
    """Every array of the checkpoint at ``path`` by name, read without pickle, after checking its marker."""
    not_ours = f"{path!r} is not a checkpoint of this chapter"
    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise ValueError(f"{not_ours}: {err}") from None
    if isinstance(archive, np.lib.npyio.NpzFile):  # an archive: every array read now, none of them unpickled
        with archive:
            try:
                data = {name: archive[name] for name in archive.files}
            except ValueError as err:  # an object array: reading it would need pickle
                raise ValueError(f"{not_ours}: it holds an array that needs pickle ({err})") from None
    else:  # a single .npy array: no marker either
        data = {}
    if str(data.get("format")) != FORMAT:
        raise ValueError(f"{not_ours}: it is not an .npz archive with the 'format' marker {FORMAT!r}")
    return data


def _check_fits(data: dict, like, path) -> None:
    """With like: every parameter of like in the checkpoint, with like's shape, and no other."""
    if like is None:
        return
    like = _check_tree(like, "like")
    saved = {n[len("params/"):]: data[n] for n in data if n.startswith("params/")}
    for k in like:
        if k not in saved:
            raise ValueError(f"the checkpoint {path!r} lacks the parameter {k}")
        if saved[k].shape != like[k].shape:
            raise ValueError(f"the checkpoint's {k} has shape {saved[k].shape}, the run expects {like[k].shape}")
    for k in saved:
        if k not in like:
            raise ValueError(f"the checkpoint {path!r} holds a parameter {k} the run does not have")
