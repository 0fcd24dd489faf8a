"""Chapter 11: Multi-Head Attention — the course's own worksheet (Part II goes beyond the book), and beyond.

The worksheet: three tokens A B C, d_model 4, two heads of two features. Q is split into heads, each head
attends causally on its own (C looks at A in head 0 and at B in head 1), the heads are merged and mixed by
W_O, and the gradient of a loss that reads C's first output goes back to W_O, W_V and x. Beyond it: split,
merge, every head's attention and the whole layer on other shapes (n_heads 1 to 4, d_model up to 16, seq up
to 8) against stored snapshots (tests/snapshots/chapter11.npz: inputs, the reference's outputs,
central-difference gradients and the values classic mistakes give, written from solutions/ by the authors),
inputs left untouched, and bad input. Nothing here computes what a function of the chapter computes.
"""

import numpy as np
import pytest
from pytest_check import check

from kata import close, expect, load, raises_clearly, returned, snapshot

CHAPTER = 11
SNAP = snapshot(CHAPTER)
# Central differences of a float64 loss are good to about 1e-8; a gradient compared with them gets that slack
# (the mistakes the checks name are off by far more: whole paths or factors of √n_heads).
NUM_RTOL, NUM_ATOL = 1e-5, 1e-7
KEYS = ("WQ", "WK", "WV", "WO")
GRAD_KEYS = ("WO", "WQ", "WK", "WV", "x")  # in the order the backward pass computes them

RESHAPE = "a reshape straight to (n_heads, seq, d_head), without the transpose: positions and heads mixed"
INTERLEAVED = "every n_heads-th column (interleaved) instead of a block of d_head neighbouring columns"
MERGE_RESHAPE = "a reshape straight to (seq, d_model), without the transpose: positions and heads mixed"
D_MODEL = "scaled by √d_model instead of √d_head"
ONE_MASK = "the causal mask in head 0 only: the other heads looked ahead"
TIMES_MASK = "masked by multiplying (scores × mask): a masked score becomes 0, not −∞, so the future keeps weight"
AFTER_MASK = "the mask applied after the softmax: the future was zeroed but the rows no longer sum to 1"
REVERSED = "the heads merged in the wrong order: head 1 first, then head 0"
MERGE_INTERLEAVED = "the heads merged interleaved (one column of each head in turn) instead of side by side"
OTHER_KEYS_READ = ("the extra keys of params read or refused: a block's dict holds more than the four weights "
                   "(take each weight by its name, leave the rest alone)")


def worksheet():
    """x, the four weights (a dict) and n_heads of the worksheet: stored once, in step 11.5's inputs."""
    step = load(CHAPTER).step("11.5")
    return step.input("x"), {k: step.input(k) for k in KEYS}, step.inputs["n_heads"]


def worksheet_grads(ch, ws):
    """The learner's gradients for the worksheet's d_out (steps 11.6–11.8)."""
    x, params, n_heads = worksheet()
    _, cache = ch.multi_head_attention(x, params, n_heads)
    grads = ch.multi_head_attention_backward(ws.input("d_out"), cache)
    with check:
        assert isinstance(grads, dict) and sorted(grads) == sorted(GRAD_KEYS), (
            f"multi_head_attention_backward must return a dict with the keys {sorted(GRAD_KEYS)}, got "
            f"{sorted(grads) if isinstance(grads, dict) else type(grads).__name__}")
    return grads


def case(prefix, i):
    """x, params, n_heads of a stored case."""
    return SNAP[f"{prefix}/{i}/x"], SNAP.tree(f"{prefix}/{i}/params"), int(SNAP.number(f"{prefix}/{i}/n_heads"))


# -- the worksheet, step by step -------------------------------------------------------------------
@pytest.mark.step("11.1")
def test_head_0_takes_the_first_two_columns_of_q_and_head_1_the_last_two(ch, ws):
    expect(ws, ch.split_heads(ws.input("X"), ws.inputs["n_heads"]), kind="array")


