"""Chapter 15: AdamW, a schedule, clipping and checkpoints — the course's own worksheet (Part II), and beyond.

The worksheet: two weights, one with a tiny gradient and one with a large one, take two AdamW steps (both
move by about lr on the first); a warm-up-then-cosine schedule at a few steps; the global norm of two
gradient tensors and the clipping it calls for; and a run saved after step 1 and resumed, which lands where
the unbroken run did. Beyond it: AdamW runs on other shapes and settings, schedules with other warm-ups and
lengths (every step, the boundaries named), clipping of other shapes (against stored snapshots:
tests/snapshots/chapter15.npz, written from solutions/ by the authors), a long run resumed bit for bit,
inputs left untouched, and bad input — mismatched keys and shapes, max_norm ≤ 0, warm-up longer than the
run, a checkpoint that does not fit the run or is not a checkpoint at all. Nothing here computes what a
function of the chapter computes.
"""

import math
import os
import tempfile
import uuid
from pathlib import Path

import numpy as np
import pytest
from pytest_check import check

from kata import close, expect, raises_clearly, returned, snapshot

CHAPTER = 15
SNAP = snapshot(CHAPTER)
NUMPY = Path(np.__file__).resolve().parent  # files any Python with NumPy can read: none of them a checkpoint

UNCORRECTED = "no bias correction: m / (√v + ε) with m and v still biased towards 0"
COUPLED = "weight decay added to the gradient (Adam with an L2 penalty, not AdamW)"
EPS_INSIDE = "ε inside the square root: √(v̂ + ε) instead of √v̂ + ε"
OFF_BY_ONE = "the schedule off by one step: steps counted from 1, so step s gets what step s − 1 should"
PER_TENSOR = "each tensor clipped separately, by its own norm, instead of all by the global norm"
DECAY_AFTER = "weight decay applied to the updated weight: λ times the weight after the Adam step, not before it"
END_EARLY = "the decay ends one step early: min_lr is reached at step total − 1 instead of at step total"
ALWAYS = "clipped although the norm is below max_norm: gradients under the limit were scaled up to it"
CLIPPED_NORM = "the norm after clipping returned: the global norm is the one measured before clipping"


@pytest.fixture
def scratch():
    """Names for checkpoint files: under /tmp (the one folder the sandboxed learner's code may write), removed after."""
    made = []

    def name(what):
        base = "/tmp" if os.name == "posix" else tempfile.gettempdir()
        made.append(os.path.join(base, f"kata-ch15-{what}-{uuid.uuid4().hex}.npz"))
        return made[-1]

    yield name
    for path in made:  # without the sandbox the file is on this disk; with it, it went with the worker
        if os.path.isfile(path):
            os.remove(path)


def hyper_of(ws):
    """The step's AdamW settings as keywords."""
    return {k: ws.inputs[k] for k in ("beta1", "beta2", "eps", "weight_decay") if k in ws.inputs}


def run(ch, params, grads_seq, lrs, hyper, state=None):
    """The learner's AdamW over a run of stored gradients: (params, state) at the end."""
    state = ch.adamw_init(params) if state is None else state
    for grads, lr in zip(grads_seq, lrs, strict=True):
        params, state = ch.adamw_step(params, grads, state, lr, **hyper)
    return params, state


def case(i):
    """params, gradients, learning rates and settings of a stored AdamW run."""
    k = f"adamw/{i}"
    hyper = {name: float(v) for name, v in SNAP.tree(f"{k}/hyper").items()}
    return SNAP.tree(f"{k}/params"), SNAP.tree(f"{k}/grads"), [float(x) for x in SNAP[f"{k}/lrs"]], hyper


def schedule(i):
    """The keywords of a stored schedule."""
    k = f"schedule/{i}"
    return {"max_lr": SNAP.number(f"{k}/max_lr"), "min_lr": SNAP.number(f"{k}/min_lr"),
            "warmup_steps": int(SNAP.number(f"{k}/warmup")), "total_steps": int(SNAP.number(f"{k}/total"))}


