"""Chapter 9: Feed-Forward Layers — the book's Example 5 worksheet, and beyond.

Input "A B" (X = I), W_Q = W_K = W_V = 0.1·I, W1 = W2 = [[0.2, 0.1], [0.1, 0.2]]. Each worksheet step is
one test below, named as the claim it checks; the numbers come from reference/chapter09_feed_forward.toml.
The worksheet shows only position 1 and copies it into row 0; steps 9.1–9.5 pin both rows. Steps 9.6–9.10
are this course's: ReLU's gradient and the gradients through the FFN and the residual.
"""

import numpy as np
import pytest

from kata import close, expect, numerical_gradient, raises_clearly, snapshot

CHAPTER = 9
RNG = np.random.default_rng(9)


# -- helpers (the expected values are stored in tests/snapshots/chapter09.npz, written from solutions/) -----
SNAP = snapshot(CHAPTER)
NAMES = ("dx", "dW1", "dW2", "db1", "db2")


def layer(k):
    """x, W1, W2, b1, b2 of the stored case ``k``."""
    return tuple(SNAP[f"{k}/{n}"] for n in ("x", "W1", "W2", "b1", "b2"))


# -- the worksheet, step by step -------------------------------------------------------------------
@pytest.mark.step("9.1")
def test_causal_attention_gives_a_its_own_value_and_b_a_near_even_mix(ch, ws):
    got = ch.self_attention(ws.input("X"), ws.input("WQ"), ws.input("WK"), ws.input("WV"))
    expect(ws, got)


@pytest.mark.step("9.2")
def test_the_first_layer_maps_each_row_through_w1(ch, ws):
    expect(ws, ch.linear(ws.input("x"), ws.input("W")), kind="array")


@pytest.mark.step("9.3")
def test_relu_leaves_the_positive_hidden_values_unchanged(ch, ws):
    expect(ws, ch.relu(ws.input("x")), kind="array")


@pytest.mark.step("9.4")
def test_the_feed_forward_output_is_a_small_correction(ch, ws):
    expect(ws, ch.feed_forward(ws.input("x"), ws.input("W1"), ws.input("W2")), kind="array")


@pytest.mark.step("9.5")
def test_the_residual_adds_the_correction_to_the_attention_output(ch, ws):
    expect(ws, ch.residual_feed_forward(ws.input("x"), ws.input("W1"), ws.input("W2")), kind="array")


@pytest.mark.step("9.6")
def test_relu_turns_minus_a_half_into_zero(ch, ws):
    expect(ws, ch.relu(ws.input("x")), kind="array")


@pytest.mark.step("9.7")
def test_relu_gradient_flows_only_where_the_input_was_positive(ch, ws):
    expect(ws, ch.relu_backward(ws.input("x"), ws.input("d_out")), kind="array")


@pytest.mark.step("9.8")
def test_the_gradient_through_the_ffn_is_0_09_per_entry(ch, ws):
    dx, *_ = ch.feed_forward_backward(ws.input("x"), ws.input("W1"), ws.input("W2"), None, None, ws.input("d_out"))
    expect(ws, dx)


@pytest.mark.step("9.9")
def test_w1_gets_each_input_feature_times_the_hidden_gradient(ch, ws):
    _, dW1, *_ = ch.feed_forward_backward(ws.input("x"), ws.input("W1"), ws.input("W2"), None, None,
                                          ws.input("d_out"))
    expect(ws, dW1)


@pytest.mark.step("9.10")
def test_the_residual_passes_the_whole_gradient_back_plus_the_ffns(ch, ws):
    dx, *_ = ch.residual_feed_forward_backward(ws.input("x"), ws.input("W1"), ws.input("W2"), None, None,
                                               ws.input("d_out"))
    expect(ws, dx)


# -- beyond the worksheet: other shapes, other values, expected values from the stored snapshot ----------
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 5)])
def test_relu_matches_max_zero_on_any_shape(ch, shape):
    """relu is max(0, x) entry by entry, on any shape, negatives included"""
    x = RNG.normal(size=shape)
    close(ch.relu(x), np.maximum(x, 0), f"relu of a {shape} array", inputs={"x": x},
          mistakes=[("ReLU not applied", x), ("the absolute value instead of max(0, x)", np.abs(x)),
                    ("min instead of max", np.minimum(x, 0))])


