"""Chapter 21: LoRA — the course's own worksheet (Part IV), and beyond.

A frozen 2 × 2 weight with a rank-1 adapter (α / r = 2) on two rows; a rank-2 adapter on a row of three
features; the backward; one step of gradient descent from the start; the merge; the adapter's parameters on
two weights of a real model. Each worksheet step is one test below, named as the claim it checks; the numbers
come from reference/chapter21_lora.toml (audited, in exact fractions, by scripts/audit_chapter21_lora.py).
Beyond the worksheet: other shapes (seq 3, d_in 5, d_out 4, rank 2 and 3) against the formulas of the
docstrings; your backward against central differences of your own forward; the merged weight computing your
adapted layer (to 1e-12); lora_init's A drawn as promised; one step from a B that is not zero; and bad input.
"""

import numpy as np
import pytest

from kata import close, expect, numerical_gradient, raises_clearly, returned, step_case

CHAPTER = 21
NUM = {"rtol": 1e-5, "atol": 1e-8}  # central differences (CONTRIBUTING.md, "Tolerances")
B_NOT_ZERO = "B not zero at the start: A B must be 0 so that step 0 changes nothing"
W_GRADIENT = "a gradient sent to the frozen W: only A and B are trained"
FORGOTTEN = "α / r forgotten"
NOT_BY_R = "α not divided by r"
UPDATED_B = "A's gradient taken with the B already updated: both gradients come from the same forward pass"


def pair(got, what: str, shapes: tuple) -> tuple[np.ndarray, np.ndarray]:
    """The docstring promises a tuple (A, B) of arrays of these shapes."""
    if not isinstance(got, tuple) or len(got) != 2:
        pytest.fail(f"{what}: the docstring promises a tuple (A, B), got {type(got).__name__}: {got!r:.200}",
                    pytrace=False)
    A, B = (returned(a, "array", f"{what}, {name}") for a, name in zip(got, "AB", strict=True))
    for a, name, shape in ((A, "A", shapes[0]), (B, "B", shapes[1])):
        if a.shape != shape:
            pytest.fail(f"{what}: {name} has shape {a.shape}, expected {shape}", pytrace=False)
    return A, B


def gradients(got, what: str) -> dict:
    """The docstring promises a dict with exactly the keys x, A and B: no gradient for the frozen W."""
    if not isinstance(got, dict):
        pytest.fail(f"{what}: the docstring promises a dict of gradients, got {type(got).__name__}", pytrace=False)
    if "W" in got:
        pytest.fail(f"{what}: the dict has a key 'W' (keys {sorted(got)})\n  looks like: {W_GRADIENT} — W is "
                    "frozen: no gradient is computed for it", pytrace=False)
    if set(got) != {"x", "A", "B"}:
        pytest.fail(f"{what}: the dict must have exactly the keys 'x', 'A' and 'B', got {sorted(got)}", pytrace=False)
    return got


def stepped(got, what: str) -> tuple[dict, float]:
    """The docstring promises (new_params, loss): a dict with the keys W, A and B, and a float."""
    if not isinstance(got, tuple) or len(got) != 2 or not isinstance(got[0], dict):
        pytest.fail(f"{what}: the docstring promises a tuple (new_params, loss), got {got!r:.200}", pytrace=False)
    new, loss = got
    if set(new) != {"W", "A", "B"}:
        pytest.fail(f"{what}: new_params must have exactly the keys 'W', 'A' and 'B', got {sorted(new)}",
                    pytrace=False)
    return new, returned(loss, "float", f"{what}: the loss")


def layer(seed: int, seq=3, d_in=5, d_out=4, r=2):
    """x (seq, d_in), W (d_in, d_out), A (d_in, r), B (r, d_out): distinct values from a fixed seed."""
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(seq, d_in)), rng.normal(size=(d_in, d_out)), rng.normal(size=(d_in, r)),
            rng.normal(size=(r, d_out)))


