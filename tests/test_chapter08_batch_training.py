"""Chapter 8: Batch Training — the book's Example 4 worksheet, and beyond.

The batch A B → C, A A → D, B A → C on the toy model (W_Q = W_K = W_V = 0.1·I, explicit 2×4 W_O, causal
attention, context from the last position), learning rate 0.1. Each worksheet step is one test below
(or one case of a parametrized one), named as the claim it checks; the numbers come from
reference/chapter08_batch_training.toml, where the worksheet's many slips are recorded as errata. Steps 8.14–8.16 train all four matrices until every
pattern is right: 200 epochs at η = 0.1 (the last pattern flips after 158 updates).
"""

import numpy as np
import pytest

from kata import close, expect, load, raises_clearly, snapshot, step_case

CHAPTER = 8
RNG = np.random.default_rng(8)
NAMES = ("WQ", "WK", "WV", "WO")
TOY_TABLE = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])  # A, B, C, D as in chapter 3


# -- the worksheet's inputs, read from the key -------------------------------------------------------
def batch(ws):
    """The step's examples as (ids, target) pairs of plain ints."""
    return [([int(i) for i in ids], int(t)) for ids, t in zip(ws.inputs["ids"], ws.inputs["targets"], strict=True)]


def params(ws):
    """The step's four matrices, as fresh float64 arrays."""
    return {name: ws.input(name) for name in NAMES}


_trained: dict[tuple, tuple] = {}


def trained(ch, ws):
    """train() on the worksheet's batch for the key's epoch budget, run once and shared by 8.14 and 8.16."""
    key = (ch.__name__, float(ws.inputs["lr"]), int(ws.inputs["epochs"]))
    if key not in _trained:
        _trained[key] = ch.train(batch(ws), params(ws), float(ws.inputs["lr"]), int(ws.inputs["epochs"]))
    return _trained[key]


# -- stored cases (tests/snapshots/chapter08.npz, written from solutions/) ----------------------------------
SNAP = snapshot(CHAPTER)


def stored(k):
    """The examples (plain ints), parameters and embedding table of the stored case ``k``."""
    examples = [(e["ids"].tolist(), int(e["target"])) for e in SNAP.tree(f"{k}/examples")]
    return examples, SNAP.tree(f"{k}/params"), SNAP[f"{k}/table"]


# -- the worksheet, step by step -------------------------------------------------------------------
@pytest.mark.parametrize("key", [
    step_case("8.1", "a_b_and_b_a_get_mirrored_contexts_and_a_a_gets_a_s_value", "context"),
    step_case("8.2", "w_o_turns_each_context_into_logits_for_a_and_c", "logits"),
    step_case("8.3", "every_probability_stays_close_to_a_quarter", "probs"),
    step_case("8.4", "each_loss_is_close_to_ln_4", "loss"),
    step_case("8.6", "dlogits_is_probabilities_minus_the_one_hot_target", "dlogits"),
    step_case("8.7", "dcontext_picks_the_a_and_c_gradients_through_w_o", "dcontext"),
    step_case("8.12", "after_the_step_every_loss_is_slightly_lower", "loss"),
])
def test_per_example_gives_each_worksheet_row(ch, ws, key):
    expect(ws, ch.per_example(batch(ws), params(ws))[key])


@pytest.mark.step("8.5")
def test_the_batch_loss_is_the_mean_of_the_three(ch, ws):
    expect(ws, ch.batch_loss(batch(ws), params(ws)))


@pytest.mark.step("8.8")
def test_each_example_on_its_own_gives_outer_context_dlogits(ch, ws):
    p = params(ws)
    per = [ch.batch_gradients([example], p)[1]["WO"] for example in batch(ws)]  # batches of one
    expect(ws, np.array(per))


@pytest.mark.step("8.9")
def test_the_batch_gradient_is_the_mean_of_the_three(ch, ws):
    _, grads = ch.batch_gradients(batch(ws), params(ws))
    expect(ws, grads["WO"])


@pytest.mark.step("8.10")
def test_one_step_against_the_averaged_gradient_moves_w_o_slightly(ch, ws):
    new = ch.apply_gradients(params(ws), {"WO": ws.input("dWO")}, float(ws.inputs["lr"]))
    expect(ws, new["WO"])


@pytest.mark.step("8.11")
def test_after_the_step_every_target_is_slightly_more_likely(ch, ws):
    examples = batch(ws)
    probs = np.asarray(ch.per_example(examples, params(ws))["probs"])
    expect(ws, probs[np.arange(len(examples)), [t for _, t in examples]])


