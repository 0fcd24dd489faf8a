"""Chapter 21, written from the docstrings: every product an einsum, the merge through the adapted layer itself."""

import numbers

import numpy as np


def _arr(a, name):
    if not isinstance(a, np.ndarray) or a.ndim != 2 or a.size == 0 or not np.issubdtype(a.dtype, np.number) \
            or a.dtype == bool or np.iscomplexobj(a):
        raise ValueError(f"{name} must be a non-empty real 2-D NumPy array, not {type(a).__name__} "
                         f"{getattr(a, 'shape', '')}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} holds inf or nan")
    return a


def _scale(alpha, r):
    if isinstance(alpha, np.ndarray) and alpha.ndim == 0:
        alpha = alpha.item()
    if isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, numbers.Real) or not np.isfinite(alpha) \
            or alpha <= 0:
        raise ValueError(f"alpha must be a finite real number > 0, got {alpha!r}")
    return alpha / r


def _adapter(W, A, B):
    W, A, B = _arr(W, "W"), _arr(A, "A"), _arr(B, "B")
    (d_in, d_out), r = W.shape, A.shape[1]
    if A.shape != (d_in, r) or B.shape != (r, d_out):
        raise ValueError(f"for W {W.shape}, A {A.shape} and B {B.shape} should be (d_in, r) and (r, d_out)")
    return W, A, B


def _all(x, W, A, B):
    W, A, B = _adapter(W, A, B)
    x = _arr(x, "x")
    if x.shape[1] != W.shape[0]:
        raise ValueError(f"x {x.shape} does not fit W {W.shape}")
    return x, W, A, B


def lora_forward(x, W, A, B, alpha):
    """Two einsums: the frozen path and the adapter's, summed over d_in then over r."""
    x, W, A, B = _all(x, W, A, B)
    s = _scale(alpha, A.shape[1])
    return np.einsum("si,io->so", x, W) + s * np.einsum("si,ir,ro->so", x, A, B, optimize=True)


def lora_init(d_in, d_out, r, seed=0):
    """A = rng.standard_normal scaled by 1/√d_in, B zeros."""
    for name, v in (("d_in", d_in), ("d_out", d_out), ("r", r), ("seed", seed)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral) or v < (0 if name == "seed" else 1):
            raise ValueError(f"{name} must be a whole number {'>= 0' if name == 'seed' else '>= 1'}, got {v!r}")
    if r > min(d_in, d_out):
        raise ValueError(f"r must be at most min(d_in, d_out) = {min(d_in, d_out)}, got {r}")
    A = np.random.default_rng(seed).standard_normal((d_in, r)) / np.sqrt(d_in)
    return A, np.zeros((r, d_out))


def lora_backward(d_y, x, W, A, B, alpha):
    """Each gradient one einsum over the shared axes."""
    x, W, A, B = _all(x, W, A, B)
    d_y = _arr(d_y, "d_y")
    if d_y.shape != (x.shape[0], W.shape[1]):
        raise ValueError(f"d_y {d_y.shape} should be the output's {(x.shape[0], W.shape[1])}")
    s = _scale(alpha, A.shape[1])
    d_h = s * np.einsum("so,ro->sr", d_y, B)
    return {"x": np.einsum("so,io->si", d_y, W) + np.einsum("sr,ir->si", d_h, A),
            "A": np.einsum("si,sr->ir", x, d_h),
            "B": s * np.einsum("si,ir,so->ro", x, A, d_y, optimize=True)}


def lora_train_step(x, target, params, alpha, lr):
    """Forward, the loss, the backward, then both factors stepped at once."""
    if not isinstance(params, dict) or params.keys() != {"W", "A", "B"}:
        given = f"a dict of {', '.join(params)}" if isinstance(params, dict) else f"a {type(params).__name__}"
        raise ValueError(f"params must be a dict of exactly W, A and B, not {given}")
    x, W, A, B = _all(x, params["W"], params["A"], params["B"])
    target = _arr(target, "target")
    if target.shape != (x.shape[0], W.shape[1]):
        raise ValueError(f"target {target.shape} should be the output's {(x.shape[0], W.shape[1])}")
    if isinstance(lr, np.ndarray) and lr.ndim == 0:
        lr = lr.item()
    if isinstance(lr, (bool, np.bool_)) or not isinstance(lr, numbers.Real) or not np.isfinite(lr) or lr < 0:
        raise ValueError(f"lr must be a finite real number >= 0, got {lr!r}")
    diff = lora_forward(x, W, A, B, alpha) - target
    g = lora_backward(diff, x, W, A, B, alpha)
    loss = 0.5 * float(np.einsum("so,so->", diff, diff))
    return {"W": np.array(W, dtype=np.float64), "A": A - lr * g["A"], "B": B - lr * g["B"]}, loss


def lora_merge(W, A, B, alpha):
    """The adapted layer applied to the identity: I W + (α / r) I A B."""
    W, A, B = _adapter(W, A, B)
    return lora_forward(np.eye(W.shape[0]), W, A, B, alpha)


def lora_parameter_count(shapes, r):
    """r times the sum of every weight's two sizes."""
    if not isinstance(shapes, (list, tuple)) or len(shapes) == 0:
        raise ValueError(f"shapes must be a non-empty list, got {shapes!r}")
    sizes = []
    for i, pair in enumerate(shapes):
        ok = isinstance(pair, (list, tuple)) and len(pair) == 2 and all(
            isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) and v >= 1 for v in pair)
        if not ok:
            raise ValueError(f"shapes[{i}] must be a pair of whole numbers >= 1, got {pair!r}")
        sizes.extend(int(v) for v in pair)
    if isinstance(r, (bool, np.bool_)) or not isinstance(r, numbers.Integral) or r < 1:
        raise ValueError(f"r must be a whole number >= 1, got {r!r}")
    return int(r) * sum(sizes)