# -- the worksheet, step by step -------------------------------------------------------------------
@pytest.mark.parametrize("which", [
    step_case("21.1", "the_adapted_layer_adds_the_scaled_low_rank_path_to_the_frozen_one", "21.1"),
    step_case("21.2", "a_rank_2_adapter_is_scaled_by_alpha_over_2", "21.2"),
])
def test_lora_forward(ch, ws, which):
    got = ch.lora_forward(ws.input("x"), ws.input("W"), ws.input("A"), ws.input("B"), ws.inputs["alpha"])
    expect(ws, got, kind="array")


@pytest.mark.step("21.3")
def test_at_the_start_the_adapter_adds_nothing(ch, ws):
    i = ws.inputs
    A, B = pair(ch.lora_init(i["d_in"], i["d_out"], i["r"], seed=i["seed"]), "lora_init(2, 2, 1, seed=0)",
                ((2, 1), (1, 2)))
    got = ch.lora_forward(ws.input("x"), ws.input("W"), A, B, i["alpha"])
    found = returned(got, "array", "lora_forward with lora_init's adapter")
    # B is whatever your generator drew, so its mistake is named by looking at B itself
    expect(ws, found, mistakes=[(B_NOT_ZERO, found)] if np.any(B != 0) else [],
           inputs={**i, "A (your lora_init)": A, "B (your lora_init)": B})


@pytest.mark.parametrize("key", [
    step_case("21.4", "B_gets_the_scaled_gradient_of_h_B", "B"),
    step_case("21.5", "A_gets_the_gradient_through_B", "A"),
    step_case("21.6", "x_gets_the_gradient_through_the_frozen_W_and_through_the_adapter", "x"),
])
def test_lora_backward(ch, ws, key):
    got = ch.lora_backward(ws.input("d_y"), ws.input("x"), ws.input("W"), ws.input("A"), ws.input("B"),
                           ws.inputs["alpha"])
    expect(ws, gradients(got, f"{ws.id} lora_backward")[key], kind="array")


@pytest.mark.parametrize("which", [
    step_case("21.7", "the_loss_before_the_step_is_half_the_sum_of_squares", "loss"),
    step_case("21.8", "B_moves_against_its_gradient", "B"),
    step_case("21.9", "A_does_not_move_while_B_is_zero", "A"),
    step_case("21.10", "the_frozen_W_stays_as_it_was", "W"),
])
def test_one_step_from_the_start(ch, ws, which):
    params = {"W": ws.input("W"), "A": ws.input("A"), "B": ws.input("B")}
    got = ch.lora_train_step(ws.input("x"), ws.input("target"), params, ws.inputs["alpha"], ws.inputs["lr"])
    new, loss = stepped(got, f"{ws.id} lora_train_step")
    expect(ws, loss if which == "loss" else new[which], kind="float" if which == "loss" else "array")


@pytest.mark.step("21.11")
def test_the_merge_folds_the_scaled_product_into_W(ch, ws):
    expect(ws, ch.lora_merge(ws.input("W"), ws.input("A"), ws.input("B"), ws.inputs["alpha"]), kind="array")


@pytest.mark.step("21.12")
def test_two_adapters_of_rank_8_train_about_a_hundred_thousand_numbers(ch, ws):
    expect(ws, ch.lora_parameter_count(ws.inputs["shapes"], ws.inputs["r"]), kind="int")


# -- beyond the worksheet: other shapes ---------------------------------------------------------------------
@pytest.mark.parametrize("r", [2, 3])
def test_the_adapted_layer_on_other_shapes(ch, r):
    """seq 3, d_in 5, d_out 4, ranks 2 and 3, α = 6: x W + (α / r) (x A) B"""
    x, W, A, B = layer(10 + r, r=r)
    want = x @ W + (6 / r) * (x @ A @ B)
    close(ch.lora_forward(x, W, A, B, 6), want, f"lora_forward, seq 3, d_in 5, d_out 4, rank {r}, α = 6",
          kind="array", mistakes=[(FORGOTTEN, x @ W + x @ A @ B), (NOT_BY_R, x @ W + 6 * (x @ A @ B))])
    close(ch.lora_forward(x, W, A, B, np.array(1.5)), x @ W + (1.5 / r) * (x @ A @ B),
          f"lora_forward, rank {r}, α a 0-d array 1.5", kind="array")


