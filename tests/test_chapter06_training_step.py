"""Chapter 6: One Training Step — the book's Example 2 worksheet, step by step, and beyond.

Input "A B", target C (index 2), learning rate 0.1, on chapter 5's toy model; only W_O learns, all eight
entries of it. Each worksheet step is one test below, named as the claim it checks; the numbers come from
reference/chapter06_training_step.toml. The checks beyond the worksheet use seeded random models of other
sizes stored in tests/snapshots/chapter06.npz (written from solutions/), and the learner's own losses.
"""

import numpy as np
import pytest

from kata import close, expect, load, numerical_gradient, raises_clearly, snapshot

CHAPTER = 6
RNG = np.random.default_rng(6)
SNAP = snapshot(CHAPTER)  # tests/snapshots/chapter06.npz: random models, the reference's step, classic mistakes
TOY_E = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])  # A, B, C, D, written out here
TOY = {"WQ": 0.1 * np.eye(2), "WK": 0.1 * np.eye(2), "WV": 0.1 * np.eye(2),
       "WO": np.array([[0.1, 0.0, 0.0, 0.0], [0.0, 0.0, 0.1, 0.0]])}


def toy():
    """A fresh copy of the toy model, written out here."""
    return {k: v.copy() for k, v in TOY.items()}


def loss_now(ch, ids, target, params, embeddings=None):
    """The learner's own loss of ``params`` on one example: a step with η = 0 returns it and changes nothing."""
    kwargs = {} if embeddings is None else {"embeddings": embeddings}
    return float(ch.train_output_step(ids, target, params, 0.0, **kwargs)[1])


def probs_now(ch, ids, params, vocab=4):
    """The model's next-token probabilities, read off the learner's own losses: P(j) = exp(−loss for target j)."""
    return np.array([np.exp(-loss_now(ch, ids, j, params)) for j in range(vocab)])


def random_model(seq, d_model, d_k, d_v, vocab, rng=RNG):
    """A seeded random model: embedding table, the four matrices, a sequence of ids and a target."""
    E = rng.normal(size=(vocab, d_model))
    params = {"WQ": rng.normal(size=(d_model, d_k)), "WK": rng.normal(size=(d_model, d_k)),
              "WV": rng.normal(size=(d_model, d_v)) * 0.5, "WO": rng.normal(size=(d_v, vocab))}
    ids = [int(i) for i in rng.integers(0, vocab, size=seq)]
    return ids, int(rng.integers(0, vocab)), E, params


# -- the worksheet, step by step -------------------------------------------------------------------
@pytest.mark.step("6.1")
def test_the_loss_is_minus_log_p_c(ch, ws):
    expect(ws, ch.cross_entropy(ws.input("probs"), ws.inputs["target"]), kind="float")


@pytest.mark.step("6.2")
def test_only_c_gets_a_negative_gradient(ch, ws):
    expect(ws, ch.cross_entropy_grad(ws.input("probs"), ws.inputs["target"]), kind="array")


@pytest.mark.step("6.3")
def test_the_gradient_of_w_o_is_context_outer_dlogits(ch, ws):
    _, dWO = ch.output_backward(ws.input("context"), ws.input("WO"), ws.input("dlogits"))
    expect(ws, dWO)


@pytest.mark.step("6.4")
def test_the_context_gradient_comes_back_through_a_and_c_columns(ch, ws):
    dcontext, _ = ch.output_backward(ws.input("context"), ws.input("WO"), ws.input("dlogits"))
    expect(ws, dcontext)


@pytest.mark.step("6.5")
def test_the_weight_from_context_to_c_grows_to_0_10376(ch, ws):
    new = ch.sgd_step(ws.input("WO"), ws.input("dWO"), ws.inputs["lr"])
    expect(ws, np.asarray(new)[1, 2])


@pytest.mark.step("6.6")
def test_one_step_moves_all_eight_entries_of_w_o(ch, ws):
    new_params, _ = ch.train_output_step(ws.inputs["ids"], ws.inputs["target"], toy(), ws.inputs["lr"])
    expect(ws, new_params["WO"])
    for name in ("WQ", "WK", "WV"):
        close(new_params[name], TOY[name], f"new_params[{name!r}]: only W_O learns in this chapter")