@pytest.mark.step("11.2")
def test_c_looks_at_a_in_head_0_and_at_b_in_head_1(ch, ws):
    out, weights = ch.attend_heads(ws.input("Qh"), ws.input("Kh"), ws.input("Vh"))
    returned(out, "array", "the output attend_heads returns")
    expect(ws, weights, kind="array")


@pytest.mark.step("11.3")
def test_each_head_mixes_only_its_own_values(ch, ws):
    out, _ = ch.attend_heads(ws.input("Qh"), ws.input("Kh"), ws.input("Vh"))
    expect(ws, out, kind="array")


@pytest.mark.step("11.4")
def test_merging_puts_head_0_and_head_1_side_by_side_again(ch, ws):
    expect(ws, ch.merge_heads(ws.input("H")), kind="array")


@pytest.mark.step("11.5")
def test_w_o_writes_the_heads_average_and_half_their_difference(ch, ws):
    x, params, n_heads = worksheet()
    out, _ = ch.multi_head_attention(x, params, n_heads)
    expect(ws, out, kind="array")


@pytest.mark.step("11.6")
def test_the_gradient_of_w_o_is_c_s_merged_row_in_column_0(ch, ws):
    expect(ws, worksheet_grads(ch, ws)["WO"], kind="array")


@pytest.mark.step("11.7")
def test_the_gradient_of_w_v_comes_back_through_both_heads(ch, ws):
    expect(ws, worksheet_grads(ch, ws)["WV"], kind="array")


@pytest.mark.step("11.8")
def test_the_gradient_of_x_adds_the_query_key_and_value_paths(ch, ws):
    expect(ws, worksheet_grads(ch, ws)["x"], kind="array")


# -- beyond the worksheet: other shapes and values, against the stored snapshot ---------------------------
@pytest.mark.parametrize("i", range(SNAP.count("split")))
def test_split_heads_gives_each_head_a_block_of_columns_on_other_shapes(ch, i):
    """split_heads on (seq, d_model, n_heads) = (5, 6, 3), (8, 16, 4), (3, 4, 1), (7, 10, 2), (1, 8, 4), (4, 12, 2)"""
    k = f"split/{i}"
    X, n = SNAP[f"{k}/X"], int(SNAP.number(f"{k}/n_heads"))
    got = ch.split_heads(X, n)
    close(got, SNAP[f"{k}/heads"], f"split_heads of a {X.shape} array into {n} heads", kind="array",
          inputs={"X": X, "n_heads": n},
          mistakes=[(RESHAPE, SNAP[f"{k}/reshape"]), (INTERLEAVED, SNAP[f"{k}/interleaved"])])


@pytest.mark.parametrize("i", range(SNAP.count("split")))
def test_merge_heads_puts_the_heads_side_by_side_on_other_shapes(ch, i):
    """merge_heads of (n_heads, seq, d_head) = (3, 5, 2), (4, 8, 4), (1, 3, 4), (2, 7, 5), (4, 1, 2), (2, 4, 6)"""
    k = f"split/{i}"
    H = SNAP[f"{k}/H"]
    got = ch.merge_heads(H)
    close(got, SNAP[f"{k}/merged"], f"merge_heads of a {H.shape} array", kind="array",
          mistakes=[(MERGE_RESHAPE, SNAP[f"{k}/merge_reshape"]), (REVERSED, SNAP[f"{k}/merge_reversed"]),
                    (MERGE_INTERLEAVED, SNAP[f"{k}/merge_interleaved"])])


@pytest.mark.parametrize("i", range(SNAP.count("split")))
def test_merge_heads_undoes_split_heads(ch, i):
    """merge_heads(split_heads(X, n)) is X again, for every stored shape"""
    X, n = SNAP[f"split/{i}/X"], int(SNAP.number(f"split/{i}/n_heads"))
    close(ch.merge_heads(ch.split_heads(X, n)), X, f"merge_heads(split_heads(X, {n})) for X {X.shape}")