def same_bits(got, want, what):
    """got and want hold the same keys and, key by key, float64 arrays with the very same bits."""
    with check:
        assert isinstance(got, dict) and sorted(got) == sorted(want), (
            f"{what}: expected a dict with the keys {sorted(want)}, got "
            f"{sorted(got) if isinstance(got, dict) else type(got).__name__}")
    for k in want:
        a = got.get(k) if isinstance(got, dict) else None
        with check:
            assert isinstance(a, np.ndarray) and a.dtype == np.float64 and a.shape == want[k].shape and \
                a.tobytes() == want[k].tobytes(), (
                f"{what}[{k!r}]: not the same bits — expected {want[k]!r}, got {a!r}"
                + (f" (differs by up to {np.max(np.abs(a - want[k])):.3g})"
                   if isinstance(a, np.ndarray) and a.shape == want[k].shape else ""))


# -- the worksheet, step by step -------------------------------------------------------------------
@pytest.mark.step("15.1")
def test_the_first_step_moves_each_weight_by_about_lr_whatever_its_gradient(ch, ws):
    params = {"w": ws.input("w")}
    new_params, new_state = ch.adamw_step(params, {"w": ws.input("g1")}, ch.adamw_init(params), ws.inputs["lr"],
                                          **hyper_of(ws))
    returned(new_state["step"], "int", "the step count adamw_step returns in its state")
    expect(ws, new_params["w"], kind="array")


@pytest.mark.step("15.2")
def test_the_second_step_remembers_the_first_through_the_moments(ch, ws):
    params, lr, hyper = {"w": ws.input("w")}, ws.inputs["lr"], hyper_of(ws)
    p1, s1 = ch.adamw_step(params, {"w": ws.input("g1")}, ch.adamw_init(params), lr, **hyper)
    p2, s2 = ch.adamw_step(p1, {"w": ws.input("g2")}, s1, lr, **hyper)
    with check:
        assert returned(s2["step"], "int", "the step count after two steps") == 2, \
            f"after two steps the state's step must be 2, got {s2['step']!r}"
    expect(ws, p2["w"], kind="array")


def lrs_of(ch, ws):
    """The learner's schedule at the step's steps."""
    kw = {k: ws.inputs[k] for k in ("max_lr", "min_lr", "warmup_steps", "total_steps")}
    return [returned(ch.lr_at(s, **kw), "float", f"lr_at({s})") for s in ws.inputs["steps"]]


@pytest.mark.step("15.3")
def test_the_warm_up_climbs_linearly_and_step_0_already_moves(ch, ws):
    expect(ws, lrs_of(ch, ws))


@pytest.mark.step("15.4")
def test_the_cosine_decays_from_the_peak_to_the_floor_and_stays_there(ch, ws):
    expect(ws, lrs_of(ch, ws))


@pytest.mark.step("15.5")
def test_the_global_norm_is_one_norm_of_all_the_gradients_together(ch, ws):
    _, norm = ch.clip_by_global_norm({"W": ws.input("W"), "b": ws.input("b")}, ws.inputs["max_norm"])
    expect(ws, norm, kind="float")


@pytest.mark.step("15.6")
def test_clipping_scales_every_gradient_by_the_same_factor_and_only_above_the_limit(ch, ws):
    grads = {"W": ws.input("W"), "b": ws.input("b")}
    clipped = [returned(ch.clip_by_global_norm(grads, max_norm)[0]["W"], "array", f"15.6 W clipped to {max_norm}")
               for max_norm in ws.inputs["max_norms"]]
    expect(ws, np.concatenate(clipped))  # W clipped with each max_norm in turn, side by side