@pytest.mark.step("6.7")
def test_after_the_step_c_logit_is_up_and_every_other_down(ch, ws):
    new_params, _ = ch.train_output_step(ws.inputs["ids"], ws.inputs["target"], toy(), ws.inputs["lr"])
    c = load(CHAPTER).step("6.3").input("context")  # the context does not change: W_Q, W_K, W_V are fixed
    expect(ws, c @ np.asarray(new_params["WO"]))


@pytest.mark.step("6.8")
def test_after_the_step_c_is_the_most_likely_token(ch, ws):
    new_params, _ = ch.train_output_step(ws.inputs["ids"], ws.inputs["target"], toy(), ws.inputs["lr"])
    expect(ws, probs_now(ch, ws.inputs["ids"], new_params))


@pytest.mark.step("6.9")
def test_one_step_lowers_the_loss(ch, ws):
    ids, target, lr = ws.inputs["ids"], ws.inputs["target"], ws.inputs["lr"]
    new_params, loss_before = ch.train_output_step(ids, target, toy(), lr)
    _, loss_after = ch.train_output_step(ids, target, new_params, lr)  # the loss of the updated model
    p_after = np.exp(-loss_after)  # P(C) = exp(−loss)
    expect(ws, [loss_before, p_after, loss_after])


@pytest.mark.step("6.10")
def test_one_step_raises_p_c_a_little(ch, ws):
    ids, target, lr = ws.inputs["ids"], ws.inputs["target"], ws.inputs["lr"]
    new_params, _ = ch.train_output_step(ids, target, toy(), lr)
    before = np.exp(-loss_now(ch, ids, target, toy()))
    after = np.exp(-loss_now(ch, ids, target, new_params))
    expect(ws, [before, after, after - before])


# -- beyond the worksheet: other shapes, other values, expected values from the stored snapshot ----------
@pytest.mark.parametrize("vocab", [5, 8, 13])
def test_cross_entropy_is_minus_log_of_the_target_probability(ch, vocab):
    """cross_entropy(p, t) = −ln p_t on larger vocabularies"""
    p = RNG.dirichlet(np.full(vocab, 0.7))  # a random distribution over the vocabulary
    t = int(RNG.integers(0, vocab))
    got = ch.cross_entropy(p, t)
    close(got, -np.log(p[t]), f"cross_entropy over {vocab} tokens, target {t}", kind="float",
          mistakes=[("the minus sign forgotten", np.log(p[t])), ("log base 10", -np.log10(p[t])),
                    ("the most likely token's probability instead of the target's", -np.log(p.max()))])


def test_a_certain_right_answer_costs_nothing(ch):
    """cross_entropy is 0 when the target has probability 1, and grows as it falls"""
    close(ch.cross_entropy(np.array([0.0, 1.0, 0.0]), 1), 0.0, "cross_entropy([0, 1, 0], 1)")
    losses = [ch.cross_entropy(np.array([1 - q, q]), 1) for q in (0.9, 0.5, 0.1)]
    close(losses, [-np.log(0.9), -np.log(0.5), -np.log(0.1)], "cross_entropy at P(target) = 0.9, 0.5, 0.1")


@pytest.mark.parametrize("case", range(SNAP.count("dlogits")))
def test_dlogits_matches_numerical_gradients_of_the_loss(ch, case):
    """cross_entropy_grad(softmax(z), t) equals the central-difference gradient of −ln softmax(z)_t (vocab 5, 7, 9)"""
    k = f"dlogits/{case}"
    p, t = SNAP[f"{k}/probs"], SNAP.number(f"{k}/target")
    got = ch.cross_entropy_grad(p, t)
    close(got, SNAP[f"{k}/numerical"], f"dL/dlogits over {len(p)} tokens, target {t}", rtol=1e-5, atol=1e-8,
          kind="array", mistakes=[("dL/dlogits without the −1 at the target", SNAP[f"{k}/without_minus_one"]),
                                  ("the sign flipped", SNAP[f"{k}/sign_flipped"])])