@pytest.mark.step("8.13")
def test_after_the_step_the_batch_loss_is_lower(ch, ws):
    expect(ws, ch.batch_loss(batch(ws), params(ws)))


@pytest.mark.step("8.14")
def test_training_all_four_matrices_brings_the_loss_down_slowly_then_fast(ch, ws):
    _, losses = trained(ch, ws)
    losses = np.asarray(losses)
    assert losses.shape == (int(ws.inputs["epochs"]),), (
        f"train should return one loss per epoch, shape ({ws.inputs['epochs']},); got shape {losses.shape}")
    expect(ws, losses[:: int(ws.inputs["every"])])


@pytest.mark.step("8.15")
def test_before_training_only_a_b_to_c_is_right(ch, ws):
    expect(ws, ch.accuracy(batch(ws), params(ws)))


@pytest.mark.step("8.16")
def test_after_200_epochs_every_pattern_is_right(ch, ws):
    trained_params, _ = trained(ch, ws)
    expect(ws, ch.accuracy(batch(ws), trained_params))


# -- beyond the worksheet: other shapes, other values, expected values from the stored snapshot ----------
def test_one_averaged_update_of_w_o_lowers_the_worksheets_mean_loss(ch):
    """the chapter's claim, in exact arithmetic: one averaged W_O step lowers the mean loss of the three"""
    ws = load(CHAPTER).step("8.5")
    examples, p = batch(ws), params(ws)
    loss, grads = ch.batch_gradients(examples, p)
    new = ch.apply_gradients(p, {"WO": grads["WO"]}, 0.1)
    before = float(ws.exact)  # step 8.5: the worksheet's mean loss before the update
    after = float(ch.batch_loss(examples, new))  # the learner's own mean loss after it
    close(loss, before, "batch_gradients' mean loss on the worksheet's batch (step 8.5's)")
    close(new["WQ"], p["WQ"], "W_Q after an update that has no gradient for it (unchanged)")
    assert after < before, f"the mean loss rose from {before:.9f} to {after:.9f} after one averaged step on W_O"


@pytest.mark.parametrize("case", range(SNAP.count("per_example")))
def test_batch_loss_and_per_example_match_the_model_on_other_shapes(ch, case):
    """per-example results and the mean loss match the stored model's (vocab 5–7, seq 1–5, d_k 2–4)"""
    k = f"per_example/{case}"
    examples, p, table = stored(k)
    want = SNAP.tree(f"{k}/want")
    n, vocab, d_k = len(examples), table.shape[0], p["WK"].shape[1]
    got = ch.per_example(examples, p, embeddings=table)
    mean = ch.batch_loss(examples, p, embeddings=table)
    close(got["context"], want["context"], f"per_example contexts, {n} examples, d_k {d_k}", kind="array",
          mistakes=[("the context taken from the first position instead of the last", SNAP[f"{k}/context_first"])])
    close(got["logits"], want["logits"], f"per_example logits, {n} examples, vocab {vocab}", kind="array")
    close(got["probs"], want["probs"], f"per_example probabilities, {n} examples, vocab {vocab}", kind="array")
    close(got["dlogits"], want["dlogits"], f"per_example dL/dlogits, {n} examples, vocab {vocab}", kind="array",
          mistakes=[("dL/dlogits without the −1 at the target", want["probs"])])
    close(got["dcontext"], want["dcontext"], f"per_example dL/dcontext, {n} examples, d_k {d_k}", kind="array",
          mistakes=[("W_O not transposed on the way back", want["dlogits"])])
    close(got["loss"], want["loss"], f"per_example losses, {n} examples, vocab {vocab}", kind="array",
          mistakes=[("log base 10 instead of the natural log", want["loss"] / np.log(10))])
    close(mean, SNAP.number(f"{k}/mean"), f"batch_loss, {n} examples, vocab {vocab}", kind="float",
          mistakes=[("summed instead of averaged: the total, not the mean", want["loss"].sum())])


@pytest.mark.parametrize("case", range(SNAP.count("gradients")))
def test_batch_gradients_match_numerical_gradients_of_the_mean_loss(ch, case):
    """every mean gradient agrees with central differences of the mean loss, on other shapes"""
    k = f"gradients/{case}"
    examples, p, table = stored(k)
    n = len(examples)
    loss, grads = ch.batch_gradients(examples, p, embeddings=table)
    close(loss, SNAP.number(f"{k}/loss"), "batch_gradients' mean loss", kind="float")
    for name in NAMES:
        want = SNAP[f"{k}/grads/{name}"]
        close(grads[name], want, f"batch_gradients' {name}, {n} examples (d_model {table.shape[1]}, d_k "
              f"{p['WK'].shape[1]})", rtol=1e-5, atol=1e-8, kind="array",
              mistakes=[("summed instead of averaged gradients", n * want),
                        ("divided by N − 1 instead of N", n / (n - 1) * want)])


