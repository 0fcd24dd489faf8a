"""Chapter 13: The Modern Block — the course's own worksheet (beyond the book), and beyond it.

The worksheet: RMSNorm by hand on [1, 2, 2, 4] and [2, −2, 2, −2] and, with eps = 0.25 passed, on a row where ε
counts, its backward pass (eps = 0.25 again), SiLU and its slope at −2…2, a SwiGLU layer (d_model 2, d_ff 3) forward
and backward, then rotary multi-head attention (3 positions, d_model 4, 2 heads) and the pre-norm block, forward and
backward, each backward first on a small case worked by hand (the attention: one head of width 4 at base 100 over
two positions, its forward pass checked first; the block: one position). An eps or a base that is not passed on
shows on the worksheet.
Beyond it: every function on seeded inputs of other shapes (d_model up to 16, seq up to 8) against stored
snapshots (tests/snapshots/chapter13.npz: inputs, the reference's outputs, central-difference gradients of
every argument and the values classic mistakes give, written from solutions/ by the authors), stability,
inputs left untouched, and bad input. Nothing here computes what a function of the chapter computes: the
expected values are stored, not re-derived.
"""

import numpy as np
import pytest

from kata import close, expect, raises_clearly, returned, snapshot

CHAPTER = 13
SNAP = snapshot(CHAPTER)
RNG = np.random.default_rng(13)
# Central differences round to about 2e-10·|loss| (CONTRIBUTING's tolerances). These losses sum a layer over up
# to 8 rows of 16 features and reach |loss| ≈ 100, so the estimates are good to about 2e-8: atol 1e-8 failed the
# reference itself on a fresh seed (grade --seed 5: W_gate of swiglu_backward at (8, 16, 12)). The mistakes the
# checks name are off by whole terms or factors, far more than 1e-7 (mutation score measured at this tolerance).
NUM_RTOL, NUM_ATOL = 1e-5, 1e-7
SWIGLU_KEYS = ("x", "W_gate", "W_up", "W_down")
ATTENTION_KEYS = ("WQ", "WK", "WV", "WO")
BLOCK_KEYS = ("g1", "WQ", "WK", "WV", "WO", "g2", "W_gate", "W_up", "W_down")


def swiglu_args(ws):
    """x, W_gate, W_up, W_down of a worksheet step."""
    return tuple(ws.input(k) for k in SWIGLU_KEYS)


def attention_params(ws):
    """The four attention weights of a worksheet step."""
    return {k: ws.input(k) for k in ATTENTION_KEYS}


def block_params(ws):
    """The block's parameters of a worksheet step, as float64 arrays."""
    return {k: np.array(v, dtype=np.float64) for k, v in ws.inputs["params"].items()}


def attention_case(k):
    """x, params, n_heads and base of the stored rotary attention case ``k``."""
    return SNAP[f"{k}/x"], SNAP.tree(f"{k}/params"), SNAP.number(f"{k}/n_heads"), SNAP.number(f"{k}/base")


def grads_dict(got, keys, what):
    """The backward's dict, checked to have exactly ``keys``."""
    returned(got, None, what)
    if not isinstance(got, dict) or sorted(got) != sorted(keys):
        pytest.fail(f"{what} must return a dict with the keys {sorted(keys)}, got "
                    f"{sorted(got) if isinstance(got, dict) else type(got).__name__}", pytrace=False)
    return got


# -- the worksheet, step by step -------------------------------------------------------------------
@pytest.mark.step("13.1")
def test_rms_norm_divides_each_row_by_its_root_mean_square_and_keeps_its_mean(ch, ws):
    expect(ws, ch.rms_norm(ws.input("x"), ws.input("g")), kind="array")


@pytest.mark.step("13.2")
def test_eps_inside_the_root_keeps_a_small_row_small(ch, ws):
    expect(ws, ch.rms_norm(ws.input("x"), ws.input("g"), eps=ws.input("eps")), kind="array")


