"""Chapter 7: Backpropagation — the book's Example 3 worksheet (full backprop through attention), and beyond.

Input "A B", target C (2), learning rate 0.1, W_Q = W_K = W_V = 0.1·I and the explicit 2×4
W_O = [[0.1, 0, 0, 0], [0, 0, 0.1, 0]]; causal attention, the context is the last position's output.
Each worksheet step is one test below (or one case of a parametrized one), named as the claim it checks;
the numbers come from reference/chapter07_backprop.toml. The worksheet's Q = K and X = I hide a gradient taken with
the wrong factor, so steps 7.9–7.14 also check a worksheet-sized case with Q ≠ K and other embeddings (stored in
tests/snapshots/chapter07.npz). A step that runs backward_trace waits for linear_backward, softmax_backward or
attention_backward when one of them raises on its own step's inputs too: that step shows the error first. Beyond the
worksheet, every backward function is checked against central-difference gradients stored in the same snapshot
(written from solutions/), on seeded inputs.
"""

import numpy as np
import pytest
from pytest_check import check

from kata import close, expect, load, numerical_gradient, raises_clearly, snapshot, step_case

CHAPTER = 7
RNG = np.random.default_rng(7)
TOY_E = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])  # A, B, C, D, written out here
NAMES = ("WQ", "WK", "WV", "WO")
NUM = {"rtol": 1e-5, "atol": 1e-8}  # central differences are good to about 1e-10 at these magnitudes


# -- stored cases (tests/snapshots/chapter07.npz: inputs, central differences of the reference, mistakes) --
SNAP = snapshot(CHAPTER)
COLUMNS = "the average taken down each column (axis 0) instead of along each row"
DIAGONAL_ONLY = ("only the Jacobian's diagonal: each g_i scaled by its own s_i(1 − s_i), the cross terms through the "
                 "shared sum lost (every s_j depends on every x_i)")
KEYS_FOR_QUERIES = "the keys where the queries belong: dK built from K itself (which factor of R multiplies K?)"
DQ_FROM_K_TURNED = ("dQ built from K's transpose: the shapes fit only because K is square here (which way round does "
                    "K sit in the scores R, and which way does the gradient of their left factor need it?)")
TRANSPOSED_DQ = "transposed gradient: dR turned the wrong way for dQ (does query i own a row or a column of R?)"
NO_FIT = ("a transpose missing or misplaced: a product whose shapes do not fit (each gradient is the only product of "
          "the other two matrices that has its own matrix's shape)")

# Worksheet-sized (two positions, width 2) but Q ≠ K, V not the identity: a dK taken with K shows here.
ASYM = {n: SNAP[f"asym_attention/{n}"] for n in ("Q", "K", "V", "weights", "d_output")}
ASYM_M = SNAP.tree("asym_attention/mistakes")
# The same two tokens with embeddings that are not the identity and four different matrices: dQ for dW_Q shows.
ASYM_TABLE, ASYM_PARAMS = SNAP["asym_model/table"], SNAP.tree("asym_model/params")
ASYM_IDS, ASYM_TARGET = SNAP["asym_model/ids"].tolist(), SNAP.number("asym_model/target")

# The functions backward_trace may call, each with the step whose inputs it is tried on when the trace raises.
HELPERS = (("linear_backward", "7.2", ("context", "WO", "dlogits")), ("softmax_backward", "7.7", ("probs", "dprobs")),
           ("attention_backward", "7.9", ("Q", "K", "V", "weights", "d_output")))


def learner_loss(ch, ids, target, params, table=None):
    """The learner's own loss of ``params`` on one example (from backward)."""
    kwargs = {} if table is None else {"embeddings": table}
    return float(ch.backward(ids, target, {n: np.asarray(params[n], dtype=np.float64) for n in NAMES}, **kwargs)[0])


def model(ws):
    return list(ws.inputs["ids"]), ws.input("target"), {name: ws.input(name) for name in NAMES}


