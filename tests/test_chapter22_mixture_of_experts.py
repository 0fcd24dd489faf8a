"""Chapter 22: Mixture of experts — the course's own worksheet (Part IV), and beyond.

Four tokens of width 2, three experts, k = 2, a router whose logits are logarithms of whole numbers, capacity 2.
Each worksheet step is one test below, named as the claim it checks; the numbers come from
reference/chapter22_mixture_of_experts.toml (audited, in exact fractions, by
scripts/audit_chapter22_mixture_of_experts.py). Beyond the worksheet: other shapes, with the router's softmax and
the dense sum written in the open here; dispatch on cases worked by hand and its invariants; the load-balancing
loss of an even router (1); the backward against central differences of the learner's own forward (the inputs
chosen so that no nudge of 1e-6 changes a choice).
"""

import numpy as np
import pytest

from kata import close, expect, numerical_gradient, raises_clearly, returned, step_case

CHAPTER = 22
NUM = {"rtol": 1e-5, "atol": 1e-8}  # central differences (CONTRIBUTING.md, "Tolerances")
NO_RENORM = "no renormalisation: the chosen probabilities as they are, not divided by their sum"
DROPPED_KEPT = "the dropped assignments still combined: past its capacity an expert does not run"


def pair(result, what):
    """A tuple of two, as the docstring promises: (experts, gates) or (y, cache)."""
    if not isinstance(result, tuple) or len(result) != 2:
        pytest.fail(f"{what}: expected a tuple of two, got {type(result).__name__}", pytrace=False)
    return result


def grads(result, what):
    """(dx, dW_router, dW_experts) of moe_backward, each checked as an array."""
    if not isinstance(result, tuple) or len(result) != 3:
        pytest.fail(f"{what}: expected a tuple (dx, dW_router, dW_experts), got {type(result).__name__}",
                    pytrace=False)
    return [returned(g, "array", f"{what}: {n}") for g, n in zip(result, ("dx", "dW_router", "dW_experts"),
                                                                  strict=True)]


def ids(ws, name="experts"):
    """An input of expert ids as the integer array the docstrings take."""
    return np.array(ws.inputs[name])


def layer(ws):
    """The worksheet's layer: x, W_router, W_experts, k, capacity."""
    return ws.input("x"), ws.input("W_router"), ws.input("W_experts"), ws.inputs["k"], ws.inputs["capacity"]


# -- the worksheet, step by step -------------------------------------------------------------------
@pytest.mark.step("22.1")
def test_the_router_gives_each_token_a_distribution_over_the_experts(ch, ws):
    expect(ws, ch.router_probabilities(ws.input("x"), ws.input("W_router")), kind="array")


@pytest.mark.step("22.2")
def test_each_token_goes_to_its_two_most_probable_experts_a_tie_to_the_lower_id(ch, ws):
    experts, _ = pair(ch.top_k_gates(ws.input("probs"), ws.inputs["k"]), "22.2 top_k_gates")
    expect(ws, experts, kind="array")


@pytest.mark.step("22.3")
def test_the_gates_are_the_chosen_probabilities_over_their_sum(ch, ws):
    _, gates = pair(ch.top_k_gates(ws.input("probs"), ws.inputs["k"]), "22.3 top_k_gates")
    expect(ws, gates, kind="array")


@pytest.mark.step("22.4")
def test_the_capacity_is_the_even_share_times_the_factor_rounded_up(ch, ws):
    i = ws.inputs
    expect(ws, ch.expert_capacity(i["n_tokens"], i["n_experts"], i["k"], i["factor"]), kind="int")


@pytest.mark.step("22.5")
def test_first_choices_fill_the_experts_before_second_choices_and_two_are_dropped(ch, ws):
    expect(ws, ch.dispatch(ids(ws), ws.inputs["n_experts"], ws.inputs["capacity"]), kind="array")


@pytest.mark.step("22.6")
def test_the_output_adds_each_kept_experts_output_times_its_gate(ch, ws):
    y, _ = pair(ch.moe_forward(*layer(ws)), "22.6 moe_forward")
    expect(ws, y, kind="array")


@pytest.mark.step("22.7")
def test_the_load_balancing_loss_multiplies_assignment_shares_by_mean_probabilities(ch, ws):
    expect(ws, ch.load_balancing_loss(ws.input("probs"), ids(ws)), kind="float")