@pytest.mark.parametrize("vocab", [4, 6, 11])
def test_dlogits_is_negative_only_at_the_target_and_sums_to_zero(ch, vocab):
    """the gradient pushes the target's logit up and every other logit down"""
    p = RNG.dirichlet(np.ones(vocab))  # a random distribution over the vocabulary
    t = int(RNG.integers(0, vocab))
    g = np.asarray(ch.cross_entropy_grad(p, t))
    close(g < 0, np.arange(vocab) == t, f"which entries of dL/dlogits are negative (target {t})")
    close(g.sum(), 0.0, "the sum of dL/dlogits", atol=1e-12,
          mistakes=[("dL/dlogits without the −1 at the target", 1.0)])


@pytest.mark.parametrize(("d_v", "vocab"), [(3, 5), (5, 4), (1, 8), (4, 12)])
def test_output_backward_matches_numerical_gradients(ch, d_v, vocab):
    """dcontext and dWO equal central differences of dz · (c W_O), widths ≠ 2, vocab > 4"""
    c, WO, dz = RNG.normal(size=d_v), RNG.normal(size=(d_v, vocab)), RNG.normal(size=vocab)
    dcontext, dWO = ch.output_backward(c, WO, dz)
    close(dcontext, numerical_gradient(lambda v: float(dz @ (v @ WO)), c), f"dcontext, d_v {d_v}, vocab {vocab}",
          rtol=1e-5, atol=1e-8)
    close(dWO, numerical_gradient(lambda W: float(dz @ (c @ W)), WO), f"dWO, d_v {d_v}, vocab {vocab}",
          rtol=1e-5, atol=1e-8, mistakes=[("the sign flipped", -np.outer(c, dz))])


def test_output_backward_does_not_modify_its_inputs(ch):
    """output_backward leaves context, W_O and dlogits untouched"""
    c, WO, dz = RNG.normal(size=3), RNG.normal(size=(3, 5)), RNG.normal(size=5)
    # the judge fails a call that changes one of its arguments in place (ChangedItsInput)
    ch.output_backward(c, WO, dz)


@pytest.mark.parametrize(("shape", "lr"), [((3, 5), 0.1), ((7,), 0.01), ((2, 3, 4), 1.5)])
def test_sgd_step_moves_against_the_gradient(ch, shape, lr):
    """sgd_step(W, g, lr) = W − lr·g on any shape, as a new array; W itself is not changed"""
    W, g = RNG.normal(size=shape), RNG.normal(size=shape)
    before = W.copy()
    new = ch.sgd_step(W, g, lr)
    close(new, before - lr * g, f"sgd_step on shape {shape}, lr {lr}",
          mistakes=[("update adds the gradient instead of subtracting it", before + lr * g),
                    ("the learning rate forgotten", before - g)])
    close(W, before, "the parameter passed to sgd_step (it must not be changed in place)")


@pytest.mark.parametrize("case", range(SNAP.count("train")))
def test_train_output_step_matches_the_formula_on_random_models(ch, case):
    """new W_O = W_O − η·outer(c, p − onehot): seq 3–6, widths ≠ 2, vocab > 4; the loss is the one before"""
    k = f"train/{case}"
    ids, target, E = SNAP[f"{k}/ids"].tolist(), SNAP.number(f"{k}/target"), SNAP[f"{k}/E"]
    params, lr = SNAP.tree(f"{k}/params"), SNAP.number(f"{k}/lr")
    # the judge fails a call that changes one of its arguments in place (ChangedItsInput)
    new_params, loss = ch.train_output_step(ids, target, params, lr, embeddings=E)
    shapes = (f"seq {len(ids)}, d_model {E.shape[1]}, d_k {params['WK'].shape[1]}, d_v {params['WV'].shape[1]}, "
              f"vocab {E.shape[0]}")
    close(new_params["WO"], SNAP[f"{k}/WO"], f"new W_O, {shapes}", kind="array",
          mistakes=[("update adds the gradient instead of subtracting it", SNAP[f"{k}/mistakes/adds"]),
                    ("dL/dlogits without the −1 at the target", SNAP[f"{k}/mistakes/without_minus_one"]),
                    ("the context taken from the first position instead of the last",
                     SNAP[f"{k}/mistakes/first_position"])])
    close(loss, SNAP.number(f"{k}/loss"), f"the loss train_output_step returns (before the update), {shapes}",
          kind="float")
    for name in ("WQ", "WK", "WV"):
        close(new_params[name], params[name], f"new_params[{name!r}]: only W_O learns")


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_step_lowers_the_loss_on_random_models(ch, seed):
    """one step with a modest learning rate lowers the loss of its own example"""
    ids, target, E, params = random_model(4, 3, 2, 3, 6, rng=np.random.default_rng(seed))
    new_params, _ = ch.train_output_step(ids, target, params, 0.1, embeddings=E)
    before, after = loss_now(ch, ids, target, params, E), loss_now(ch, ids, target, new_params, E)
    went_up = [("the loss went up: an update that adds the gradient instead of subtracting it?", 0.0)]
    close(float(after < before), 1.0, f"the loss fell ({before:.6f} → {after:.6f})", mistakes=went_up)