@pytest.mark.step("15.7")
def test_a_run_resumed_from_a_checkpoint_lands_where_the_unbroken_run_did(ch, ws, scratch):
    params, lr, hyper = {"w": ws.input("w")}, ws.inputs["lr"], hyper_of(ws)
    p1, s1 = ch.adamw_step(params, {"w": ws.input("g1")}, ch.adamw_init(params), lr, **hyper)
    path = scratch("15-7")
    ch.save_checkpoint(path, p1, s1)
    p1, s1 = ch.load_checkpoint(path)
    p2, _ = ch.adamw_step(p1, {"w": ws.input("g2")}, s1, lr, **hyper)
    expect(ws, p2["w"], kind="array")


# -- beyond the worksheet: other shapes and settings, against the stored snapshot ---------------------------
def test_the_state_starts_with_no_steps_and_zero_moments(ch):
    """adamw_init: step 0 (an int), and m and v all zeros shaped like each parameter, for three shapes"""
    params, _, _, _ = case(1)
    state = ch.adamw_init(params)
    with check:
        assert isinstance(state, dict) and sorted(state) == ["m", "step", "v"], \
            f"the state must be a dict with the keys 'step', 'm' and 'v', got {state!r}"
    with check:
        assert returned(state["step"], "int", "the state's step") == 0, f"the state's step must start at 0, got {state['step']!r}"
    for part in ("m", "v"):
        for k, p in params.items():
            close(state[part][k], np.zeros_like(p), f"state[{part!r}][{k!r}] of a new state (zeros of shape {p.shape})",
                  kind="array")


@pytest.mark.parametrize("i", range(SNAP.count("adamw")))
def test_adamw_matches_on_other_shapes_and_settings(ch, i):
    """AdamW runs of 2–5 steps: (3, 5) and (5,); (4, 2, 3), (2, 6) and (6,); (7,) with ε = 1e-3; two (5, 3)/(3, 5)"""
    k = f"adamw/{i}"
    params, grads_seq, lrs, hyper = case(i)
    out, state = run(ch, params, grads_seq, lrs, hyper)
    what = f"{len(lrs)} AdamW steps on {', '.join(f'{n} {p.shape}' for n, p in params.items())}, settings {hyper}"
    with check:
        assert returned(state["step"], "int", "the state's step") == len(lrs), \
            f"after {len(lrs)} steps the state's step must be {len(lrs)}, got {state['step']!r}"
    mistakes = {"uncorrected": UNCORRECTED, "coupled": COUPLED, "eps_inside": EPS_INSIDE, "decay_after": DECAY_AFTER}
    for name in params:
        close(out[name], SNAP[f"{k}/out/{name}"], f"{name} after {what}", kind="array",
              mistakes=[(m, SNAP[f"{k}/mistakes/{key}/{name}"]) for key, m in mistakes.items()])
        close(state["m"][name], SNAP[f"{k}/m/{name}"], f"the first moment m of {name} after {what}", kind="array")
        close(state["v"][name], SNAP[f"{k}/v/{name}"], f"the second moment v of {name} after {what}", kind="array")


def test_a_weight_with_a_zero_gradient_still_decays(ch):
    """a zero gradient moves a weight by lr·λ·w only: the decay is apart from the gradient"""
    params = {"w": np.array([2.0, -4.0])}
    out, _ = ch.adamw_step(params, {"w": np.zeros(2)}, ch.adamw_init(params), 0.1, weight_decay=0.5)
    close(out["w"], [1.9, -3.8], "a zero gradient, lr 0.1, weight_decay 0.5: w − lr·λ·w", kind="array",
          mistakes=[(COUPLED, [2.0 - 0.1 * 1.0 / (1.0 + 1e-8), -4.0 + 0.1 * 2.0 / (2.0 + 1e-8)])])
    out, _ = ch.adamw_step(params, {"w": np.zeros(2)}, ch.adamw_init(params), 0.1)
    close(out["w"], [1.998, -3.996], "a zero gradient, lr 0.1, weight_decay left at its default 0.01", kind="array")


