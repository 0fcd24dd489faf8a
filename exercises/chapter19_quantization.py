"""Chapter 19: Quantization — weights and activations in 8 or 4 bits, and a matrix product in integers.

A float64 weight takes 8 bytes; the same weight as an 8-bit integer takes 1, as a 4-bit one half a byte.
Quantizing stores each number x as a small integer q on a grid of step s (the scale), and reads it back as
q·s: the error is at most half a step, s/2, for every x inside the grid's range, and a value outside the
range is clipped to its end. The whole art is choosing s: absmax (symmetric) quantization makes the largest
magnitude land on the largest integer, per tensor (one s) or per output channel (one s per column of W, so a
column of small weights keeps small steps); asymmetric quantization adds a zero point z, the integer that
stands for 0.0, so that a range such as [−1, 63] uses all 256 levels of uint8; 4-bit weights get one scale
per group of a few rows. A matrix product of int8 numbers is summed in int32 — an int8 or int16 sum
overflows — and rescaled once at the end by the two scales.

The convention of this course, used by every function below:

- row vectors, as everywhere in the course: a layer computes X W with W of shape (d_in, d_out); an output
  channel is a column of W, and the product sums over W's rows (the input axis);
- b bits signed (absmax) use the integers −(2^(b−1) − 1) … 2^(b−1) − 1: −127 … 127 for int8, −7 … 7 for
  int4 (one value of the full range left out, so that the grid is symmetric); both are stored in int8 arrays
  (a 4-bit number per byte: packing two into a byte is storage, not arithmetic);
- asymmetric is 8 bits unsigned: the integers 0 … 255, in uint8 arrays;
- rounding is NumPy's: half to even (2.5 → 2, 3.5 → 4, −0.5 → −0), as Python's ``round`` also does; a
  quantity halfway between two integers goes to the even one, so that ties do not all lean one way.

Worksheet: this course's own. A 4 × 2 weight W (4 inputs, 2 output channels) whose scales are powers of two,
so that every division is exact and four entries land on .5; an activation row in uint8 with a zero point;
a 4 × 2 weight in int4, groups of two rows; the int8 product of a quantized activation row with W.

Types, as every docstring below uses them: an array is a NumPy array (a list of numbers is read as one); a
whole number is a Python or NumPy int (not a bool, not a float).
"""

import numpy as np

UINT8_MAX = 255  # asymmetric: the integers 0 … 255


def absmax_scale(W: np.ndarray, bits: int = 8, per_channel: bool = False):
    r"""The absmax scale of W: its largest magnitude divided by the largest integer of b bits.

    $$q_\text{max} = 2^{b-1} - 1,$$

    $$s = \frac{\max |W|}{q_\text{max}}
      \quad\text{(per tensor)},$$

    $$s_c = \frac{\max_r |W_{rc}|}{q_\text{max}} \quad\text{(per output channel c)}$$

    Per output channel, the maximum runs down each column of W (over the input axis, the rows): one scale per
    column. Where that maximum is 0 (a tensor or column of zeros) the scale is 1: every entry is 0 whatever
    the scale, and 1 keeps the division defined.

    Args:
        W: a weight (or activation) matrix, shape (d_in, d_out), finite.
        bits: 8 or 4.
        per_channel: False for one scale for the whole matrix, True for one per column.

    Returns:
        Per tensor: the scale, a float (a Python float, a NumPy float64 or a 0-d array). Per channel: the
        scales, a float64 array of shape (d_out,).

    Raises:
        ValueError: if W is not a finite, non-empty matrix or bits is not 4 or 8: the checks given above the
            ``raise``, which hand you W as a float64 array.

    See docs: chapter 19, steps 19.1 and 19.2.
    """
    W = _check_matrix(W, "W")
    _check_bits(bits)
    _check_flag(per_channel, "per_channel")
    raise NotImplementedError("19.1 absmax_scale: the largest magnitude of W (over every entry or down each column) over the largest integer of b bits, 2ᵇ⁻¹ − 1 (1 where that magnitude is 0) (2 lines)")


