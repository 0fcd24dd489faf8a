"""Chapter 24: GRPO — the course's own worksheet (Part IV), and beyond.

A group of four rewards, then two groups of four; a batch of two responses of three positions (the second
ends in padding) with advantages +1 and −1, ε = 0.2 and β = 0.1. Each worksheet step is one test below, named
as the claim it checks; the numbers come from reference/chapter24_grpo.toml (audited by
scripts/audit_chapter24_grpo.py). Beyond the worksheet: each function on other shapes and other arguments
(ε, β and the clip's ε passed on, not fixed), the k3 estimate averaged over a whole distribution equal to the
KL exactly, masked means that do not see the padding, your gradient against central differences of your own
loss, and bad input.
"""

import numpy as np
import pytest

from kata import close, expect, numerical_gradient, raises_clearly, returned

CHAPTER = 24
NUM = {"rtol": 1e-5, "atol": 1e-8}  # central differences (CONTRIBUTING.md, "Tolerances")
EXACT = {"rtol": 1e-12, "atol": 1e-12}  # an exact identity, summed in float64
RNG = np.random.default_rng(24)
DDOF1 = "ddof = 1 (the sample std): the page's std is the group's own, ddof = 0"
BATCH_NORM = "normalised across the batch instead of the group"
NEG_SIDE = "clipping the wrong side for a negative advantage: for A < 0 the clip binds below 1 − ε, not above 1 + ε"
NO_MIN = "clip(ρ)·A without the min"
KL_SIGN = "the KL's sign: log π − log π_ref where k3 takes log π_ref − log π"
DENOM = "the mask's denominator: divided by T, every position, instead of the response's own number of tokens"
PER_TOKEN = "averaged per token over the batch, not per response first"

# a batch of four responses (two prompts, G = 2) of five positions: a prompt of one or two tokens, padding
MASK = np.array([[0, 1, 1, 1, 1], [0, 1, 1, 1, 0], [0, 0, 1, 1, 1], [0, 0, 1, 1, 0]])
LOGP = np.log(RNG.uniform(0.05, 0.9, size=(4, 5)))
# ratios spread on both sides of 1 ± 0.2, none within 0.01 of a clip bound (where the slope jumps)
RHO = np.array([[1.5, 0.7, 1.12, 1.35, 0.93], [1.3, 0.6, 1.45, 0.95, 1.25],
                [0.65, 1.4, 0.75, 1.05, 1.6], [1.15, 0.5, 1.3, 0.85, 0.7]])
LOGP_OLD = LOGP - np.log(RHO)
LOGP_REF = LOGP + RNG.normal(0.0, 0.5, size=(4, 5))
ADV = np.array([0.8, -1.3, 1.1, -0.6])


def flt(value, what):
    """The docstring promises a Python float."""
    return returned(value, "float", what)


# -- the worksheet, step by step -------------------------------------------------------------------
@pytest.mark.step("24.1")
def test_a_group_of_four_rewards_becomes_advantages_of_plus_and_minus_one(ch, ws):
    expect(ws, ch.group_advantages(ws.input("rewards"), ws.inputs["group_size"], ws.inputs["eps"]), kind="array")


@pytest.mark.step("24.2")
def test_each_prompts_group_is_normalised_on_its_own_and_a_group_of_equal_rewards_gets_zero(ch, ws):
    expect(ws, ch.group_advantages(ws.input("rewards"), ws.inputs["group_size"], ws.inputs["eps"]), kind="array")


@pytest.mark.step("24.3")
def test_the_surrogate_is_clipped_above_for_a_positive_advantage_and_below_for_a_negative_one(ch, ws):
    got = ch.clipped_surrogate(ws.input("logp"), ws.input("logp_old"), ws.input("advantages"), ws.inputs["clip_eps"])
    expect(ws, got, kind="array")


@pytest.mark.step("24.4")
def test_k3_is_zero_where_the_policy_is_the_reference_and_positive_elsewhere(ch, ws):
    expect(ws, ch.k3_kl(ws.input("logp"), ws.input("logp_ref")), kind="array")


@pytest.mark.step("24.5")
def test_each_response_is_averaged_over_its_own_tokens_only(ch, ws):
    expect(ws, ch.masked_mean(ws.input("values"), ws.input("mask")), kind="array")


