"""Chapter 21, written from the docstrings: plain loops over rows and columns, Python floats, lists of lists."""

import math
import numbers

import numpy as np


def _matrix(a, name) -> list[list[float]]:
    if not isinstance(a, np.ndarray):
        raise ValueError(f"{name} must be a NumPy array, not a {type(a).__name__}")
    if a.dtype.kind not in "iuf" or a.ndim != 2 or a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array of real numbers, got {a.dtype} {a.shape}")
    rows = [[float(v) for v in row] for row in a]
    if not all(math.isfinite(v) for row in rows for v in row):
        raise ValueError(f"{name} has an entry that is not finite")
    return rows


def _shape(m) -> tuple[int, int]:
    return (len(m), len(m[0]))


def _number(value, name) -> float:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    return float(value)


def _alpha(alpha) -> float:
    a = _number(alpha, "alpha")
    if not (math.isfinite(a) and a > 0):
        raise ValueError(f"alpha must be finite and positive, got {a}")
    return a


def _layer(x, W, A, B):
    x, W, A, B = _matrix(x, "x"), _matrix(W, "W"), _matrix(A, "A"), _matrix(B, "B")
    if _shape(x)[1] != _shape(W)[0]:
        raise ValueError(f"x {_shape(x)} and W {_shape(W)}: x needs one column per row of W")
    _fits(W, A, B)
    return x, W, A, B


def _fits(W, A, B):
    if _shape(A)[0] != _shape(W)[0] or _shape(B)[0] != _shape(A)[1] or _shape(B)[1] != _shape(W)[1]:
        raise ValueError(f"A {_shape(A)} and B {_shape(B)} must be (d_in, r) and (r, d_out) for W {_shape(W)}")


def _mul(P, Q):
    out = []
    for i in range(len(P)):
        row = []
        for j in range(len(Q[0])):
            total = 0.0
            for k in range(len(Q)):
                total += P[i][k] * Q[k][j]
            row.append(total)
        out.append(row)
    return out


def _t(P):
    return [[P[i][j] for i in range(len(P))] for j in range(len(P[0]))]


def _plus(P, Q, c=1.0):
    return [[P[i][j] + c * Q[i][j] for j in range(len(P[0]))] for i in range(len(P))]


def _whole(value, name, least):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if value < least:
        raise ValueError(f"{name} must be {least} or more, got {value}")


def lora_forward(x, W, A, B, alpha):
    """x W + (α / r) (x A) B, one entry at a time."""
    x, W, A, B = _layer(x, W, A, B)
    s = _alpha(alpha) / len(A[0])
    return np.array(_plus(_mul(x, W), _mul(_mul(x, A), B), s))


def lora_init(d_in, d_out, r, seed=0):
    """A filled column by column with N(0, 1/d_in) draws, B zeros."""
    for name, value in (("d_in", d_in), ("d_out", d_out), ("r", r)):
        _whole(value, name, 1)
    _whole(seed, "seed", 0)
    if r > min(d_in, d_out):
        raise ValueError(f"rank r = {r} exceeds min(d_in, d_out) = {min(d_in, d_out)}")
    rng = np.random.default_rng(seed)
    spread = 1.0 / math.sqrt(d_in)
    A = [[0.0] * r for _ in range(d_in)]
    for j in range(r):
        for i in range(d_in):
            A[i][j] = spread * float(rng.standard_normal())
    return np.array(A), np.array([[0.0] * d_out for _ in range(r)])


def _grads(d_y, x, W, A, B, s):
    d_h = [[s * v for v in row] for row in _mul(d_y, _t(B))]
    h = _mul(x, A)
    return {"x": _plus(_mul(d_y, _t(W)), _mul(d_h, _t(A))), "A": _mul(_t(x), d_h),
            "B": [[s * v for v in row] for row in _mul(_t(h), d_y)]}


def lora_backward(d_y, x, W, A, B, alpha):
    """dB = s hᵀ dY, dA = s xᵀ dY Bᵀ, dx = dY Wᵀ + s dY Bᵀ Aᵀ, loop by loop."""
    x, W, A, B = _layer(x, W, A, B)
    d_y = _matrix(d_y, "d_y")
    if _shape(d_y) != (len(x), len(W[0])):
        raise ValueError(f"d_y is {_shape(d_y)}; the output is {(len(x), len(W[0]))}")
    s = _alpha(alpha) / len(A[0])
    return {name: np.array(g) for name, g in _grads(d_y, x, W, A, B, s).items()}


def lora_train_step(x, target, params, alpha, lr):
    """Forward, ½ Σ (y − t)², both gradients at the old A and B, then one step each; W copied."""
    if not isinstance(params, dict) or sorted(params) != ["A", "B", "W"]:
        got = list(params) if isinstance(params, dict) else type(params).__name__
        raise ValueError(f"params must hold exactly W, A and B, got {got}")
    x, W, A, B = _layer(x, params["W"], params["A"], params["B"])
    t = _matrix(target, "target")
    if _shape(t) != (len(x), len(W[0])):
        raise ValueError(f"target is {_shape(t)}; the output is {(len(x), len(W[0]))}")
    s = _alpha(alpha) / len(A[0])
    eta = _number(lr, "lr")
    if not (math.isfinite(eta) and eta >= 0):
        raise ValueError(f"lr must be finite and 0 or more, got {eta}")
    y = _plus(_mul(x, W), _mul(_mul(x, A), B), s)
    d_y = _plus(y, t, -1.0)
    loss = 0.5 * math.fsum(v * v for row in d_y for v in row)
    g = _grads(d_y, x, W, A, B, s)
    return {"W": np.array(W), "A": np.array(_plus(A, g["A"], -eta)), "B": np.array(_plus(B, g["B"], -eta))}, loss


def lora_merge(W, A, B, alpha):
    """W + (α / r) A B, entry by entry: W'[i][j] = W[i][j] + s Σ_k A[i][k] B[k][j]."""
    W, A, B = _matrix(W, "W"), _matrix(A, "A"), _matrix(B, "B")
    _fits(W, A, B)
    s = _alpha(alpha) / len(A[0])
    return np.array([[W[i][j] + s * sum(A[i][k] * B[k][j] for k in range(len(B)))
                      for j in range(len(W[0]))] for i in range(len(W))])


def lora_parameter_count(shapes, r):
    """r (d_in + d_out), added up weight by weight."""
    if not isinstance(shapes, (list, tuple)) or not shapes:
        raise ValueError(f"shapes must be a non-empty list of pairs, got {shapes!r}")
    total = 0
    for i, pair in enumerate(shapes):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError(f"shapes[{i}] is not a (d_in, d_out) pair: {pair!r}")
        for size in pair:
            _whole(size, f"shapes[{i}]", 1)
    _whole(r, "r", 1)
    for d_in, d_out in shapes:
        total += int(r) * (int(d_in) + int(d_out))
    return total