@pytest.mark.step("22.8")
def test_the_logits_gradient_is_the_softmax_backward_within_the_chosen_experts(ch, ws):
    got = ch.gates_backward(ws.input("d_gates"), ws.input("gates"), ids(ws), ws.inputs["n_experts"])
    expect(ws, got, kind="array")


@pytest.mark.parametrize("which", [
    step_case("22.9", "the_experts_gradients_come_from_kept_assignments_scaled_by_their_gates", 2),
    step_case("22.10", "the_router_learns_through_the_gates", 1),
    step_case("22.11", "the_input_gets_gradient_through_the_experts_and_the_router", 0),
])
def test_moe_backward(ch, ws, which):
    _, cache = pair(ch.moe_forward(*layer(ws)), f"{ws.id} moe_forward")
    expect(ws, grads(ch.moe_backward(ws.input("d_y"), cache), f"{ws.id} moe_backward")[which])


# -- beyond the worksheet: other shapes ------------------------------------------------------------------------
def inputs(tokens=6, d=3, n=4, d_out=2, seed=22):
    """Fixed small arrays of distinct entries: x (tokens, d), W_router (d, n), W_experts (n, d, d_out)."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(tokens, d)), rng.normal(size=(d, n)), rng.normal(size=(n, d, d_out))


def test_the_router_over_four_experts(ch):
    """softmax(x W_r) along each row for 6 tokens of width 3 and 4 experts, written here in the open"""
    x, W_router, _ = inputs()
    z = x @ W_router
    e = np.exp(z - z.max(axis=1, keepdims=True))
    cols = np.exp(z - z.max(axis=0, keepdims=True))
    close(ch.router_probabilities(x, W_router), e / e.sum(axis=1, keepdims=True), "router_probabilities, x (6, 3), "
          "W_router (3, 4)", kind="array", mistakes=[("softmax over the tokens", cols / cols.sum(axis=0))])


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_top_k_over_five_experts_with_ties(ch, k):
    """the k largest of each row, largest first, ties to the lower id; gates sum to 1 (k = 1: every gate is 1)"""
    probs = np.array([[0.1, 0.3, 0.1, 0.3, 0.2], [0.2, 0.2, 0.2, 0.2, 0.2], [0.05, 0.15, 0.4, 0.1, 0.3],
                      [0.3, 0.1, 0.1, 0.1, 0.4]])
    order = np.argsort(-probs, axis=1, stable=True)[:, :k]
    chosen = np.take_along_axis(probs, order, axis=1)
    experts, gates = pair(ch.top_k_gates(probs, k), f"top_k_gates(probs, {k})")
    close(returned(experts, "array", "experts"), order, f"top_k_gates(probs, {k}): the experts", kind="array",
          mistakes=[("a tie broken toward the higher expert id", np.argsort(probs, axis=1, stable=True)[:, ::-1][:, :k])])
    if not np.issubdtype(np.asarray(experts).dtype, np.integer):
        pytest.fail(f"top_k_gates(probs, {k}): the experts must be whole numbers of integer dtype, got dtype "
                    f"{np.asarray(experts).dtype}", pytrace=False)
    close(gates, chosen / chosen.sum(axis=1, keepdims=True), f"top_k_gates(probs, {k}): the gates", kind="array",
          mistakes=[(NO_RENORM, chosen)])


@pytest.mark.parametrize("case", [(8, 4, 2, 1.0, 4), (5, 4, 1, 1.0, 2), (10, 3, 2, 1.5, 10), (6, 4, 2, 0.5, 2),
                                  (1, 8, 2, 1.0, 1), (7, 2, 2, 2, 14)])
def test_the_capacity_of_other_batches(ch, case):
    """⌈factor · tokens · k / n_experts⌉, a Python int, for factors below, at and above 1"""
    tokens, n, k, factor, want = case
    got = returned(ch.expert_capacity(tokens, n, k, factor), "int", f"expert_capacity({tokens}, {n}, {k}, {factor})")
    close(got, want, f"expert_capacity({tokens}, {n}, {k}, {factor})",
          mistakes=[("capacity off by one: rounded down (floor) instead of up", int(factor * tokens * k // n))])


DISPATCH = np.array([[0, 2], [0, 1], [1, 0], [0, 2], [2, 0]])  # five tokens, k = 2, three experts


@pytest.mark.parametrize("capacity, want", [
    (3, [[0, 1], [1, 1], [0, -1], [2, 2], [0, -1]]),  # expert 0 full after three first choices: two second dropped
    (2, [[0, 1], [1, 1], [0, -1], [-1, -1], [0, -1]]),  # token 3's first choice dropped: tokens 0 and 1 came first
    (1, [[0, -1], [-1, -1], [0, -1], [-1, -1], [0, -1]]),
    (0, [[-1, -1]] * 5),
    (10, [[0, 1], [1, 1], [0, 3], [2, 2], [0, 4]]),  # room for all: places in priority order
])
def test_dispatch_of_five_tokens_worked_by_hand(ch, capacity, want):
    """the places of five tokens' two choices among three experts, first choices first, for capacities 0 to 10"""
    got = returned(ch.dispatch(DISPATCH, 3, capacity), "array", f"dispatch(experts, 3, {capacity})")
    close(got, np.array(want), f"dispatch(experts = {DISPATCH.tolist()}, 3, {capacity})")