def test_relu_backward_at_exactly_zero_blocks_the_gradient(ch):
    """relu_backward uses derivative 0 at x = 0, 1 above, 0 below, on a (3, 4) array"""
    x = RNG.normal(size=(3, 4))
    x[0, 0] = x[1, 2] = 0.0
    d = RNG.normal(size=(3, 4))
    got = ch.relu_backward(x, d)
    close(got, np.where(x > 0, d, 0.0), "relu_backward on a (3, 4) array with two exact zeros", inputs={"x": x},
          mistakes=[("ReLU gradient passed through for negative inputs", d),
                    ("derivative 1 at exactly 0 (x >= 0 instead of x > 0)", np.where(x >= 0, d, 0.0)),
                    ("multiplied by ReLU's output instead of by its derivative", d * np.maximum(x, 0))])


@pytest.mark.parametrize("shape", [(5,), (4, 3)])
def test_relu_backward_matches_numerical_gradients_away_from_zero(ch, shape):
    """relu_backward agrees with central differences of sum(d_out * relu(x))"""
    x = RNG.normal(size=shape)
    x[np.abs(x) < 1e-3] = 0.5
    d = RNG.normal(size=shape)
    got = ch.relu_backward(x, d)
    want = numerical_gradient(lambda v: float(np.sum(d * np.maximum(v, 0))), x)
    close(got, want, f"relu_backward of a {shape} array vs numerical gradients", rtol=1e-6, atol=1e-8,
          mistakes=[("ReLU gradient passed through for negative inputs", d)])


@pytest.mark.parametrize(("seq", "d_in", "d_out"), [(3, 5, 2), (1, 4, 6), (6, 2, 3)])
def test_linear_matches_a_loop_with_and_without_bias(ch, seq, d_in, d_out):
    """linear is x W (+ b), checked against a loop on other shapes"""
    x, W, b = RNG.normal(size=(seq, d_in)), RNG.normal(size=(d_in, d_out)), RNG.normal(size=d_out)
    loop = np.array([[sum(x[i, k] * W[k, j] for k in range(d_in)) for j in range(d_out)] for i in range(seq)])
    no_bias = ch.linear(x, W)
    with_bias = ch.linear(x, W, b)
    close(no_bias, loop, f"linear(x {x.shape}, W {W.shape})")
    close(with_bias, loop + b, f"linear(x {x.shape}, W {W.shape}, b {b.shape})",
          mistakes=[("the bias was ignored", loop)])


@pytest.mark.parametrize("case", range(SNAP.count("ffn")))
def test_feed_forward_matches_the_formula_on_other_shapes(ch, case):
    """feed_forward is ReLU(x W1 + b1) W2 + b2 on (seq, d_model, d_ff) = (3, 4, 8), (5, 2, 3), (1, 6, 4), with and without biases"""
    k = f"ffn/{case}"
    x, W1, W2, b1, b2 = layer(k)
    with_bias = ch.feed_forward(x, W1, W2, b1, b2)
    no_bias = ch.feed_forward(x, W1, W2)
    close(with_bias, SNAP[f"{k}/out"], f"feed_forward, x {x.shape}, W1 {W1.shape}, with biases", kind="array",
          mistakes=[("ReLU not applied (two linear layers collapse into one)", SNAP[f"{k}/no_relu"]),
                    ("ReLU applied after the second layer", SNAP[f"{k}/relu_after"]),
                    ("the residual was added inside feed_forward", SNAP[f"{k}/residual_inside"])])
    close(no_bias, SNAP[f"{k}/out_no_bias"], f"feed_forward, x {x.shape}, W1 {W1.shape}, no biases", kind="array")