def test_whole_number_params_get_float64_moments(ch):
    """adamw_init of integer arrays: m and v are float64 zeros (the moments will not stay whole)"""
    params = {"W": np.arange(6).reshape(2, 3), "b": np.array([1, -2])}
    state = ch.adamw_init(params)
    for part in ("m", "v"):
        for k, p in params.items():
            got = state[part][k]
            close(got, np.zeros(p.shape), f"state[{part!r}][{k!r}] of integer params", kind="array")
            with check:
                assert got.dtype == np.float64, f"state[{part!r}][{k!r}] has dtype {got.dtype}, expected float64"


@pytest.mark.parametrize("i", range(SNAP.count("schedule")))
def test_the_schedule_matches_at_every_step_on_other_settings(ch, i):
    """lr_at at every step from 0 to total + 2: warm-ups of 10, 0, 6 (= total), 1 and 3 steps, one flat schedule"""
    k = f"schedule/{i}"
    kw = schedule(i)
    got = [returned(ch.lr_at(int(s), **kw), "float", f"lr_at({int(s)})") for s in SNAP[f"{k}/steps"]]
    close(got, SNAP[f"{k}/lr"], f"lr_at(0 … {kw['total_steps'] + 2}) with {kw}",
          mistakes=[(OFF_BY_ONE, SNAP[f"{k}/off_by_one"]), (END_EARLY, SNAP[f"{k}/end_early"]),
                    (END_EARLY, SNAP[f"{k}/end_shorter"])])


@pytest.mark.parametrize("i", range(SNAP.count("schedule")))
def test_the_schedule_meets_its_boundaries(ch, i):
    """step 0 gets max_lr / warmup, warmup − 1 and warmup get max_lr, total and later get min_lr"""
    kw = schedule(i)
    warm, total, top, floor = kw["warmup_steps"], kw["total_steps"], kw["max_lr"], kw["min_lr"]
    points = {total: floor, total + 1: floor}
    if warm > 0:
        points |= {0: top / warm, warm - 1: top}
    if warm < total:
        points[warm] = top
    for s, want in points.items():
        close(returned(ch.lr_at(s, **kw), "float", f"lr_at({s})"), want, f"lr_at({s}) with {kw}")


def test_the_shortest_schedules_and_the_default_floor(ch):
    """total_steps 1 is a schedule (with and without its one warm-up step); min_lr defaults to 0"""
    for warm in (0, 1):
        kw = {"max_lr": 0.5, "warmup_steps": warm, "total_steps": 1, "min_lr": 0.05}
        close(returned(ch.lr_at(0, **kw), "float", "lr_at(0)"), 0.5, f"lr_at(0) with {kw}")
        close(returned(ch.lr_at(1, **kw), "float", "lr_at(1)"), 0.05, f"lr_at(1) with {kw}")
    kw = {"max_lr": 0.1, "warmup_steps": 2, "total_steps": 8}
    close(returned(ch.lr_at(8, **kw), "float", "lr_at(8)"), 0.0, f"lr_at(8) with {kw} and min_lr left at its default 0")
    close(returned(ch.lr_at(5, **kw), "float", "lr_at(5)"), 0.05, f"lr_at(5) with {kw}: half-way down, cos(π/2) = 0")


@pytest.mark.parametrize("i", range(SNAP.count("clip")))
def test_clipping_matches_on_other_shapes(ch, i):
    """clip_by_global_norm on three, four, one and three tensors; the last one's norm is under max_norm"""
    k = f"clip/{i}"
    grads, max_norm = SNAP.tree(f"{k}/grads"), SNAP.number(f"{k}/max_norm")
    clipped, norm = ch.clip_by_global_norm(grads, max_norm)
    what = f"clip_by_global_norm of {', '.join(f'{n} {g.shape}' for n, g in grads.items())}, max_norm {max_norm}"
    close(norm, SNAP.number(f"{k}/norm"), f"the global norm, {what}", kind="float",
          mistakes=[("the tensors' norms added instead of one norm of all the numbers together",
                     SNAP.number(f"{k}/sum_of_norms")), (CLIPPED_NORM, SNAP.number(f"{k}/clipped_norm"))])
    for name in grads:
        close(clipped[name], SNAP[f"{k}/clipped/{name}"], f"{name} clipped, {what}", kind="array",
              mistakes=[(PER_TENSOR, SNAP[f"{k}/per_tensor/{name}"]), (ALWAYS, SNAP[f"{k}/always/{name}"])])