def quantize_symmetric(x: np.ndarray, scale, bits: int = 8) -> np.ndarray:
    r"""Absmax (symmetric) quantization: x divided by its scale, rounded half to even, clipped to b bits.

    $$q = \mathrm{clip}\Bigl(\mathrm{round}\bigl(\tfrac{x}{s}\bigr),\ -q_\text{max},\ q_\text{max}\Bigr),$$

    $$q_\text{max} = 2^{b-1} - 1$$

    s is a number (per tensor) or an array that broadcasts against x: for W of shape (d_in, d_out), the
    (d_out,) scales of its columns. A value beyond ±q_max·s (an activation larger than the one the scale was
    measured on) becomes ±q_max: an int8 array cannot hold 136, and 136 written into one wraps around to
    −120. For |x| ≤ q_max·s the error of q·s is at most s/2.

    Args:
        x: the values, any shape, finite.
        scale: s > 0, a number or an array that broadcasts against x.
        bits: 8 or 4.

    Returns:
        q, an int8 array of the shape of x, every entry in −q_max … q_max.

    Raises:
        ValueError: if x is not finite, the scale is not positive or does not broadcast against x, or bits is
            not 4 or 8: the checks given above the ``raise``, which hand you x and the scale as float64 arrays.

    See docs: chapter 19, steps 19.3, 19.4 and 19.5.
    """
    x = _check_real(x, "x")
    scale = _check_scale(scale, x.shape)
    _check_bits(bits)
    raise NotImplementedError("19.3 quantize_symmetric: W over its scale rounded half to even and held inside ± the largest integer of b bits, made int8 only at the end (2 lines)")


def affine_params(x: np.ndarray) -> tuple[float, int]:
    r"""The scale and zero point of asymmetric 8-bit quantization: the range of x, 0 included, onto 0 … 255.

    $$\ell = \min(\min x,\ 0),$$

    $$h = \max(\max x,\ 0),$$

    $$s = \frac{h - \ell}{255},$$

    $$z = \mathrm{round}\bigl(-\tfrac{\ell}{s}\bigr)$$

    The range always holds 0, so that 0.0 (a padding, a ReLU's output) is stored exactly, as the integer z.
    z is rounded half to even and lies in 0 … 255. Where h = ℓ (x all zeros) the scale is 1 and z is 0.

    Args:
        x: the values, any shape, at least one, finite.

    Returns:
        (s, z): the scale, a float (a Python float, a NumPy float64 or a 0-d array); the zero point, a
        whole number.

    Raises:
        ValueError: if x is empty or not finite: the check given above the ``raise``, which hands you x as a
            float64 array.

    See docs: chapter 19, step 19.6.
    """
    x = _check_values(x)
    raise NotImplementedError("19.6 affine_params: the scale of x's range stretched to hold 0 over 255 steps (1 for a width of 0) and the zero point as the rounded whole number that stands for 0.0 (3 lines)")