def trace(ch, ids, target, params):
    """``ch.backward_trace(ids, target, params)``, or what it waits for when it raises.

    When the trace raises, a backward function that raises on its own step's inputs too is named as what the step
    waits for (its own step shows the error first), instead of blaming this step.
    """
    try:
        return ch.backward_trace(ids, target, params)
    except NotImplementedError:
        raise
    except Exception as err:
        if type(err).__module__ == "kata.judge.proxy":  # the call did not return or ended its process: say so
            raise
        broken = []
        for name, step_id, args in HELPERS:
            step = load(CHAPTER).step(step_id)
            try:
                getattr(ch, name)(*(step.input(a) for a in args))
            except NotImplementedError:
                continue
            except Exception as probe:
                if type(probe).__module__ == "kata.judge.proxy":
                    raise
                broken.append(f"{name} (step {step_id}, where it raises {type(probe).__name__} on its own)")
        if broken:
            raise NotImplementedError(f"backward_trace raised {type(err).__name__}: it waits for "
                                      + ", ".join(broken)) from err
        raise


def run_linear_backward(ch, ws, X, W, dY):
    """``ch.linear_backward(X, W, dY)`` on shapes that fit Y = X W, under this step.

    A ValueError from inside it is a product whose shapes do not fit, named as such.
    """
    try:
        return ch.linear_backward(X, W, dY)
    except NotImplementedError:
        raise
    except ValueError as err:
        if type(err).__module__ == "kata.judge.proxy":
            raise
        where = getattr(err, "location", "")
        pytest.fail(f"{ws.id} {ws.title}\n  input     X {np.shape(X)}, W {np.shape(W)}, dY {np.shape(dY)} (they fit "
                    f"Y = X W)\n  got       ValueError: {err}" + (f"\n  where     {where}" if where else "")
                    + f"\n  looks like: {NO_FIT}", pytrace=False)


# -- the worksheet, step by step -------------------------------------------------------------------
@pytest.mark.step("7.1")
def test_dlogits_are_the_probabilities_with_one_taken_off_at_c(ch, ws):
    ids, target, params = model(ws)
    expect(ws, trace(ch, ids, target, params)["dlogits"])


@pytest.mark.step("7.2")
def test_dwo_is_the_context_times_dlogits(ch, ws):
    _, dWO = run_linear_backward(ch, ws, ws.input("context"), ws.input("WO"), ws.input("dlogits"))
    expect(ws, dWO, mistakes=[("transposed gradient: shape (vocab, d_v), where W_O is (d_v, vocab)", ws.exact.T)])


@pytest.mark.step("7.3")
def test_dcontext_collects_the_logit_gradients_of_a_and_c_through_wo(ch, ws):
    dcontext, _ = run_linear_backward(ch, ws, ws.input("context"), ws.input("WO"), ws.input("dlogits"))
    expect(ws, dcontext)


@pytest.mark.step("7.4")
def test_only_the_last_position_receives_a_gradient(ch, ws):
    ids, target, params = model(ws)
    expect(ws, trace(ch, ids, target, params)["d_output"])


@pytest.mark.step("7.5")
def test_dweights_is_doutput_times_v_transposed(ch, ws):
    d_weights, _ = run_linear_backward(ch, ws, ws.input("weights"), ws.input("V"), ws.input("d_output"))
    expect(ws, d_weights)


@pytest.mark.step("7.6")
def test_the_softmax_backward_subtracts_the_weighted_average_of_the_gradient(ch, ws):
    s, g = ws.input("probs"), ws.input("dprobs")
    got = np.asarray(ch.softmax_backward(s, g), dtype=np.float64)
    if got.shape != s.shape:
        pytest.fail(f"softmax_backward returned shape {got.shape} for probs of shape {s.shape}", pytrace=False)
    implied = g - got / s  # softmax_backward = s * (g - dot), so each entry gives the dot back
    for i in range(len(s)):
        # only the Jacobian's diagonal, g_i s_i (1 − s_i), reads back as g_i − g_i (1 − s_i) = s_i g_i
        expect(ws, implied[i], inputs={"probs": s, "dprobs": g},
               derived={"your result, softmax_backward(probs, dprobs)": got,
                        f"dprobs[{i}] − result[{i}] / probs[{i}], read back from it (the got below)": implied[i]},
               mistakes=[(DIAGONAL_ONLY, s[i] * g[i])])


