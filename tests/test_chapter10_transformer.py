"""Chapter 10: The Complete Transformer — the course's own worksheet (the book's Example 6 has none), and beyond.

The worksheet: layer norm by hand on [0, 2, 2, 8] and on the book's two-feature rows, one block
(d_model 4, d_ff 8, three positions) forward and backward, then the worksheet model (vocab A B C D, that
block as its only layer) on [A, B, A]: logits, loss, gradients, three epochs of training, generation.
Beyond it: every function on seeded inputs of several shapes against stored snapshots
(tests/snapshots/chapter10.npz: inputs, the reference's outputs, central-difference gradients and the values
classic mistakes give, written from solutions/ by the authors), every parameter's gradient of a tiny model
checked one by one in the order the backward pass computes them, real training runs with stated budgets,
the positions experiment both ways, and bad input. Nothing here computes what a function of the chapter
computes: the expected values are stored, not re-derived.
"""

import numpy as np
import pytest
from pytest_check import check

from kata import close, copy_tree, expect, float_tree, leaves, load, raises_clearly, snapshot

CHAPTER = 10
SNAP = snapshot(CHAPTER)
A, B, C, D = 0, 1, 2, 3
# Central differences of a float64 loss are good to about 1e-8; a gradient compared with them gets that slack
# (the mistakes the checks name are off by far more: whole terms or factors of 2).
NUM_RTOL, NUM_ATOL = 1e-5, 1e-7


# -- helpers: parameter trees (no computation of the chapter's) -----------------------------------------
def worksheet_model():
    """The worksheet model: its parameters are stored once, in step 10.11's inputs."""
    return float_tree(load(CHAPTER).step("10.11").inputs["params"])


def get(params, path):
    """The array at a path made by ``leaves``, e.g. "['blocks'][0]['W1']"."""
    return eval("params" + path, {"params": params})  # noqa: S307 - paths are built above, never user input


def share_predicted(ch, data, params):
    """Fraction of sequences whose every target position the learner's own model predicts (argmax of its logits)."""
    right = 0
    for ids, targets in data:
        logits, _ = ch.transformer_forward(ids, params)
        t = np.asarray(targets)
        right += bool(np.all(np.asarray(logits)[t >= 0].argmax(axis=-1) == t[t >= 0]))
    return right / len(data)


def mean_loss(ch, data, params):
    """The mean loss over ``data``, from the learner's own transformer_loss_and_grads."""
    return float(np.mean([ch.transformer_loss_and_grads(ids, t, params)[0] for ids, t in data]))


def backward_order(n_layers):
    """Every parameter's path, in the order the backward pass computes its gradient, with the function that does."""
    order = [("['WO']", "transformer_backward (the output projection)"),
             ("['lnf_gamma']", "layer_norm_backward (the final layer norm)"),
             ("['lnf_beta']", "layer_norm_backward (the final layer norm)")]
    for i in reversed(range(n_layers)):
        where = f"inside block_backward of block {i}"
        order += [(f"['blocks'][{i}][{k!r}]", f"ffn_backward, {where}") for k in ("W1", "b1", "W2", "b2")]
        order += [(f"['blocks'][{i}][{k!r}]", f"layer_norm_backward (LN₂), {where}") for k in ("ln2_gamma", "ln2_beta")]
        order += [(f"['blocks'][{i}][{k!r}]", f"attention_backward, {where}") for k in ("WQ", "WK", "WV")]
        order += [(f"['blocks'][{i}][{k!r}]", f"layer_norm_backward (LN₁), {where}") for k in ("ln1_gamma", "ln1_beta")]
    order += [("['tok_emb']", "transformer_backward (the token embeddings: a repeated token adds up its rows)"),
              ("['pos_emb']", "transformer_backward (the position embeddings)")]
    return order


# -- the worksheet, step by step -------------------------------------------------------------------
@pytest.mark.step("10.1")
def test_layer_norm_maps_0_2_2_8_to_minus_one_third_and_five_thirds_before_gamma_and_beta(ch, ws):
    expect(ws, ch.layer_norm(ws.input("x"), ws.input("gamma"), ws.input("beta")))


@pytest.mark.step("10.2")
def test_two_features_keep_only_a_sign_and_tiny_rows_are_swamped_by_eps(ch, ws):
    expect(ws, ch.layer_norm(ws.input("x"), ws.input("gamma"), ws.input("beta")))


@pytest.mark.step("10.3")
def test_layer_norm_backward_spreads_one_output_gradient_over_the_whole_row(ch, ws):
    x, gamma, d_out = ws.input("x"), ws.input("gamma"), ws.input("d_out")
    dx, d_gamma, d_beta = ch.layer_norm_backward(x, gamma, d_out)
    expect(ws, dx)
    close(d_gamma, SNAP["ws_10_3/d_gamma"], "10.3 dgamma = Σ_rows d_out ⊙ x̂ (≈ [−1, 0, 0, 0])", kind="array")
    close(d_beta, SNAP["ws_10_3/d_beta"], "10.3 dbeta = Σ_rows d_out ([1, 0, 0, 0])", kind="array")


@pytest.mark.step("10.4")
def test_attention_lets_row_0_see_only_itself_and_row_2_see_all_three(ch, ws):
    out, _ = ch.attention_forward(ws.input("x"), ws.input("WQ"), ws.input("WK"), ws.input("WV"))
    expect(ws, out)


@pytest.mark.step("10.5")
def test_feed_forward_halves_what_exceeds_one_half_in_size(ch, ws):
    out, _ = ch.ffn_forward(ws.input("x"), ws.input("W1"), ws.input("b1"), ws.input("W2"), ws.input("b2"))
    expect(ws, out)


@pytest.mark.step("10.6")
def test_one_block_adds_attention_then_feed_forward_to_the_stream(ch, ws):
    y, _ = ch.block_forward(ws.input("x"), float_tree(ws.inputs["block"]))
    expect(ws, y)