@pytest.mark.step("13.3")
def test_rms_norm_backward_takes_away_the_part_along_the_row(ch, ws):
    dx, dg = ch.rms_norm_backward(ws.input("x"), ws.input("g"), ws.input("d_out"), eps=ws.input("eps"))
    expect(ws, dx, kind="array")
    close(dg, SNAP["ws_13_3/dg"], "13.3 dg, the gains' gradient ([0, 1.6, 0, 0])", kind="array",
          mistakes=[("dg without summing over the rows (dg must have shape (d_model,))", SNAP["ws_13_3/dg"][None]),
                    ("dg summed over the features instead of over the rows (dg has one entry per feature)",
                     SNAP["ws_13_3/dg_features"])])


@pytest.mark.step("13.4")
def test_silu_lets_positives_through_and_dips_below_zero_for_negatives(ch, ws):
    expect(ws, ch.silu(ws.input("x")), kind="array")


@pytest.mark.step("13.5")
def test_silu_slope_times_d_out_is_negative_at_minus_two(ch, ws):
    expect(ws, ch.silu_backward(ws.input("x"), ws.input("d_out")), kind="array")


@pytest.mark.step("13.6")
def test_swiglu_gates_the_up_projection_with_silu_of_the_gate_projection(ch, ws):
    out, _ = ch.swiglu(*swiglu_args(ws))
    expect(ws, out, kind="array")


@pytest.mark.step("13.7")
def test_swiglu_backward_adds_the_gate_and_the_up_branch(ch, ws):
    _, cache = ch.swiglu(*swiglu_args(ws))
    grads = grads_dict(ch.swiglu_backward(ws.input("d_out"), cache), SWIGLU_KEYS, "swiglu_backward")
    expect(ws, grads["x"], kind="array")
    named = {"W_gate": [("the gradients of W_gate and W_up swapped: each weight given the other branch's gradient",
                         SNAP["ws_13_7/swapped/W_gate"])],
             "W_up": [("the gradients of W_gate and W_up swapped: each weight given the other branch's gradient",
                       SNAP["ws_13_7/swapped/W_up"])],
             "W_down": [("dW_down transposed: its factors the wrong way round (rule 1 on h W_down)", SNAP["ws_13_7/W_down_T"])]}
    for key in SWIGLU_KEYS[1:]:
        close(grads[key], SNAP[f"ws_13_7/{key}"], f"13.7 the gradient of {key}", kind="array", mistakes=named[key])


@pytest.mark.step("13.8")
def test_rotary_heads_attend_by_content_and_by_distance(ch, ws):
    out, _ = ch.rope_multi_head_attention(ws.input("x"), attention_params(ws), 2)
    expect(ws, out, kind="array")


@pytest.mark.step("13.9")
def test_the_block_adds_attention_then_swiglu_to_the_unnormalised_stream(ch, ws):
    y, _ = ch.prenorm_block(ws.input("x"), block_params(ws), 2)
    expect(ws, y, kind="array")


@pytest.mark.step("13.10")
def test_by_hand_one_head_turns_its_query_and_key_gradients_back(ch, ws):
    # the forward pass of this case first (step 13.8's third hint works it), then dx: both at base 100
    out, cache = ch.rope_multi_head_attention(ws.input("x"), attention_params(ws), ws.inputs["n_heads"],
                                              base=ws.inputs["base"])
    close(out, SNAP["ws_13_10_by_hand/out"], "13.10 the forward pass first: step 13.8's third hint, one head of width "
          "4 at base 100 (row 1: [0.1868, 0.8132, 0.1868, 0.8132])", kind="array",
          mistakes=[("the base argument ignored (10000 used): pair 1 turned by 0.01 instead of 0.1 radian",
                     SNAP["ws_13_10_by_hand/base_10000"])])
    grads = grads_dict(ch.rope_multi_head_attention_backward(ws.input("d_out"), cache), ("x", *ATTENTION_KEYS),
                       "rope_multi_head_attention_backward")
    expect(ws, grads["x"], kind="array")