def test_every_expert_keeps_as_many_as_it_can_each_place_once(ch):
    """6 tokens, k = 3 of 4 experts: each expert fills places 0 … min(C, its count) − 1, each once, for every C"""
    experts = np.array([[3, 1, 0], [1, 3, 2], [1, 0, 3], [2, 1, 0], [1, 2, 3], [3, 2, 1]])
    for capacity in range(7):
        slots = returned(ch.dispatch(experts, 4, capacity), "array", f"dispatch(experts, 4, {capacity})")
        for e in range(4):
            places = np.sort(slots[experts == e])
            count = int(np.sum(experts == e))
            want = np.concatenate([np.arange(min(capacity, count)), -np.ones(count - min(capacity, count))])
            close(np.sort(places), np.sort(want), f"dispatch(experts, 4, {capacity}): the places of expert {e}, "
                  "sorted")


def test_with_room_for_everything_the_layer_is_the_sum_over_each_tokens_k_experts(ch):
    """nothing dropped: y_t = Σ_s g_ts x_t W_e, written here in the open, 6 tokens, k = 2 of 4 experts, d_out = 2"""
    x, W_router, W_experts = inputs()
    z = x @ W_router
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    order = np.argsort(-p, axis=1, stable=True)[:, :2]
    g = np.take_along_axis(p, order, axis=1)
    want = sum((g[:, s, None] / g.sum(axis=1, keepdims=True)) * np.einsum("td,tdo->to", x, W_experts[order[:, s]])
               for s in range(2))
    y, _ = pair(ch.moe_forward(x, W_router, W_experts, 2, 12), "moe_forward(x, W_router, W_experts, 2, 12)")
    close(y, want, "moe_forward, k = 2 of 4 experts, capacity 12: nothing dropped", kind="array",
          mistakes=[(NO_RENORM, sum(g[:, s, None] * np.einsum("td,tdo->to", x, W_experts[order[:, s]])
                                    for s in range(2)))])
    y0, _ = pair(ch.moe_forward(x, W_router, W_experts, 2, 0), "moe_forward(..., capacity 0)")
    close(y0, np.zeros_like(want), "moe_forward with capacity 0: every assignment dropped, every row 0",
          kind="array", mistakes=[(DROPPED_KEPT, want)])


def test_a_layer_of_one_expert_is_that_expert(ch):
    """n = 1, k = 1: the gate is 1 and y = x W_0 for every token within capacity; past it, 0"""
    x, W_router, W_experts = inputs(tokens=5, n=1)
    y, _ = pair(ch.moe_forward(x, W_router, W_experts, 1, 3), "moe_forward, one expert, capacity 3")
    want = x @ W_experts[0]
    want[3:] = 0.0
    close(y, want, "moe_forward, one expert, k = 1, capacity 3 of 5 tokens: the last two dropped", kind="array",
          mistakes=[(DROPPED_KEPT, x @ W_experts[0])])


