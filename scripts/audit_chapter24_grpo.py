"""Audit of chapter 24's worksheet (GRPO): every `exact` and mistake value of the key.

Written from the formulas on the page with plain loops over Python floats and ``math`` (the rewards' means and
variances in exact fractions), independent of ``solutions/`` and of NumPy, so the answer key cannot inherit a
bug of the reference. Each classic mistake is a switch of the one computation written here. The audit also
checks the page's claims on the worksheet's own numbers: every ratio is 0.5, 1, 1.1, 1.5 or 2 (to 1e-15), the
two k3 terms of the first response add up to exactly ½, the gradient equals central differences of the loss,
and each mistake of a step leaves every earlier step right (so the first failing check is the step that names
it).

Run by ``python -m kata.authoring.audit 24``, which prints every step; its ``--check`` compares with the key.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

EPS_STD = 1e-6  # ε added to the group's standard deviation (the function's default is 1e-4)
GROUP = [1, 0, 0, 1]  # 24.1: one prompt, four responses, reward 1 for a right answer
BATCH = [1, 0, 0, 1, 1, 1, 1, 1]  # 24.2: two prompts of four; the second group is right every time
# 24.3-24.7: two responses of three positions; the second's last position is padding (mask 0)
PI = [[0.6, 0.2, 0.55], [0.3, 0.3, 0.5]]  # π, the policy, of each sampled token
PI_OLD = [[0.4, 0.4, 0.5], [0.2, 0.6, 0.25]]  # π_old, the policy that sampled them: ρ = [1.5, .5, 1.1], [1.5, .5, 2]
PI_REF = [[0.3, 0.4, 0.55], [0.6, 0.3, 0.25]]  # π_ref: π_ref/π = [.5, 2, 1], [2, 1, .5]
ADV = [1.0, -1.0]  # the advantages of a group of two whose rewards are 1 and 0 (up to ε)
MASK = [[1, 1, 1], [1, 1, 0]]
CLIP, BETA = 0.2, 0.1

DDOF1 = "ddof = 1 (the sample std, torch.std's default): the page's std is the group's own, ddof = 0"
NO_STD = "only the mean subtracted: not divided by the group's standard deviation"
EPS_FIXED = "ε fixed at the default 1e-4 instead of the eps given (1e-6 here)"
NO_MEAN = "the mean not subtracted: divided by the standard deviation only"
BATCH_NORM = "normalised across the batch instead of the group: each prompt's responses compete only with each other"
NEG_SIDE = "clipping the wrong side for a negative advantage: for A < 0 the clip binds below 1 − ε, not above 1 + ε"
NO_MIN = "clip(ρ)·A without the min: where ρA is the smaller (the pessimistic one) it must win"
MAX = "max instead of min: the surrogate keeps the pessimistic of the two terms"
INVERTED = "ρ = π_old / π, upside down: the ratio is the policy's probability over the old policy's"
LOG_RATIO = "ρ = log π − log π_old: the ratio is the exp of the difference of log-probabilities"
KL_SIGN = "the KL's sign: log π − log π_ref where k3 takes log π_ref − log π (that estimates KL(π_ref ‖ π))"
K1 = "k1 = log π − log π_ref alone: right on average but negative at some tokens; k3 adds π_ref/π − 1"
K2 = "k2 = ½ (log π − log π_ref)²: biased; k3 is π_ref/π − log(π_ref/π) − 1"
MINUS_ONE = "the −1 forgotten: k3 = π_ref/π − log(π_ref/π) − 1 is 0 where π = π_ref"
DENOM = "the mask's denominator: divided by T, every position, instead of the response's own number of tokens"
PAD = "the padding counted: the mask left out of the sum above the line"
BATCH_COUNT = "divided by the whole batch's number of tokens instead of the response's own"
PENALTY_SIGN = "the KL's sign in the loss: +β·KL added to the objective, which the loss then rewards"
PER_TOKEN = "averaged per token over the batch (Σ over every response token / their count), not per response first"
NOT_NEGATED = "the objective, not the loss: minimising L must raise it, so L is minus the objective"
BETA_FIXED = "β fixed at the default 0.04 instead of the beta given (0.1 here)"
NO_BETA = "β left out: the KL penalty forgotten"
GRAD_CLIPPED = "a gradient through a clipped token: where the clip is active the min is a constant, gradient 0"
GRAD_SIDE = "the gradient cut on the wrong side for a negative advantage: for A < 0 the clip is active below 1 − ε"
GRAD_NO_RHO = "d(ρA)/d log π taken as A: ρ = exp(log π − log π_old), so its derivative is ρ itself"
GRAD_KL_SIGN = "the KL's gradient with its sign flipped: which way does k3 move as log π rises above log π_ref?"
GRAD_DENOM = "the gradient's weight with the mask's denominator T instead of the response's own number of tokens"


def advantages(rewards, size, ddof=0, std=True, mean=True, batch=False, eps=EPS_STD):
    """(r − mean) / (std + ε) over each group of ``size`` (the whole batch if ``batch``), in exact fractions."""
    size = len(rewards) if batch else size
    out = []
    for g in range(0, len(rewards), size):
        group = [F(r) for r in rewards[g:g + size]]
        m = sum(group) / len(group)
        var = sum((r - m) ** 2 for r in group) / (len(group) - ddof)
        for r in group:
            top = (r - m) if mean else r
            out.append(float(top) / (math.sqrt(var) + eps) if std else float(top))
    return out


def ratio(b, t, mistake=None):
    """ρ = π / π_old from the log-probabilities, as the functions receive them."""
    lp, lo = math.log(PI[b][t]), math.log(PI_OLD[b][t])
    if mistake == INVERTED:
        return math.exp(lo - lp)
    if mistake == LOG_RATIO:
        return lp - lo
    return math.exp(lp - lo)


def surrogate(mistake=None):
    """min(ρA, clip(ρ, 1 − ε, 1 + ε)·A) at every position, with the classic mistakes as switches."""
    out = []
    for b, a in enumerate(ADV):
        row = []
        for t in range(3):
            rho = ratio(b, t, mistake)
            clipped = min(max(rho, 1 - CLIP), 1 + CLIP)
            if mistake == NEG_SIDE:
                row.append(min(rho, 1 + CLIP) * a)
            elif mistake == NO_MIN:
                row.append(clipped * a)
            elif mistake == MAX:
                row.append(max(rho * a, clipped * a))
            else:
                row.append(min(rho * a, clipped * a))
        out.append(row)
    return out


def k3(mistake=None):
    """π_ref/π − log(π_ref/π) − 1 at every position, from the log-probabilities."""
    out = []
    for b in range(2):
        row = []
        for t in range(3):
            x = math.log(PI_REF[b][t]) - math.log(PI[b][t])  # log(π_ref / π)
            if mistake == KL_SIGN:
                x = -x
            if mistake == K1:
                row.append(-x)
            elif mistake == K2:
                row.append(x * x / 2)
            else:
                row.append(math.exp(x) - x - (0 if mistake == MINUS_ONE else 1))
        out.append(row)
    return out


def masked_mean(values, mistake=None):
    """Σ_t mask·v / Σ_t mask for each response."""
    out = []
    for row, m in zip(values, MASK, strict=True):
        top = sum(v for v, k in zip(row, m, strict=True) if k or mistake == PAD)
        below = {DENOM: len(row), BATCH_COUNT: sum(map(sum, MASK))}.get(mistake, sum(m))
        out.append(top / below)
    return out


def loss(pi=None, mistake=None):
    """−(1/B) Σ_b masked mean of (s − β k3); ``pi`` replaces the policy's probabilities (for central differences)."""
    global PI
    saved, PI = PI, pi or PI
    try:
        beta = {NO_BETA: 0.0, PENALTY_SIGN: -BETA, BETA_FIXED: 0.04}.get(mistake, BETA)
        per_token = [[s - beta * k for s, k in zip(rs, rk, strict=True)]
                     for rs, rk in zip(surrogate(), k3(), strict=True)]
        if mistake == PER_TOKEN:
            every = [v for row, m in zip(per_token, MASK, strict=True) for v, k in zip(row, m, strict=True) if k]
            objective = sum(every) / len(every)
        else:
            means = masked_mean(per_token)
            objective = sum(means) / len(means)
        return objective if mistake == NOT_NEGATED else -objective
    finally:
        PI = saved