@pytest.mark.step("13.11")
def test_attention_backward_turns_the_query_and_key_gradients_back(ch, ws):
    _, cache = ch.rope_multi_head_attention(ws.input("x"), attention_params(ws), 2)
    grads = grads_dict(ch.rope_multi_head_attention_backward(ws.input("d_out"), cache), ("x", *ATTENTION_KEYS),
                       "rope_multi_head_attention_backward")
    expect(ws, grads["x"], kind="array")
    for key in ATTENTION_KEYS:  # the snapshot's ws_13_10: this step's weights, numbered 13.10 before the by-hand step
        close(grads[key], SNAP[f"ws_13_10/{key}"], f"13.11 the gradient of {key}", kind="array")


@pytest.mark.step("13.12")
def test_by_hand_one_position_sends_the_gradient_down_both_residual_forks(ch, ws):
    _, cache = ch.prenorm_block(ws.input("x"), block_params(ws), ws.inputs["n_heads"])
    grads = grads_dict(ch.prenorm_block_backward(ws.input("d_y"), cache), ("x", *BLOCK_KEYS), "prenorm_block_backward")
    expect(ws, grads["x"], kind="array")


@pytest.mark.step("13.13")
def test_block_backward_keeps_both_residual_paths(ch, ws):
    _, cache = ch.prenorm_block(ws.input("x"), block_params(ws), 2)
    grads = grads_dict(ch.prenorm_block_backward(ws.input("d_y"), cache), ("x", *BLOCK_KEYS), "prenorm_block_backward")
    expect(ws, grads["x"], kind="array")
    for key in BLOCK_KEYS:  # the snapshot's ws_13_11: this step's weights, numbered 13.11 before the by-hand steps
        close(grads[key], SNAP[f"ws_13_11/{key}"], f"13.13 the gradient of {key}", kind="array")


# -- beyond the worksheet: other shapes and values, against the stored snapshot ---------------------------
@pytest.mark.parametrize("case", range(SNAP.count("rms_norm")))
def test_rms_norm_matches_the_formula_on_other_shapes(ch, case):
    """rms_norm matches g ⊙ x/√(mean(x²) + ε) on shapes (3, 5), (6, 4), (2, 3, 7), (4, 1), (8, 16) and one row (5,)"""
    k = f"rms_norm/{case}"
    x, g = SNAP[f"{k}/x"], SNAP[f"{k}/g"]
    close(ch.rms_norm(x, g), SNAP[f"{k}/out"], f"rms_norm of a {x.shape} array", inputs={"x": x}, kind="array",
          mistakes=[("the mean subtracted first: that is LayerNorm", SNAP[f"{k}/centred"]),
                    ("ε added outside the square root", SNAP[f"{k}/eps_outside"]),
                    ("one root mean square for the whole array", SNAP[f"{k}/whole_array"])])


def test_rms_norm_respects_eps(ch):
    """rms_norm uses its eps argument: a row of zeros stays 0 and eps = 0.5 changes the result"""
    x, g = SNAP["rms_norm_eps/x"], SNAP["rms_norm_eps/g"]
    close(ch.rms_norm(x, g), SNAP["rms_norm_eps/out"], "rms_norm with a row of zeros (eps keeps it finite)",
          kind="array")
    close(ch.rms_norm(x, g, eps=0.5), SNAP["rms_norm_eps/out_eps"], "rms_norm with eps = 0.5", kind="array",
          mistakes=[("the eps argument was ignored", SNAP["rms_norm_eps/out"])])


@pytest.mark.parametrize("case", range(SNAP.count("rms_norm_backward")))
def test_rms_norm_backward_matches_numerical_gradients(ch, case):
    """rms_norm_backward matches central differences for x and g on shapes (3, 5), (4, 2), (2, 3, 6), (8, 16)"""
    k = f"rms_norm_backward/{case}"
    x, g, R, eps = SNAP[f"{k}/x"], SNAP[f"{k}/g"], SNAP[f"{k}/d_out"], SNAP.number(f"{k}/eps")
    dx, dg = ch.rms_norm_backward(x, g, R, eps=eps)  # loss = Σ R ⊙ RMSNorm(x), so d_out = R
    ignored = "the eps argument was ignored (the default 1e-6 used)"
    close(dx, SNAP[f"{k}/dx"], f"dx for x {x.shape}, eps {eps}", rtol=NUM_RTOL, atol=NUM_ATOL, kind="array",
          mistakes=[("only the direct path g·d_out/r", SNAP[f"{k}/direct_path_only"]), (ignored, SNAP[f"{k}/eps_ignored/dx"])])
    close(dg, SNAP[f"{k}/dg"], f"dg for x {x.shape}, eps {eps}", rtol=NUM_RTOL, atol=NUM_ATOL, kind="array",
          mistakes=[("dg summed over the first axis only: every axis but the features holds rows",
                     SNAP[f"{k}/dg_first_axis"]), (ignored, SNAP[f"{k}/eps_ignored/dg"])])