def test_an_even_router_has_a_balancing_loss_of_1(ch):
    """every P_i = 1/N and every f_i = 1/N give N · Σ f_i P_i = 1; all to one expert with P one-hot gives N"""
    probs = np.full((6, 3), 1 / 3)
    experts = np.array([[0, 1], [1, 2], [2, 0], [0, 1], [1, 2], [2, 0]])
    close(ch.load_balancing_loss(probs, experts), 1.0, "load_balancing_loss of an even router", kind="float")
    probs = np.array([[1.0, 0.0, 0.0]] * 4)
    close(ch.load_balancing_loss(probs, np.zeros((4, 1), dtype=int)), 3.0,
          "load_balancing_loss when every token goes to expert 0 with probability 1 (k = 1, N = 3)", kind="float",
          mistakes=[("the factor N forgotten", 1.0)])


def test_the_balancing_loss_of_five_tokens(ch):
    """N · Σ f_i P_i for 5 tokens, k = 2 of 4 experts, written here in the open (f from the assignments)"""
    x, W_router, _ = inputs(tokens=5)
    z = x @ W_router
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    experts = np.array([[0, 1], [1, 3], [1, 0], [2, 1], [3, 1]])
    f = np.array([2, 5, 1, 2]) / 10
    close(ch.load_balancing_loss(p, experts), 4 * np.sum(f * p.mean(axis=0)), "load_balancing_loss, 5 tokens, "
          "k = 2, 4 experts", kind="float", mistakes=[("f divided by the tokens, not by tokens · k",
                                                       8 * np.sum(f * p.mean(axis=0)))])
    idle = np.array([[0, 1], [1, 0], [1, 2], [2, 0], [0, 1]])  # expert 3, the last, is sent nothing
    f = np.array([4, 4, 2, 0]) / 10
    close(ch.load_balancing_loss(p, idle), 4 * np.sum(f * p.mean(axis=0)), "load_balancing_loss, 5 tokens, k = 2, "
          "4 experts, the last one sent nothing (f = 0 there, its P still counted in N)", kind="float")


# -- beyond the worksheet: the backward against central differences ---------------------------------------------
def test_gates_backward_matches_central_differences_of_your_gates(ch):
    """dL/dz of L = Σ dg ∘ gates(softmax(z)) for 5 tokens, k = 2 of 4 experts: your top_k_gates, differentiated"""
    rng = np.random.default_rng(7)
    z, dg = rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    eye = np.eye(5)

    def loss(logits):
        return float(np.sum(dg * ch.top_k_gates(ch.router_probabilities(eye, logits), 2)[1]))

    experts, gates = pair(ch.top_k_gates(ch.router_probabilities(eye, z), 2), "top_k_gates")
    got = ch.gates_backward(dg, gates, np.asarray(experts), 4)
    close(got, numerical_gradient(loss, z), "gates_backward against central differences of your top_k_gates of "
          "your router_probabilities (x the identity, so the logits are W_r)", kind="array", **NUM)


@pytest.mark.parametrize("capacity, d_out", [(2, 2), (4, 3)])
def test_the_backward_matches_central_differences_of_the_forward(ch, capacity, d_out):
    """dx, dW_r, dW_e of Σ dy ∘ y for 6 tokens, k = 2 of 3 experts, capacity 2 (drops) and 4: your own moe_forward"""
    x, W_router, W_experts = inputs(n=3, d_out=d_out, seed=5)
    dy = np.random.default_rng(6).normal(size=(6, d_out))
    forward = ch.moe_forward
    _, cache = pair(forward(x, W_router, W_experts, 2, capacity), "moe_forward")
    got = grads(ch.moe_backward(dy, cache), "moe_backward")
    numerical = [numerical_gradient(lambda a: float(np.sum(dy * forward(a, W_router, W_experts, 2, capacity)[0])), x),
                 numerical_gradient(lambda a: float(np.sum(dy * forward(x, a, W_experts, 2, capacity)[0])), W_router),
                 numerical_gradient(lambda a: float(np.sum(dy * forward(x, W_router, a, 2, capacity)[0])), W_experts)]
    for name, g, want in zip(("dx", "dW_router", "dW_experts"), got, numerical, strict=True):
        close(g, want, f"moe_backward's {name}, 6 tokens, k = 2 of 3 experts, capacity {capacity}, vs central "
              "differences", kind="array", **NUM)