@pytest.mark.step("10.7")
def test_feed_forward_backward_passes_only_through_open_relus(ch, ws):
    weights = [float_tree(load(CHAPTER).step("10.5").inputs[k]) for k in ("W1", "b1", "W2", "b2")]
    _, cache = ch.ffn_forward(ws.input("x"), *weights)
    dx, *_ = ch.ffn_backward(ws.input("d_out"), cache)
    expect(ws, dx)


@pytest.mark.step("10.8")
def test_attention_backward_sums_the_query_key_and_value_paths(ch, ws):
    _, cache = ch.attention_forward(ws.input("x"), ws.input("WQ"), ws.input("WK"), ws.input("WV"))
    dx, *_ = ch.attention_backward(ws.input("d_out"), cache)
    expect(ws, dx)


@pytest.mark.step("10.9")
def test_block_backward_keeps_both_residual_paths(ch, ws):
    _, cache = ch.block_forward(ws.input("x"), float_tree(ws.inputs["block"]))
    dx, _ = ch.block_backward(ws.input("d_y"), cache)
    expect(ws, dx)


@pytest.mark.step("10.10")
def test_the_worksheet_model_has_192_parameters(ch, ws):
    i = ws.inputs
    params = ch.init_params(i["vocab_size"], i["d_model"], i["d_ff"], i["n_layers"], i["max_len"])
    expect(ws, sum(np.asarray(a).size for _, a in leaves(params)))


@pytest.mark.step("10.11")
def test_embedding_a_b_a_gives_the_worksheet_blocks_input(ch, ws):
    expect(ws, ch.embed(ws.inputs["ids"], worksheet_model()))


@pytest.mark.step("10.12")
def test_the_worksheet_model_scores_the_next_token_at_every_position(ch, ws):
    logits, _ = ch.transformer_forward(ws.inputs["ids"], worksheet_model())
    expect(ws, logits)


@pytest.mark.step("10.13")
def test_the_loss_averages_over_the_two_positions_with_a_target(ch, ws):
    loss, _ = ch.cross_entropy(ws.input("logits"), ws.inputs["targets"])
    expect(ws, loss)


@pytest.mark.step("10.14")
def test_the_logit_gradient_is_softmax_minus_one_hot_over_two(ch, ws):
    _, d_logits = ch.cross_entropy(ws.input("logits"), ws.inputs["targets"])
    expect(ws, d_logits)


@pytest.mark.step("10.15")
def test_token_a_collects_the_gradient_of_both_its_positions(ch, ws):
    _, cache = ch.transformer_forward(ws.inputs["ids"], worksheet_model())
    d_logits = load(CHAPTER).step("10.14").exact
    grads = ch.transformer_backward(d_logits, cache)
    expect(ws, grads["tok_emb"])


@pytest.mark.step("10.16")
def test_loss_and_grads_give_the_output_projections_gradient(ch, ws):
    loss, grads = ch.transformer_loss_and_grads(ws.inputs["ids"], ws.inputs["targets"], worksheet_model())
    expect(ws, grads["WO"])
    close(loss, load(CHAPTER).step("10.13").exact, "10.16 the loss returned with the gradients (step 10.13's)")


@pytest.mark.step("10.17")
def test_three_epochs_of_training_lower_the_mean_loss(ch, ws):
    data = [(ids, targets) for ids, targets in ws.inputs["data"]]
    _, losses = ch.train_transformer(data, worksheet_model(), ws.inputs["lr"], ws.inputs["epochs"])
    expect(ws, losses)


@pytest.mark.step("10.18")
def test_greedy_generation_from_a_continues_with_d_then_c(ch, ws):
    expect(ws, ch.generate(ws.inputs["prompt_ids"], worksheet_model(), ws.inputs["n_new"]))


# -- beyond the worksheet: other shapes and values, against the stored snapshot ---------------------------
@pytest.mark.parametrize("case", range(SNAP.count("layer_norm")))
def test_layer_norm_matches_the_formula_on_other_shapes(ch, case):
    """layer_norm matches γ(x − μ)/√(σ² + ε) + β, population variance, on shapes (3, 5), (6, 4), (2, 3, 7), (4, 1)"""
    k = f"layer_norm/{case}"
    x, gamma, beta = SNAP[f"{k}/x"], SNAP[f"{k}/gamma"], SNAP[f"{k}/beta"]
    got = ch.layer_norm(x, gamma, beta)
    close(got, SNAP[f"{k}/out"], f"layer_norm of a {x.shape} array", inputs={"x": x}, kind="array",
          mistakes=[("the sample variance (n − 1)", SNAP[f"{k}/sample_variance"])] if x.shape[-1] > 1 else [])


def test_layer_norm_respects_eps(ch):
    """layer_norm uses its eps argument: a constant row stays finite and eps = 1 changes the result"""
    x = SNAP["layer_norm_eps/x"]
    got = ch.layer_norm(x, np.ones(3), np.zeros(3))
    close(got, SNAP["layer_norm_eps/out"], "layer_norm with a constant row (eps keeps it finite)", kind="array")
    got = ch.layer_norm(x, np.ones(3), np.zeros(3), eps=1.0)
    close(got, SNAP["layer_norm_eps/out_eps1"], "layer_norm with eps = 1",
          mistakes=[("the eps argument was ignored", SNAP["layer_norm_eps/out"])])


@pytest.mark.parametrize("case", range(SNAP.count("layer_norm_backward")))
def test_layer_norm_backward_matches_numerical_gradients(ch, case):
    """layer_norm_backward matches central differences on random rows of shapes (3, 5), (4, 2), (2, 3, 6)"""
    k = f"layer_norm_backward/{case}"
    x, gamma, R = SNAP[f"{k}/x"], SNAP[f"{k}/gamma"], SNAP[f"{k}/d_out"]  # loss = Σ R ⊙ LN(x), so d_out = R
    dx, d_gamma, d_beta = ch.layer_norm_backward(x, gamma, R)
    close(dx, SNAP[f"{k}/dx"], f"dx for x {x.shape}", rtol=NUM_RTOL, atol=NUM_ATOL, kind="array",
          mistakes=[("only the direct path γ·d_out/σ", SNAP[f"{k}/direct_path_only"])])
    close(d_gamma, SNAP[f"{k}/d_gamma"], f"dgamma for x {x.shape}", rtol=NUM_RTOL, atol=NUM_ATOL, kind="array")
    close(d_beta, SNAP[f"{k}/d_beta"], f"dbeta for x {x.shape}", rtol=NUM_RTOL, atol=NUM_ATOL, kind="array")