def test_silu_matches_x_times_sigmoid_on_other_shapes(ch):
    """silu matches x·σ(x) on a (4, 6) array of values between −8 and 8"""
    x = SNAP["silu/x"]
    close(ch.silu(x), SNAP["silu/out"], f"silu of a {x.shape} array", inputs={"x": x}, kind="array",
          mistakes=[("the sigmoid σ(x) alone", SNAP["silu/sigmoid"])])


def test_silu_and_its_backward_are_stable_for_large_inputs(ch):
    """silu and silu_backward at ±1000 are finite and right, without NumPy overflow warnings"""
    x = np.array([-1000.0, -40.0, 40.0, 1000.0])
    try:
        got = ch.silu(x)
        slope = ch.silu_backward(x, np.ones(4))
    except RuntimeWarning as warning:  # NumPy's overflow warning, raised as an error in this suite
        pytest.fail(f"silu or silu_backward at ±1000 made NumPy warn: {warning}\n"
                    "  looks like: e^(−x) overflowed for x = −1000: write σ(x) so that no exponential sees a large "
                    "positive number (for x < 0 an equal fraction whose exponent is x itself, or log(1 + e^(−x)) "
                    "from NumPy's function made for the log of a sum of exponentials)", pytrace=False)
    close(got, SNAP["silu_stable/out"], "silu([−1000, −40, 40, 1000])", kind="array")
    close(slope, SNAP["silu_stable/slope"], "silu_backward([−1000, −40, 40, 1000], ones)", kind="array")


def test_silu_backward_matches_numerical_gradients(ch):
    """silu_backward matches central differences on a (3, 5) array, with a random d_out"""
    x, R = SNAP["silu_backward/x"], SNAP["silu_backward/d_out"]
    close(ch.silu_backward(x, R), SNAP["silu_backward/dx"], f"silu_backward for x {x.shape}", rtol=NUM_RTOL,
          atol=NUM_ATOL, kind="array", mistakes=[("σ(x) only: the product rule's second term left out",
                                                  SNAP["silu_backward/sigmoid_only"]),
                                                 ("d_out left out", SNAP["silu_backward/no_d_out"])])


@pytest.mark.parametrize("case", range(SNAP.count("swiglu")))
def test_swiglu_matches_the_formula_on_other_shapes(ch, case):
    """swiglu matches (SiLU(x W_gate) ⊙ x W_up) W_down: (seq, d_model, d_ff) = (3, 4, 6), (1, 3, 2), (8, 16, 12), (2, 1, 3), (3, 2, 1)"""
    k = f"swiglu/{case}"
    x, Wg, Wu, Wd = (SNAP[f"{k}/{n}"] for n in SWIGLU_KEYS)
    out, _ = ch.swiglu(x, Wg, Wu, Wd)
    close(out, SNAP[f"{k}/out"], f"swiglu, seq {x.shape[0]}, d_model {x.shape[1]}, d_ff {Wg.shape[1]}",
          inputs={"x": x}, kind="array", mistakes=[("the gate on the wrong branch: SiLU(x W_up) ⊙ x W_gate",
                                                    SNAP[f"{k}/gate_on_up"])])