@pytest.mark.step("7.7")
def test_through_the_softmax_the_two_scores_get_equal_and_opposite_gradients(ch, ws):
    expect(ws, ch.softmax_backward(ws.input("probs"), ws.input("dprobs")))


@pytest.mark.step("7.8")
def test_through_the_scaling_the_raw_score_gradient_is_divided_by_root_two(ch, ws):
    ids, target, params = model(ws)
    expect(ws, trace(ch, ids, target, params)["d_raw_scores"])


def asym_attention(ch):
    """attention_backward on the worksheet-sized case with Q ≠ K (ASYM)."""
    return ch.attention_backward(*ASYM.values())


@pytest.mark.step("7.9")
def test_dq_moves_only_the_query_of_b(ch, ws):
    dQ, _, _ = ch.attention_backward(ws.input("Q"), ws.input("K"), ws.input("V"), ws.input("weights"),
                                     ws.input("d_output"))
    expect(ws, dQ)
    close(asym_attention(ch)[0], SNAP["asym_attention/dQ"], "7.9 dQ for two positions with Q ≠ K (central differences)",
          **NUM, inputs=ASYM, kind="array",
          mistakes=[("no 1/√d_k in the backward pass", ASYM_M["dQ_unscaled"]),
                    ("multiplied by √d_k ('unscale' taken literally)", ASYM_M["dQ_scaled_up"]),
                    (TRANSPOSED_DQ, ASYM_M["dQ_transposed"]), (DQ_FROM_K_TURNED, ASYM_M["dQ_K_transposed"])])


@pytest.mark.step("7.10")
def test_dk_of_a_points_along_the_query_of_b(ch, ws):
    _, dK, _ = ch.attention_backward(ws.input("Q"), ws.input("K"), ws.input("V"), ws.input("weights"),
                                     ws.input("d_output"))
    expect(ws, np.asarray(dK)[0])
    close(asym_attention(ch)[1], SNAP["asym_attention/dK"],
          "7.10 dK for two positions with Q ≠ K (the worksheet's Q = K hides which one belongs here)",
          **NUM, inputs=ASYM, kind="array",
          mistakes=[(KEYS_FOR_QUERIES, ASYM_M["dK_keys"]), ("no 1/√d_k in the backward pass", ASYM_M["dK_unscaled"]),
                    ("transposed gradient: dR not turned for dK (does key j own a row or a column of R?)", ASYM_M["dK_transposed"])])


@pytest.mark.step("7.11")
def test_dv_of_a_is_its_weight_times_the_output_gradient(ch, ws):
    _, _, dV = ch.attention_backward(ws.input("Q"), ws.input("K"), ws.input("V"), ws.input("weights"),
                                     ws.input("d_output"))
    expect(ws, np.asarray(dV)[0])
    close(asym_attention(ch)[2], SNAP["asym_attention/dV"], "7.11 dV for two positions with V ≠ I (central differences)",
          **NUM, inputs=ASYM, kind="array", mistakes=[("dV without the transpose: in H = A V, which factor plays rule 1's X?", ASYM_M["dV_transposed"])])


def _itself(name):
    g = "d" + name[1]
    return f"{g} itself handed back as the projection's gradient: the input X left out"