@pytest.mark.parametrize("case", range(SNAP.count("attention")))
def test_attention_matches_a_loop_over_positions(ch, case):
    """attention_forward is causal and scaled by 1/√d_model: seq × d_model 5 × 3, 2 × 6, 1 × 4 and 4 × 4"""
    k = f"attention/{case}"
    x, WQ, WK, WV = (SNAP[f"{k}/{n}"] for n in ("x", "WQ", "WK", "WV"))
    out, _ = ch.attention_forward(x, WQ, WK, WV)
    mistakes = [("no 1/√d_model scaling", SNAP[f"{k}/no_scaling"]),
                ("the causal mask was left out", SNAP[f"{k}/no_mask"])]
    if f"{k}/k_not_transposed" in SNAP.data:
        mistakes.append(("K not transposed (Q K instead of Q Kᵀ)", SNAP[f"{k}/k_not_transposed"]))
    close(out, SNAP[f"{k}/out"], f"causal attention, seq {x.shape[0]}, d_model {x.shape[1]}", kind="array",
          inputs={"x": x}, mistakes=mistakes)


@pytest.mark.parametrize("case", range(SNAP.count("ffn")))
def test_feed_forward_matches_the_formula(ch, case):
    """ffn_forward matches ReLU(x W1 + b1) W2 + b2 on other shapes"""
    k = f"ffn/{case}"
    x, W1, b1, W2, b2 = (SNAP[f"{k}/{n}"] for n in ("x", "W1", "b1", "W2", "b2"))
    out, _ = ch.ffn_forward(x, W1, b1, W2, b2)
    close(out, SNAP[f"{k}/out"], f"feed-forward, seq {x.shape[0]}, d_model {x.shape[1]}, d_ff {W1.shape[1]}",
          kind="array", mistakes=[("the ReLU was left out", SNAP[f"{k}/no_relu"])])


@pytest.mark.parametrize("case", range(SNAP.count("attention_backward")))
def test_attention_and_feed_forward_backward_match_numerical_gradients(ch, case):
    """attention_backward and ffn_backward match central differences on other shapes"""
    k = f"attention_backward/{case}"
    x, R = SNAP[f"{k}/x"], SNAP[f"{k}/d_out"]
    _, cache = ch.attention_forward(x, SNAP[f"{k}/WQ"], SNAP[f"{k}/WK"], SNAP[f"{k}/WV"])
    got = ch.attention_backward(R, cache)
    for name, g in zip(("dx", "dWQ", "dWK", "dWV"), got, strict=True):
        close(g, SNAP[f"{k}/{name}"], f"attention_backward {name}, seq {x.shape[0]}, d_model {x.shape[1]}",
              rtol=NUM_RTOL, atol=NUM_ATOL, kind="array")
    k = f"ffn_backward/{case}"
    _, cache = ch.ffn_forward(*(SNAP[f"{k}/{n}"] for n in ("x", "W1", "b1", "W2", "b2")))
    got = ch.ffn_backward(SNAP[f"{k}/d_out"], cache)
    for name, g in zip(("dx", "dW1", "db1", "dW2", "db2"), got, strict=True):
        close(g, SNAP[f"{k}/{name}"], f"ffn_backward {name}, d_ff {SNAP[f'{k}/W1'].shape[1]}",
              rtol=NUM_RTOL, atol=NUM_ATOL, kind="array")


def test_feed_forward_backward_takes_the_relu_slope_at_zero_as_zero(ch):
    """where x W1 + b1 is exactly 0 the ReLU passes no gradient back: dx and db1 as the docstring says"""
    x, W1, b1, W2, b2 = (SNAP[f"ffn_kink/{n}"] for n in ("x", "W1", "b1", "W2", "b2"))
    _, cache = ch.ffn_forward(x, W1, b1, W2, b2)
    got = ch.ffn_backward(SNAP["ffn_kink/d_out"], cache)
    for name, g in zip(("dx", "dW1", "db1", "dW2", "db2"), got, strict=True):
        close(g, SNAP[f"ffn_kink/grads/{name}"], f"ffn_backward {name} with a pre-activation of exactly 0",
              kind="array", mistakes=[("derivative 1 at exactly 0 (z >= 0 instead of z > 0)",
                                       SNAP[f"ffn_kink/slope_1_at_0/{name}"])] if name in ("dx", "db1") else [])


@pytest.mark.parametrize("case", range(SNAP.count("block")))
def test_block_matches_the_oracle_and_its_backward_matches_numerical_gradients(ch, case):
    """block_forward matches the stored block output; block_backward matches central differences for x and every parameter"""
    k = f"block/{case}"
    x, block, R = SNAP[f"{k}/x"], SNAP.tree(f"{k}/block"), SNAP[f"{k}/d_y"]
    y, cache = ch.block_forward(x, block)
    dx, grads = ch.block_backward(R, cache)
    shapes = f"seq {x.shape[0]}, d_model {x.shape[1]}, d_ff {block['W1'].shape[1]}"
    close(y, SNAP[f"{k}/y"], f"block_forward, {shapes}", kind="array")
    close(dx, SNAP[f"{k}/dx"], "block_backward dx", rtol=NUM_RTOL, atol=NUM_ATOL, kind="array")
    with check:
        assert isinstance(grads, dict) and sorted(grads) == sorted(block), f"block grads keys {sorted(grads)}"
    for key in sorted(block):
        close(grads[key], SNAP[f"{k}/grads/{key}"], f"block_backward d{key}", rtol=NUM_RTOL, atol=NUM_ATOL)