@pytest.mark.parametrize("case", range(SNAP.count("swiglu_backward")))
def test_swiglu_backward_matches_numerical_gradients(ch, case):
    """swiglu_backward matches central differences for x and every weight: (3, 4, 6), (2, 5, 3), (8, 16, 12)"""
    k = f"swiglu_backward/{case}"
    x, Wg, Wu, Wd = (SNAP[f"{k}/{n}"] for n in SWIGLU_KEYS)
    _, cache = ch.swiglu(x, Wg, Wu, Wd)
    grads = grads_dict(ch.swiglu_backward(SNAP[f"{k}/d_out"], cache), SWIGLU_KEYS, "swiglu_backward")
    shapes = f"seq {x.shape[0]}, d_model {x.shape[1]}, d_ff {Wg.shape[1]}"
    for key in SWIGLU_KEYS:
        close(grads[key], SNAP[f"{k}/grads/{key}"], f"swiglu_backward: the gradient of {key}, {shapes}",
              rtol=NUM_RTOL, atol=NUM_ATOL, kind="array")


@pytest.mark.parametrize("case", range(SNAP.count("attention")))
def test_rope_multi_head_attention_matches_the_stored_results(ch, case):
    """rotary multi-head attention on (seq, d_model, n_heads) = (5, 8, 2), (3, 4, 1), (8, 16, 4), (1, 6, 3) and base 100"""
    k = f"attention/{case}"
    x, params, n_heads, base = attention_case(k)
    out, _ = ch.rope_multi_head_attention(x, params, n_heads, base=base)
    close(out, SNAP[f"{k}/out"], f"rope_multi_head_attention, seq {x.shape[0]}, d_model {x.shape[1]}, {n_heads} "
          f"head{'s' * (n_heads != 1)}, base {base:g}", inputs={"x": x}, kind="array",
          mistakes=[("RoPE applied to the values too", SNAP[f"{k}/rotate_v"]),
                    ("no RoPE: the heads attend by content alone", SNAP[f"{k}/no_rope"]),
                    ("RoPE over the whole d_model row before splitting into heads", SNAP[f"{k}/whole_width"]),
                    ("scaled by √d_model instead of √d_head", SNAP[f"{k}/scale_d_model"]),
                    ("the mask left out: positions read the future", SNAP[f"{k}/no_mask"]),
                    ("the base argument ignored (10000 used)", SNAP[f"{k}/base_10000"])])


def test_rotary_attention_never_reads_ahead(ch):
    """causal: the first five rows of the attention of six rows are the attention of those five rows alone"""
    x, params = SNAP["causal/x"], SNAP.tree("causal/params")
    long, _ = ch.rope_multi_head_attention(x, params, 2)
    short, _ = ch.rope_multi_head_attention(x[:5], params, 2)
    close(returned(long, "array", "rope_multi_head_attention")[:5], short,
          "rows 0–4 of the attention of 6 rows against the attention of those 5 rows alone (causal: row 5 is never "
          "read by them)")


@pytest.mark.parametrize("case", range(SNAP.count("attention_backward")))
def test_rope_multi_head_attention_backward_matches_numerical_gradients(ch, case):
    """rope_multi_head_attention_backward matches central differences for x and every weight: 3 shapes, 1–4 heads"""
    k = f"attention_backward/{case}"
    x, params, n_heads, base = attention_case(k)
    _, cache = ch.rope_multi_head_attention(x, params, n_heads, base=base)
    grads = grads_dict(ch.rope_multi_head_attention_backward(SNAP[f"{k}/d_out"], cache), ("x", *ATTENTION_KEYS),
                       "rope_multi_head_attention_backward")
    shapes = f"seq {x.shape[0]}, d_model {x.shape[1]}, {n_heads} heads, base {base:g}"
    for key in ("WO", "WV", "WQ", "WK", "x"):  # the order the backward pass computes them: the first wrong one is where
        close(grads[key], SNAP[f"{k}/grads/{key}"], f"the gradient of {key}, {shapes}", rtol=NUM_RTOL,
              atol=NUM_ATOL, kind="array", mistakes=[("the rotation not undone: rope_backward left out",
                                                      SNAP[f"{k}/not_undone/{key}"]),
                                                     ("the base not passed on to rope_backward (10000 used)",
                                                      SNAP[f"{k}/base_dropped/{key}"])] if key in ("x", "WQ", "WK") else [])