def test_gradients_under_max_norm_are_returned_unchanged(ch):
    """a global norm at or under max_norm changes nothing: the same numbers come back (max_norm = the norm, and above)"""
    for max_norm in (13.0, 20.0):
        clipped, norm = ch.clip_by_global_norm({"W": np.array([3.0, 4.0]), "b": np.array([12.0])}, max_norm)
        close(norm, 13.0, f"the global norm of [3, 4] and [12] (max_norm {max_norm})", kind="float")
        close(clipped["W"], [3.0, 4.0], f"W with max_norm {max_norm} ≥ the norm 13", kind="array")
        close(clipped["b"], [12.0], f"b with max_norm {max_norm} ≥ the norm 13", kind="array")


@pytest.mark.parametrize("i", range(SNAP.count("clip")))
def test_clipped_gradients_have_a_global_norm_of_at_most_max_norm(ch, i):
    """clipping again what was clipped finds a global norm of min(norm, max_norm) and changes nothing more"""
    grads, max_norm = SNAP.tree(f"clip/{i}/grads"), SNAP.number(f"clip/{i}/max_norm")
    clipped, norm = ch.clip_by_global_norm(grads, max_norm)
    again, norm_again = ch.clip_by_global_norm(clipped, max_norm)
    close(norm_again, min(returned(norm, "float", "the global norm"), max_norm),
          "the global norm of the clipped gradients", kind="float")
    for name in grads:
        close(again[name], clipped[name], f"{name} clipped twice", kind="array")


# -- checkpoints ------------------------------------------------------------------------------------
@pytest.mark.parametrize("i", range(SNAP.count("adamw")))
def test_a_checkpoint_gives_back_the_very_same_bits(ch, i, scratch):
    """save_checkpoint, then load_checkpoint: every weight and moment bit for bit, the step an int"""
    params, grads_seq, lrs, hyper = case(i)
    out, state = run(ch, params, grads_seq, lrs, hyper)
    path = scratch(f"round-trip-{i}")
    ch.save_checkpoint(path, out, state)
    params_back, state_back = ch.load_checkpoint(path)
    same_bits(params_back, out, "the loaded params")
    for part in ("m", "v"):
        same_bits(state_back[part], state[part], f"the loaded state[{part!r}]")
    with check:
        assert returned(state_back["step"], "int", "the loaded step") == len(lrs), \
            f"the loaded step must be {len(lrs)}, got {state_back['step']!r}"


@pytest.mark.parametrize("k", [1, 3])
def test_a_resumed_run_continues_exactly_as_the_unbroken_run(ch, k, scratch):
    """5 steps in one go, and k steps, save, load, 5 − k steps: the same bits (k = 1 and 3)"""
    params, grads_seq, lrs, hyper = case(1)
    whole, whole_state = run(ch, params, grads_seq, lrs, hyper)
    half, half_state = run(ch, params, grads_seq[:k], lrs[:k], hyper)
    path = scratch(f"resume-{k}")
    ch.save_checkpoint(path, half, half_state)
    loaded, loaded_state = ch.load_checkpoint(path, like=params)
    resumed, resumed_state = run(ch, loaded, grads_seq[k:], lrs[k:], hyper, state=loaded_state)
    same_bits(resumed, whole, f"the weights of the run resumed after step {k}")
    for part in ("m", "v"):
        same_bits(resumed_state[part], whole_state[part], f"the state[{part!r}] of the run resumed after step {k}")