@pytest.mark.parametrize("case", range(SNAP.count("model_grads")))
def test_the_whole_transformer_backward_matches_numerical_gradients(ch, case):
    """every parameter's gradient of a tiny model matches central differences; the first wrong one is named"""
    k = f"model_grads/{case}"
    params, ids, targets = SNAP.tree(f"{k}/params"), SNAP[f"{k}/ids"], SNAP[f"{k}/targets"]
    n_layers = len(params["blocks"])
    shapes = f"vocab {params['WO'].shape[1]}, d_model {params['WO'].shape[0]}, {n_layers} layer{'s' * (n_layers != 1)}"
    loss, grads = ch.transformer_loss_and_grads(ids, targets, params)
    close(loss, SNAP.number(f"{k}/loss"), f"the loss, {shapes} (a wrong loss means a wrong forward pass: "
          "fix transformer_forward and cross_entropy first, their own checks say where)", kind="float")
    got = dict(leaves(grads))
    want = dict(leaves(SNAP.tree(f"{k}/grads")))
    order = backward_order(n_layers)
    assert sorted(p for p, _ in order) == sorted(want), "backward_order must list every parameter"
    for path, function in order:  # the first wrong gradient in backward order is where the bug is
        if path not in got:
            pytest.fail(f"grads has no {path}: grads must mirror params (see init_params)", pytrace=False)
        close(got[path], want[path], f"gradient of params{path}, {shapes}: the first wrong one in the order the "
              f"backward pass computes them, so look in {function} (every gradient computed before it is right; "
              "if that function passes its own checks above, the gradient flowing into it is wrong: look at the "
              "dx of the step just before it)",
              rtol=NUM_RTOL, atol=NUM_ATOL, kind="array",
              mistakes=[("summed over positions instead of averaged", want[path] * np.sum(targets >= 0))])


def test_grads_mirror_params(ch):
    """grads has exactly the keys, list lengths and shapes of params"""
    params = ch.init_params(6, 4, 8, 2, 5, seed=3)
    _, grads = ch.transformer_loss_and_grads([1, 2, 3], [2, 3, -1], params)
    want = [(p, np.shape(a)) for p, a in leaves(params)]
    got = [(p, np.shape(a)) for p, a in leaves(grads)]
    with check:
        assert got == want, f"grads must mirror params: got layout {got}, params have {want}"


def test_cross_entropy_shifts_each_row_by_its_own_maximum(ch):
    """logits rows around 1000, 0 and −1000 at once: each row is stable only when shifted by its own maximum"""
    logits, targets = SNAP["cross_entropy_scales/logits"], SNAP["cross_entropy_scales/targets"]
    try:
        loss, d_logits = ch.cross_entropy(logits, targets)
    except RuntimeWarning as warning:  # NumPy's divide-by-zero or overflow, raised as an error in this suite
        pytest.fail(f"cross_entropy of rows around 1000, 0 and −1000 made NumPy warn: {warning}\n"
                    "  looks like: shifted by the largest logit of all rows (one maximum for the whole array): the rows "
                    "far below it underflow to exp(−2000) = 0; subtract each row's own maximum, kept as a column so "
                    "it lines up with its row", pytrace=False)
    close(loss, SNAP.number("cross_entropy_scales/loss"), "cross-entropy of rows around 1000, 0 and −1000", kind="float")
    close(d_logits, SNAP["cross_entropy_scales/d_logits"], "d_logits of rows around 1000, 0 and −1000", kind="array")


def test_cross_entropy_of_logits_a_thousand_apart_is_finite(ch):
    """a target 2000 below the largest logit: the loss is 2000, finite (log-sum-exp, not log of softmax)"""
    logits, targets = np.array([[0.0, 1000.0, -1000.0, 0.0]]), np.array([2])
    named = ("looks like: log(softmax(logits)): softmax of a logit 2000 below the largest underflows to 0, and "
             "log 0 = −inf; take log softmax as x − max − log Σ exp(x − max) (log-sum-exp)")
    try:
        loss, d_logits = ch.cross_entropy(logits, targets)
    except RuntimeWarning as warning:  # log(0): NumPy's divide-by-zero, raised as an error in this suite
        pytest.fail(f"cross_entropy of logits [0, 1000, −1000, 0] with target 2 made NumPy warn: {warning}\n  {named}",
                    pytrace=False)
    with check:
        assert np.isfinite(float(loss)), f"cross_entropy of logits [0, 1000, −1000, 0] with target 2 gave {loss}\n  {named}"
    # log softmax of the target: −1000 − (1000 + log(1 + 2e^−1000 + e^−2000)) = −2000 to float64 precision
    close(loss, 2000.0, "cross-entropy of logits [0, 1000, −1000, 0] with target 2", kind="float")
    close(d_logits, np.array([[0.0, 1.0, -1.0, 0.0]]), "d_logits of logits [0, 1000, −1000, 0], target 2", kind="array")


def test_cross_entropy_matches_a_loop_and_is_stable(ch):
    """cross_entropy skips negative targets, averages over the rest, and survives logits of 1000"""
    logits, targets = SNAP["cross_entropy/logits"], SNAP["cross_entropy/targets"]
    want, want_d = SNAP.number("cross_entropy/loss"), SNAP["cross_entropy/d_logits"]
    n = int(np.sum(targets >= 0))
    loss, d_logits = ch.cross_entropy(logits, targets)
    close(loss, want, "cross-entropy of (5, 7) logits", kind="float",
          mistakes=[("summed over positions instead of averaged", want * n),
                    ("averaged over all positions", want * n / len(targets))])
    close(d_logits, want_d, "d_logits of (5, 7) logits", kind="array",
          mistakes=[("not divided by the number of targets", want_d * n)])
    big_loss, big_d = ch.cross_entropy(logits + 1000.0, targets)
    close(big_loss, want, "cross-entropy of logits + 1000 (subtract the max first)", kind="float")
    close(big_d, want_d, "d_logits of logits + 1000")


@pytest.mark.parametrize("case", range(SNAP.count("forward")))
def test_transformer_forward_matches_the_oracle(ch, case):
    """transformer_forward's logits match the stored model's, including with no blocks at all"""
    k = f"forward/{case}"
    params, ids = SNAP.tree(f"{k}/params"), SNAP[f"{k}/ids"]
    logits, _ = ch.transformer_forward(ids, params)
    shapes = f"vocab {params['WO'].shape[1]}, d_model {params['WO'].shape[0]}, {len(params['blocks'])} layers"
    close(logits, SNAP[f"{k}/logits"], f"logits, {shapes}", kind="array")
    x = ch.embed(ids, params)
    close(x, SNAP[f"{k}/embedded"], "embed: token rows plus position rows", kind="array",
          mistakes=[("the positions were left out", SNAP[f"{k}/positions_left_out"])])