@pytest.mark.parametrize("case", range(SNAP.count("block")))
def test_prenorm_block_matches_the_stored_results(ch, case):
    """prenorm_block on (seq, d_model, d_ff, n_heads) = (4, 8, 12, 2), (8, 16, 8, 4), (2, 4, 3, 1)"""
    k = f"block/{case}"
    x, params, n_heads = SNAP[f"{k}/x"], SNAP.tree(f"{k}/params"), SNAP.number(f"{k}/n_heads")
    y, _ = ch.prenorm_block(x, params, n_heads)
    close(y, SNAP[f"{k}/y"], f"prenorm_block, seq {x.shape[0]}, d_model {x.shape[1]}, d_ff "
          f"{params['W_gate'].shape[1]}, {n_heads} heads", inputs={"x": x}, kind="array",
          mistakes=[("post-norm (the norm after each residual) instead of pre-norm", SNAP[f"{k}/post_norm"]),
                    ("no residual connections", SNAP[f"{k}/no_residual"]),
                    ("g1 and g2 swapped", SNAP[f"{k}/gains_swapped"]),
                    ("g1 used in the second RMSNorm too (g2 never read)", SNAP[f"{k}/g1_twice"])])


@pytest.mark.parametrize("case", range(SNAP.count("block_backward")))
def test_prenorm_block_backward_matches_numerical_gradients(ch, case):
    """prenorm_block_backward matches central differences for x and all nine parameters, on three shapes"""
    k = f"block_backward/{case}"
    x, params, n_heads = SNAP[f"{k}/x"], SNAP.tree(f"{k}/params"), SNAP.number(f"{k}/n_heads")
    _, cache = ch.prenorm_block(x, params, n_heads)
    grads = grads_dict(ch.prenorm_block_backward(SNAP[f"{k}/d_y"], cache), ("x", *BLOCK_KEYS), "prenorm_block_backward")
    shapes = f"seq {x.shape[0]}, d_model {x.shape[1]}, d_ff {params['W_gate'].shape[1]}, {n_heads} heads"
    for key in ("x", *BLOCK_KEYS):  # x first: a wrong dx names the missing residual path
        close(grads[key], SNAP[f"{k}/grads/{key}"], f"prenorm_block_backward: the gradient of {key}, {shapes}",
              rtol=NUM_RTOL, atol=NUM_ATOL, kind="array",
              mistakes=[("the residual path missing from the backward", SNAP[f"{k}/no_residual_path"])]
              if key == "x" else [])


def test_a_block_whose_branches_add_nothing_passes_the_stream_and_its_gradient_straight_through(ch):
    """with W_O = 0 and W_down = 0 the block is the identity: y = x and dx = d_y exactly (the residual paths)"""
    x, params = SNAP["identity/x"], SNAP.tree("identity/params")
    d_y = SNAP["identity/d_y"]
    y, cache = ch.prenorm_block(x, params, 2)
    close(y, x, "prenorm_block with W_O = 0 and W_down = 0: y must be x")
    grads = grads_dict(ch.prenorm_block_backward(d_y, cache), ("x", *BLOCK_KEYS), "prenorm_block_backward")
    close(grads["x"], d_y, "dx of a block whose branches add nothing: the residual paths carry d_y through unchanged",
          mistakes=[("the residual path missing from the backward", np.zeros_like(d_y))])


def test_the_first_pieces_leave_their_inputs_untouched(ch):
    """rms_norm, silu, swiglu and their backward passes never modify their arguments"""
    x, g, R = RNG.normal(size=(3, 4)), RNG.normal(size=4), RNG.normal(size=(3, 4))
    Wg, Wu, Wd = RNG.normal(size=(4, 5)), RNG.normal(size=(4, 5)), RNG.normal(size=(5, 4))
    # the judge fails a call that changes one of its arguments in place (ChangedItsInput)
    ch.rms_norm(x, g)
    ch.rms_norm_backward(x, g, R)
    ch.silu(x)
    ch.silu_backward(x, R)
    _, cache = ch.swiglu(x, Wg, Wu, Wd)
    ch.swiglu_backward(R, cache)