@pytest.mark.parametrize("i", range(SNAP.count("heads")))
def test_every_head_attends_causally_on_its_own(ch, i):
    """attend_heads on (n_heads, seq, d_head) = (2, 5, 3), (4, 8, 4), (1, 6, 5), (3, 4, 2): weights and outputs"""
    k = f"heads/{i}"
    Qh, Kh, Vh = SNAP[f"{k}/Qh"], SNAP[f"{k}/Kh"], SNAP[f"{k}/Vh"]
    out, weights = ch.attend_heads(Qh, Kh, Vh)
    shape = f"{Qh.shape[0]} heads, seq {Qh.shape[1]}, d_head {Qh.shape[2]}"
    close(weights, SNAP[f"{k}/weights"], f"attend_heads weights, {shape}", kind="array",
          mistakes=[(D_MODEL, SNAP[f"{k}/d_model_weights"]), (ONE_MASK, SNAP[f"{k}/one_mask_weights"]),
                    (TIMES_MASK, SNAP[f"{k}/times_mask_weights"]), (AFTER_MASK, SNAP[f"{k}/after_mask_weights"])])
    close(out, SNAP[f"{k}/out"], f"attend_heads output, {shape}", kind="array",
          mistakes=[(D_MODEL, SNAP[f"{k}/d_model_out"]), (ONE_MASK, SNAP[f"{k}/one_mask_out"]),
                    (TIMES_MASK, SNAP[f"{k}/times_mask_out"]), (AFTER_MASK, SNAP[f"{k}/after_mask_out"])])
    above = np.triu(np.ones(Qh.shape[1:2] * 2, dtype=bool), k=1)
    with check:
        assert np.all(np.asarray(weights)[:, above] == 0), f"every head's weights above the diagonal must be exactly 0 ({shape})"


@pytest.mark.parametrize("i", range(SNAP.count("mha")))
def test_multi_head_attention_matches_on_other_shapes(ch, i):
    """multi_head_attention on (seq, d_model, n_heads) = (5, 8, 2), (8, 16, 4), (6, 6, 1), (4, 12, 4), (7, 9, 3), (2, 4, 2), (1, 8, 4)"""
    k = f"mha/{i}"
    x, params, n = case("mha", i)
    out, _ = ch.multi_head_attention(x, params, n)
    close(out, SNAP[f"{k}/out"], f"multi_head_attention, seq {x.shape[0]}, d_model {x.shape[1]}, {n} heads",
          kind="array", inputs={"x": x, "n_heads": n},
          mistakes=[("W_O forgotten: the merged heads returned as they are", SNAP[f"{k}/no_WO"]),
                    (D_MODEL, SNAP[f"{k}/d_model"]), (ONE_MASK, SNAP[f"{k}/one_mask"]),
                    ("heads split along the sequence axis: each head got a block of positions with every feature",
                     SNAP[f"{k}/sequence"]),
                    ("Q, K and V split by a reshape without the transpose", SNAP[f"{k}/split_reshape"]),
                    ("the heads merged by a reshape without the transpose", SNAP[f"{k}/merge_reshape"]),
                    ("W_O transposed: merged W_Oᵀ instead of merged W_O", SNAP[f"{k}/WO_T"]),
                    (REVERSED, SNAP[f"{k}/merge_reversed"]),
                    ("the projections transposed: x W_Qᵀ, x W_Kᵀ, x W_Vᵀ instead of x W_Q, x W_K, x W_V",
                     SNAP[f"{k}/projections_T"])])