def test_nothing_modifies_its_inputs(ch, scratch):
    """adamw_init, adamw_step, clip_by_global_norm and save_checkpoint leave params, grads and state untouched"""
    params, grads_seq, lrs, hyper = case(0)
    _, state = run(ch, params, grads_seq[:1], lrs[:1], hyper)
    grads = grads_seq[1]
    arrays = {**{f"params[{k!r}]": v for k, v in params.items()}, **{f"grads[{k!r}]": v for k, v in grads.items()},
              **{f"state['m'][{k!r}]": v for k, v in state["m"].items()},
              **{f"state['v'][{k!r}]": v for k, v in state["v"].items()}}
    copies = {name: a.copy() for name, a in arrays.items()}
    step = state["step"]
    ch.adamw_init(params)
    ch.adamw_step(params, grads, state, 0.1, **hyper)
    ch.clip_by_global_norm(grads, 1e-3)
    ch.save_checkpoint(scratch("inputs"), params, state)
    with check:
        assert state["step"] == step, f"state['step'] was {step}, after the calls it is {state['step']!r}"
    for name, a in arrays.items():
        close(a, copies[name], f"{name} after the calls")


# -- bad input gets a clear error ------------------------------------------------------------------
@pytest.mark.given
def test_gradients_with_other_keys_than_the_params_are_named(ch):
    """grads without b, or with a key c params lacks, raises ValueError naming the key and grads"""
    params = {"W": np.ones((2, 3)), "b": np.ones(3)}
    state = ch.adamw_init(params)
    raises_clearly(lambda: ch.adamw_step(params, {"W": np.ones((2, 3))}, state, 0.1), ValueError, names=("b", "grads"),
                   hint="compare the keys of grads with those of params before stepping")
    grads = {"W": np.ones((2, 3)), "b": np.ones(3), "c": np.ones(2)}
    raises_clearly(lambda: ch.adamw_step(params, grads, state, 0.1), ValueError, names=("c", "grads"),
                   hint="a gradient for a weight that does not exist is a mistake upstream: refuse it")


@pytest.mark.given
def test_a_gradient_of_another_shape_is_named(ch):
    """a (3, 2) gradient for a (2, 3) weight W raises ValueError naming W and both shapes"""
    params = {"W": np.ones((2, 3)), "b": np.ones(3)}
    raises_clearly(lambda: ch.adamw_step(params, {"W": np.ones((3, 2)), "b": np.ones(3)}, ch.adamw_init(params), 0.1),
                   ValueError, "(3, 2)", "(2, 3)", names=("W",))


@pytest.mark.given
def test_a_state_that_does_not_fit_the_params_is_refused(ch):
    """a state without m, or with moments of another parameter, raises ValueError naming what is wrong"""
    params = {"W": np.ones((2, 3)), "b": np.ones(3)}
    grads = {k: np.ones_like(v) for k, v in params.items()}
    state = ch.adamw_init(params)
    raises_clearly(lambda: ch.adamw_step(params, grads, {"step": 0, "v": state["v"]}, 0.1), ValueError, names=("m",))
    other = ch.adamw_init({"W": np.ones((2, 3)), "c": np.ones(3)})
    raises_clearly(lambda: ch.adamw_step(params, grads, other, 0.1), ValueError, names=("state", "b"))


@pytest.mark.given
@pytest.mark.parametrize("t", [-1, 1.5])
def test_a_step_count_that_is_not_a_whole_number_is_refused(ch, t):
    """a state whose step is −1 or 1.5 raises ValueError naming step"""
    params = {"W": np.ones(2)}
    state = {**ch.adamw_init(params), "step": t}
    raises_clearly(lambda: ch.adamw_step(params, {"W": np.ones(2)}, state, 0.1), ValueError, names=("step",))