# -- bad input gets a clear error: the stubs give these checks (marked given; CONTRIBUTING.md) -------------
@pytest.mark.given
def test_rms_norm_names_what_does_not_fit(ch):
    """a gain of the wrong shape, an empty feature axis or a d_out of the wrong shape raises ValueError naming it"""
    raises_clearly(lambda: ch.rms_norm(np.ones((2, 3)), np.ones(4)), ValueError, "(4,)", names=("g",))
    raises_clearly(lambda: ch.rms_norm(np.ones((2, 0)), np.ones(0)), ValueError, "feature axis")
    raises_clearly(lambda: ch.rms_norm(np.float64(2.0), np.ones(1)), ValueError, "feature axis")
    raises_clearly(lambda: ch.rms_norm_backward(np.ones((2, 3)), np.ones(3), np.ones((2, 4))), ValueError, "(2, 4)",
                   names=("d_out",))
    raises_clearly(lambda: ch.rms_norm_backward(np.ones((2, 3)), np.ones(2), np.ones((2, 3))), ValueError, "(2,)",
                   names=("g",))


@pytest.mark.given
def test_silu_backward_names_both_shapes(ch):
    """x (2, 3) with d_out (3, 2) raises ValueError naming both shapes"""
    raises_clearly(lambda: ch.silu_backward(np.ones((2, 3)), np.ones((3, 2))), ValueError, "(2, 3)", "(3, 2)")


@pytest.mark.given
def test_swiglu_names_a_weight_that_does_not_fit(ch):
    """swiglu refuses x that is not 2-D and a mis-shaped W_gate, W_up or W_down, naming it and its shape"""
    x = np.ones((3, 4))
    good = [np.ones((4, 6)), np.ones((4, 6)), np.ones((6, 4))]
    raises_clearly(lambda: ch.swiglu(np.ones(4), *good), ValueError, "(4,)", names=("x",))
    raises_clearly(lambda: ch.swiglu(np.ones((0, 4)), *good), ValueError, "(0, 4)", names=("x",))
    for k, (name, bad) in enumerate(zip(("W_gate", "W_up", "W_down"), (np.ones((5, 6)), np.ones((4, 5)),
                                                                       np.ones((6, 5))), strict=True)):
        args = list(good)
        args[k] = bad
        raises_clearly(lambda args=args: ch.swiglu(x, *args), ValueError, str(bad.shape), names=(name,))
    raises_clearly(lambda: ch.swiglu(x, np.ones(6), *good[1:]), ValueError, "(6,)", names=("W_gate",))
    raises_clearly(lambda: ch.swiglu(x, np.ones((4, 0)), np.ones((4, 0)), np.ones((0, 4))), ValueError, "(4, 0)",
                   names=("W_gate",), hint="d_ff must be at least 1: a W_gate with no columns gives no hidden layer")


@pytest.mark.given
def test_swiglu_backward_names_a_d_out_of_the_wrong_shape(ch):
    """a d_out that is not the output's shape raises ValueError naming d_out and its shape (waits for swiglu)"""
    _, cache = ch.swiglu(np.ones((3, 4)), np.ones((4, 6)), np.ones((4, 6)), np.ones((6, 4)))
    raises_clearly(lambda: ch.swiglu_backward(np.ones((3, 5)), cache), ValueError, "(3, 5)", names=("d_out",))


def test_the_block_and_its_attention_leave_their_inputs_untouched(ch):
    """rope_multi_head_attention, prenorm_block and their backward passes never modify x, params or the gradient"""
    x, params = SNAP["block/0/x"], SNAP.tree("block/0/params")
    d_y = RNG.normal(size=x.shape)
    # the judge fails a call that changes one of its arguments in place (ChangedItsInput)
    _, cache = ch.rope_multi_head_attention(x, params, 2)
    ch.rope_multi_head_attention_backward(d_y, cache)
    _, cache = ch.prenorm_block(x, params, 2)
    ch.prenorm_block_backward(d_y, cache)