@pytest.mark.parametrize("name", [
    step_case("7.12", "dwq_equals_dq_because_the_embeddings_are_the_identity", "WQ"),
    step_case("7.13", "dwk_equals_dk", "WK"),
    step_case("7.14", "dwv_is_two_hundred_times_larger_than_dwq", "WV"),
])
def test_backward_gives_each_weight_gradient(ch, ws, name):
    ids, target, params = model(ws)
    _, grads = ch.backward(ids, target, params)
    expect(ws, grads[name])
    _, grads = ch.backward(ASYM_IDS, ASYM_TARGET, ASYM_PARAMS, embeddings=ASYM_TABLE)
    want, m = SNAP[f"asym_model/grads/{name}"], SNAP.tree("asym_model/mistakes")
    mistakes = [(_itself(name), m[f"{name}_is_d{name[1]}"]), ("transposed gradient", want.T)]
    if name in ("WQ", "WK"):
        mistakes.append(("no 1/√d_k in the backward pass", want * np.sqrt(2)))
    if name == "WK":
        mistakes.insert(0, (KEYS_FOR_QUERIES, m["WK_keys"]))
    close(grads[name], want, f"{ws.id} dL/d{name} for \"A B\" → C with embeddings that are not the identity and "
          "W_Q ≠ W_K (central differences)", **NUM, kind="array", mistakes=mistakes,
          inputs={"embeddings": ASYM_TABLE, "ids": ASYM_IDS, "target": ASYM_TARGET, **ASYM_PARAMS})


def _stepped(ch, ws):
    ids, target, params = model(ws)
    new_params, loss = ch.train_step(ids, target, params, ws.input("lr"))
    return new_params, loss


@pytest.mark.parametrize("name", [
    step_case("7.15", "one_step_nudges_the_query_of_b_by_two_hundred_thousandths", "WQ"),
    step_case("7.16", "one_step_nudges_wk", "WK"),
    step_case("7.17", "one_step_moves_wv_towards_c", "WV"),
    step_case("7.18", "one_step_moves_all_eight_entries_of_wo", "WO"),
])
def test_one_step_moves_each_weight(ch, ws, name):
    new_params, _ = _stepped(ch, ws)
    expect(ws, new_params[name])


@pytest.mark.step("7.19")
def test_after_the_step_the_values_carry_b_s_context_towards_c(ch, ws):
    ids, target, _ = model(ws)
    new_params, _ = _stepped(ch, ws)
    new = {n: np.asarray(new_params[n], dtype=np.float64) for n in NAMES}
    context = ch.backward_trace(ids, target, new)["context"]
    expect(ws, context, inputs={**ws.inputs, **{f"new {n} (your train_step)": new[n] for n in NAMES[:3]}})


@pytest.mark.step("7.20")
def test_one_full_step_lowers_the_loss_more_than_training_wo_alone(ch, ws):
    ids, target, _ = model(ws)
    new_params, loss = _stepped(ch, ws)
    after = learner_loss(ch, ids, target, new_params)
    expect(ws, [loss, after], inputs={**ws.inputs, "loss after (this test's forward pass)": after})


# -- beyond the worksheet: numerical gradients on other shapes ---------------------------------------
@pytest.mark.parametrize("case", range(SNAP.count("softmax_backward")))
def test_softmax_backward_matches_numerical_gradients(ch, case):
    """softmax_backward equals central differences of sum(G * softmax(x)), row by row (1×5, 3×4, 6×3, 4×7)"""
    k = f"softmax_backward/{case}"
    s, G = SNAP[f"{k}/probs"], SNAP[f"{k}/dprobs"]
    got = ch.softmax_backward(s, G)
    close(got, SNAP[f"{k}/numerical"], f"softmax_backward for {s.shape[0]} rows of {s.shape[1]}", **NUM, kind="array",
          mistakes=[("the dot was left out: step 7.6's shared number is missing", SNAP[f"{k}/mistakes/no_dot"]),
                    ("not multiplied by s: the softmax's own outputs left out", SNAP[f"{k}/mistakes/no_s"]),
                    (COLUMNS, SNAP[f"{k}/mistakes/columns"])])