def quantize_affine(x: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    r"""Asymmetric quantization to uint8: x on a grid of step s shifted by the zero point, clipped to 0 … 255.

    $$q = \mathrm{clip}\Bigl(\mathrm{round}\bigl(\tfrac{x}{s}\bigr) + z,\ 0,\ 255\Bigr)$$

    0.0 becomes z; a value beyond the range the scale and zero point were measured on becomes 0 or 255 (a
    uint8 array cannot hold 284: written into one it wraps around to 28). Rounding is half to even.

    Args:
        x: the values, any shape, finite.
        scale: s > 0, a number.
        zero_point: z, a whole number from 0 to 255.

    Returns:
        q, a uint8 array of the shape of x.

    Raises:
        ValueError: if x is not finite, the scale is not a positive number or the zero point not a whole
            number in 0 … 255: the checks given above the ``raise``, which hand you x and the scale as
            float64.

    See docs: chapter 19, step 19.7.
    """
    x = _check_real(x, "x")
    scale = _check_scale(scale, ())
    _check_zero_point(zero_point)
    raise NotImplementedError("19.7 quantize_affine: x over the scale rounded half to even and shifted by the zero point, held inside 0 … 255 and made uint8 only at the end (1 line)")


def dequantize(q: np.ndarray, scale, zero_point: int = 0) -> np.ndarray:
    r"""The real numbers the integers q stand for: the zero point taken off, times the scale.

    $$\hat x = (q - z)\, s$$

    For absmax quantization z is 0; s is a number or an array that broadcasts against q (the (d_out,) scales
    of W's columns). q − z is a difference of real numbers: for q = 0 and z = 4 it is −4, which no uint8
    holds (in uint8, 0 − 4 wraps around to 252).

    Args:
        q: integers, an array of any integer dtype (int8, uint8, …), any shape.
        scale: s > 0, a number or an array that broadcasts against q.
        zero_point: z, a whole number from 0 to 255.

    Returns:
        x̂, a float64 array of the shape of q.

    Raises:
        ValueError: if q does not hold integers, the scale is not positive or does not broadcast, or the zero
            point is not a whole number in 0 … 255: the checks given above the ``raise``, which hand you q as
            it came and the scale as float64.

    See docs: chapter 19, steps 19.8 and 19.9.
    """
    q = _check_ints(q, "q")
    scale = _check_scale(scale, q.shape)
    _check_zero_point(zero_point)
    raise NotImplementedError("19.8 dequantize: the scale times the integers less the zero point, taken as real numbers since an 8-bit difference wraps around (1 line)")


def quantize_groups(W: np.ndarray, group_size: int, bits: int = 4) -> tuple[np.ndarray, np.ndarray]:
    r"""Absmax quantization with one scale per group of ``group_size`` consecutive rows of each column.

    $$s_{gc} = \frac{\max_{r \in \text{group } g} |W_{rc}|}{q_\text{max}},$$

    $$q_{rc} = \mathrm{clip}\Bigl(\mathrm{round}\bigl(\tfrac{W_{rc}}{s_{\lfloor r / G \rfloor\, c}}\bigr),\
      -q_\text{max},\ q_\text{max}\Bigr)$$

    with G the group size: rows 0 … G − 1 of a column are its group 0, rows G … 2G − 1 its group 1, and so
    on, along the input axis, the one the matrix product sums over. A group of zeros gets the scale 1.
    Rounding is half to even.

    Args:
        W: a weight matrix, shape (d_in, d_out), finite.
        group_size: G, a whole number ≥ 1 that divides d_in.
        bits: 4 or 8.

    Returns:
        (q, scales): q an int8 array of shape (d_in, d_out); scales a float64 array of shape
        (d_in / G, d_out), row g holding the scales of group g of every column.

    Raises:
        ValueError: if G does not divide d_in (the message names group_size and d_in, gives d_in's value
            and says "divide"): yours to write, every group holds G rows. A W that is not a finite matrix, a
            group_size that is not a whole number ≥ 1 and bits not 4 or 8 are refused by the checks given
            above the ``raise``, which hand you W as a float64 array.

    See docs: chapter 19, steps 19.10 and 19.11.
    """
    W = _check_matrix(W, "W")
    _check_group_size(group_size)
    _check_bits(bits)
    raise NotImplementedError("19.10 quantize_groups: W quantized as in quantize_symmetric with one scale per group of G consecutive rows of each column (1 for a group of zeros), refusing a G that does not divide the rows (6 lines)")


def dequantize_groups(q: np.ndarray, scales: np.ndarray, group_size: int) -> np.ndarray:
    r"""Grouped integers back to real numbers: each entry times the scale of its own group.

    $$\hat W_{rc} = q_{rc}\, s_{\lfloor r / G \rfloor\, c}$$

    Row r of q belongs to group ⌊r / G⌋: rows 0 … G − 1 to group 0, and so on (not row r to group r mod
    the number of groups).

    Args:
        q: integers, shape (d_in, d_out), any integer dtype.
        scales: the group scales, positive, shape (d_in / G, d_out).
        group_size: G, a whole number ≥ 1.

    Returns:
        Ŵ, a float64 array of shape (d_in, d_out).

    Raises:
        ValueError: if q does not hold integers, or q, scales and group_size do not fit one another: the
            checks given above the ``raise``, which hand you q as it came and the scales as float64.

    See docs: chapter 19, step 19.12.
    """
    q = _check_ints(q, "q")
    _check_group_size(group_size)
    scales = _check_group_scales(q, scales, group_size)
    raise NotImplementedError("19.12 dequantize_groups: the integers times their group's scale, row r meeting group ⌊r / G⌋'s (1 line)")


def int_matmul(Xq: np.ndarray, Wq: np.ndarray) -> np.ndarray:
    r"""The matrix product of two integer matrices, every sum accumulated in int32.

    $$A_{ij} = \sum_k Xq_{ik}\, Wq_{kj}$$

    $$\text{(in int32)}$$

    A product of two int8 numbers needs up to 15 bits, a sum of d_in of them up to 15 + log₂ d_in: in int8
    or int16 the sums wrap around (NumPy's integer arithmetic does, silently). int32 holds every sum of int8
    products for d_in up to 133 000.

    Args:
        Xq: integers, shape (n, d_in), int8 (any integer dtype whose values fit int8).
        Wq: integers, shape (d_in, d_out), likewise.

    Returns:
        A, an int32 array of shape (n, d_out).

    Raises:
        ValueError: if Xq or Wq does not hold integers, or their shapes do not fit: the check given above the
            ``raise``, which hands you both as they came.

    See docs: chapter 19, step 19.13.
    """
    Xq, Wq = _check_product(Xq, Wq)
    raise NotImplementedError("19.13 int_matmul: the matrix product of the two as int32, so that no sum is ever held in 8 or 16 bits (1 line)")


def int8_linear(Xq: np.ndarray, x_scale: float, Wq: np.ndarray, w_scale) -> np.ndarray:
    r"""A linear layer in int8: the integer product of ``int_matmul``, rescaled once by both scales.

    $$Y_{ij} = A_{ij}\; s_x\; s_{w,j},$$

    $$A = \text{the int32 product of } Xq \text{ and } Wq
      \;\approx\; X W$$

    s_x is the activation's one scale (per tensor); s_w is the weight's, a number or one per output channel
    (shape (d_out,), the column j's scale multiplying column j).

    Args:
        Xq: the quantized activations, integers, shape (n, d_in).
        x_scale: s_x > 0, a number.
        Wq: the quantized weight, integers, shape (d_in, d_out).
        w_scale: s_w > 0, a number or an array of shape (d_out,).

    Returns:
        Y, a float64 array of shape (n, d_out).

    Raises:
        ValueError: if the integers or shapes do not fit, or a scale is not positive or does not broadcast:
            the checks given above the ``raise``.

    See docs: chapter 19, step 19.14.
    """
    Xq, Wq = _check_product(Xq, Wq)
    x_scale = _check_scale(x_scale, ())
    w_scale = _check_scale(w_scale, (len(Xq), Wq.shape[1]))
    raise NotImplementedError("19.14 int8_linear: the int32 product of the integers scaled by the activation's scale and the weight's (one per column) once at the end (1 line)")


# -- input checks: the course's, given in the stubs (CONTRIBUTING.md, "The stub") -----------------------------
def _check_whole(value, name: str) -> None:
    """Refuse what is not a whole number (a bool or a float such as 2.0 is not one)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be a whole number, got {value!r}")


def _check_bits(bits) -> None:
    """Refuse bits other than the whole numbers 4 and 8 (both stored in int8)."""
    _check_whole(bits, "bits")
    if bits not in (4, 8):
        raise ValueError(f"bits must be 4 or 8, got {bits}")


def _check_flag(value, name: str) -> None:
    """Refuse a flag that is not True or False."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")