def test_training_takes_one_step_on_the_mean_gradient(ch):
    """one epoch of train_transformer = params − lr · mean of the examples' gradients (central differences)"""
    params = SNAP.tree("train_one_epoch/params")
    data = [(e["ids"].tolist(), e["targets"].tolist()) for e in SNAP.tree("train_one_epoch/examples")]
    lr = SNAP.number("train_one_epoch/lr")
    new, losses = ch.train_transformer(data, params, lr, 1)
    close(losses, SNAP["train_one_epoch/losses"], "losses[0]: the mean loss over the data before the update",
          kind="array")
    stepped, summed = SNAP.tree("train_one_epoch/stepped"), SNAP.tree("train_one_epoch/summed")
    for path, _ in leaves(params):
        close(get(new, path), get(stepped, path), f"{path} after one epoch", rtol=NUM_RTOL, atol=NUM_ATOL,
              mistakes=[("summed instead of averaged gradients", get(summed, path))])


def test_training_and_gradients_leave_their_inputs_untouched(ch):
    """transformer_loss_and_grads and train_transformer never modify params or data"""
    params = ch.init_params(5, 4, 8, 1, 6, seed=1)
    before = copy_tree(params)
    ids, targets = np.array([0, 3, 3]), np.array([3, 3, 1])
    ch.transformer_loss_and_grads(ids, targets, params)
    ch.train_transformer([(ids, targets)], params, 0.5, 2)
    for (path, a), (_, b) in zip(leaves(params), leaves(before), strict=True):
        close(a, b, f"params{path} after training")
    close(ids, [0, 3, 3], "ids after training")


def test_init_params_has_the_documented_layout_and_scales(ch):
    """init_params: the documented keys and shapes, float64, γ = 1, β = b = 0, and the documented spreads"""
    vocab, d, d_ff, n_layers, max_len = 50, 64, 96, 3, 40
    p = ch.init_params(vocab, d, d_ff, n_layers, max_len, seed=5)
    block_shapes = {"ln1_gamma": (d,), "ln1_beta": (d,), "WQ": (d, d), "WK": (d, d), "WV": (d, d),
                    "ln2_gamma": (d,), "ln2_beta": (d,), "W1": (d, d_ff), "b1": (d_ff,), "W2": (d_ff, d), "b2": (d,)}
    want = {"tok_emb": (vocab, d), "pos_emb": (max_len, d), "lnf_gamma": (d,), "lnf_beta": (d,), "WO": (d, vocab)}
    want.update({f"['blocks'][{i}][{k!r}]": s for i in range(n_layers) for k, s in block_shapes.items()})
    got = {path: np.shape(a) for path, a in leaves(p)}
    want = {(f"[{k!r}]" if not k.startswith("[") else k): s for k, s in want.items()}
    with check:
        assert got == want, f"init_params layout: got {got}, expected {want}"
    with check:
        assert all(np.asarray(a).dtype == np.float64 for _, a in leaves(p)), "every parameter must be float64"
    for path, a in leaves(p):
        if "gamma" in path:
            close(a, np.ones_like(a), f"{path} starts at 1")
        elif "beta" in path or path.endswith("['b1']") or path.endswith("['b2']"):
            close(a, np.zeros_like(a), f"{path} starts at 0")
    spreads = {"['tok_emb']": 1.0, "['pos_emb']": 1.0, "['WO']": 0.1 / np.sqrt(d),
               "['blocks'][0]['WQ']": 1 / np.sqrt(d), "['blocks'][1]['WK']": 1 / np.sqrt(d),
               "['blocks'][2]['WV']": 1 / np.sqrt(d), "['blocks'][2]['W1']": 1 / np.sqrt(d),
               "['blocks'][1]['W2']": 1 / np.sqrt(d_ff)}
    for path, std in spreads.items():
        a = get(p, path)
        with check:  # thousands of draws: the sample spread is within 10% of the documented one
            assert abs(np.std(a) / std - 1) < 0.1 and abs(np.mean(a)) < 0.1 * std, (
                f"{path}: std {np.std(a):.4g}, mean {np.mean(a):.3g}; documented N(0, {std:.4g}²)")


def test_init_params_takes_seed_0_by_default_and_the_smallest_sizes(ch):
    """init_params without a seed is seed 0; sizes of 1 and no layers at all are allowed"""
    for (path, x), (_, y) in zip(leaves(ch.init_params(5, 4, 6, 1, 7)), leaves(ch.init_params(5, 4, 6, 1, 7, seed=0)),
                                 strict=True):
        close(x, y, f"{path}: init_params without a seed against seed=0")
    p = ch.init_params(1, 1, 1, 0, 1)
    with check:
        assert p["blocks"] == [], f"n_layers = 0 gives no blocks, got {len(p['blocks'])}"
    close(np.shape(p["tok_emb"]), (1, 1), "tok_emb of init_params(1, 1, 1, 0, 1)")


@pytest.mark.given
@pytest.mark.parametrize(("args", "name", "value"), [
    ((0, 8, 16, 1, 8), "vocab_size", "0"), ((4, 0, 16, 1, 8), "d_model", "0"), ((4, 8, 0, 1, 8), "d_ff", "0"),
    ((4, 8, 16, -1, 8), "n_layers", "-1"), ((4, 8, 16, 1, 0), "max_len", "0"), ((True, 8, 16, 1, 8), "vocab_size", "True"),
    ((4, 4.0, 16, 1, 8), "d_model", "4.0")])
def test_init_params_names_a_size_that_is_not_allowed(ch, args, name, value):
    """a size of 0, −1 layers, a bool or a float raises ValueError naming the size exactly and its value"""
    raises_clearly(lambda: ch.init_params(*args), ValueError, value, names=(name,),
                   hint="refuse a size that is a bool, not an int, or below its least value (1; 0 for n_layers)")