def test_nothing_modifies_its_inputs(ch):
    """every chapter 22 function leaves its inputs as they were"""
    x, W_router, W_experts = inputs()
    probs = ch.router_probabilities(x, W_router)
    experts = np.array([[0, 1], [1, 2], [2, 3], [3, 0], [0, 2], [1, 3]])
    gates, dg, dy = np.full((6, 2), 0.5), np.ones((6, 2)), np.ones((6, 2))
    # the judge fails a call that changes one of its arguments in place (ChangedItsInput)
    ch.router_probabilities(x, W_router)
    ch.top_k_gates(probs, 2)
    ch.dispatch(experts, 4, 2)
    ch.load_balancing_loss(probs, experts)
    ch.gates_backward(dg, gates, experts, 4)
    _, cache = ch.moe_forward(x, W_router, W_experts, 2, 2)
    ch.moe_backward(dy, cache)


# -- bad input gets a clear error (the checks marked given are the stubs': CONTRIBUTING.md) -----------------
@pytest.mark.given
def test_a_k_out_of_range_is_refused(ch):
    """k = 0 or k above the number of experts raises ValueError naming k: a token goes to 1 … n experts"""
    probs = np.full((2, 3), 1 / 3)
    for k in (0, 4, -1):
        raises_clearly(lambda k=k: ch.top_k_gates(probs, k), ValueError, names=("k",),
                       hint="refuse k before sorting: 1 ≤ k ≤ the number of experts")


def test_moe_forward_refuses_a_k_out_of_range(ch):
    """moe_forward with k above the number of experts raises ValueError naming k"""
    x, W_router, W_experts = inputs(n=3)
    raises_clearly(lambda: ch.moe_forward(x, W_router, W_experts, 4, 2), ValueError, names=("k",),
                   hint="moe_forward takes its experts from top_k_gates, which refuses the k")


@pytest.mark.given
def test_shapes_that_do_not_fit_are_refused(ch):
    """x, W_router, W_experts, probs, experts, gates and d_y that do not fit: ValueError naming the shapes"""
    x, W_router, W_experts = inputs(n=3)
    raises_clearly(lambda: ch.router_probabilities(x, np.ones((2, 3))), ValueError, "(6, 3)", "(2, 3)")
    raises_clearly(lambda: ch.router_probabilities(x.tolist(), W_router), ValueError, "list", names=("x",))
    raises_clearly(lambda: ch.router_probabilities(np.ones(3), W_router), ValueError, names=("x",))
    raises_clearly(lambda: ch.moe_forward(x, W_router, np.ones((3, 2, 2)), 2, 2), ValueError, "(3, 2, 2)")
    raises_clearly(lambda: ch.moe_forward(x, W_router, np.ones((4, 3, 2)), 2, 2), ValueError, "(4, 3, 2)")
    raises_clearly(lambda: ch.top_k_gates(np.array([[0.5, 0.6]]), 1), ValueError, names=("probs",))
    raises_clearly(lambda: ch.top_k_gates(np.array([[0.5, 0.5]]), 1.0), ValueError, names=("k",))
    raises_clearly(lambda: ch.top_k_gates(np.array([[0.5, 0.5]]), True), ValueError, names=("k",))
    probs = np.full((2, 3), 1 / 3)
    raises_clearly(lambda: ch.load_balancing_loss(probs, np.array([[0], [3]])), ValueError, names=("experts",))
    raises_clearly(lambda: ch.load_balancing_loss(probs, np.array([[0], [1], [2]])), ValueError, names=("experts",))
    raises_clearly(lambda: ch.load_balancing_loss(probs, np.array([[0.0], [1.0]])), ValueError, names=("experts",))
    g = np.full((2, 2), 0.5)
    raises_clearly(lambda: ch.gates_backward(np.ones((2, 3)), g, np.array([[0, 1], [1, 2]]), 3), ValueError,
                   "(2, 3)", "(2, 2)")
    raises_clearly(lambda: ch.gates_backward(g, g, np.array([[0], [1]]), 3), ValueError, names=("experts",))
    raises_clearly(lambda: ch.gates_backward(g, g, np.array([[0, 1], [1, 3]]), 3), ValueError, names=("experts",))
    _, cache = pair(ch.moe_forward(x, W_router, W_experts, 2, 2), "moe_forward")
    raises_clearly(lambda: ch.moe_backward(np.ones((6, 3)), cache), ValueError, "(6, 3)", "(6, 2)")