def gradient(mistake=None):
    """dL/d log π at every position, from the page's formula."""
    out = []
    for b, a in enumerate(ADV):
        row = []
        n = len(MASK[b]) if mistake == GRAD_DENOM else sum(MASK[b])
        for t in range(3):
            rho = ratio(b, t)
            active = (a > 0 and rho > 1 + CLIP) or (a < 0 and rho < 1 - CLIP)
            if mistake == GRAD_SIDE:
                active = (a > 0 and rho > 1 + CLIP) or (a < 0 and rho > 1 + CLIP)
            ds = 0.0 if active and mistake != GRAD_CLIPPED else (a if mistake == GRAD_NO_RHO else rho * a)
            dk = 1 - PI_REF[b][t] / PI[b][t]
            dk = -dk if mistake == GRAD_KL_SIGN else dk
            row.append(-MASK[b][t] / (len(ADV) * n) * (ds - BETA * dk) + 0.0)  # + 0.0: no −0
        out.append(row)
    return out


def _claims():
    """The page's claims on these numbers, checked."""
    ratios = [[ratio(b, t) for t in range(3)] for b in range(2)]
    for got, want in zip(sum(ratios, []), [1.5, 0.5, 1.1, 1.5, 0.5, 2.0], strict=True):
        assert abs(got - want) < 1e-15, ratios
    assert abs(k3()[0][0] + k3()[0][1] - 0.5) < 1e-15
    h = 1e-6
    for b in range(2):
        for t in range(3):
            up = [row[:] for row in PI]
            down = [row[:] for row in PI]
            up[b][t] *= math.exp(h)
            down[b][t] *= math.exp(-h)
            numerical = (loss(up) - loss(down)) / (2 * h)
            assert abs(numerical - gradient()[b][t]) < 1e-8, (b, t, numerical)