def batch(ws):
    """The worksheet batch's arguments, in the order grpo_loss and grpo_loss_grad take them."""
    return (*(ws.input(k) for k in ("logp", "logp_old", "logp_ref", "advantages", "mask")), ws.inputs["clip_eps"],
            ws.inputs["beta"])


@pytest.mark.step("24.6")
def test_the_loss_is_minus_the_mean_over_responses_of_surrogate_less_beta_kl(ch, ws):
    expect(ws, ch.grpo_loss(*batch(ws)), kind="float")


@pytest.mark.step("24.7")
def test_the_gradient_is_zero_at_clipped_tokens_and_at_padding(ch, ws):
    expect(ws, ch.grpo_loss_grad(*batch(ws)), kind="array")


# -- beyond the worksheet: group advantages ---------------------------------------------------------------------
def test_advantages_of_three_groups_of_three(ch):
    """three groups of three distinct rewards: (r − mean) / (std + ε) per group, std with ddof 0"""
    rewards = np.array([0.5, 2.0, 1.0, 3.0, 0.0, 4.5, 1.5, 1.0, 0.25])
    groups = rewards.reshape(3, 3)
    centred = groups - groups.mean(axis=1, keepdims=True)
    want = (centred / (groups.std(axis=1, keepdims=True) + 1e-6)).ravel()
    batch_wide = (rewards - rewards.mean()) / (rewards.std() + 1e-6)
    close(ch.group_advantages(rewards, 3, 1e-6), want, f"group_advantages({rewards.tolist()}, 3)", kind="array",
          mistakes=[(DDOF1, (centred / (groups.std(axis=1, ddof=1, keepdims=True) + 1e-6)).ravel()),
                    (BATCH_NORM, batch_wide)])


def test_advantages_use_the_eps_they_are_given(ch):
    """ε is the caller's: a group [1, 0, 0, 1] (std ½) with ε = ½ gives ±½; without an ε, the default 1e-4"""
    default = 0.5 / (0.5 + 1e-4)
    close(ch.group_advantages(np.array([1.0, 0.0, 0.0, 1.0]), 4, 0.5), [0.5, -0.5, -0.5, 0.5],
          "group_advantages([1, 0, 0, 1], 4, eps=0.5)", kind="array",
          mistakes=[("the eps argument ignored (ε fixed at the default 1e-4)", [default, -default, -default, default])])
    close(ch.group_advantages(np.array([1.0, 0.0, 0.0, 1.0]), 4), [default, -default, -default, default],
          "group_advantages([1, 0, 0, 1], 4) with the default ε = 1e-4", kind="array")


def test_groups_of_one_and_a_shifted_group(ch):
    """groups of one: every advantage 0; a group's advantages do not change when a constant is added to it"""
    close(ch.group_advantages(np.array([3.0, -1.0, 2.0]), 1), [0.0, 0.0, 0.0], "group_advantages(…, 1)",
          kind="array")
    rewards = np.array([1.0, 0.0, 2.0, 5.0, 4.0, 4.0])
    first = returned(ch.group_advantages(rewards, 3), "array", "group_advantages(rewards, 3)")
    shifted = returned(ch.group_advantages(rewards + np.array([0, 0, 0, 10, 10, 10]), 3), "array",
                       "group_advantages with 10 added to the second group")
    close(shifted, first, "group_advantages with 10 added to the second group's rewards: the same advantages",
          kind="array", mistakes=[(BATCH_NORM, (rewards - rewards.mean()) / (rewards.std() + 1e-6))])
    close(first.reshape(2, 3).sum(axis=1), [0.0, 0.0], "each group's advantages add up to 0", kind="array")


def test_a_batch_that_is_not_whole_groups_is_refused(ch):
    """group_advantages of 6 rewards in groups of 4 raises ValueError naming group_size"""
    raises_clearly(lambda: ch.group_advantages(np.arange(6.0), 4), ValueError, "6", names=("group_size",),
                   hint="6 rewards are not whole groups of 4: refuse them before reshaping")