def test_train_matches_gradient_descent_written_in_the_test(ch):
    """three epochs of train() on a random batch follow gradient descent on the mean loss"""
    examples, p, table = stored("train")
    lr = SNAP.number("train/lr")
    got_params, got_losses = ch.train(examples, p, lr, 3, embeddings=table)
    close(got_losses, SNAP["train/losses"], "train's losses (each before its update), 3 epochs, lr 0.3", rtol=1e-6,
          atol=1e-8, kind="array",
          mistakes=[("the loss recorded after each update instead of before it", SNAP["train/recorded_after"])])
    for name in NAMES:
        close(got_params[name], SNAP[f"train/final/{name}"], f"train's {name} after 3 epochs", rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("shapes", [{"WO": (3, 5), "WV": (4, 3)}, {"WQ": (2, 6)}])
def test_apply_gradients_steps_downhill_and_copies_the_rest(ch, shapes):
    """apply_gradients gives W − lr·dW for the matrices it has gradients for, copies of the others"""
    p = {"WQ": RNG.normal(size=(2, 6)), "WV": RNG.normal(size=(4, 3)), "WO": RNG.normal(size=(3, 5))}
    grads = {name: RNG.normal(size=shape) for name, shape in shapes.items()}
    new = ch.apply_gradients(p, grads, 0.37)
    assert sorted(new) == sorted(p), f"apply_gradients should keep every key of params {sorted(p)}; got {sorted(new)}"
    for name in p:
        want = p[name] - 0.37 * grads[name] if name in grads else p[name]
        close(new[name], want, f"{name} after apply_gradients with lr 0.37",
              mistakes=[("the gradient added instead of subtracted (uphill)", p[name] + 0.37 * grads[name])]
              if name in grads else [])


def test_the_loss_falls_at_every_epoch_of_the_worksheets_training(ch):
    """at η = 0.1 the mean loss decreases at every one of the 200 epochs"""
    ws = load(CHAPTER).step("8.14")
    _, losses = trained(ch, ws)
    steps = np.diff(np.asarray(losses))
    assert np.all(steps < 0), f"the loss rose at epochs {np.flatnonzero(steps >= 0)[:10].tolist()}"


def test_accuracy_matches_argmax_on_other_shapes(ch):
    """accuracy is the fraction of examples whose most probable token is the target"""
    examples, p, table = stored("accuracy")
    predicted = SNAP["accuracy/predicted"]  # the stored model's most probable next token, per example
    examples = [(ids, int(predicted[k]) if k % 2 == 0 else int((predicted[k] + 1) % 5))
                for k, (ids, _) in enumerate(examples)]  # right on even examples, wrong on odd ones
    got = ch.accuracy(examples, p, embeddings=table)
    close(got, 0.5, "accuracy on 6 examples, 3 of them predicted right", kind="float",
          mistakes=[("the number right, not the fraction", 3.0)])


def test_nothing_modifies_its_inputs(ch):
    """per_example, batch_gradients, apply_gradients and train leave the batch and params untouched"""
    examples, p, table = stored("per_example/0")  # 4 examples of 1–5 tokens, vocab 6, d_model 3, d_k 2
    batch_copy = [(list(ids), t) for ids, t in examples]
    # the judge fails a call that changes one of its arguments in place (ChangedItsInput)
    ch.per_example(examples, p, embeddings=table)
    _, grads = ch.batch_gradients(examples, p, embeddings=table)
    ch.apply_gradients(p, grads, 0.1)
    ch.train(examples, p, 0.1, 2, embeddings=table)
    assert examples == batch_copy, "the batch was modified"


# -- bad input gets a clear error ------------------------------------------------------------------
def toy():
    return {"WQ": 0.1 * np.eye(2), "WK": 0.1 * np.eye(2), "WV": 0.1 * np.eye(2),
            "WO": np.array([[0.1, 0.0, 0.0, 0.0], [0.0, 0.0, 0.1, 0.0]])}


@pytest.mark.given
def test_an_empty_batch_is_refused(ch):
    """an empty batch raises ValueError saying it is empty, in every function that averages"""
    raises_clearly(lambda: ch.batch_loss([], toy()), ValueError, "empty")
    raises_clearly(lambda: ch.batch_gradients([], toy()), ValueError, "empty")
    raises_clearly(lambda: ch.accuracy([], toy()), ValueError, "empty")
    raises_clearly(lambda: ch.train([], toy(), 0.1, 3), ValueError, "empty")


def test_a_target_outside_the_vocabulary_is_refused(ch):
    """target 4 (or −1) of a 4-token vocabulary raises IndexError naming the example, the target and the range 0..3"""
    bad = [([0, 1], 2), ([0, 0], 4)]
    why = "check 0 <= target < vocab for each example yourself, before the forward pass, and say which example"
    raises_clearly(lambda: ch.batch_loss(bad, toy()), IndexError, "4", "example 1", "0..3", hint=why)
    raises_clearly(lambda: ch.batch_gradients(bad, toy()), IndexError, "4", "example 1", "0..3", hint=why)
    raises_clearly(lambda: ch.batch_gradients([([0, 1], -1)], toy()), IndexError, "-1")


def test_mismatched_parameter_shapes_are_refused(ch):
    """a (2, 3) W_O for a 4-token vocabulary raises ValueError naming W_O"""
    p = toy()
    p["WO"] = np.ones((2, 3))
    raises_clearly(lambda: ch.batch_loss([([0, 1], 2)], p), ValueError, "WO")
    raises_clearly(lambda: ch.apply_gradients(toy(), {"WO": np.ones((2, 3))}, 0.1), ValueError, "(2, 3)")


@pytest.mark.given
def test_an_example_that_is_not_a_pair_is_refused(ch):
    """an example without a target, or with a fractional target, raises TypeError"""
    raises_clearly(lambda: ch.batch_loss([([0, 1],)], toy()), TypeError, "pair")
    raises_clearly(lambda: ch.batch_loss([([0, 1], 2.5)], toy()), TypeError, "2.5")
    raises_clearly(lambda: ch.batch_loss([([0, 1], True)], toy()), TypeError, "True",
                   hint="a bool is not a token id: check isinstance(target, bool) or not isinstance(target, int)")
    raises_clearly(lambda: ch.accuracy([([0, 1], True)], toy()), TypeError, "True",
                   hint="accuracy never computes a loss, so its own check of the examples is the only one")


def test_a_missing_output_matrix_is_named_by_batch_gradients(ch):
    """batch_gradients with params lacking 'WO' raises ValueError naming WO (not a KeyError)"""
    p = {k: v for k, v in toy().items() if k != "WO"}
    raises_clearly(lambda: ch.batch_gradients([([0, 1], 2)], p), ValueError, "WO")


@pytest.mark.given
@pytest.mark.parametrize("examples", [{"ids": [0, 1], "target": 2}, "A B C"])
def test_examples_that_are_not_a_list_are_refused(ch, examples):
    """a dict or a string in place of the list of examples raises TypeError naming what came instead"""
    raises_clearly(lambda: ch.batch_loss(examples, toy()), TypeError, type(examples).__name__)


@pytest.mark.given
def test_a_gradient_for_a_matrix_params_does_not_have_is_refused(ch):
    """apply_gradients with a gradient for 'WX' raises KeyError naming it and the matrices params has"""
    raises_clearly(lambda: ch.apply_gradients(toy(), {"WX": np.ones((2, 2))}, 0.1), KeyError, "WX", "WQ")


@pytest.mark.given
@pytest.mark.parametrize("epochs", [2.0, True])
def test_a_number_of_epochs_that_is_not_a_whole_number_is_refused(ch, epochs):
    """train with epochs = 2.0 or True raises TypeError naming it"""
    raises_clearly(lambda: ch.train([([0, 1], 2)], toy(), 0.1, epochs), TypeError, str(epochs))


def test_zero_epochs_train_nothing(ch):
    """train with epochs = 0 returns the parameters unchanged and no losses (shape (0,))"""
    trained_params, losses = ch.train([([0, 1], 2)], toy(), 0.1, 0)
    close(np.shape(losses), (0,), "the losses of 0 epochs")
    for name, W in toy().items():
        close(trained_params[name], W, f"{name} after 0 epochs")


@pytest.mark.given
def test_a_negative_number_of_epochs_is_refused(ch):
    """train with epochs = −1 raises ValueError naming it"""
    raises_clearly(lambda: ch.train([([0, 1], 2)], toy(), 0.1, -1), ValueError, "-1")