@pytest.mark.parametrize("r", [2, 3])
def test_the_backward_is_the_derivative_of_your_forward(ch, r):
    """dx, dA and dB equal central differences of Σ dY ⊙ lora_forward (rtol 1e-5, atol 1e-8); no dW"""
    x, W, A, B = layer(20 + r, r=r)
    d_y = np.random.default_rng(30 + r).normal(size=(3, 4))
    got = gradients(ch.lora_backward(d_y, x, W, A, B, 6), f"lora_backward, rank {r}")

    def loss(x, A, B):
        return float(np.sum(d_y * ch.lora_forward(x, W, A, B, 6)))

    for name, numerical in (("x", numerical_gradient(lambda v: loss(v, A, B), x)),
                            ("A", numerical_gradient(lambda v: loss(x, v, B), A)),
                            ("B", numerical_gradient(lambda v: loss(x, A, v), B))):
        close(got[name], numerical, f"lora_backward's '{name}', rank {r}, vs central differences of your lora_forward",
              kind="array", **NUM)


def test_the_gradient_to_x_flows_through_the_frozen_W(ch):
    """With B = 0 the adapter passes nothing back: dx is the frozen path's alone, and dA = 0, while dB does not vanish"""
    x, W, A, _ = layer(40)
    d_y = np.random.default_rng(41).normal(size=(3, 4))
    got = gradients(ch.lora_backward(d_y, x, W, A, np.zeros((2, 4)), 2), "lora_backward with B = 0")
    close(got["x"], d_y @ W.T, "lora_backward's 'x' with B = 0: the frozen W's path alone", kind="array",
          mistakes=[("the gradient to x skips the frozen W", np.zeros_like(x))])
    close(got["A"], np.zeros_like(A), "lora_backward's 'A' with B = 0: A's gradient goes through B", kind="array")
    close(got["B"], (x @ A).T @ d_y, "lora_backward's 'B' with B = 0 and α / r = 1", kind="array")


def test_the_merged_weight_computes_your_adapted_layer(ch):
    """x W' equals lora_forward to 1e-12, and W' = W + (α / r) A B on a non-square weight"""
    x, W, A, B = layer(50, seq=4, d_in=5, d_out=3, r=2)
    merged = returned(ch.lora_merge(W, A, B, 4), "array", "lora_merge")
    close(merged, W + 2 * (A @ B), "lora_merge, d_in 5, d_out 3, rank 2, α = 4", kind="array",
          mistakes=[(FORGOTTEN, W + A @ B), (NOT_BY_R, W + 4 * (A @ B))])
    close(x @ merged, ch.lora_forward(x, W, A, B, 4), "x @ lora_merge(W, A, B, 4) against lora_forward(x, W, A, B, 4)",
          rtol=1e-12, atol=1e-12)
    W, A, B = W[:3], A[:3], B  # square now, and not symmetric
    close(ch.lora_merge(W, A, B, 4), W + 2 * (A @ B), "lora_merge on a 3 × 3 weight", kind="array",
          mistakes=[("the merge transposed", W + 2 * (A @ B).T)])


def test_lora_init_draws_A_and_sets_B_to_zero(ch):
    """A (d_in, r) with entries N(0, 1/d_in): mean ~0, variance ~1/d_in, kurtosis ~3; B (r, d_out) all zeros"""
    A, B = pair(ch.lora_init(400, 8, 8, seed=1), "lora_init(400, 8, 8, seed=1)", ((400, 8), (8, 8)))
    if np.any(B != 0):
        pytest.fail(f"lora_init(400, 8, 8, seed=1): B has {np.count_nonzero(B)} non-zero entries\n  looks like: "
                    f"{B_NOT_ZERO}", pytrace=False)
    if np.all(A == 0):
        pytest.fail("lora_init(400, 8, 8, seed=1): A is all zeros\n  looks like: A zero as well as B — then "
                    "neither ever receives a gradient (dB needs x A, dA needs B)", pytrace=False)
    var = float(np.mean(A ** 2))
    close(var, 1 / 400, "lora_init: the mean square of A's 3,200 entries, the variance 1/d_in = 0.0025 (within 20 %)",
          kind="float", rtol=0.2, mistakes=[("variance 1/r", 1 / 8), ("standard deviation 1/d_in", 1 / 400 ** 2)])
    close(float(np.mean(A)), 0.0, "lora_init: the mean of A's entries (0, within 0.01)", atol=0.01)
    close(float(np.mean(A ** 4)) / var ** 2, 3.0, "lora_init: A's kurtosis E[a⁴]/E[a²]², 3 for normal draws "
          "(within 20 %)", rtol=0.2, mistakes=[("uniform draws instead of normal ones", 1.8)])
    if len(np.unique(A)) != A.size:
        pytest.fail("lora_init(400, 8, 8, seed=1): A repeats values: every entry is its own draw", pytrace=False)


