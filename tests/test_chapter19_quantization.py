"""Chapter 19: Quantization — the course's own worksheet (Part III), and beyond.

A 4 × 2 weight W whose scales are powers of two (per tensor, per output channel), four of its entries on .5;
an activation row beyond its scale's range; an activation row in uint8 with a zero point, the next one clipped,
and back; a 4 × 2 weight in int4, groups of two rows, and back; the int8 product of an activation row with W,
summed in int32 and rescaled. Each worksheet step is one test below, named as the claim it checks; the numbers
come from reference/chapter19_quantization.toml (audited by scripts/audit_chapter19_quantization.py). Beyond
the worksheet, on fixed seeded inputs of other shapes: the integers and scales against NumPy's round (half to
even) computed here in the open; every round trip within half a step; zeros, all-positive and all-negative
ranges; sums that overflow int16; the dtypes each docstring promises; bad input.
"""

import numpy as np
import pytest
from pytest_check import check

from kata import close, expect, raises_clearly, returned

CHAPTER = 19
RNG = np.random.default_rng(19)
WRONG_AXIS = "scales along the wrong axis"


def dtype_is(got, dtype, what):
    """Check an array's dtype is the one the docstring promises (after its values were compared)."""
    with check:
        assert got.dtype == dtype, (f"{what}: the values are right but the dtype is {got.dtype}; the docstring "
                                    f"promises {np.dtype(dtype).name} (convert after clipping)")


def other_shape(ws, got, shapes):
    """Fail naming a mistake whose result has another shape than the answer (the key names same-shape ones)."""
    got = np.asarray(got)
    for name, shape in shapes.items():
        if got.shape == shape:
            pytest.fail("\n".join([f"{ws.id} {ws.title}", f"  expected  shape {ws.exact.shape}: {ws.exact.tolist()}",
                                   f"  got       shape {got.shape}: {got.tolist()}", f"  looks like: {name}"]), pytrace=False)


def two(result, what, names):
    """A pair the docstring promises, checked as a tuple of two."""
    if not isinstance(result, tuple) or len(result) != 2:
        pytest.fail(f"{what}: expected a tuple {names}, got {type(result).__name__}", pytrace=False)
    return result


# -- the worksheet, step by step -------------------------------------------------------------------
@pytest.mark.step("19.1")
def test_one_scale_per_tensor_puts_the_largest_magnitude_127_on_127(ch, ws):
    expect(ws, ch.absmax_scale(ws.input("W")), kind="float")


@pytest.mark.step("19.2")
def test_one_scale_per_output_channel_is_one_per_column(ch, ws):
    got = returned(ch.absmax_scale(ws.input("W"), per_channel=True), "array", "19.2")
    other_shape(ws, got, {f"{WRONG_AXIS}: one per row of W (d_in of them), not one per column (d_out)": (4,),
                          f"{WRONG_AXIS}: one per row of W, kept as a column": (4, 1)})
    expect(ws, got)


@pytest.mark.step("19.3")
def test_per_tensor_the_ties_round_half_to_even(ch, ws):
    got = ch.quantize_symmetric(ws.input("W"), ws.input("scale"))
    expect(ws, got, kind="array")
    dtype_is(got, np.int8, "19.3")


@pytest.mark.step("19.4")
def test_per_channel_column_0_keeps_steps_of_a_quarter(ch, ws):
    got = ch.quantize_symmetric(ws.input("W"), ws.input("scale"))
    expect(ws, got, kind="array")
    dtype_is(got, np.int8, "19.4")


@pytest.mark.step("19.5")
def test_values_beyond_the_range_are_clipped_to_127(ch, ws):
    got = ch.quantize_symmetric(ws.input("x"), ws.input("scale"))
    expect(ws, got, kind="array")
    dtype_is(got, np.int8, "19.5")


@pytest.mark.step("19.6")
def test_the_uint8_scale_spans_the_range_and_the_zero_point_stands_for_0(ch, ws):
    scale, zero = two(ch.affine_params(ws.input("x")), "19.6", "(scale, zero_point)")
    expect(ws, np.array([returned(scale, "float", "19.6: the scale"), returned(zero, "float", "19.6: z")]))
    returned(zero, "int", "19.6: the zero point")


@pytest.mark.step("19.7")
def test_the_next_row_in_uint8_is_clipped_to_0_and_255(ch, ws):
    got = ch.quantize_affine(ws.input("x"), ws.input("scale"), ws.input("zero_point"))
    expect(ws, got, kind="array")
    dtype_is(got, np.uint8, "19.7")