# -- beyond the worksheet: the surrogate and the KL ---------------------------------------------------------------
def test_the_clipped_surrogate_on_four_responses_of_five_tokens(ch):
    """min(ρA, clip(ρ, 1 − ε, 1 + ε)·A) on (4, 5), ratios from 0.5 to 1.6, advantages of both signs, ε = 0.2 and 0.1"""
    A = ADV[:, None]
    for eps in (0.2, 0.1):
        clipped = np.clip(RHO, 1 - eps, 1 + eps) * A
        close(ch.clipped_surrogate(LOGP, LOGP_OLD, ADV, eps), np.minimum(RHO * A, clipped),
              f"clipped_surrogate on (4, 5), clip_eps = {eps}", kind="array",
              mistakes=[(NEG_SIDE, np.minimum(RHO, 1 + eps) * A), (NO_MIN, clipped),
                        ("the clip_eps argument ignored (ε fixed at 0.2)",
                         np.minimum(RHO * A, np.clip(RHO, 0.8, 1.2) * A))])


def test_before_the_policy_moves_the_surrogate_is_the_advantage(ch):
    """with log π = log π_old (ρ = 1, the first step on a batch) every token's surrogate is its response's A"""
    close(ch.clipped_surrogate(LOGP, LOGP, ADV), np.repeat(ADV[:, None], 5, axis=1),
          "clipped_surrogate(logp, logp, advantages)", kind="array")


def test_k3_on_four_responses_of_five_tokens(ch):
    """x − log x − 1 with x = π_ref / π on (4, 5): every entry ≥ 0, 0 where log π = log π_ref"""
    log_x = LOGP_REF - LOGP
    close(ch.k3_kl(LOGP, LOGP_REF), np.exp(log_x) - log_x - 1, "k3_kl on (4, 5)", kind="array",
          mistakes=[(KL_SIGN, np.exp(-log_x) + log_x - 1)])
    close(ch.k3_kl(LOGP, LOGP), np.zeros((4, 5)), "k3_kl(logp, logp): the policy is the reference", kind="array")


def test_k3_averaged_over_the_policy_is_the_kl_exactly(ch):
    """Σ_x π(x)·k3(x) over a whole vocabulary of 6 is KL(π ‖ π_ref) = Σ π log(π / π_ref) (to 1e-12)"""
    for seed in (1, 2):
        rng = np.random.default_rng(seed)
        pi, ref = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
        k3 = returned(ch.k3_kl(np.log(pi)[None, :], np.log(ref)[None, :]), "array", "k3_kl over 6 tokens")
        kl, reverse = float(np.sum(pi * np.log(pi / ref))), float(np.sum(pi * (pi / ref - np.log(pi / ref) - 1)))
        close(float(np.sum(pi * k3[0])), kl, f"Σ π·k3 over 6 tokens against KL(π ‖ π_ref), π = "
              f"{pi.round(3).tolist()}", kind="float", mistakes=[(KL_SIGN, reverse)], **EXACT)


# -- beyond the worksheet: the masked mean and the loss -----------------------------------------------------------
def test_masked_means_with_a_prompt_and_padding(ch):
    """each row's mean over its mask's 1s; the values under the mask's 0s do not matter, a bool mask is the same"""
    values = RNG.normal(size=(4, 5))
    counts = MASK.sum(axis=1)
    want = (MASK * values).sum(axis=1) / counts
    close(ch.masked_mean(values, MASK), want, "masked_mean on (4, 5) with prompts and padding", kind="array",
          mistakes=[(DENOM, (MASK * values).sum(axis=1) / 5), ("the prompt and the padding counted",
                                                                values.sum(axis=1) / counts)])
    noisy = np.where(MASK == 1, values, 1e6)
    close(ch.masked_mean(noisy, MASK.astype(bool)), want, "masked_mean with 1e6 under the mask's 0s and a bool mask",
          kind="array")
    close(ch.masked_mean(values, np.ones((4, 5))), values.mean(axis=1), "masked_mean with every position a token",
          kind="array")


@pytest.mark.given
def test_a_response_without_tokens_is_refused(ch):
    """masked_mean with a row of the mask all 0 raises ValueError saying "no response token" and naming the row"""
    mask = np.array([[1, 1, 0], [0, 0, 0]])
    raises_clearly(lambda: ch.masked_mean(np.ones((2, 3)), mask), ValueError, "no response token", "1",
                   hint="row 1 of the mask has no 1: its mean would be 0 / 0")