def test_lora_init_repeats_with_its_seed_and_its_default_seed_is_0(ch):
    """The same seed gives the same A, another seed another A; no seed is seed 0; r up to min(d_in, d_out)"""
    A1, _ = pair(ch.lora_init(6, 3, 3, seed=7), "lora_init(6, 3, 3, seed=7)", ((6, 3), (3, 3)))
    A2, _ = pair(ch.lora_init(6, 3, 3, seed=7), "lora_init(6, 3, 3, seed=7) again", ((6, 3), (3, 3)))
    A3, _ = pair(ch.lora_init(6, 3, 3, seed=8), "lora_init(6, 3, 3, seed=8)", ((6, 3), (3, 3)))
    close(A2, A1, "lora_init(6, 3, 3, seed=7) twice: the same A")
    if np.allclose(A3, A1):
        pytest.fail("lora_init: seeds 7 and 8 give the same A: the generator must be made from the seed",
                    pytrace=False)
    A0, _ = pair(ch.lora_init(3, 6, 2), "lora_init(3, 6, 2)", ((3, 2), (2, 6)))
    A00, _ = pair(ch.lora_init(3, 6, 2, seed=0), "lora_init(3, 6, 2, seed=0)", ((3, 2), (2, 6)))
    close(A0, A00, "lora_init(3, 6, 2) against lora_init(3, 6, 2, seed=0): the default seed is 0")
    pair(ch.lora_init(1, 1, 1), "lora_init(1, 1, 1): the smallest adapter", ((1, 1), (1, 1)))


def test_a_rank_above_the_weights_own_is_refused(ch):
    """lora_init with r > min(d_in, d_out) raises ValueError naming r: a larger rank only adds parameters"""
    raises_clearly(lambda: ch.lora_init(4, 2, 3), ValueError, names=("r",),
                   hint="A B of shape (4, 2) has rank at most 2: refuse r = 3 before drawing anything")
    raises_clearly(lambda: ch.lora_init(2, 5, 3, seed=1), ValueError, names=("r",))


def test_one_step_from_a_B_that_is_not_zero(ch):
    """Both factors move, each by −η times its gradient at the same (old) A and B; the loss is ½ Σ (y − t)²"""
    x, W, A, B = layer(60)
    target = np.random.default_rng(61).normal(size=(3, 4))
    new, loss = stepped(ch.lora_train_step(x, target, {"W": W, "A": A, "B": B}, 4, 0.05),
                        "lora_train_step from a trained B")
    d_y = x @ W + 2 * (x @ A @ B) - target
    close(loss, 0.5 * np.sum(d_y ** 2), "lora_train_step's loss: ½ Σ (y − t)², before the step", kind="float",
          mistakes=[("the ½ left out", np.sum(d_y ** 2))])
    new_b = B - 0.05 * 2 * ((x @ A).T @ d_y)
    close(new["B"], new_b, "lora_train_step's new B", kind="array")
    close(new["A"], A - 0.05 * 2 * (x.T @ (d_y @ B.T)), "lora_train_step's new A: its gradient at the old B",
          kind="array", mistakes=[(UPDATED_B, A - 0.05 * 2 * (x.T @ (d_y @ new_b.T)))])
    close(new["W"], W, "lora_train_step's W: frozen", kind="array",
          mistakes=[(W_GRADIENT, W - 0.05 * (x.T @ d_y))])