def test_softmax_backward_of_a_single_vector(ch):
    """softmax_backward works on one 1-D softmax too"""
    got = ch.softmax_backward(SNAP["softmax_backward_vector/probs"], SNAP["softmax_backward_vector/dprobs"])
    close(got, SNAP["softmax_backward_vector/numerical"], "softmax_backward of a (6,) vector", **NUM, kind="array")


@pytest.mark.parametrize(("n", "d_in", "d_out"), [(3, 4, 2), (1, 5, 3), (6, 3, 3), (4, 2, 5)])
def test_linear_backward_matches_numerical_gradients(ch, n, d_in, d_out):
    """dX and dW equal central differences of sum(G * (X @ W)), non-square shapes"""
    X, W, G = RNG.normal(size=(n, d_in)), RNG.normal(size=(d_in, d_out)), RNG.normal(size=(n, d_out))
    dX, dW = ch.linear_backward(X, W, G)
    close(dX, numerical_gradient(lambda v: float((G * (v @ W)).sum()), X), f"dX for X {X.shape}, W {W.shape}", **NUM)
    transposed = [("transposed gradient", (X.T @ G).T)] if d_in == d_out else []
    close(dW, numerical_gradient(lambda v: float((G * (X @ v)).sum()), W), f"dW for X {X.shape}, W {W.shape}", **NUM,
          mistakes=transposed)


@pytest.mark.parametrize("case", range(SNAP.count("attention_backward")))
def test_attention_backward_matches_numerical_gradients(ch, case):
    """dQ, dK, dV equal central differences of sum(G * causal_attention(Q, K, V)), every row with a gradient"""
    k = f"attention_backward/{case}"
    Q, K, V, A, G = (SNAP[f"{k}/{n}"] for n in ("Q", "K", "V", "weights", "d_output"))
    n, d_k, d_v = Q.shape[0], Q.shape[1], V.shape[1]
    dQ, dK, dV = ch.attention_backward(Q, K, V, A, G)
    m = SNAP.tree(f"{k}/mistakes")
    close(dQ, SNAP[f"{k}/dQ"], f"dQ for {n} positions, d_k {d_k}", **NUM, kind="array",
          mistakes=[("no 1/√d_k in the backward pass", m["dQ_unscaled"]), ("transposed gradient: dR turned the wrong way for dQ (does query i own a row or a column of R?)", m["dQ_transposed"])])
    close(dK, SNAP[f"{k}/dK"], f"dK for {n} positions, d_k {d_k}", **NUM, kind="array",
          mistakes=[("no 1/√d_k in the backward pass", m["dK_unscaled"]), ("transposed gradient: dR not turned for dK (does key j own a row or a column of R?)", m["dK_transposed"])])
    close(dV, SNAP[f"{k}/dV"], f"dV for {n} positions, d_v {d_v}", **NUM, kind="array",
          mistakes=[("dV without the transpose: in H = A V, which factor plays rule 1's X?", m["dV_transposed"])])


@pytest.mark.parametrize("case", range(SNAP.count("backward")))
def test_backward_matches_numerical_gradients_of_the_whole_model(ch, case):
    """backward's loss and all four gradients equal central differences of the loss, random model and sequence"""
    k = f"backward/{case}"
    table, params = SNAP[f"{k}/table"], SNAP.tree(f"{k}/params")
    ids, target = SNAP[f"{k}/ids"].tolist(), SNAP.number(f"{k}/target")
    d_k = params["WK"].shape[1]
    loss, grads = ch.backward(ids, target, params, embeddings=table)
    with check:
        assert sorted(grads) == sorted(NAMES), f"grads should be keyed like params {sorted(NAMES)}, got {sorted(grads)}"
    close(loss, SNAP.number(f"{k}/loss"), f"loss for ids {ids}, target {target}", kind="float")
    shapes = (f"seq {len(ids)}, d_model {table.shape[1]}, d_k {d_k}, d_v {params['WV'].shape[1]}, "
              f"vocab {table.shape[0]}")
    for name in NAMES:
        want = SNAP[f"{k}/grads/{name}"]
        mistakes = [("transposed gradient", want.T)] if want.shape[0] == want.shape[1] else []
        if name in ("WQ", "WK"):
            mistakes.append(("no 1/√d_k in the backward pass", want * np.sqrt(d_k)))
        close(grads[name], want, f"dL/d{name}, {shapes}", **NUM, kind="array", mistakes=mistakes)