@pytest.mark.given
@pytest.mark.parametrize("lr", [0.0, -0.1])
def test_a_learning_rate_that_is_not_positive_is_refused(ch, lr):
    """lr 0 or −0.1 raises ValueError saying 'lr'"""
    params = {"W": np.ones(2)}
    raises_clearly(lambda: ch.adamw_step(params, {"W": np.ones(2)}, ch.adamw_init(params), lr), ValueError, "lr")


@pytest.mark.given
def test_arguments_that_are_not_dicts_are_refused(ch, scratch):
    """a list for params, grads, state, state['m'] or like raises ValueError saying 'dict' and 'list', naming which"""
    params, listed = {"W": np.ones(2)}, [np.ones(2)]
    state = ch.adamw_init(params)
    raises_clearly(lambda: ch.adamw_init(listed), ValueError, "dict", "list", names=("params",))
    raises_clearly(lambda: ch.adamw_step(listed, params, state, 0.1), ValueError, "dict", "list", names=("params",))
    raises_clearly(lambda: ch.adamw_step(params, listed, state, 0.1), ValueError, "dict", "list", names=("grads",))
    raises_clearly(lambda: ch.adamw_step(params, params, [0, listed, listed], 0.1), ValueError, "dict", "list",
                   names=("state",))
    raises_clearly(lambda: ch.adamw_step(params, params, {**state, "m": listed}, 0.1), ValueError, "dict", "list",
                   names=("m",))
    raises_clearly(lambda: ch.clip_by_global_norm(listed, 1.0), ValueError, "dict", "list", names=("grads",))
    path = scratch("not-a-dict")
    raises_clearly(lambda: ch.save_checkpoint(path, listed, state), ValueError, "dict", "list", names=("params",))
    ch.save_checkpoint(path, params, state)
    raises_clearly(lambda: ch.load_checkpoint(path, like=listed), ValueError, "dict", "list", names=("like",))


@pytest.mark.given
@pytest.mark.parametrize("max_norm", [0.0, -1.0])
def test_max_norm_must_be_positive(ch, max_norm):
    """max_norm 0 or −1 raises ValueError saying 'max_norm'"""
    raises_clearly(lambda: ch.clip_by_global_norm({"W": np.ones(2)}, max_norm), ValueError, "max_norm",
                   hint="a norm of at most 0 would zero every gradient: refuse max_norm <= 0")


@pytest.mark.given
def test_a_warm_up_longer_than_the_run_is_refused(ch):
    """warmup_steps 10 with total_steps 8 raises ValueError naming both and their values"""
    raises_clearly(lambda: ch.lr_at(0, max_lr=0.1, warmup_steps=10, total_steps=8), ValueError, "10", "8",
                   names=("warmup_steps", "total_steps"))


@pytest.mark.given
@pytest.mark.parametrize("step", [-1, 2.0, True])
def test_a_step_that_is_not_a_whole_number_of_at_least_0_is_refused(ch, step):
    """lr_at(−1), lr_at(2.0) and lr_at(True) raise ValueError naming step"""
    raises_clearly(lambda: ch.lr_at(step, max_lr=0.1, warmup_steps=2, total_steps=8), ValueError, names=("step",))


@pytest.mark.given
@pytest.mark.parametrize("bad", [-1, 2.0])
def test_warm_up_and_total_steps_must_be_whole_numbers(ch, bad):
    """warmup_steps or total_steps −1 or 2.0 raises ValueError naming the setting"""
    raises_clearly(lambda: ch.lr_at(0, max_lr=0.1, warmup_steps=bad, total_steps=8), ValueError,
                   names=("warmup_steps",))
    raises_clearly(lambda: ch.lr_at(0, max_lr=0.1, warmup_steps=0, total_steps=bad), ValueError,
                   names=("total_steps",))