def test_init_params_is_reproducible_by_seed(ch):
    """the same seed gives the same parameters; another seed gives others"""
    a = ch.init_params(5, 4, 6, 2, 7, seed=11)
    b = ch.init_params(5, 4, 6, 2, 7, seed=11)
    c = ch.init_params(5, 4, 6, 2, 7, seed=12)
    for (path, x), (_, y) in zip(leaves(a), leaves(b), strict=True):
        close(x, y, f"{path}, seed 11 twice")
    with check:
        assert not np.allclose(a["tok_emb"], c["tok_emb"]), "seeds 11 and 12 gave the same token embeddings"


# -- training really learns (budgets stated; all well under a second) ------------------------------------
PATTERNS = [([A, B], [-1, C]), ([A, A], [-1, D]), ([B, A], [-1, C])]


def test_two_layers_learn_the_three_patterns_in_100_epochs(ch):
    """d_model 8, 2 layers, d_ff 16, lr 0.3: A B → C, A A → D, B A → C all right after 100 epochs, loss < 0.05"""
    params = ch.init_params(4, 8, 16, 2, 8, seed=0)
    start = mean_loss(ch, PATTERNS, params)  # the learner's own loss of the untrained model
    trained, losses = ch.train_transformer(PATTERNS, params, 0.3, 100)
    close(np.shape(losses), (100,), "losses has one entry per epoch")
    close(losses[0], start, "losses[0] is the mean loss before any update")
    with check:
        assert share_predicted(ch, PATTERNS, trained) == 1.0, (
            f"accuracy after 100 epochs {share_predicted(ch, PATTERNS, trained):.2f}")
    with check:
        assert losses[-1] < 0.05, f"the mean loss before the last update is {losses[-1]:.4f}, expected < 0.05"
    final = mean_loss(ch, PATTERNS, trained)
    with check:
        assert final < losses[0] / 20, f"loss went from {losses[0]:.4f} to {final:.4f}"


def test_two_layers_learn_to_continue_a_b_c_d_in_100_epochs(ch):
    """trained 100 epochs (lr 0.3) on A B C D A B C D, generate continues [A] as A B C D A B C D"""
    params = ch.init_params(4, 8, 16, 2, 8, seed=0)
    data = [([A, B, C, D, A, B, C, D], [B, C, D, A, B, C, D, -1])]
    trained, _ = ch.train_transformer(data, params, 0.3, 100)
    got = ch.generate([A], trained, 7)
    close(got, [A, B, C, D, A, B, C, D], "generate([A], trained, 7)")


POSITIONS = [([A, B, A], [-1, -1, C]), ([B, A, A], [-1, -1, D])]


def test_with_positions_one_layer_learns_a_b_a_to_c_and_b_a_a_to_d(ch):
    """1 layer, learned positions, lr 0.3, 100 epochs: [A, B, A] → C and [B, A, A] → D"""
    params = ch.init_params(4, 8, 16, 1, 3, seed=0)
    trained, losses = ch.train_transformer(POSITIONS, params, 0.3, 100)
    with check:
        assert share_predicted(ch, POSITIONS, trained) == 1.0, "with position embeddings both sequences should be learned"
    with check:
        assert losses[-1] < 0.05, f"the mean loss before the last update is {losses[-1]:.4f}, expected < 0.05"


def test_without_positions_one_layer_cannot_tell_a_b_a_from_b_a_a(ch):
    """no position embeddings, 1 layer: the last position sees the same keys and values, for any weights"""
    for seed in range(3):
        params = ch.init_params(4, 8, 16, 1, 3, seed=seed)
        params["pos_emb"] = np.zeros_like(params["pos_emb"])
        first, _ = ch.transformer_forward([A, B, A], params)
        second, _ = ch.transformer_forward([B, A, A], params)
        close(first[-1], second[-1], f"last-position logits of [A, B, A] and [B, A, A], seed {seed}",
              rtol=1e-12, atol=1e-12)
    # Training cannot help: keep the positions at zero and the mean loss never gets below ln 2.
    losses = []
    for _ in range(100):
        results = [ch.transformer_loss_and_grads(ids, t, params) for ids, t in POSITIONS]
        losses.append(np.mean([loss for loss, _ in results]))
        mean = [(path, sum(get(g, path) for _, g in results) / 2) for path, _ in leaves(params)]
        for path, g in mean:
            if path != "['pos_emb']":
                get(params, path)[...] -= 0.3 * g
    with check:
        assert min(losses) >= np.log(2) - 1e-9, f"the mean loss reached {min(losses):.4f} < ln 2 without positions"


def test_without_positions_two_layers_can_tell_them_apart_through_the_mask(ch):
    """no position embeddings, 2 layers: the causal mask itself leaks order (position 0 sees only itself)"""
    params = ch.init_params(4, 8, 16, 2, 3, seed=0)
    params["pos_emb"] = np.zeros_like(params["pos_emb"])
    first, _ = ch.transformer_forward([A, B, A], params)
    second, _ = ch.transformer_forward([B, A, A], params)
    with check:
        assert np.max(np.abs(first[-1] - second[-1])) > 1e-6, (
            "two layers without positions gave identical last-position logits for [A, B, A] and [B, A, A]")


# -- bad input gets a clear error: the stubs give these checks (marked given; CONTRIBUTING.md) -------------
@pytest.mark.given
def test_parameters_of_the_wrong_shape_are_named(ch):
    """a mis-shaped W1, WO or gamma raises ValueError naming the parameter and its shape"""
    params = ch.init_params(4, 8, 16, 2, 8, seed=0)
    bad = copy_tree(params)
    bad["blocks"][1]["W1"] = np.zeros((7, 16))
    raises_clearly(lambda: ch.transformer_forward([0, 1], bad), ValueError, "W1", "(7, 16)")
    bad = copy_tree(params)
    bad["WO"] = np.zeros((8, 5))
    raises_clearly(lambda: ch.transformer_forward([0, 1], bad), ValueError, "WO", "(8, 5)")
    raises_clearly(lambda: ch.layer_norm(np.ones((2, 3)), np.ones(4), np.zeros(3)), ValueError, "(4,)", names=("gamma",))
    raises_clearly(lambda: ch.layer_norm(np.ones((2, 0)), np.ones(0), np.zeros(0)), ValueError, "feature axis")
    raises_clearly(lambda: ch.layer_norm(np.float64(2.0), np.ones(1), np.zeros(1)), ValueError, "feature axis")