def test_backward_trace_is_consistent_with_numerical_gradients(ch):
    """backward_trace's dQ, dK, dV and the score gradients agree with central differences (5 positions)"""
    table, params = SNAP["trace/table"], SNAP.tree("trace/params")
    ids, target = SNAP["trace/ids"].tolist(), SNAP.number("trace/target")
    t = ch.backward_trace(ids, target, params, embeddings=table)
    close(t["dQ"], SNAP["trace/dQ"], "trace dQ", **NUM)
    close(t["dK"], SNAP["trace/dK"], "trace dK", **NUM)
    close(t["dV"], SNAP["trace/dV"], "trace dV", **NUM)
    d_scores = SNAP["trace/d_scores"]
    close(t["d_scores"], d_scores, "trace d_scores (gradient of the scaled scores)", **NUM)
    close(t["d_raw_scores"], SNAP["trace/d_raw_scores"], "trace d_raw_scores (gradient of Q Kᵀ)", **NUM,
          mistakes=[("no 1/√d_k in the backward pass", d_scores), ("multiplied by √d_k", d_scores * 2.0)])
    d_output = SNAP["trace/d_output"]
    close(t["d_output"], d_output, "trace d_output: only the last row",
          mistakes=[("the gradient went to the first position instead of the last", d_output[::-1])])


# -- beyond the worksheet: training ------------------------------------------------------------------
@pytest.mark.parametrize("case", range(SNAP.count("full_step")))
def test_a_full_step_lowers_the_loss_on_random_models(ch, case):
    """train_step moves all four matrices by −η·(numerical gradient) and lowers the loss (random models, widths 3)"""
    k = f"full_step/{case}"
    table, params = SNAP[f"{k}/table"], SNAP.tree(f"{k}/params")
    ids, target, lr = SNAP[f"{k}/ids"].tolist(), SNAP.number(f"{k}/target"), SNAP.number(f"{k}/lr")
    before = SNAP.number(f"{k}/loss")
    new_params, loss = ch.train_step(ids, target, params, lr, embeddings=table)
    close(loss, before, "the loss train_step returns (before its update)", kind="float")
    for name in NAMES:
        g = SNAP[f"{k}/grads/{name}"]
        close(new_params[name], SNAP[f"{k}/stepped/{name}"], f"new {name} after one step with lr 0.01", **NUM,
              mistakes=[("the update adds the gradient instead of subtracting it", params[name] + lr * g),
                        ("not updated", params[name])])
    after = learner_loss(ch, ids, target, new_params, table)
    with check:
        assert after < before, f"the loss rose from {before:.9f} to {after:.9f} after one step"


def test_repeated_steps_drive_the_probability_of_c_towards_one(ch):
    """200 steps with learning rate 5 on "A B" → C take P(C) from 0.25 to above 0.99, the loss falling every step"""
    params = {"WQ": 0.1 * np.eye(2), "WK": 0.1 * np.eye(2), "WV": 0.1 * np.eye(2),
              "WO": np.array([[0.1, 0.0, 0.0, 0.0], [0.0, 0.0, 0.1, 0.0]])}
    losses = []
    for _ in range(200):
        params, loss = ch.train_step([0, 1], 2, params, 5.0)
        losses.append(loss)
    p_c = np.exp(-learner_loss(ch, [0, 1], 2, params))  # P(C) = exp(−loss), from the learner's own backward
    with check:
        assert all(b < a for a, b in zip(losses, losses[1:], strict=False)), "the loss did not fall at every step"
    with check:
        assert p_c > 0.99, f"after 200 steps P(C) = {p_c:.4f}, expected above 0.99"