def test_multi_head_attention_ignores_other_keys_of_params(ch):
    """params may hold more keys than the four weights (a block's dict): they change nothing

    Judged against the code's own result for the four weights alone, so this check says only whether the extra
    keys changed something (whether that result is right is the other checks' to say): it fails when the code
    reads an extra key, or refuses a dict that holds one.
    """
    x, params, n = case("mha", 0)
    alone, _ = ch.multi_head_attention(x, params, n)
    extra = {"b1": np.ones(3), "ln1_gamma": np.ones(8)}
    try:
        out, _ = ch.multi_head_attention(x, {**params, **extra}, n)
    except (TypeError, ValueError, IndexError, KeyError) as err:
        pytest.fail(f"multi_head_attention with two extra keys in params ({', '.join(extra)}) raised "
                    f"{type(err).__name__}: {err}\n  (with the four weights alone it returned)\n  looks like: "
                    f"{OTHER_KEYS_READ}", pytrace=False)
    # the same x, the same weights: any difference comes from the extra keys, so every different result is named
    close(out, returned(alone, "array", "multi_head_attention's output"),
          "multi_head_attention with two extra keys in params, against its own result without them", kind="array",
          mistakes=[(OTHER_KEYS_READ, out)])


@pytest.mark.parametrize("i", range(SNAP.count("backward")))
def test_every_gradient_matches_central_differences(ch, i):
    """multi_head_attention_backward: x, W_Q, W_K, W_V and W_O against central differences of Σ R ⊙ out"""
    k = f"backward/{i}"
    x, params, n = case("backward", i)
    _, cache = ch.multi_head_attention(x, params, n)
    grads = ch.multi_head_attention_backward(SNAP[f"{k}/d_out"], cache)
    shape = f"seq {x.shape[0]}, d_model {x.shape[1]}, {n} heads"
    with check:
        assert isinstance(grads, dict) and sorted(grads) == sorted(GRAD_KEYS), (
            f"the gradients must be a dict with the keys {sorted(GRAD_KEYS)}, got "
            f"{sorted(grads) if isinstance(grads, dict) else type(grads).__name__}")
    for name in GRAD_KEYS:  # the first wrong one in backward order is where the bug is
        mistakes = [("only the value path: the query and key paths left out of dx", SNAP[f"{k}/value_only"])] \
            if name == "x" else []
        close(grads.get(name) if isinstance(grads, dict) else None, SNAP[f"{k}/grads/{name}"],
              f"the gradient of {name}, {shape}", rtol=NUM_RTOL, atol=NUM_ATOL, kind="array", mistakes=mistakes)


def test_nothing_modifies_its_inputs(ch):
    """split_heads, merge_heads, attend_heads, the layer and its backward leave their inputs untouched"""
    x, params, n = case("backward", 1)
    R = SNAP["backward/1/d_out"]
    Qh, Kh, Vh = SNAP["heads/0/Qh"], SNAP["heads/0/Kh"], SNAP["heads/0/Vh"]
    # the judge fails a call that changes one of its arguments in place (ChangedItsInput)
    ch.split_heads(x, n)
    ch.merge_heads(Qh)
    ch.attend_heads(Qh, Kh, Vh)
    _, cache = ch.multi_head_attention(x, params, n)
    ch.multi_head_attention_backward(R, cache)
    with check:
        assert sorted(params) == sorted(KEYS), f"params has the keys {sorted(params)} after the calls"


# -- bad input gets a clear error (the checks marked given are the stubs': CONTRIBUTING.md) -----------------
def test_a_d_model_that_n_heads_does_not_divide_is_refused(ch):
    """d_model 6 in 4 heads raises ValueError saying "divisible" and naming 6 and 4"""
    why = "check d_model % n_heads before cutting: every head needs the same whole number of features"
    raises_clearly(lambda: ch.split_heads(np.ones((3, 6)), 4), ValueError, "divisible", "6", "4", hint=why)
    params = {k: np.ones((6, 6)) for k in KEYS}
    raises_clearly(lambda: ch.multi_head_attention(np.ones((3, 6)), params, 4), ValueError, "divisible", "6", "4",
                   hint=why)