def test_repeated_steps_drive_p_c_up_every_time(ch):
    """thirty steps on "A B" → C at η = 0.1: P(C) rises and the loss falls at every step"""
    params, probs, losses = toy(), [], []
    for _ in range(30):
        params, loss = ch.train_output_step([0, 1], 2, params, 0.1)
        losses.append(loss)
        probs.append(np.exp(-loss_now(ch, [0, 1], 2, params)))  # P(C) = exp(−loss)
    close(np.all(np.diff(probs) > 0), True, "P(C) rose at every one of 30 steps",
          mistakes=[("update adds the gradient instead of subtracting it: P(C) falls", False)])
    close(np.all(np.diff(losses) < 0), True, "the loss fell at every one of 30 steps")


def test_many_large_steps_drive_p_c_towards_one(ch):
    """two hundred steps at η = 100 take P(C) above 0.99 (the toy context is tiny, so η must be large)"""
    params = toy()
    for _ in range(200):
        params, _ = ch.train_output_step([0, 1], 2, params, 100.0)
    p = np.exp(-loss_now(ch, [0, 1], 2, params))  # P(C) = exp(−loss)
    close(float(p > 0.99), 1.0, f"P(C) after 200 steps at η = 100 is above 0.99 (got {p:.6f})")


def test_repeated_steps_learn_a_random_example(ch):
    """on a random model with 7 tokens, 100 steps raise P(target) past one half"""
    ids, target, E, params = random_model(5, 4, 3, 3, 7, rng=np.random.default_rng(60))
    start = np.exp(-loss_now(ch, ids, target, params, E))
    for _ in range(100):
        params, _ = ch.train_output_step(ids, target, params, 0.5, embeddings=E)
    end = np.exp(-loss_now(ch, ids, target, params, E))
    close(float(end > max(0.5, start)), 1.0, f"P(target) after 100 steps (from {start:.4f} to {end:.4f})")


# -- bad input gets a clear error ------------------------------------------------------------------
P4 = np.array([0.25, 0.25, 0.25, 0.25])


@pytest.mark.given
@pytest.mark.parametrize("target", [4, 9, -1])
def test_a_target_outside_the_vocabulary_is_refused(ch, target):
    """target outside 0..3 raises IndexError naming the target (and the range 0..3), in all three functions that take one"""
    why = "a target must satisfy 0 <= target < vocab (target == vocab is already outside)"
    raises_clearly(lambda: ch.cross_entropy(P4, target), IndexError, str(target), "0..3", hint=why)
    raises_clearly(lambda: ch.cross_entropy_grad(P4, target), IndexError, str(target), "0..3", hint=why)
    raises_clearly(lambda: ch.train_output_step([0, 1], target, toy(), 0.1), IndexError, str(target))


@pytest.mark.given
def test_a_target_that_is_not_a_whole_number_is_refused(ch):
    """target 2.0 or "C" raises TypeError"""
    raises_clearly(lambda: ch.cross_entropy(P4, 2.0), TypeError, "2.0")
    raises_clearly(lambda: ch.cross_entropy_grad(P4, "C"), TypeError, "C")