@pytest.mark.given
def test_counts_and_factors_that_do_not_fit_are_refused(ch):
    """tokens, experts, k not whole numbers ≥ 1 (k ≤ n), a factor not > 0, a capacity below 0: ValueError naming it"""
    for args, name in [((0, 3, 2, 1.0), "n_tokens"), ((4, 0, 1, 1.0), "n_experts"), ((4, 3, 0, 1.0), "k"),
                       ((4, 3, 4, 1.0), "k"), ((4.0, 3, 2, 1.0), "n_tokens"), ((4, 3, True, 1.0), "k"),
                       ((4, 3, 2, 0.0), "factor"), ((4, 3, 2, -1.0), "factor"), ((4, 3, 2, "1"), "factor"),
                       ((4, 3, 2, np.inf), "factor"), ((4, 3, 2, True), "factor")]:
        raises_clearly(lambda args=args: ch.expert_capacity(*args), ValueError, names=(name,))
    experts = np.array([[0, 1], [1, 2]])
    raises_clearly(lambda: ch.dispatch(experts, 3, -1), ValueError, names=("capacity",))
    raises_clearly(lambda: ch.dispatch(experts, 3, 2.0), ValueError, names=("capacity",))
    raises_clearly(lambda: ch.dispatch(experts, 2, 2), ValueError, names=("experts",))
    raises_clearly(lambda: ch.dispatch(experts.tolist(), 3, 2), ValueError, names=("experts",))
    raises_clearly(lambda: ch.dispatch(np.array([0, 1]), 3, 2), ValueError, names=("experts",))
    raises_clearly(lambda: ch.gates_backward(np.ones((2, 2)), np.ones((2, 2)) / 2, experts, 0), ValueError,
                   names=("n_experts",))
    close(ch.expert_capacity(np.int64(4), 3, 2, np.float64(1.25)), 4, "expert_capacity of NumPy numbers")


@pytest.mark.given
def test_each_misfit_is_refused_naming_what_is_wrong(ch):
    """each argument that is not what its docstring says, on its own: ValueError naming it (and its shape)"""
    x, W_router, W_experts = inputs(n=3)
    raises_clearly(lambda: ch.router_probabilities(x, np.ones(3)), ValueError, names=("W_router",))
    raises_clearly(lambda: ch.moe_forward(x, W_router, np.ones((3, 3)), 2, 2), ValueError, names=("W_experts",))
    raises_clearly(lambda: ch.top_k_gates(np.ones(3) / 3, 1), ValueError, names=("probs",))
    raises_clearly(lambda: ch.top_k_gates(np.array([[1.5, -0.5]]), 1), ValueError, names=("probs",))
    probs = np.full((2, 3), 1 / 3)
    raises_clearly(lambda: ch.load_balancing_loss(probs, np.array([[0], [-1]])), ValueError, names=("experts",))
    raises_clearly(lambda: ch.dispatch(np.array([0, 1]), 3, 2), ValueError, "(2,)", names=("experts",))
    raises_clearly(lambda: ch.dispatch([[0, 1]], 3, 2), ValueError, "list", names=("experts",))
    raises_clearly(lambda: ch.dispatch(np.array([[0, 1]]), 0, 2), ValueError, names=("n_experts",))
    g = np.full((2, 2), 0.5)
    experts = np.array([[0, 1], [1, 2]])
    raises_clearly(lambda: ch.gates_backward(np.ones(2), g, experts, 3), ValueError, names=("d_gates",))
    raises_clearly(lambda: ch.gates_backward(g, np.ones(2), experts, 3), ValueError, names=("gates",))
    _, cache = pair(ch.moe_forward(x, W_router, W_experts, 2, 2), "moe_forward")
    dy = np.ones((6, 2))
    raises_clearly(lambda: ch.moe_backward(dy, None), ValueError, names=("cache",))
    raises_clearly(lambda: ch.moe_backward(dy, list(cache)), ValueError, names=("cache",))


@pytest.mark.given
def test_the_smallest_counts_are_taken(ch):
    """one token, one expert: dispatch, the capacity and the gates' backward take them as they take any other"""
    close(ch.expert_capacity(4, 1, 1, 1.0), 4, "expert_capacity(4, 1, 1, 1.0): one expert takes every token")
    close(ch.dispatch(np.array([[0, 1]]), 3, 1), np.array([[0, 0]]), "dispatch of a single token")
    close(ch.gates_backward(np.ones((2, 1)), np.ones((2, 1)), np.zeros((2, 1), dtype=int), 1), np.zeros((2, 1)),
          "gates_backward with one expert: a gate of 1 that nothing can change")