@pytest.mark.step("19.8")
def test_uint8_comes_back_as_q_minus_z_times_s(ch, ws):
    got = ch.dequantize(ws.input("q").astype(np.uint8), ws.input("scale"), ws.input("zero_point"))
    expect(ws, got, kind="array")
    dtype_is(got, np.float64, "19.8")


@pytest.mark.step("19.9")
def test_w_comes_back_within_half_a_step_of_each_column(ch, ws):
    got = ch.dequantize(ws.input("q").astype(np.int8), ws.input("scale"))
    expect(ws, got, kind="array")
    error, bound = np.abs(ws.input("W") - got), ws.input("scale") / 2
    with check:
        assert np.all(error <= bound), f"19.9: |W − Ŵ| = {error.tolist()} passes half a step, {bound.tolist()}"


@pytest.mark.step("19.10")
def test_int4_groups_of_two_rows_have_one_scale_each(ch, ws):
    _, scales = two(ch.quantize_groups(ws.input("W"), ws.input("group_size")), "19.10", "(q, scales)")
    scales = returned(scales, "array", "19.10: the scales")
    other_shape(ws, scales, {f"{WRONG_AXIS}: groups of consecutive entries of a row, not of a column": (4, 1),
                             f"{WRONG_AXIS}: one scale per row": (4,)})
    expect(ws, scales)


@pytest.mark.step("19.11")
def test_int4_integers_lie_in_minus_7_to_7(ch, ws):
    q, _ = two(ch.quantize_groups(ws.input("W"), ws.input("group_size")), "19.11", "(q, scales)")
    expect(ws, q, kind="array")
    dtype_is(q, np.int8, "19.11")


@pytest.mark.step("19.12")
def test_each_int4_entry_comes_back_times_its_own_groups_scale(ch, ws):
    got = ch.dequantize_groups(ws.input("q").astype(np.int8), ws.input("scales"), ws.input("group_size"))
    expect(ws, got, kind="array")


@pytest.mark.step("19.13")
def test_the_sums_pass_32767_and_need_int32(ch, ws):
    got = ch.int_matmul(ws.input("Xq").astype(np.int8), ws.input("Wq").astype(np.int8))
    expect(ws, got, kind="array")
    dtype_is(got, np.int32, "19.13")


@pytest.mark.step("19.14")
def test_the_int8_layer_rescales_once_by_both_scales(ch, ws):
    got = ch.int8_linear(ws.input("Xq").astype(np.int8), ws.input("x_scale"), ws.input("Wq").astype(np.int8),
                         ws.input("w_scale"))
    expect(ws, got, kind="array")


# -- beyond the worksheet: other shapes, NumPy's round (half to even) computed here in the open ---------------
HALF_AWAY = "rounding half away from zero (NumPy's round is half to even)"


@pytest.mark.parametrize("bits", [8, 4])
def test_absmax_per_tensor_and_per_channel_on_a_5_by_3_weight(ch, bits):
    """scales max|W|/(2^(b−1)−1) over W or down each column, q = clip(round(W/s)) as int8, ties to even, 5 × 3"""
    top = 2 ** (bits - 1) - 1
    W = np.round(RNG.normal(size=(5, 3)) * 8) / 4 * np.array([1.0, 0.1, 5.0])  # columns of three magnitudes
    W[0] = [2.5 / 4, -0.5 / 4, 1.5 / 4]  # quarters: ties for a scale of 1/4, if it comes
    s_t, s_c = np.max(np.abs(W)) / top, np.max(np.abs(W), axis=0) / top
    close(ch.absmax_scale(W, bits=bits), s_t, f"absmax_scale(W {W.shape}, bits={bits})", kind="float")
    got = returned(ch.absmax_scale(W, bits=bits, per_channel=True), "array", "absmax_scale, per channel")
    with check:
        assert got.shape == (3,), f"absmax_scale(W (5, 3), per_channel=True): shape {got.shape}, expected (3,)" \
                                  f"\n  looks like: {WRONG_AXIS}" * (got.shape != (3,))
    close(got, s_c, f"absmax_scale(W {W.shape}, bits={bits}, per_channel=True)",
          mistakes=[(WRONG_AXIS, np.max(np.abs(W), axis=1)[:3] / top)])
    for s, how in ((s_t, "per tensor"), (s_c, "per channel")):
        q = ch.quantize_symmetric(W, s, bits=bits)
        want = np.clip(np.round(W / s), -top, top)
        close(q, want, f"quantize_symmetric(W (5, 3), {how}, bits={bits})", kind="array",
              mistakes=[(HALF_AWAY, np.sign(W / s) * np.floor(np.abs(W / s) + 0.5))])
        dtype_is(q, np.int8, f"quantize_symmetric, {how}, bits={bits}")