@pytest.mark.given
@pytest.mark.parametrize("n", [0, -2, 2.0, True])
def test_n_heads_must_be_a_whole_number_of_at_least_one(ch, n):
    """n_heads 0, −2, 2.0 and True raise ValueError saying 'n_heads'"""
    why = "refuse n_heads unless it is a whole number ≥ 1: isinstance(n_heads, bool) or not isinstance(n_heads, int)"
    raises_clearly(lambda: ch.split_heads(np.ones((3, 4)), n), ValueError, "n_heads", hint=why)
    params = {k: np.ones((4, 4)) for k in KEYS}
    raises_clearly(lambda: ch.multi_head_attention(np.ones((3, 4)), params, n), ValueError, "n_heads", hint=why)


@pytest.mark.given
@pytest.mark.parametrize("key", KEYS)
def test_a_weight_of_the_wrong_shape_is_named(ch, key):
    """a (4, 3) weight where (4, 4) belongs raises ValueError naming the key and its shape"""
    params = {k: np.ones((4, 4)) for k in KEYS}
    params[key] = np.ones((4, 3))
    raises_clearly(lambda: ch.multi_head_attention(np.ones((3, 4)), params, 2), ValueError, "(4, 3)", names=(key,))


@pytest.mark.given
@pytest.mark.parametrize("key", KEYS)
def test_a_missing_weight_is_named(ch, key):
    """params without one of WQ, WK, WV, WO raises ValueError naming the missing key"""
    params = {k: np.ones((4, 4)) for k in KEYS if k != key}
    raises_clearly(lambda: ch.multi_head_attention(np.ones((3, 4)), params, 2), ValueError, names=(key,))


@pytest.mark.given
def test_params_that_are_not_a_dict_are_refused(ch):
    """a list of four weights instead of a dict raises ValueError saying 'dict' and naming what came (a list)"""
    raises_clearly(lambda: ch.multi_head_attention(np.ones((3, 4)), [np.ones((4, 4))] * 4, 2), ValueError, "dict",
                   "list")


@pytest.mark.given
def test_arrays_of_the_wrong_rank_are_refused(ch):
    """a 1-D x or X, a 2-D H and a 2-D Qh raise ValueError naming the shape"""
    params = {k: np.ones((4, 4)) for k in KEYS}
    raises_clearly(lambda: ch.split_heads(np.ones(4), 2), ValueError, "(4,)")
    raises_clearly(lambda: ch.multi_head_attention(np.ones(4), params, 2), ValueError, "(4,)")
    raises_clearly(lambda: ch.multi_head_attention(np.ones((0, 4)), params, 2), ValueError, "(0, 4)")
    raises_clearly(lambda: ch.merge_heads(np.ones((3, 4))), ValueError, "(3, 4)")
    raises_clearly(lambda: ch.attend_heads(np.ones((3, 2)), np.ones((3, 2)), np.ones((3, 2))), ValueError, "(3, 2)")


@pytest.mark.given
def test_heads_of_different_shapes_are_refused(ch):
    """Qh (2, 3, 2) with Kh (2, 4, 2) or Vh (2, 3, 3) raises ValueError naming all three shapes"""
    raises_clearly(lambda: ch.attend_heads(np.ones((2, 3, 2)), np.ones((2, 4, 2)), np.ones((2, 3, 2))), ValueError,
                   "(2, 3, 2)", "(2, 4, 2)")
    raises_clearly(lambda: ch.attend_heads(np.ones((2, 3, 2)), np.ones((2, 3, 2)), np.ones((2, 3, 3))), ValueError,
                   "(2, 3, 2)", "(2, 3, 3)")


@pytest.mark.given
def test_a_d_out_of_the_wrong_shape_is_named(ch):
    """d_out (2, 4) for a (3, 4) output raises ValueError naming d_out and its shape"""
    x, params, n = worksheet()
    _, cache = ch.multi_head_attention(x, params, n)
    raises_clearly(lambda: ch.multi_head_attention_backward(np.ones((2, 4)), cache), ValueError, "(2, 4)",
                   names=("d_out",))