@pytest.mark.given
def test_rotary_attention_names_what_does_not_fit(ch):
    """bad heads (not dividing d_model, an odd d_head, 0, 2.0, True), a missing or mis-shaped weight, a bad x or d_out"""
    x, W = np.ones((3, 8)), {k: np.eye(8) for k in ATTENTION_KEYS}
    raises_clearly(lambda: ch.rope_multi_head_attention(x, W, 3), ValueError, "divisible", "8", "3")
    raises_clearly(lambda: ch.rope_multi_head_attention(np.ones((3, 6)), {k: np.eye(6) for k in ATTENTION_KEYS}, 2),
                   ValueError, "odd", names=("d_head",),
                   hint="RoPE turns pairs of features inside each head: d_head = d_model / n_heads must be even")
    for bad in (0, 2.0, True):
        raises_clearly(lambda bad=bad: ch.rope_multi_head_attention(x, W, bad), ValueError, names=("n_heads",))
    raises_clearly(lambda: ch.rope_multi_head_attention(x, {k: v for k, v in W.items() if k != "WO"}, 2), ValueError,
                   names=("WO",))
    raises_clearly(lambda: ch.rope_multi_head_attention(x, dict(W, WK=np.ones((8, 4))), 2), ValueError, "(8, 4)",
                   names=("WK",))
    raises_clearly(lambda: ch.rope_multi_head_attention(np.ones(8), W, 2), ValueError, "(8,)", names=("x",))
    raises_clearly(lambda: ch.rope_multi_head_attention(np.ones((0, 8)), W, 2), ValueError, "(0, 8)", names=("x",))
    raises_clearly(lambda: ch.rope_multi_head_attention(x, list(W.values()), 2), ValueError, "list", names=("params",))


@pytest.mark.given
def test_rotary_attention_backward_names_a_d_out_of_the_wrong_shape(ch):
    """a d_out that is not the output's shape raises ValueError naming d_out and its shape (waits for the forward)"""
    x, W = np.ones((3, 8)), {k: np.eye(8) for k in ATTENTION_KEYS}
    _, cache = ch.rope_multi_head_attention(x, W, 2)
    raises_clearly(lambda: ch.rope_multi_head_attention_backward(np.ones((3, 4)), cache), ValueError, "(3, 4)",
                   names=("d_out",))


@pytest.mark.given
def test_the_block_names_a_parameter_that_does_not_fit(ch):
    """a missing, extra or mis-shaped block parameter raises ValueError naming it; so does a d_y of the wrong shape"""
    params = SNAP.tree("block/0/params")
    x = SNAP["block/0/x"]
    raises_clearly(lambda: ch.prenorm_block(x, {k: v for k, v in params.items() if k != "g2"}, 2), ValueError,
                   names=("g2",))
    raises_clearly(lambda: ch.prenorm_block(x, dict(params, bias=np.zeros(8)), 2), ValueError, "bias",
                   hint="the message should name the key that does not belong, so a misspelt one shows")
    for key, bad in (("g1", np.ones(5)), ("g2", np.ones((8, 1))), ("W_up", np.ones((8, 5))), ("W_down", np.ones((8, 8)))):
        raises_clearly(lambda key=key, bad=bad: ch.prenorm_block(x, dict(params, **{key: bad}), 2), ValueError,
                       str(bad.shape), names=(key,))
    raises_clearly(lambda: ch.prenorm_block(x, list(params.values()), 2), ValueError, "list", names=("params",))
    raises_clearly(lambda: ch.prenorm_block(x, params, 3), ValueError, "divisible")
    raises_clearly(lambda: ch.prenorm_block(np.ones((3, 8, 1)), params, 2), ValueError, "(3, 8, 1)", names=("x",))


@pytest.mark.given
def test_the_block_backward_names_a_d_y_of_the_wrong_shape(ch):
    """a d_y that is not the output's shape raises ValueError naming d_y and its shape (waits for prenorm_block)"""
    _, cache = ch.prenorm_block(SNAP["block/0/x"], SNAP.tree("block/0/params"), 2)
    raises_clearly(lambda: ch.prenorm_block_backward(np.ones((2, 8)), cache), ValueError, "(2, 8)", names=("d_y",))