def test_ties_round_half_to_even_for_both_signs(ch):
    """quantize_symmetric of ±0.5, ±1.5, ±2.5, ±3.5 at s = 1 gives 0, ±2, ±2, ±4: half to even, as np.round"""
    x = np.array([[0.5, 1.5, 2.5, 3.5], [-0.5, -1.5, -2.5, -3.5]])
    close(ch.quantize_symmetric(x, 1.0), np.round(x), "quantize_symmetric of the ties ±0.5 … ±3.5 at scale 1",
          kind="array", mistakes=[(HALF_AWAY, np.sign(x) * np.floor(np.abs(x) + 0.5)),
                                  ("rounding half up, floor(x + 0.5)", np.floor(x + 0.5))])


@pytest.mark.parametrize("bits", [8, 4])
def test_clipping_holds_any_value_inside_the_grid(ch, bits):
    """quantize_symmetric(x, 1, bits) of values up to ±300 stays in −(2^(b−1)−1) … 2^(b−1)−1: clipped, never wrapped"""
    top = 2 ** (bits - 1) - 1
    x = np.array([[300.0, -300.0, 130.0, -129.0, 8.0, -8.0, 6.0]])
    got = ch.quantize_symmetric(x, 1.0, bits=bits)
    close(got, np.clip(x, -top, top), f"quantize_symmetric of {x.tolist()} at scale 1, bits={bits}", kind="array",
          mistakes=[("no clipping to the range (the int8 wrapped around)", x.astype(np.int64).astype(np.int8)),
                    ("no clipping to the range", x), ("clipped to −2^(b−1) … 2^(b−1)−1: the grid is symmetric",
                                                      np.clip(x, -top - 1, top))])


def test_a_zero_column_or_tensor_gets_the_scale_1(ch):
    """a column (or tensor, or group) of zeros has scale 1 and quantizes to 0; affine_params of zeros is (1, 0)"""
    W = np.array([[0.0, 2.0], [0.0, -1.0]])
    close(ch.absmax_scale(W, per_channel=True), [1.0, 2.0 / 127], "absmax_scale per channel, column 0 all zeros",
          kind="array")
    close(ch.absmax_scale(np.zeros((2, 3))), 1.0, "absmax_scale of a matrix of zeros", kind="float")
    close(ch.absmax_scale(np.array([[0.0, -2.54, 1.0]])), 0.02, "absmax_scale of one row", kind="float")
    close(ch.quantize_symmetric(W, np.array([1.0, 2.0 / 127])), [[0, 127], [0, -64]],
          "quantize_symmetric with column 0 all zeros", kind="array")
    scale, zero = two(ch.affine_params(np.zeros(3)), "affine_params of zeros", "(scale, zero_point)")
    close(scale, 1.0, "affine_params(zeros): the scale", kind="float")
    close(zero, 0, "affine_params(zeros): the zero point", kind="int")
    _, scales = two(ch.quantize_groups(np.array([[0.0, 7.0], [0.0, 1.0], [3.5, 0.0], [1.0, 0.0]]), 2), "groups",
                    "(q, scales)")
    close(scales, [[1.0, 1.0], [0.5, 1.0]], "quantize_groups: a group of zeros has scale 1", kind="array")


@pytest.mark.parametrize("case", [([[0.5, 2.0, 51.0]], 0.2, 0), ([[-25.5, -1.0]], 0.1, 255),
                                  ([[-3.0, 0.0, 9.75]], 0.05, 60), ([[2.55]], 0.01, 0)])
def test_the_uint8_range_always_holds_0(ch, case):
    """affine_params: all positive gives z = 0, all negative z = 255; the range is stretched to hold 0.0"""
    x, scale, zero = case
    got_s, got_z = two(ch.affine_params(np.array(x)), f"affine_params({x})", "(scale, zero_point)")
    close(got_s, scale, f"affine_params({x}): the scale", kind="float",
          mistakes=[("the range not stretched to hold 0", (np.max(x) - np.min(x)) / 255)])
    close(got_z, zero, f"affine_params({x}): the zero point", kind="int",
          mistakes=[("the zero point's sign", -zero)])
    x = np.array(x)
    close(ch.quantize_affine(x, scale, zero), np.clip(np.round(x / scale) + zero, 0, 255),
          f"quantize_affine({x.tolist()}, {scale}, {zero})", kind="array")