@pytest.mark.given
def test_logits_passed_as_probabilities_are_refused(ch):
    """cross_entropy of values that are not a distribution raises ValueError saying so"""
    raises_clearly(lambda: ch.cross_entropy(np.array([2.0, -1.0, 0.5, 0.0]), 2), ValueError, "probabilit")
    raises_clearly(lambda: ch.cross_entropy(np.full((2, 2), 0.25), 1), ValueError, "(2, 2)")
    raises_clearly(lambda: ch.cross_entropy(np.array([1.5, -0.5, 0.0]), 0), ValueError, "probabilit",
                   hint="a negative entry is refused even when the sum is 1: check each condition on its own (or)")
    raises_clearly(lambda: ch.cross_entropy(np.array([0.5, 0.5, 0.5]), 0), ValueError, "probabilit",
                   hint="entries that sum to 1.5 are not a distribution: the sum may be off from 1 by 1e-6 at most")


def test_a_vocabulary_of_one_token_is_a_distribution(ch):
    """cross_entropy([1.0], 0) is 0 and its gradient is [0]: a single certain token is a distribution too"""
    close(ch.cross_entropy(np.array([1.0]), 0), 0.0, "cross_entropy([1.0], 0)", kind="float")
    close(ch.cross_entropy_grad(np.array([1.0]), 0), [0.0], "cross_entropy_grad([1.0], 0)", kind="array")


def test_a_token_outside_the_embedding_table_is_refused(ch):
    """train_output_step on ids [0, 4] raises IndexError naming the id"""
    raises_clearly(lambda: ch.train_output_step([0, 4], 2, toy(), 0.1), IndexError, "4")


def test_a_misshapen_output_matrix_is_refused(ch):
    """train_output_step with a (2, 3) W_O raises ValueError naming W_O and its shape"""
    params = toy()
    params["WO"] = np.ones((2, 3))
    raises_clearly(lambda: ch.train_output_step([0, 1], 2, params, 0.1), ValueError, "WO", "(2, 3)")


@pytest.mark.parametrize(("c", "WO", "dz"), [((3,), (2, 4), (4,)), ((2,), (2, 4), (5,)), ((2, 1), (2, 4), (4,)),
                                              ((2,), (2, 4), (4, 1))])
@pytest.mark.given
def test_output_backward_refuses_shapes_that_do_not_fit(ch, c, WO, dz):
    """context, W_O and dlogits that do not fit logits = c W_O raise ValueError naming the shapes"""
    raises_clearly(lambda: ch.output_backward(np.ones(c), np.ones(WO), np.ones(dz)), ValueError, str(c), str(WO))


@pytest.mark.given
def test_sgd_step_refuses_a_gradient_of_another_shape(ch):
    """a (2, 4) parameter with a (4, 2) gradient raises ValueError naming both shapes"""
    raises_clearly(lambda: ch.sgd_step(np.ones((2, 4)), np.ones((4, 2)), 0.1), ValueError, "(2, 4)", "(4, 2)")


@pytest.mark.given
@pytest.mark.parametrize("lr", [-0.1, float("nan"), float("inf")])
def test_sgd_step_refuses_a_learning_rate_that_is_not_a_step_downhill(ch, lr):
    """a negative or non-finite learning rate raises ValueError naming it"""
    raises_clearly(lambda: ch.sgd_step(np.ones(3), np.ones(3), lr), ValueError, str(lr))


@pytest.mark.given
@pytest.mark.parametrize("lr", ["0.1", True])
def test_sgd_step_refuses_a_learning_rate_that_is_not_a_number(ch, lr):
    """a learning rate given as a string or a bool raises TypeError naming it"""
    raises_clearly(lambda: ch.sgd_step(np.ones(3), np.ones(3), lr), TypeError, repr(lr),
                   hint="refuse lr if it is a bool or not a real number (isinstance(lr, bool) or not isinstance(...))")


def test_a_learning_rate_of_zero_changes_nothing(ch):
    """sgd_step with lr = 0 returns the parameter unchanged (0 is allowed: a step of size zero)"""
    W = RNG.normal(size=(2, 3))
    close(ch.sgd_step(W, RNG.normal(size=(2, 3)), 0.0), W, "sgd_step(W, g, 0.0)", kind="array")