def test_train_step_and_backward_leave_their_inputs_alone(ch):
    """backward and train_step do not modify params (train_step returns a new dict of new arrays)"""
    params = {"WQ": 0.1 * np.eye(2), "WK": 0.1 * np.eye(2), "WV": 0.1 * np.eye(2),
              "WO": np.array([[0.1, 0.0, 0.0, 0.0], [0.0, 0.0, 0.1, 0.0]])}
    # the judge fails a call that changes one of its arguments in place (ChangedItsInput)
    ch.backward([0, 1], 2, params)
    new_params, _ = ch.train_step([0, 1], 2, params, 0.1)
    with check:
        assert new_params is not params, "train_step must return a new dict, not the one it was given"
    with check:
        assert sorted(new_params) == sorted(NAMES), f"new_params should have the keys {NAMES}, got {sorted(new_params)}"


def test_backward_functions_leave_their_inputs_alone(ch):
    """softmax_backward, linear_backward and attention_backward do not modify their inputs"""
    Q, K, V, G, A = (SNAP[f"untouched/{n}"] for n in ("Q", "K", "V", "d_output", "weights"))
    # the judge fails a call that changes one of its arguments in place (ChangedItsInput)
    ch.softmax_backward(A, G @ K.T)
    ch.linear_backward(Q, K.T, A)
    ch.attention_backward(Q, K, V, A, G)


# -- bad input gets a clear error ------------------------------------------------------------------
def _toy():
    return {"WQ": 0.1 * np.eye(2), "WK": 0.1 * np.eye(2), "WV": 0.1 * np.eye(2),
            "WO": np.array([[0.1, 0.0, 0.0, 0.0], [0.0, 0.0, 0.1, 0.0]])}


def test_a_target_outside_the_vocabulary_is_refused(ch):
    """target 4 or −1 (the vocabulary is A, B, C, D) raises IndexError naming the target"""
    raises_clearly(lambda: ch.backward([0, 1], 4, _toy()), IndexError, "4")
    raises_clearly(lambda: ch.backward([0, 1], -1, _toy()), IndexError, "-1")
    raises_clearly(lambda: ch.train_step([0, 1], 4, _toy(), 0.1), IndexError, "4")


def test_token_ids_outside_the_embedding_table_are_refused(ch):
    """ids [0, 7] raise IndexError naming 7"""
    raises_clearly(lambda: ch.backward([0, 7], 2, _toy()), IndexError, "7")
    raises_clearly(lambda: ch.train_step([0, 7], 2, _toy(), 0.1), IndexError, "7")


def test_parameters_of_mismatched_shapes_are_refused(ch):
    """a W_K narrower than W_Q, or a W_O with 3 columns for 4 tokens, raises ValueError naming the matrix"""
    raises_clearly(lambda: ch.backward([0, 1], 2, dict(_toy(), WK=np.ones((2, 3)))), ValueError, "WK")
    raises_clearly(lambda: ch.backward([0, 1], 2, dict(_toy(), WO=np.ones((2, 3)))), ValueError, "WO")
    raises_clearly(lambda: ch.train_step([0, 1], 2, dict(_toy(), WV=np.ones((3, 2))), 0.1), ValueError, "WV")


def test_a_negative_learning_rate_is_refused(ch):
    """train_step with lr −0.1 raises ValueError (that would climb the loss)"""
    raises_clearly(lambda: ch.train_step([0, 1], 2, _toy(), -0.1), ValueError, "-0.1")