@pytest.mark.given
def test_each_layer_names_what_does_not_fit(ch):
    """each layer function refuses a mis-shaped argument, naming it exactly (x, WQ, b1, d_out, beta…) and its shape"""
    x, W = np.ones((3, 4)), np.ones((4, 4))
    raises_clearly(lambda: ch.layer_norm(x, np.ones(4), np.zeros(5)), ValueError, "(5,)", names=("beta",))
    raises_clearly(lambda: ch.layer_norm_backward(x, np.ones(4), np.ones((3, 5))), ValueError, "(3, 5)",
                   names=("d_out",))
    raises_clearly(lambda: ch.attention_forward(np.ones(4), W, W, W), ValueError, "(4,)", names=("x",))
    for k, name in enumerate(("WQ", "WK", "WV")):
        Ws = [W, W, W]
        Ws[k] = np.ones((4, 3))
        raises_clearly(lambda Ws=Ws: ch.attention_forward(x, *Ws), ValueError, "(4, 3)", names=(name,))
    raises_clearly(lambda: ch.attention_forward(np.ones((0, 4)), W, W, W), ValueError,
                   hint="x with no rows has no position to attend from: the docstring says ValueError")
    good = [np.ones((4, 6)), np.zeros(6), np.ones((6, 4)), np.zeros(4)]
    raises_clearly(lambda: ch.ffn_forward(np.ones(4), *good), ValueError, "(4,)", names=("x",))
    for k, (name, bad) in enumerate(zip(("W1", "b1", "W2", "b2"), (np.ones((5, 6)), np.zeros(5), np.ones((6, 5)),
                                                                   np.zeros(5)), strict=True)):
        args = list(good)
        args[k] = bad
        raises_clearly(lambda args=args: ch.ffn_forward(x, *args), ValueError, str(bad.shape), names=(name,))
    raises_clearly(lambda: ch.ffn_forward(x, np.ones(6), *good[1:]), ValueError, "(6,)", names=("W1",))


@pytest.mark.given
def test_each_backward_names_a_d_out_of_the_wrong_shape(ch):
    """attention_backward and ffn_backward refuse a d_out that is not the output's shape, naming d_out (waits for the forward)"""
    x, W = np.ones((3, 4)), np.ones((4, 4))
    _, cache = ch.attention_forward(x, W, W, W)
    raises_clearly(lambda: ch.attention_backward(np.ones((3, 5)), cache), ValueError, "(3, 5)", names=("d_out",))
    _, cache = ch.ffn_forward(x, np.ones((4, 6)), np.zeros(6), np.ones((6, 4)), np.zeros(4))
    raises_clearly(lambda: ch.ffn_backward(np.ones((3, 5)), cache), ValueError, "(3, 5)", names=("d_out",))


def test_attention_takes_x_without_features_either_way_and_one_feature(ch):
    """attention_forward takes x of shape (3, 0) either way (refused or (3, 0)), and d_model = 1"""
    none = np.ones((0, 0))
    try:  # d_model = 0 is not refused by the docstring: a ValueError or a (3, 0) output, both are right
        empty = ch.attention_forward(np.ones((3, 0)), none, none, none)[0]
    except ValueError:
        empty = np.ones((3, 0))
    with check:
        assert np.shape(empty) == (3, 0), f"attention over x of shape (3, 0) returned shape {np.shape(empty)}, " \
            "not (3, 0) (a ValueError would do too)"
    out, _ = ch.attention_forward(np.ones((3, 1)), np.full((1, 1), 2.0), np.full((1, 1), 2.0), np.full((1, 1), 2.0))
    close(out, np.full((3, 1), 2.0), "attention over three equal values 2 (d_model = 1): every row is 2")


@pytest.mark.given
def test_params_that_are_not_the_documented_dict_are_named(ch):
    """transformer_forward names what is wrong with params: not a dict, a missing key, a 1-D table, a bad block"""
    params = ch.init_params(4, 8, 16, 1, 8, seed=0)
    raises_clearly(lambda: ch.transformer_forward([0, 1], list(params.values())), ValueError, "list", "tok_emb")
    raises_clearly(lambda: ch.transformer_forward([0, 1], {k: v for k, v in params.items() if k != "lnf_beta"}),
                   ValueError, "tok_emb", names=("lnf_beta",))
    for key, bad in (("tok_emb", np.ones(8)), ("pos_emb", np.ones(8)), ("pos_emb", np.ones((8, 5))),
                     ("lnf_gamma", np.ones(5)), ("lnf_beta", np.ones(5))):
        p = dict(params, **{key: bad})
        raises_clearly(lambda p=p: ch.transformer_forward([0, 1], p), ValueError, str(bad.shape), names=(key,))
    raises_clearly(lambda: ch.transformer_forward([0, 1], dict(params, WO=np.ones((8, 5)))), ValueError, "(8, 5)",
                   names=("WO",))
    raises_clearly(lambda: ch.transformer_forward([0, 1], dict(params, extra=np.ones(2))), ValueError, "extra",
                   hint="the message should list the keys that came, so an extra or misspelt one shows")
    raises_clearly(lambda: ch.transformer_forward([0, 1], dict(params, blocks={"0": params["blocks"][0]})), ValueError,
                   names=("blocks", "dict"))
    raises_clearly(lambda: ch.transformer_forward([0, 1], dict(params, blocks=[[1, 2]])), ValueError,
                   names=("blocks", "list"))
    raises_clearly(lambda: ch.transformer_forward([0, 1], dict(params, blocks=[dict(params["blocks"][0], extra=1.0)])),
                   ValueError, "extra")
    block = {k: v for k, v in params["blocks"][0].items() if k != "b2"}
    raises_clearly(lambda: ch.transformer_forward([0, 1], dict(params, blocks=[block])), ValueError, "W1",
                   names=("b2",))
    block = dict(params["blocks"][0], W1=np.ones(8))
    raises_clearly(lambda: ch.transformer_forward([0, 1], dict(params, blocks=[block])), ValueError, "(8,)",
                   names=("W1",))