def test_a_step_of_zero_changes_nothing_and_small_steps_lower_the_loss(ch):
    """lr = 0 gives back A, B and W; a small step lowers the loss, as a step against the gradient must"""
    x, W, A, B = layer(70)
    target = np.random.default_rng(71).normal(size=(3, 4))
    params = {"W": W, "A": A, "B": B}
    new, before = stepped(ch.lora_train_step(x, target, params, 2, 0), "lora_train_step with lr = 0")
    for name in "WAB":
        close(new[name], params[name], f"lora_train_step with lr = 0: {name} unchanged", kind="array")
    new, _ = stepped(ch.lora_train_step(x, target, params, 2, 1e-3), "lora_train_step with lr = 1e-3")
    _, after = stepped(ch.lora_train_step(x, target, new, 2, 0), "lora_train_step after one step")
    if not after < before:
        pytest.fail(f"one step with lr = 1e-3 took the loss from {before} to {after}: a step against the gradient "
                    "must lower it\n  looks like: a step uphill, along the gradient", pytrace=False)


def test_parameter_counts_of_other_models(ch):
    """Σ r (d_in + d_out): a tuple of tuples, NumPy whole numbers, and a weight whose shape is not square"""
    close(ch.lora_parameter_count([(768, 768)] * 4, 16), 4 * 16 * 1536, "lora_parameter_count([(768, 768)] × 4, 16)",
          kind="int")
    close(ch.lora_parameter_count(((10, 3), (np.int64(7), 2)), np.int32(2)), 2 * 13 + 2 * 9,
          "lora_parameter_count(((10, 3), (7, 2)), 2)", kind="int",
          mistakes=[("the frozen weights counted as trainable too", 44 + 30 + 14)])
    close(ch.lora_parameter_count([[1, 1]], 1), 2, "lora_parameter_count([[1, 1]], 1)", kind="int")


def test_nothing_modifies_its_inputs(ch):
    """lora_forward, lora_backward, lora_train_step and lora_merge leave their inputs as they were"""
    x, W, A, B = layer(80)
    d_y, target = np.ones((3, 4)), np.zeros((3, 4))
    params = {"W": W, "A": A, "B": B}
    # the judge fails a call that changes one of its arguments in place (ChangedItsInput)
    ch.lora_forward(x, W, A, B, 2)
    ch.lora_backward(d_y, x, W, A, B, 2)
    ch.lora_train_step(x, target, params, 2, 0.1)
    ch.lora_merge(W, A, B, 2)


# -- bad input gets a clear error (the checks marked given are the stubs': CONTRIBUTING.md) -----------------
@pytest.mark.given
def test_arrays_that_do_not_fit_are_refused(ch):
    """x, W, A, B or d_y not a NumPy matrix of finite real numbers, or not fitting one another: ValueError naming it"""
    x, W, A, B = layer(90)
    d_y = np.ones((3, 4))
    for bad, name in ((x.tolist(), "x"), (x[0], "x"), (np.zeros((0, 5)), "x"), (W[0], "W"), (np.array([[np.nan, 1.0]]), "A"), (np.array([[1 + 2j, 0], [0, 1]]), "B"),
                      (np.zeros((0, 4)), "B"), (np.array([[True]]), "W")):
        args = {"x": x, "W": W, "A": A, "B": B, name: bad}
        raises_clearly(lambda args=args: ch.lora_forward(args["x"], args["W"], args["A"], args["B"], 2), ValueError,
                       names=(name,))
        if name != "x":
            raises_clearly(lambda args=args: ch.lora_merge(args["W"], args["A"], args["B"], 2), ValueError,
                           names=(name,))
    raises_clearly(lambda: ch.lora_forward(x[:, :4], W, A, B, 2), ValueError, "(3, 4)", "(5, 4)")
    raises_clearly(lambda: ch.lora_forward(x, W, A[:4], B, 2), ValueError, "(4, 2)", names=("A",))
    raises_clearly(lambda: ch.lora_merge(W, A, B[:1], 2), ValueError, "(1, 4)", names=("B",))
    raises_clearly(lambda: ch.lora_merge(W, A, B[:, :3], 2), ValueError, "(2, 3)", names=("B",))
    raises_clearly(lambda: ch.lora_backward(d_y[:2], x, W, A, B, 2), ValueError, "(2, 4)", "(3, 4)", names=("d_y",))
    raises_clearly(lambda: ch.lora_backward(d_y.tolist(), x, W, A, B, 2), ValueError, "list", names=("d_y",))
    raises_clearly(lambda: ch.lora_backward(d_y, x, W, A[:, :1], B, 2), ValueError, names=("A", "B"))
    close(ch.lora_forward(np.array([[2]]), np.array([[3]]), np.array([[1]]), np.array([[1]]), 1), [[8.0]],
          "lora_forward of integer 1 × 1 arrays", kind="array")