@pytest.mark.parametrize("case", range(SNAP.count("ffn")))
def test_residual_feed_forward_adds_the_input(ch, case):
    """residual_feed_forward is x + FFN(x) on other shapes"""
    k = f"ffn/{case}"
    x, W1, W2, b1, b2 = layer(k)
    got = ch.residual_feed_forward(x, W1, W2, b1, b2)
    close(got, SNAP[f"{k}/residual"], f"residual_feed_forward, x {x.shape}, d_ff {W1.shape[1]}", kind="array",
          mistakes=[("the FFN output alone: the residual replaced x instead of adding to it", SNAP[f"{k}/out"])])


@pytest.mark.parametrize("case", range(SNAP.count("backward")))
def test_feed_forward_backward_matches_numerical_gradients(ch, case):
    """every gradient of the FFN (x, W1, W2, b1, b2) agrees with central differences"""
    k = f"backward/{case}"
    x, W1, W2, b1, b2 = layer(k)
    d = SNAP[f"{k}/d_out"]
    got = ch.feed_forward_backward(x, W1, W2, b1, b2, d)
    want = [SNAP[f"{k}/grads/{n}"] for n in NAMES]
    d_ff = W1.shape[1]
    mistakes = [("ReLU gradient passed through for negative inputs", SNAP[f"{k}/mistakes/relu_passed_through"]),
                ("derivative 1 at exactly 0 (x >= 0 instead of x > 0)", SNAP[f"{k}/mistakes/derivative_1_at_0"]),
                ("multiplied by ReLU's output instead of by its derivative", SNAP[f"{k}/mistakes/times_relu_output"])]
    assert isinstance(got, tuple) and len(got) == 5, (
        f"feed_forward_backward should return the tuple (dx, dW1, dW2, db1, db2); got {type(got).__name__} "
        f"of length {len(got) if hasattr(got, '__len__') else '?'}")
    for name, g, w in zip(("dx", "dW1", "dW2", "db1", "db2"), got, want, strict=True):
        close(g, w, f"feed_forward_backward's {name} (x {x.shape}, d_ff {d_ff}) vs numerical gradients",
              rtol=1e-6, atol=1e-8,
              mistakes=mistakes + [
                  ("the residual's identity added (that is residual_feed_forward_backward)", w + d)] if name == "dx"
              else [])