def test_the_loss_on_four_responses_of_five_tokens(ch):
    """−(1/B) Σ_b masked mean of (s − β k3), with the ε and β given: (0.2, 0.04), (0.1, 0.3), (0.3, 0)"""
    counts = MASK.sum(axis=1)
    for eps, beta in ((0.2, 0.04), (0.1, 0.3), (0.3, 0.0)):
        s = np.minimum(RHO * ADV[:, None], np.clip(RHO, 1 - eps, 1 + eps) * ADV[:, None])
        log_x = LOGP_REF - LOGP
        per_token = MASK * (s - beta * (np.exp(log_x) - log_x - 1))
        got = flt(ch.grpo_loss(LOGP, LOGP_OLD, LOGP_REF, ADV, MASK, eps, beta), "grpo_loss")
        close(got, -np.mean(per_token.sum(axis=1) / counts), f"grpo_loss on (4, 5), clip_eps = {eps}, beta = {beta}",
              kind="float", mistakes=[(PER_TOKEN, -per_token.sum() / counts.sum())])


# -- beyond the worksheet: the gradient ---------------------------------------------------------------------------
@pytest.mark.parametrize("eps, beta", [(0.2, 0.04), (0.1, 0.3)])
def test_the_gradient_matches_central_differences_of_your_loss(ch, eps, beta):
    """grpo_loss_grad against central differences of your grpo_loss on (4, 5), no ratio near a clip bound"""
    flt(ch.grpo_loss(LOGP, LOGP_OLD, LOGP_REF, ADV, MASK, eps, beta), "grpo_loss")
    got = ch.grpo_loss_grad(LOGP, LOGP_OLD, LOGP_REF, ADV, MASK, eps, beta)
    numerical = numerical_gradient(lambda x: float(ch.grpo_loss(x, LOGP_OLD, LOGP_REF, ADV, MASK, eps, beta)), LOGP)
    close(got, numerical, f"grpo_loss_grad, clip_eps = {eps}, beta = {beta}, vs central "
          "differences of grpo_loss", kind="array", **NUM)


def test_the_gradient_with_the_default_eps_and_beta(ch):
    """grpo_loss and grpo_loss_grad with clip_eps and beta left at their defaults 0.2 and 0.04; 0 under the mask's 0s"""
    got = returned(ch.grpo_loss_grad(LOGP, LOGP_OLD, LOGP_REF, ADV, MASK), "array", "grpo_loss_grad")
    want = returned(ch.grpo_loss_grad(LOGP, LOGP_OLD, LOGP_REF, ADV, MASK, 0.2, 0.04), "array", "grpo_loss_grad")
    close(got, want, "grpo_loss_grad with its defaults against clip_eps = 0.2, beta = 0.04", kind="array")
    close(got * (MASK == 0), np.zeros((4, 5)), "grpo_loss_grad where the mask is 0", kind="array")
    loss = flt(ch.grpo_loss(LOGP, LOGP_OLD, LOGP_REF, ADV, MASK), "grpo_loss")
    close(loss, flt(ch.grpo_loss(LOGP, LOGP_OLD, LOGP_REF, ADV, MASK, 0.2, 0.04), "grpo_loss"),
          "grpo_loss with its defaults against clip_eps = 0.2, beta = 0.04", kind="float")


def test_nothing_modifies_its_inputs(ch):
    """every chapter 24 function leaves its inputs as they were"""
    logp, old, ref, adv, mask = LOGP.copy(), LOGP_OLD.copy(), LOGP_REF.copy(), ADV.copy(), MASK.copy()
    rewards = np.array([1.0, 0.0, 0.0, 1.0])
    # the judge fails a call that changes one of its arguments in place (ChangedItsInput)
    ch.group_advantages(rewards, 2)
    ch.clipped_surrogate(logp, old, adv)
    ch.k3_kl(logp, ref)
    ch.masked_mean(logp, mask)
    ch.grpo_loss(logp, old, ref, adv, mask)
    ch.grpo_loss_grad(logp, old, ref, adv, mask)


# -- bad input gets a clear error (the checks marked given are the stubs': CONTRIBUTING.md) -----------------
@pytest.mark.given
def test_rewards_group_sizes_and_eps_that_do_not_fit_are_refused(ch):
    """rewards not a 1-D array of finite numbers, group_size not a whole number ≥ 1, eps not a number > 0"""
    for bad in (np.ones((2, 2)), np.array([1.0, np.nan]), np.array([]), np.array([True, False]), ["a", "b"]):
        raises_clearly(lambda bad=bad: ch.group_advantages(bad, 1), ValueError, names=("rewards",))
    for size in (0, 2.0, True, "2"):
        raises_clearly(lambda size=size: ch.group_advantages(np.ones(4), size), ValueError, names=("group_size",))
    for eps in (0, -1e-6, True, "1e-6", np.nan):
        raises_clearly(lambda eps=eps: ch.group_advantages(np.ones(4), 2, eps), ValueError, names=("eps",))