def _check_real(x, name: str) -> np.ndarray:
    """Return x as float64, after checking it holds finite real numbers."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "iuf" or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must hold finite real numbers, got dtype {arr.dtype}, shape {arr.shape}")
    return arr.astype(np.float64)


def _check_values(x) -> np.ndarray:
    """Return x as float64, after checking it holds at least one finite real number."""
    x = _check_real(x, "x")
    if x.size == 0:
        raise ValueError("x must hold at least one value, got an empty array")
    return x


def _check_matrix(W, name: str) -> np.ndarray:
    """W as a float64 array, after checking it is a non-empty matrix of finite numbers."""
    W = _check_real(W, name)
    if W.ndim != 2 or 0 in W.shape:
        raise ValueError(f"{name} must be a non-empty matrix (d_in, d_out), got shape {W.shape}")
    return W


def _check_scale(scale, shape: tuple) -> np.ndarray:
    """The scale as a float64 array, after checking it is positive, finite and broadcasts against ``shape``."""
    s = _check_real(scale, "scale")
    if not np.all(s > 0):
        raise ValueError(f"scale must be positive everywhere, got {s.tolist()}")
    try:
        fits = np.broadcast_shapes(s.shape, shape) == tuple(shape)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"scale of shape {s.shape} does not broadcast against the values' shape {tuple(shape)}")
    return s


def _check_zero_point(z) -> None:
    """Refuse a zero point that is not a whole number from 0 to 255."""
    _check_whole(z, "zero_point")
    if not 0 <= z <= UINT8_MAX:
        raise ValueError(f"zero_point must be from 0 to {UINT8_MAX}, got {z}")


def _check_ints(q, name: str) -> np.ndarray:
    """Return q as an array, after checking it holds integers (an integer dtype: a float array is refused)."""
    q = np.asarray(q)
    if q.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integers (an integer dtype such as int8 or uint8), got dtype {q.dtype}")
    return q


def _check_group_size(group_size) -> None:
    """Refuse a group size that is not a whole number ≥ 1."""
    _check_whole(group_size, "group_size")
    if group_size < 1:
        raise ValueError(f"group_size must be at least 1, got {group_size}")


def _check_group_scales(q, scales, group_size) -> np.ndarray:
    """The scales as float64, after checking q is (d_in, d_out) and scales (d_in / group_size, d_out), positive."""
    if q.ndim != 2 or q.shape[0] % group_size:
        raise ValueError(f"q {q.shape} must be a matrix whose rows group_size = {group_size} divides")
    scales = _check_real(scales, "scales")
    if scales.shape != (q.shape[0] // group_size, q.shape[1]) or not np.all(scales > 0):
        raise ValueError(f"scales {scales.shape} must be positive, of shape (d_in / group_size, d_out) = "
                         f"{(q.shape[0] // group_size, q.shape[1])} for q {q.shape}")
    return scales


def _check_product(Xq, Wq) -> tuple:
    """(Xq, Wq) as they came, after checking both are integer matrices whose inner dimensions agree."""
    Xq, Wq = _check_ints(Xq, "Xq"), _check_ints(Wq, "Wq")
    if Xq.ndim != 2 or Wq.ndim != 2 or Xq.shape[1] != Wq.shape[0]:
        raise ValueError(f"Xq {Xq.shape} and Wq {Wq.shape} must be (n, d_in) and (d_in, d_out)")
    return Xq, Wq