@pytest.mark.parametrize("case", range(SNAP.count("backward_no_bias")))
def test_feed_forward_backward_without_biases(ch, case):
    """with b1 = b2 = None, the gradients match a zero bias's, bias gradients included"""
    k = f"backward_no_bias/{case}"
    x, W1, W2, d = SNAP[f"{k}/x"], SNAP[f"{k}/W1"], SNAP[f"{k}/W2"], SNAP[f"{k}/d_out"]
    got = ch.feed_forward_backward(x, W1, W2, None, None, d)
    want = [SNAP[f"{k}/grads/{n}"] for n in NAMES]
    for name, g, w in zip(("dx", "dW1", "dW2", "db1", "db2"), got, want, strict=True):
        close(g, w, f"feed_forward_backward's {name} with no biases", rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("case", range(SNAP.count("residual_backward")))
def test_residual_feed_forward_backward_matches_numerical_gradients(ch, case):
    """every gradient of x + FFN(x) agrees with central differences; dx carries the identity path"""
    k = f"residual_backward/{case}"
    x, W1, W2, b1, b2 = layer(k)
    d = SNAP[f"{k}/d_out"]
    d_ff = W1.shape[1]
    got = ch.residual_feed_forward_backward(x, W1, W2, b1, b2, d)
    want = [SNAP[f"{k}/grads/{n}"] for n in NAMES]
    for name, g, w in zip(("dx", "dW1", "dW2", "db1", "db2"), got, want, strict=True):
        close(g, w, f"residual_feed_forward_backward's {name} (x {x.shape}, d_ff {d_ff}) vs numerical gradients",
              rtol=1e-6, atol=1e-8,
              mistakes=[("the residual path missing from the backward pass", w - d),
                        ("only the residual path: the FFN's gradient was dropped", d)] if name == "dx" else [])


def test_self_attention_matches_a_numpy_one_liner_on_other_shapes(ch):
    """self_attention is causal softmax(QKᵀ/√d_k)V on a (5, 3) input with (3, 4) projections"""
    X = RNG.normal(size=(5, 3))
    WQ, WK, WV = (RNG.normal(size=(3, 4)) for _ in range(3))
    Q, K, V = X @ WQ, X @ WK, X @ WV
    S = np.where(np.tril(np.ones((5, 5), dtype=bool)), Q @ K.T / 2.0, -np.inf)
    w = np.exp(S - S.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    full = np.exp(Q @ K.T / 2.0 - (Q @ K.T / 2.0).max(axis=1, keepdims=True))
    full /= full.sum(axis=1, keepdims=True)
    got = ch.self_attention(X, WQ, WK, WV)
    close(got, w @ V, "self_attention of a (5, 3) input", mistakes=[("the causal mask was left out", full @ V)])


def test_nothing_modifies_its_inputs(ch):
    """relu, feed_forward and both backward passes leave their inputs untouched"""
    x, W1, W2, b1, b2 = layer("residual_backward/0")
    d = SNAP["residual_backward/0/d_out"]
    # the judge fails a call that changes one of its arguments in place (ChangedItsInput)
    ch.relu(x)
    ch.relu_backward(x, d)
    ch.feed_forward(x, W1, W2, b1, b2)
    ch.residual_feed_forward(x, W1, W2, b1, b2)
    ch.feed_forward_backward(x, W1, W2, b1, b2, d)
    ch.residual_feed_forward_backward(x, W1, W2, b1, b2, d)


# -- bad input gets a clear error (the checks marked given are the stubs': CONTRIBUTING.md) -----------------
@pytest.mark.given
def test_w1_that_does_not_fit_x_names_both_shapes(ch):
    """x (2, 3) with W1 (2, 4) raises ValueError naming both shapes"""
    x, W1, W2 = np.ones((2, 3)), np.ones((2, 4)), np.ones((4, 3))
    raises_clearly(lambda: ch.feed_forward(x, W1, W2), ValueError, "(2, 3)", "(2, 4)")
    raises_clearly(lambda: ch.feed_forward_backward(x, W1, W2, None, None, np.ones((2, 3))), ValueError,
                   "(2, 3)", "(2, 4)")


@pytest.mark.given
def test_w2_that_does_not_fit_w1_names_both_shapes(ch):
    """W1 (3, 4) followed by W2 (5, 3) raises ValueError naming both shapes"""
    raises_clearly(lambda: ch.feed_forward(np.ones((2, 3)), np.ones((3, 4)), np.ones((5, 3))), ValueError,
                   "(3, 4)", "(5, 3)")


@pytest.mark.given
def test_a_bias_of_the_wrong_length_is_refused(ch):
    """a bias of the wrong length raises ValueError naming which bias (b1, b2) and its shape"""
    x, W1, W2 = np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 3))
    raises_clearly(lambda: ch.feed_forward(x, W1, W2, np.ones(3)), ValueError, "b1", "(3,)")
    raises_clearly(lambda: ch.feed_forward(x, W1, W2, None, np.ones(4)), ValueError, "b2", "(4,)")


def test_a_residual_needs_the_output_as_wide_as_the_input(ch):
    """W2 mapping back to 2 features for a 3-feature x raises ValueError naming both"""
    x, W1, W2 = np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 2))
    raises_clearly(lambda: ch.residual_feed_forward(x, W1, W2), ValueError, "(2, 3)", "(4, 2)")


@pytest.mark.given
def test_the_residual_backward_needs_the_output_as_wide_as_the_input(ch):
    """the backward of W2 mapping back to 2 features for a 3-feature x raises ValueError naming both"""
    x, W1, W2 = np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 2))
    raises_clearly(lambda: ch.residual_feed_forward_backward(x, W1, W2, None, None, np.ones((2, 3))), ValueError,
                   "(2, 3)", "(4, 2)")


@pytest.mark.given
def test_d_out_of_the_wrong_shape_is_refused(ch):
    """d_out (3, 3) for a (2, 3) output raises ValueError naming both shapes"""
    x, W1, W2 = np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 3))
    raises_clearly(lambda: ch.feed_forward_backward(x, W1, W2, None, None, np.ones((3, 3))), ValueError,
                   "(3, 3)", "(2, 3)")
    raises_clearly(lambda: ch.relu_backward(np.ones((2, 3)), np.ones((3, 2))), ValueError, "(2, 3)", "(3, 2)")