@pytest.mark.given
def test_token_arrays_that_do_not_fit_are_refused(ch):
    """log-probabilities, advantages, masks, clip_eps and beta that do not fit: ValueError naming what is wrong"""
    lp, adv, mask = np.zeros((2, 3)), np.array([1.0, -1.0]), np.ones((2, 3))
    raises_clearly(lambda: ch.clipped_surrogate(lp, np.zeros((2, 2)), adv), ValueError, "(2, 3)", "(2, 2)",
                   names=("logp_old",))
    raises_clearly(lambda: ch.clipped_surrogate(lp, lp, np.ones(3)), ValueError, names=("advantages",))
    raises_clearly(lambda: ch.clipped_surrogate(lp, lp, np.ones((2, 1))), ValueError, names=("advantages",))
    raises_clearly(lambda: ch.clipped_surrogate(np.zeros(3), np.zeros(3), adv), ValueError, names=("logp",))
    raises_clearly(lambda: ch.clipped_surrogate(lp + np.inf, lp, adv), ValueError, names=("logp",))
    for eps in (0, 1, 1.5, True, "0.2"):
        raises_clearly(lambda eps=eps: ch.clipped_surrogate(lp, lp, adv, eps), ValueError, names=("clip_eps",))
    raises_clearly(lambda: ch.k3_kl(lp, np.zeros((3, 2))), ValueError, names=("logp_ref",))
    raises_clearly(lambda: ch.k3_kl(lp, lp.astype(bool)), ValueError, names=("logp_ref",))
    raises_clearly(lambda: ch.masked_mean(lp, np.ones((2, 2))), ValueError, names=("mask",))
    raises_clearly(lambda: ch.masked_mean(lp, mask * 0.5), ValueError, names=("mask",))
    raises_clearly(lambda: ch.masked_mean(lp + np.nan, mask), ValueError, names=("values",))
    for f in (ch.grpo_loss, ch.grpo_loss_grad):
        raises_clearly(lambda f=f: f(lp, lp, lp, adv, mask * 2), ValueError, names=("mask",))
        raises_clearly(lambda f=f: f(lp, lp, lp, adv, np.ones((2, 2))), ValueError, "(2, 2)", "(2, 3)",
                       names=("mask", "logp"))
        raises_clearly(lambda f=f: f(lp, lp, lp, adv, np.array([[1, 0, 0], [0, 0, 0]])), ValueError,
                       "response token")
        raises_clearly(lambda f=f: f(lp, lp, np.zeros((2, 4)), adv, mask), ValueError, names=("logp_ref",))
        raises_clearly(lambda f=f: f(lp, lp, lp, adv[:1], mask), ValueError, names=("advantages",))
        for beta in (-0.1, True, "0.04", np.nan):
            raises_clearly(lambda f=f, beta=beta: f(lp, lp, lp, adv, mask, 0.2, beta), ValueError, names=("beta",))
        raises_clearly(lambda f=f: f(lp, lp, lp, adv, mask, 0.0), ValueError, names=("clip_eps",))


@pytest.mark.given
def test_numbers_given_as_0d_arrays_are_taken(ch):
    """ε, the clip's ε and β as 0-d arrays are numbers (a 1-element 1-D array is not); a one-token response is taken"""
    lp, adv, mask = np.zeros((2, 3)), np.array([1.0, -1.0]), np.ones((2, 3))
    raises_clearly(lambda: ch.clipped_surrogate(lp, lp, adv, np.array([0.2])), ValueError, names=("clip_eps",))
    raises_clearly(lambda: ch.grpo_loss(lp, lp, lp, adv, mask, 0.2, np.array([0.1])), ValueError, names=("beta",))
    ch.group_advantages(np.ones(4), 2, np.array(0.5))
    ch.clipped_surrogate(lp, lp, adv, np.array(0.2))
    ch.grpo_loss_grad(lp, lp, lp, adv, mask, np.array(0.2), np.array(0.1))
    ch.grpo_loss(lp, lp, lp, adv, np.array([[1, 0, 0], [0, 1, 0]]))  # a response of one token is a response
