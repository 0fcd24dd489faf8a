"""Chapter 19, written from the docstrings: entry by entry, Python's round (half to even), plain loops."""

import numbers

import numpy as np


def _whole(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a whole number, got {value!r}")


def _bits(bits):
    _whole(bits, "bits")
    if bits not in (4, 8):
        raise ValueError(f"bits must be 4 or 8, got {bits}")
    return 2 ** (bits - 1) - 1


def _reals(x, name, at_least_one=False):
    arr = np.array(x)
    if arr.dtype.kind not in "iuf" or not np.isfinite(arr).all() or (at_least_one and arr.size == 0):
        raise ValueError(f"{name} must hold finite real numbers (at least one), got {arr!r}")
    return arr.astype(float)


def _matrix(W, name):
    W = _reals(W, name)
    if W.ndim != 2 or W.size == 0:
        raise ValueError(f"{name} must be a matrix, got shape {W.shape}")
    return W


def _scale(scale, shape):
    s = _reals(scale, "scale")
    if (s <= 0).any():
        raise ValueError(f"scale must be positive, got {s}")
    try:
        ok = np.broadcast_shapes(s.shape, tuple(shape)) == tuple(shape)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"scale {s.shape} does not fit values of shape {tuple(shape)}")
    return np.broadcast_to(s, tuple(shape))


def _zero(z):
    _whole(z, "zero_point")
    if not 0 <= z <= 255:
        raise ValueError(f"zero_point must lie in 0 … 255, got {z}")


def _ints(q, name):
    q = np.array(q)
    if q.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integers, got dtype {q.dtype}")
    return q


def _clip(v, lo, hi):
    return max(lo, min(hi, v))


def absmax_scale(W, bits=8, per_channel=False):
    """The largest magnitude, over W or down each column, over 2^(b−1) − 1; 1 for a maximum of 0."""
    W = _matrix(W, "W")
    top = _bits(bits)
    if not isinstance(per_channel, (bool, np.bool_)):
        raise ValueError(f"per_channel must be True or False, got {per_channel!r}")
    if not per_channel:
        m = max(abs(float(v)) for v in W.flat)
        return m / top if m > 0 else 1.0
    out = np.empty(W.shape[1])
    for c in range(W.shape[1]):
        m = max(abs(float(W[r, c])) for r in range(W.shape[0]))
        out[c] = m / top if m > 0 else 1.0
    return out


def quantize_symmetric(x, scale, bits=8):
    """Entry by entry: round(x / s), held in −qmax … qmax."""
    x = _reals(x, "x")
    s = _scale(scale, x.shape)
    top = _bits(bits)
    q = np.zeros(x.shape, dtype=np.int8)
    for i in np.ndindex(x.shape):
        q[i] = _clip(round(float(x[i]) / float(s[i])), -top, top)
    return q


def affine_params(x):
    """The range with 0 in it over 255 steps; z = round(−ℓ / s)."""
    x = _reals(x, "x", at_least_one=True)
    lo, hi = min(0.0, float(x.min())), max(0.0, float(x.max()))
    if hi == lo:
        return 1.0, 0
    s = (hi - lo) / 255
    return s, round(-lo / s)


def quantize_affine(x, scale, zero_point):
    """Entry by entry: round(x / s) + z, held in 0 … 255."""
    x = _reals(x, "x")
    s = float(_scale(scale, ()))
    _zero(zero_point)
    q = np.zeros(x.shape, dtype=np.uint8)
    for i in np.ndindex(x.shape):
        q[i] = _clip(round(float(x[i]) / s) + int(zero_point), 0, 255)
    return q


def dequantize(q, scale, zero_point=0):
    """Entry by entry: (q − z) · s, in Python ints and floats."""
    q = _ints(q, "q")
    s = _scale(scale, q.shape)
    _zero(zero_point)
    out = np.zeros(q.shape)
    for i in np.ndindex(q.shape):
        out[i] = (int(q[i]) - int(zero_point)) * float(s[i])
    return out


def quantize_groups(W, group_size, bits=4):
    """Each group of rows of each column: its own absmax scale, then its integers."""
    W = _matrix(W, "W")
    _whole(group_size, "group_size")
    if group_size < 1:
        raise ValueError(f"group_size must be at least 1, got {group_size}")
    top = _bits(bits)
    d_in, d_out = W.shape
    if d_in % group_size != 0:
        raise ValueError(f"group_size {group_size} does not divide d_in = {d_in}")
    scales = np.zeros((d_in // group_size, d_out))
    q = np.zeros(W.shape, dtype=np.int8)
    for g in range(d_in // group_size):
        for c in range(d_out):
            rows = range(g * group_size, (g + 1) * group_size)
            m = max(abs(float(W[r, c])) for r in rows)
            scales[g, c] = m / top if m > 0 else 1.0
            for r in rows:
                q[r, c] = _clip(round(float(W[r, c]) / scales[g, c]), -top, top)
    return q, scales


def dequantize_groups(q, scales, group_size):
    """Entry by entry: q[r, c] times the scale of group r // G."""
    q = _ints(q, "q")
    _whole(group_size, "group_size")
    if group_size < 1:
        raise ValueError(f"group_size must be at least 1, got {group_size}")
    scales = _reals(scales, "scales")
    if q.ndim != 2 or q.shape[0] % group_size or scales.shape != (q.shape[0] // group_size, q.shape[1]) \
            or (scales <= 0).any():
        raise ValueError(f"q {q.shape} and scales {scales.shape} do not fit group_size {group_size}: positive scales of "
                         f"{(q.shape[0] // group_size if q.ndim == 2 else '?', q.shape[-1])}")
    out = np.zeros(q.shape)
    for r in range(q.shape[0]):
        for c in range(q.shape[1]):
            out[r, c] = int(q[r, c]) * float(scales[r // group_size, c])
    return out


def _pair(Xq, Wq):
    Xq, Wq = _ints(Xq, "Xq"), _ints(Wq, "Wq")
    if Xq.ndim != 2 or Wq.ndim != 2 or Xq.shape[1] != Wq.shape[0]:
        raise ValueError(f"Xq {Xq.shape} and Wq {Wq.shape} do not fit")
    return Xq, Wq


def int_matmul(Xq, Wq):
    """Each sum in Python ints (exact), stored as int32."""
    Xq, Wq = _pair(Xq, Wq)
    out = np.zeros((Xq.shape[0], Wq.shape[1]), dtype=np.int32)
    for i in range(Xq.shape[0]):
        for j in range(Wq.shape[1]):
            out[i, j] = sum(int(Xq[i, k]) * int(Wq[k, j]) for k in range(Xq.shape[1]))
    return out


def int8_linear(Xq, x_scale, Wq, w_scale):
    """The int32 sums times s_x and the column's s_w."""
    Xq, Wq = _pair(Xq, Wq)
    sx = float(_scale(x_scale, ()))
    sw = _scale(w_scale, (Xq.shape[0], Wq.shape[1]))
    A = int_matmul(Xq, Wq)
    out = np.zeros(A.shape)
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            out[i, j] = int(A[i, j]) * sx * float(sw[i, j])
    return out