@pytest.mark.given
def test_a_single_row_must_be_made_2d(ch):
    """a 1-D x raises ValueError naming its shape"""
    raises_clearly(lambda: ch.feed_forward(np.ones(3), np.ones((3, 4)), np.ones((4, 3))), ValueError, "(3,)")


@pytest.mark.given
@pytest.mark.parametrize("which", ["W1", "W2"])
def test_a_weight_matrix_that_is_not_2d_is_named(ch, which):
    """a 1-D W1 or W2 raises ValueError naming it (W1, W2, exactly) and its shape, forward and backward"""
    x, W1, W2 = np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 3))
    W1, W2 = (np.ones(4), W2) if which == "W1" else (W1, np.ones(4))
    raises_clearly(lambda: ch.feed_forward(x, W1, W2), ValueError, "(4,)", names=(which,))
    raises_clearly(lambda: ch.feed_forward_backward(x, W1, W2, None, None, np.ones((2, 3))), ValueError, "(4,)",
                   names=(which,))


@pytest.mark.given
def test_backward_passes_refuse_a_bias_of_the_wrong_length(ch):
    """feed_forward_backward and residual_feed_forward_backward refuse a wrong b1 or b2 too, naming it"""
    x, W1, W2, d = np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 3)), np.ones((2, 3))
    for f in (ch.feed_forward_backward, ch.residual_feed_forward_backward):
        raises_clearly(lambda f=f: f(x, W1, W2, None, np.ones(4), d), ValueError, "(4,)", names=("b2",),
                       hint="check b2 even in the backward pass: it does not enter a gradient, but a wrong one is "
                       "still a wrong layer")
        raises_clearly(lambda f=f: f(x, W1, W2, np.ones(3), None, d), ValueError, "(3,)", names=("b1",))


@pytest.mark.given
def test_linear_names_what_does_not_fit(ch):
    """linear names a 1-D x or W, and a bias of the wrong length with the shape it should have"""
    raises_clearly(lambda: ch.linear(np.ones(3), np.ones((3, 2))), ValueError, "(3,)", names=("x",))
    raises_clearly(lambda: ch.linear(np.ones((2, 3)), np.ones(3)), ValueError, "(3,)", names=("W",))
    raises_clearly(lambda: ch.linear(np.ones((2, 3)), np.ones((3, 2)), np.ones(3)), ValueError, "(3,)", "(2,)",
                   names=("b",), hint="b needs one entry per column of W: shape (W.shape[1],)")


@pytest.mark.given
def test_self_attention_names_a_matrix_that_is_not_2d(ch):
    """self_attention with a 1-D X, W_Q, W_K or W_V raises ValueError naming it (X, WQ, WK, WV) and its shape"""
    X, W = np.ones((2, 3)), np.ones((3, 2))
    raises_clearly(lambda: ch.self_attention(np.ones(3), W, W, W), ValueError, "(3,)", names=("X",))
    raises_clearly(lambda: ch.self_attention(X, np.ones(3), W, W), ValueError, "(3,)", names=("WQ",))
    raises_clearly(lambda: ch.self_attention(X, W, np.ones(3), W), ValueError, "(3,)", names=("WK",))
    raises_clearly(lambda: ch.self_attention(X, W, W, np.ones(3)), ValueError, "(3,)", names=("WV",))


@pytest.mark.given
def test_projections_that_do_not_fit_x_name_both_shapes(ch):
    """self_attention with X (2, 3) and WQ (2, 2) raises ValueError naming both shapes"""
    raises_clearly(lambda: ch.self_attention(np.ones((2, 3)), np.ones((2, 2)), np.ones((3, 2)), np.ones((3, 2))),
                   ValueError, "(2, 3)", "(2, 2)")
    raises_clearly(lambda: ch.linear(np.ones((2, 3)), np.ones((2, 2))), ValueError, "(2, 3)", "(2, 2)")