@pytest.mark.given
def test_transformer_backward_names_a_d_logits_of_the_wrong_shape(ch):
    """transformer_backward with a (2, 5) d_logits for (2, 4) logits raises ValueError naming d_logits"""
    _, cache = ch.transformer_forward([0, 1], ch.init_params(4, 8, 16, 1, 8, seed=0))
    raises_clearly(lambda: ch.transformer_backward(np.ones((2, 5)), cache), ValueError, "(2, 5)", names=("d_logits",))


@pytest.mark.given
@pytest.mark.parametrize(("epochs", "lr"), [(-1, 0.1), (2.0, 0.1), (True, 0.1), (2, float("nan")), (2, float("inf"))])
def test_train_transformer_refuses_epochs_and_rates_that_are_not_allowed(ch, epochs, lr):
    """epochs −1, 2.0 or True, or a learning rate that is not finite, raise ValueError naming it and its value"""
    params = ch.init_params(4, 8, 16, 1, 8, seed=0)
    bad, name = (lr, "lr") if type(epochs) is int and epochs == 2 else (epochs, "epochs")
    raises_clearly(lambda: ch.train_transformer([([0, 1], [1, 2])], params, lr, epochs), ValueError, str(bad),
                   names=(name,))


def test_zero_epochs_train_nothing(ch):
    """train_transformer with epochs = 0 returns the parameters unchanged and no losses"""
    params = ch.init_params(4, 8, 16, 1, 8, seed=0)
    new, losses = ch.train_transformer([([0, 1], [1, 2])], params, 0.1, 0)
    close(np.shape(losses), (0,), "the losses of 0 epochs")
    for (path, a), (_, b) in zip(leaves(new), leaves(params), strict=True):
        close(a, b, f"params{path} after 0 epochs")


@pytest.mark.given
@pytest.mark.parametrize("n_new", [-1, 2.0, True])
def test_generate_refuses_a_count_that_is_not_a_whole_number(ch, n_new):
    """generate with n_new −1, 2.0 or True raises ValueError naming n_new and its value"""
    params = ch.init_params(4, 8, 16, 1, 8, seed=0)
    raises_clearly(lambda: ch.generate([0, 1], params, n_new), ValueError, str(n_new), names=("n_new",))


def test_generating_no_new_token_gives_the_prompt(ch):
    """generate with n_new = 0 gives the prompt back"""
    params = ch.init_params(4, 8, 16, 1, 8, seed=0)
    close(ch.generate([0, 1], params, 0), [0, 1], "generate([0, 1], params, 0): the prompt itself")


@pytest.mark.given
def test_a_sequence_longer_than_max_len_is_refused(ch):
    """9 tokens for max_len 8 raises ValueError naming both; so does generating past max_len"""
    params = ch.init_params(4, 8, 16, 1, 8, seed=0)
    raises_clearly(lambda: ch.transformer_forward([0] * 9, params), ValueError, "9", "max_len")
    raises_clearly(lambda: ch.generate([0, 1, 2], params, 6), ValueError, "max_len")
    short = ch.init_params(4, 8, 16, 1, 5, seed=0)  # max_len 5, d_model 8: max_len is pos_emb's number of rows
    raises_clearly(lambda: ch.generate([0, 1, 2], short, 3), ValueError, "max_len",
                   hint="max_len is params['pos_emb'].shape[0], the rows of the position table")


@pytest.mark.given
def test_empty_data_is_refused(ch):
    """train_transformer with no examples raises ValueError saying the data is empty"""
    params = ch.init_params(4, 8, 16, 1, 8, seed=0)
    raises_clearly(lambda: ch.train_transformer([], params, 0.1, 3), ValueError, "empty")


@pytest.mark.given
def test_targets_outside_the_vocabulary_are_refused(ch):
    """a target ≥ vocab, a target list of the wrong length, or no target at all raises ValueError"""
    params = ch.init_params(4, 8, 16, 1, 8, seed=0)
    raises_clearly(lambda: ch.transformer_loss_and_grads([0, 1], [2, 4], params), ValueError, "[4]", "vocab",
                   hint="a target must lie below vocab: 4 is already outside a vocabulary of 4")
    raises_clearly(lambda: ch.transformer_loss_and_grads([0, 1], [[2, 3]], params), ValueError, "(1, 2)",
                   names=("targets",))
    raises_clearly(lambda: ch.transformer_loss_and_grads([0, 1], [2.0, 3.0], params), ValueError, "float64",
                   names=("targets",))
    raises_clearly(lambda: ch.transformer_loss_and_grads([0, 1], [2], params), ValueError, "targets")
    raises_clearly(lambda: ch.transformer_loss_and_grads([0, 1], [-1, -1], params), ValueError, "target")


@pytest.mark.given
def test_token_ids_outside_the_vocabulary_are_refused(ch):
    """an id ≥ vocab, a negative id or an empty sequence raises ValueError"""
    params = ch.init_params(4, 8, 16, 1, 8, seed=0)
    raises_clearly(lambda: ch.transformer_forward([0, 7], params), ValueError, "7", "vocab")
    raises_clearly(lambda: ch.transformer_forward([0, 4], params), ValueError, "4", "vocab",
                   hint="an id must lie below vocab: 4 is already outside a vocabulary of 4")
    raises_clearly(lambda: ch.transformer_forward([[0, 1]], params), ValueError, "(1, 2)", names=("ids",))
    raises_clearly(lambda: ch.transformer_forward([0.0, 1.0], params), ValueError, "float64", names=("ids",))
    raises_clearly(lambda: ch.embed([-1, 0], params), ValueError, "-1")
    raises_clearly(lambda: ch.transformer_forward([], params), ValueError, "empty")
    raises_clearly(lambda: ch.init_params(4, 0, 16, 1, 8), ValueError, "d_model")