@pytest.mark.given
def test_alphas_learning_rates_and_params_that_are_not_are_refused(ch):
    """alpha not finite > 0, lr not finite ≥ 0, params not exactly W, A and B (named: its keys or type): ValueError"""
    x, W, A, B = layer(91)
    target = np.zeros((3, 4))
    for alpha in (0, -1.0, np.inf, True, "2", None):
        raises_clearly(lambda alpha=alpha: ch.lora_forward(x, W, A, B, alpha), ValueError, names=("alpha",))
        raises_clearly(lambda alpha=alpha: ch.lora_merge(W, A, B, alpha), ValueError, names=("alpha",))
        raises_clearly(lambda alpha=alpha: ch.lora_backward(target, x, W, A, B, alpha), ValueError, names=("alpha",))
    params = {"W": W, "A": A, "B": B}
    for lr in (-0.1, np.nan, False, "0.1"):
        raises_clearly(lambda lr=lr: ch.lora_train_step(x, target, params, 2, lr), ValueError, names=("lr",))
    for bad, words, names in (({"W": W, "A": A}, (), ()), ({**params, "b": B}, (), ("b",)), ([W, A, B], ("list",), ())):
        raises_clearly(lambda bad=bad: ch.lora_train_step(x, target, bad, 2, 0.1), ValueError, *words,
                       names=("params", *names))
    raises_clearly(lambda: ch.lora_train_step(x, target[:, :3], params, 2, 0.1), ValueError, "(3, 3)", "(3, 4)",
                   names=("target",))
    raises_clearly(lambda: ch.lora_train_step(x, target.tolist(), params, 2, 0.1), ValueError, "list",
                   names=("target",))
    raises_clearly(lambda: ch.lora_train_step(x, target, {**params, "A": A[:4]}, 2, 0.1), ValueError, names=("A",))


@pytest.mark.given
def test_sizes_seeds_shapes_and_ranks_that_are_not_whole_are_refused(ch):
    """lora_init's sizes whole numbers ≥ 1 and seed ≥ 0; lora_parameter_count's shapes pairs of them, r ≥ 1"""
    for args, name in (((0, 2, 1), "d_in"), ((2, 2.0, 1), "d_out"), ((2, 2, True), "r"), ((2, 2, 0), "r")):
        raises_clearly(lambda args=args: ch.lora_init(*args), ValueError, names=(name,))
    raises_clearly(lambda: ch.lora_init(2, 2, 1, seed=-1), ValueError, names=("seed",))
    raises_clearly(lambda: ch.lora_init(2, 2, 1, seed=0.5), ValueError, names=("seed",))
    for shapes, word in (([], "shapes"), ((4, 4), "shapes[0]"), ([(4, 4, 4)], "shapes[0]"), ([(4, 0)], "shapes[0]"),
                         ([(4, 4), (2.0, 3)], "shapes[1]"), ("4x4", "shapes")):
        raises_clearly(lambda shapes=shapes: ch.lora_parameter_count(shapes, 2), ValueError, word)
    for r in (0, 1.0, False):
        raises_clearly(lambda r=r: ch.lora_parameter_count([(4, 4)], r), ValueError, names=("r",))