def test_every_round_trip_is_within_half_a_step(ch):
    """|x − dequantize(quantize(x))| ≤ s/2 per tensor, per channel, in uint8 and in int4 groups, 6 × 4 seeded"""
    W = RNG.normal(size=(6, 4)) * np.array([0.01, 1.0, 30.0, 2.0])
    s_c = ch.absmax_scale(W, per_channel=True)
    back = ch.dequantize(ch.quantize_symmetric(W, s_c), s_c)
    with check:
        assert np.all(np.abs(W - back) <= np.asarray(s_c) / 2 * (1 + 1e-12)), \
            f"per channel: the largest error {np.max(np.abs(W - back), axis=0).tolist()} passes s/2 = " \
            f"{(np.asarray(s_c) / 2).tolist()}"
    x = RNG.normal(size=(3, 5)) * 4 + 1
    s, z = two(ch.affine_params(x), "affine_params", "(scale, zero_point)")
    q = ch.quantize_affine(x, s, z)
    close(q, np.clip(np.round(x / s) + z, 0, 255), "quantize_affine of a 3 × 5 row block", kind="array",
          mistakes=[("the zero point's sign", np.clip(np.round(x / s) - z, 0, 255))])
    dtype_is(q, np.uint8, "quantize_affine")
    back = ch.dequantize(q, s, z)
    close(back, (q.astype(float) - z) * s, "dequantize of the uint8 block", kind="array",
          mistakes=[("q − z computed in uint8", (q - np.uint8(z)) * s), ("the zero point's sign", (q + float(z)) * s)])
    with check:
        assert np.all(np.abs(x - back) <= s / 2 * (1 + 1e-9)), "uint8: an error passes half a step s/2"
    q4, scales = two(ch.quantize_groups(W, 3), "quantize_groups(W (6, 4), 3)", "(q, scales)")
    back = ch.dequantize_groups(q4, scales, 3)
    with check:
        assert np.all(np.abs(W - back) <= np.repeat(np.asarray(scales), 3, axis=0) / 2 * (1 + 1e-12)), \
            "int4 groups: an error passes half its group's step"