@pytest.mark.given
def test_backward_functions_refuse_shapes_that_do_not_fit(ch):
    """softmax_backward, linear_backward and attention_backward name the shapes that do not fit"""
    raises_clearly(lambda: ch.softmax_backward(np.ones((2, 3)) / 3, np.ones((3, 2))), ValueError, "(2, 3)", "(3, 2)")
    raises_clearly(lambda: ch.linear_backward(np.ones((3, 2)), np.ones((3, 4)), np.ones((3, 4))), ValueError,
                   "(3, 2)", "(3, 4)")
    raises_clearly(lambda: ch.attention_backward(np.ones((3, 2)), np.ones((3, 2)), np.ones((3, 2)),
                                                 np.ones((2, 2)) / 2, np.ones((3, 2))), ValueError, "(2, 2)")


@pytest.mark.given
def test_an_array_that_is_not_2d_is_named(ch):
    """a 1-D X, W or dY (linear_backward), or Q, K, V, weights or d_output (attention_backward), is named exactly"""
    m = np.ones((3, 2))
    raises_clearly(lambda: ch.linear_backward(np.ones(2), np.ones((2, 4)), np.ones((1, 4))), ValueError, "(2,)",
                   names=("X",))
    raises_clearly(lambda: ch.linear_backward(np.ones((3, 2)), np.ones(2), np.ones((3, 1))), ValueError, "(2,)",
                   names=("W",))
    raises_clearly(lambda: ch.linear_backward(np.ones((3, 2)), np.ones((2, 4)), np.ones(4)), ValueError, "(4,)",
                   names=("dY",))
    args = {"Q": m, "K": m, "V": m, "weights": np.ones((3, 3)) / 3, "d_output": m}
    for name in args:
        bad = dict(args, **{name: np.ones(2)})
        raises_clearly(lambda bad=bad: ch.attention_backward(*bad.values()), ValueError, "(2,)", names=(name,))


@pytest.mark.given
@pytest.mark.parametrize("wrong", ["K", "V", "weights", "d_output"])
def test_attention_backward_refuses_any_one_shape_that_does_not_fit(ch, wrong):
    """one wrong shape among K, V, weights and d_output (the others right) raises ValueError naming the shapes"""
    shapes = {"Q": (3, 2), "K": (3, 2), "V": (3, 4), "weights": (3, 3), "d_output": (3, 4)}
    shapes[wrong] = {"K": (3, 5), "V": (2, 4), "weights": (3, 2), "d_output": (3, 1)}[wrong]
    args = [np.ones(shapes[k]) for k in ("Q", "K", "V", "weights", "d_output")]
    raises_clearly(lambda: ch.attention_backward(*args), ValueError, str(shapes[wrong]), names=("weights", "d_output"),
                   hint="check every shape at the start of attention_backward, each condition refusing on its own "
                   "(join them with or), and name all five arrays: a later error from linear_backward does not")


def test_backward_trace_keeps_the_forward_pass(ch):
    """backward_trace holds chapter 5's forward dict too: X, Q, K, V, weights, context, probs, beside the loss"""
    ids, target = [0, 1], 2
    t = ch.backward_trace(ids, target, _toy())
    missing = [k for k in ("X", "Q", "K", "V", "weights", "context", "probs", "loss", "dlogits") if k not in t]
    assert not missing, f"backward_trace lacks {missing}: it must return the forward dict plus the loss and gradients"
    close(t["X"], TOY_E[ids], "backward_trace(...)['X'] (the embedded tokens)")
    close(np.asarray(t["probs"])[target], np.exp(-float(t["loss"])), "probs[target] = exp(−loss)")


def test_train_step_copies_entries_it_does_not_train(ch):
    """train_step returns every entry of params; one it does not train (here 'note') comes back unchanged"""
    params = dict(_toy(), note=np.arange(3.0))
    new_params, _ = ch.train_step([0, 1], 2, params, 0.1)
    assert "note" in new_params, "train_step must copy the entries of params it does not train"
    close(new_params["note"], np.arange(3.0), "new_params['note'], copied unchanged")
