"""Chapter 19, written from the docstrings: einsum for the products, np.rint, groups as a third axis."""

import numpy as np


def _whole(value, name):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be a whole number, got {value!r}")


def _qmax(bits):
    _whole(bits, "bits")
    if bits not in (4, 8):
        raise ValueError(f"bits must be 4 or 8, got {bits}")
    return (1 << (bits - 1)) - 1


def _finite(x, name, nonempty=False):
    a = np.asarray(x)
    if a.dtype.kind not in "iuf" or not np.all(np.isfinite(a)) or (nonempty and a.size == 0):
        raise ValueError(f"{name} must be finite real numbers, at least one, got shape {a.shape}")
    return a.astype(np.float64)


def _positive(scale, shape):
    s = _finite(scale, "scale")
    if np.any(s <= 0):
        raise ValueError("scale must be positive")
    try:
        fits = np.broadcast_shapes(s.shape, shape) == tuple(shape)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"scale {s.shape} does not broadcast against {tuple(shape)}")
    return s


def _zero_point(z):
    _whole(z, "zero_point")
    if z < 0 or z > 255:
        raise ValueError(f"zero_point {z} is not in 0 … 255")


def _integers(q, name):
    if np.asarray(q).dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integers, got dtype {np.asarray(q).dtype}")
    return np.asarray(q)


def _absmax(values, axis, top):
    m = np.abs(values).max(axis=axis)
    return np.where(m == 0, 1.0, m / top)


def absmax_scale(W, bits=8, per_channel=False):
    """max |W| (all, or axis 0) / qmax."""
    W = _finite(W, "W")
    if W.ndim != 2 or W.size == 0:
        raise ValueError(f"W must be a non-empty matrix, got {W.shape}")
    top = _qmax(bits)
    if per_channel not in (True, False) or not isinstance(per_channel, (bool, np.bool_)):
        raise ValueError(f"per_channel must be a bool, got {per_channel!r}")
    return _absmax(W, 0 if per_channel else None, top)


def quantize_symmetric(x, scale, bits=8):
    """rint(x / s), clipped, int8."""
    x = _finite(x, "x")
    s = _positive(scale, x.shape)
    top = _qmax(bits)
    return np.rint(np.divide(x, s)).clip(-top, top).astype(np.int8)


def affine_params(x):
    """Range with 0, over 255; z = rint(−ℓ / s)."""
    x = _finite(x, "x", nonempty=True)
    lo, hi = np.minimum(x.min(), 0.0), np.maximum(x.max(), 0.0)
    s = np.float64((hi - lo) / 255) if hi != lo else np.float64(1.0)
    return s, int(np.rint(-lo / s))


def quantize_affine(x, scale, zero_point):
    """rint(x / s) + z, clipped to 0 … 255, uint8."""
    x = _finite(x, "x")
    s = _positive(scale, ())
    _zero_point(zero_point)
    return (np.rint(x / s) + zero_point).clip(0, 255).astype(np.uint8)


def dequantize(q, scale, zero_point=0):
    """(q − z) s with q widened to int64 first."""
    q = _integers(q, "q")
    s = _positive(scale, q.shape)
    _zero_point(zero_point)
    return ((q.astype(np.int64) - zero_point) * s).astype(np.float64)


def quantize_groups(W, group_size, bits=4):
    """(d_in/G, G, d_out) view: the max over the middle axis."""
    W = _finite(W, "W")
    if W.ndim != 2 or W.size == 0:
        raise ValueError(f"W must be a non-empty matrix, got {W.shape}")
    _whole(group_size, "group_size")
    if group_size < 1:
        raise ValueError(f"group_size must be at least 1, got {group_size}")
    top = _qmax(bits)
    if W.shape[0] % group_size:
        raise ValueError(f"group_size {group_size} must divide d_in {W.shape[0]}")
    blocks = W.reshape(W.shape[0] // group_size, group_size, W.shape[1])
    scales = _absmax(blocks, 1, top)
    q = np.rint(blocks / scales[:, None, :]).clip(-top, top).astype(np.int8)
    return q.reshape(W.shape), scales


def dequantize_groups(q, scales, group_size):
    """einsum of the (d_in/G, G, d_out) view with the scales."""
    q = _integers(q, "q")
    _whole(group_size, "group_size")
    if group_size < 1:
        raise ValueError(f"group_size must be at least 1, got {group_size}")
    s = _finite(scales, "scales")
    want = (q.shape[0] // group_size, q.shape[1]) if q.ndim == 2 else None
    if q.ndim != 2 or q.shape[0] % group_size or s.shape != want or np.any(s <= 0):
        raise ValueError(f"q {q.shape} with group_size {group_size} needs positive scales of shape {want}, "
                         f"got {s.shape}")
    blocks = q.reshape(want[0], group_size, want[1]).astype(np.float64)
    return np.einsum("gkc,gc->gkc", blocks, s).reshape(q.shape)


def _fit(Xq, Wq):
    Xq, Wq = _integers(Xq, "Xq"), _integers(Wq, "Wq")
    if Xq.ndim != 2 or Wq.ndim != 2 or Xq.shape[1] != Wq.shape[0]:
        raise ValueError(f"Xq {Xq.shape} and Wq {Wq.shape}: inner dimensions must agree")
    return Xq, Wq


def int_matmul(Xq, Wq):
    """einsum in int32."""
    Xq, Wq = _fit(Xq, Wq)
    return np.einsum("ik,kj->ij", Xq, Wq, dtype=np.int32)


def int8_linear(Xq, x_scale, Wq, w_scale):
    """einsum of the int32 sums with the two scales."""
    Xq, Wq = _fit(Xq, Wq)
    sx = _positive(x_scale, ())
    sw = _positive(w_scale, (Xq.shape[0], Wq.shape[1]))
    return np.einsum("ij,j->ij", int_matmul(Xq, Wq).astype(np.float64) * sx,
                     np.broadcast_to(sw, (Xq.shape[0], Wq.shape[1]))[0])