@pytest.mark.given
def test_schedules_with_impossible_settings_are_refused(ch):
    """total_steps 0, max_lr 0, or min_lr above max_lr raises ValueError naming the setting"""
    raises_clearly(lambda: ch.lr_at(0, max_lr=0.1, warmup_steps=0, total_steps=0), ValueError,
                   names=("total_steps",))
    raises_clearly(lambda: ch.lr_at(0, max_lr=0.0, warmup_steps=1, total_steps=8), ValueError, names=("max_lr",))
    raises_clearly(lambda: ch.lr_at(0, max_lr=0.1, warmup_steps=1, total_steps=8, min_lr=0.2), ValueError,
                   names=("min_lr",))


@pytest.mark.given
def test_a_checkpoint_path_must_end_in_npz(ch, scratch):
    """save_checkpoint to a path without .npz raises ValueError saying '.npz' (np.savez would add it silently)"""
    params = {"W": np.ones(2)}
    path = scratch("suffix")[: -len(".npz")] + ".ckpt"
    raises_clearly(lambda: ch.save_checkpoint(path, params, ch.adamw_init(params)), ValueError, ".npz")


@pytest.mark.given
def test_a_parameter_name_with_a_slash_is_refused(ch, scratch):
    """a key 'blocks/0' raises ValueError naming it: '/' separates the parts of a checkpoint"""
    params = {"blocks/0": np.ones(2)}
    raises_clearly(lambda: ch.save_checkpoint(scratch("slash"), params, ch.adamw_init(params)), ValueError,
                   "blocks/0")


@pytest.mark.given
def test_a_checkpoint_that_does_not_fit_the_run_is_named(ch, scratch):
    """load_checkpoint(like=...): a key the checkpoint lacks, one it has extra, a shape that differs: each named"""
    params = {"W": np.ones((2, 3)), "b": np.ones(3)}
    path = scratch("fit")
    ch.save_checkpoint(path, params, ch.adamw_init(params))
    raises_clearly(lambda: ch.load_checkpoint(path, like={**params, "E": np.ones((4, 2))}), ValueError, names=("E",),
                   hint="every parameter the run expects must be in the checkpoint")
    raises_clearly(lambda: ch.load_checkpoint(path, like={"W": np.ones((2, 3))}), ValueError, names=("b",),
                   hint="a parameter in the checkpoint that the run does not have means another model's checkpoint")
    raises_clearly(lambda: ch.load_checkpoint(path, like={"W": np.ones((3, 3)), "b": np.ones(3)}), ValueError,
                   "(2, 3)", "(3, 3)", names=("W",))


@pytest.mark.given
@pytest.mark.parametrize("name", ["__init__.py", "lib/tests/data/python3.npy", "lib/tests/data/py3-objarr.npz"])
def test_a_file_that_is_not_a_checkpoint_is_refused(ch, name):
    """NumPy's own __init__.py, a single .npy array and an .npz holding a pickled array: 'not a checkpoint'"""
    path = NUMPY / name
    with check:
        assert path.is_file(), f"this NumPy has no {path}: the check needs another file that is not a checkpoint"
    words = ("not a checkpoint", "pickle") if name.endswith(".npz") else ("not a checkpoint",)
    raises_clearly(lambda: ch.load_checkpoint(str(path)), ValueError, *words, path.name,
                   hint="read with np.load(path, allow_pickle=False) and check the format marker before trusting it")


def test_a_global_norm_is_a_norm(ch):
    """clip_by_global_norm of one tensor [3, 4] finds 5; of [1, 1, 1, 1] split over two tensors, 2"""
    _, norm = ch.clip_by_global_norm({"W": np.array([[3.0], [4.0]])}, 100.0)
    close(norm, 5.0, "the global norm of one tensor [[3], [4]]", kind="float")
    _, norm = ch.clip_by_global_norm({"a": np.ones(3), "b": np.ones(1)}, 100.0)
    close(norm, math.sqrt(4.0), "the global norm of [1, 1, 1] and [1]", kind="float")