@pytest.mark.parametrize("case", [(8, 3, 4, 4), (8, 3, 2, 4), (6, 2, 3, 8), (4, 1, 1, 4)])
def test_groups_of_g_rows_down_each_column(ch, case):
    """quantize_groups(W (d_in, d_out), G, bits): scales (d_in/G, d_out) of G consecutive rows per column; back again"""
    d_in, d_out, G, bits = case
    top = 2 ** (bits - 1) - 1
    W = RNG.normal(size=(d_in, d_out)) * 3
    blocks = W.reshape(d_in // G, G, d_out)
    want_s = np.max(np.abs(blocks), axis=1) / top
    want_q = np.clip(np.round(blocks / want_s[:, None, :]), -top, top).reshape(d_in, d_out)
    what = f"quantize_groups(W {W.shape}, {G}, bits={bits})"
    q, scales = two(ch.quantize_groups(W, G, bits=bits), what, "(q, scales)")
    rows = np.max(np.abs(W.reshape(-1, G)), axis=1).reshape(d_in, d_out // G) / top if d_out % G == 0 else None
    close(scales, want_s, f"{what}: the scales", kind="array",
          mistakes=[(WRONG_AXIS, rows)] if rows is not None and rows.shape == want_s.shape else [])
    close(q, want_q, f"{what}: the integers", kind="array")
    dtype_is(q, np.int8, what)
    close(ch.dequantize_groups(want_q.astype(np.int8), want_s, G), want_q * np.repeat(want_s, G, axis=0),
          f"dequantize_groups(q {want_q.shape}, scales {want_s.shape}, {G})", kind="array",
          mistakes=[("dequantised with the wrong scale: rows interleaved", want_q * np.tile(want_s, (G, 1)))])


def test_int8_sums_of_300_products_need_int32(ch):
    """int_matmul of int8 matrices (3, 300) and (300, 2) of ±127: sums near ±4.8 million, exact, int32"""
    Xq = np.where(RNG.random((3, 300)) < 0.9, 127, -127).astype(np.int8)
    Wq = np.stack([np.full(300, 127), np.where(np.arange(300) % 2, 127, -127)], axis=1).astype(np.int8)
    want = Xq.astype(np.int64) @ Wq.astype(np.int64)
    got = ch.int_matmul(Xq, Wq)
    close(got, want, "int_matmul of (3, 300) by (300, 2), every entry ±127", kind="array",
          mistakes=[("accumulating in int16 (overflow)", want.astype(np.int16)),
                    ("accumulating in int8 (overflow)", want.astype(np.int8))])
    dtype_is(got, np.int32, "int_matmul")


@pytest.mark.parametrize("per_channel", [False, True])
def test_the_int8_layer_is_close_to_the_float_product(ch, per_channel):
    """int8_linear(Xq, s_x, Wq, s_w) = (Xq Wq in int32) s_x s_w; from X W no further than the half-steps allow, 5 × 16 by 16 × 3"""
    X, W = RNG.normal(size=(5, 16)), RNG.normal(size=(16, 3)) * np.array([0.1, 1.0, 10.0])
    s_x = np.max(np.abs(X)) / 127
    s_w = np.max(np.abs(W), axis=0) / 127 if per_channel else np.max(np.abs(W)) / 127
    Xq = np.clip(np.round(X / s_x), -127, 127).astype(np.int8)
    Wq = np.clip(np.round(W / s_w), -127, 127).astype(np.int8)
    exact = (Xq.astype(np.int64) @ Wq.astype(np.int64)) * s_x * s_w
    got = ch.int8_linear(Xq, s_x, Wq, s_w)
    close(got, exact, f"int8_linear, 5 × 16 by 16 × 3, w_scale {'per channel' if per_channel else 'per tensor'}",
          kind="array", rtol=1e-12, atol=1e-12,
          mistakes=[("dequantised with the wrong scale: s_x forgotten", exact / s_x),
                    ("dequantised with the wrong scale: s_w forgotten", exact / s_w)])
    # the point of it all: X W to within the half-steps, |δX| ≤ s_x/2 and |δW| ≤ s_w/2, summed over d_in
    bound = s_x / 2 * np.abs(W).sum(axis=0) + np.abs(X).sum(axis=1)[:, None] * s_w / 2 + 16 * s_x * s_w / 4
    with check:
        assert np.all(np.abs(got - X @ W) <= bound), "int8_linear is further from X W than the half-steps allow"


def test_nothing_modifies_its_inputs(ch):
    """every chapter 19 function leaves its arrays untouched"""
    W = RNG.normal(size=(4, 2))
    s = np.array([0.5, 0.25])
    q = np.array([[1, -2], [3, 4], [5, -6], [7, 0]], dtype=np.int8)
    u = np.array([[0, 4, 200, 255]], dtype=np.uint8)
    scales = np.array([[0.5, 1.0], [0.25, 2.0]])
    # the judge fails a call that changes one of its arguments in place (ChangedItsInput)
    ch.absmax_scale(W, per_channel=True)
    ch.quantize_symmetric(W, s)
    ch.affine_params(W)
    ch.quantize_affine(W, 0.1, 3)
    ch.dequantize(u, 0.1, 3)
    ch.dequantize(q, s)
    ch.quantize_groups(W, 2)
    ch.dequantize_groups(q, scales, 2)
    ch.int_matmul(q.T, q)
    ch.int8_linear(q.T, 0.5, q, s)


# -- bad input gets a clear error (the checks marked given are the stubs': CONTRIBUTING.md) -----------------
def test_a_group_size_that_does_not_divide_the_rows_is_refused(ch):
    """quantize_groups(W with 6 rows, 4) raises ValueError naming group_size and d_in, its value 6, saying 'divide'"""
    raises_clearly(lambda: ch.quantize_groups(np.ones((6, 2)), 4), ValueError, "divide", "6",
                   names=("group_size", "d_in"))
    raises_clearly(lambda: ch.quantize_groups(np.ones((3, 2)), 2, bits=8), ValueError, "divide",
                   names=("group_size",))


@pytest.mark.given
def test_bits_scales_and_zero_points_that_do_not_fit_are_refused(ch):
    """bits not 4 or 8, a scale ≤ 0 or of a shape that does not broadcast, a zero point outside 0 … 255: ValueError"""
    W = np.ones((2, 3))
    raises_clearly(lambda: ch.absmax_scale(W, bits=16), ValueError, names=("bits",))
    raises_clearly(lambda: ch.quantize_symmetric(W, 1.0, bits=True), ValueError, names=("bits",))
    raises_clearly(lambda: ch.quantize_symmetric(W, 0.0), ValueError, "positive", names=("scale",))
    raises_clearly(lambda: ch.quantize_symmetric(W, np.ones(2)), ValueError, "(2,)", "(2, 3)")
    raises_clearly(lambda: ch.quantize_symmetric(W, np.ones((2, 2, 3))), ValueError, "(2, 2, 3)")
    raises_clearly(lambda: ch.quantize_affine(W, 0.1, 256), ValueError, names=("zero_point",))
    raises_clearly(lambda: ch.quantize_affine(W, 0.1, 4.0), ValueError, names=("zero_point",))
    raises_clearly(lambda: ch.quantize_affine(W, np.ones(3), 4), ValueError, names=("scale",))
    raises_clearly(lambda: ch.absmax_scale(W, per_channel=1), ValueError, names=("per_channel",))
    raises_clearly(lambda: ch.quantize_groups(W, 0), ValueError, names=("group_size",))
    raises_clearly(lambda: ch.quantize_groups(np.ones((4, 2)), 2.0), ValueError, names=("group_size",))
    raises_clearly(lambda: ch.quantize_symmetric(W, np.array([np.inf])), ValueError, names=("scale",))
    q = np.ones((4, 2), dtype=np.int8)
    raises_clearly(lambda: ch.dequantize_groups(q, np.zeros((2, 2)), 2), ValueError, "positive", names=("scales",))
    raises_clearly(lambda: ch.dequantize_groups(q, np.full((2, 2), np.nan), 2), ValueError, names=("scales",))
    raises_clearly(lambda: ch.dequantize_groups(np.ones((3, 2), dtype=np.int8), np.ones((1, 2)), 2), ValueError,
                   "(3, 2)", names=("group_size",))


@pytest.mark.given
def test_arrays_that_do_not_fit_are_refused(ch):
    """non-finite or empty values, a vector for W, floats for integers, shapes that do not fit: ValueError naming them"""
    raises_clearly(lambda: ch.absmax_scale(np.array([1.0, np.nan])), ValueError, names=("W",))
    raises_clearly(lambda: ch.absmax_scale(np.ones(3)), ValueError, "(3,)", names=("W",))
    raises_clearly(lambda: ch.quantize_symmetric(np.array([np.inf]), 1.0), ValueError, "finite", names=("x",))
    raises_clearly(lambda: ch.quantize_affine(np.array([np.nan]), 0.1, 0), ValueError, "finite", names=("x",))
    raises_clearly(lambda: ch.quantize_groups(np.ones(3), 1), ValueError, names=("W",))
    raises_clearly(lambda: ch.dequantize_groups(np.ones((4, 2)), np.ones((2, 2)), 2), ValueError, "integers",
                   names=("q",))
    raises_clearly(lambda: ch.int_matmul(np.ones((2, 3), dtype=np.int8), np.ones((3, 2))), ValueError, "integers",
                   names=("Wq",))
    raises_clearly(lambda: ch.int_matmul(np.ones(3, dtype=np.int8), np.ones((3, 2), dtype=np.int8)), ValueError,
                   "(3,)")
    raises_clearly(lambda: ch.affine_params(np.zeros(0)), ValueError, "at least one", names=("x",))
    raises_clearly(lambda: ch.affine_params(np.array([1.0, np.nan])), ValueError, "finite", names=("x",))
    raises_clearly(lambda: ch.dequantize(np.ones(3), 1.0), ValueError, "integers", names=("q",))
    raises_clearly(lambda: ch.int_matmul(np.ones((2, 3), dtype=np.int8), np.ones((2, 3), dtype=np.int8)),
                   ValueError, "(2, 3)")
    raises_clearly(lambda: ch.int_matmul(np.ones((2, 3)), np.ones((3, 2), dtype=np.int8)), ValueError,
                   names=("Xq",))
    raises_clearly(lambda: ch.dequantize_groups(np.ones((4, 2), dtype=np.int8), np.ones((4, 2)), 2), ValueError,
                   "(4, 2)", "(2, 2)")
    raises_clearly(lambda: ch.int8_linear(np.ones((1, 2), dtype=np.int8), 1.0, np.ones((2, 3), dtype=np.int8),
                                          np.ones(2)), ValueError, "(2,)")