def audit() -> dict[str, dict]:
    """{step id: {"exact": value, "mistakes": {name: value}}}, the names as in the key."""
    _claims()
    steps = {
        "24.1": {"exact": advantages(GROUP, 4), "mistakes": {
            DDOF1: advantages(GROUP, 4, ddof=1), NO_STD: advantages(GROUP, 4, std=False),
            NO_MEAN: advantages(GROUP, 4, mean=False), EPS_FIXED: advantages(GROUP, 4, eps=1e-4)}},
        "24.2": {"exact": advantages(BATCH, 4), "mistakes": {BATCH_NORM: advantages(BATCH, 4, batch=True)}},
        "24.3": {"exact": surrogate(), "mistakes": {
            m: surrogate(m) for m in (NEG_SIDE, NO_MIN, MAX, INVERTED, LOG_RATIO)}},
        "24.4": {"exact": k3(), "mistakes": {m: k3(m) for m in (KL_SIGN, K1, K2, MINUS_ONE)}},
        "24.5": {"exact": masked_mean(surrogate()), "mistakes": {
            m: masked_mean(surrogate(), m) for m in (DENOM, PAD, BATCH_COUNT)}},
        "24.6": {"exact": loss(), "mistakes": {
            m: loss(mistake=m) for m in (PENALTY_SIGN, PER_TOKEN, NOT_NEGATED, NO_BETA, BETA_FIXED)}},
        "24.7": {"exact": gradient(), "mistakes": {
            m: gradient(m) for m in (GRAD_CLIPPED, GRAD_SIDE, GRAD_NO_RHO, GRAD_KL_SIGN, GRAD_DENOM)}},
    }
    logs = {name: [[math.log(x) for x in row] for row in table]
            for name, table in (("logp", PI), ("logp_old", PI_OLD), ("logp_ref", PI_REF))}
    tokens = {"logp": logs["logp"], "logp_old": logs["logp_old"], "advantages": ADV, "clip_eps": CLIP}
    batch = {**tokens, "logp_ref": logs["logp_ref"], "mask": MASK, "beta": BETA}
    inputs = {"24.1": {"rewards": GROUP, "group_size": 4, "eps": EPS_STD},
              "24.2": {"rewards": BATCH, "group_size": 4, "eps": EPS_STD}, "24.3": tokens,
              "24.4": {"logp": logs["logp"], "logp_ref": logs["logp_ref"]},
              "24.5": {"values": surrogate(), "mask": MASK}, "24.6": batch, "24.7": batch}
    for sid, given in inputs.items():
        steps[sid]["inputs"] = given
    assert advantages(GROUP, 4, batch=True) == steps["24.1"]["exact"]  # one group: the batch is the group
    for step in steps.values():  # every mistake differs from the answer and from the step's other mistakes
        values = [repr(step["exact"])] + [repr(v) for v in step["mistakes"].values()]
        assert len(set(values)) == len(values), step
    return steps


def printed(value):
    """How the worksheet prints a value: 4 decimals, trailing zeros dropped, a whole number as it is."""
    if isinstance(value, list):
        return [printed(v) for v in value]
    text = f"{value:.4f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text
