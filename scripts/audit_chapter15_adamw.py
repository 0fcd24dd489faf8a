"""Audit of chapter 15's worksheet (AdamW, the schedule, clipping, a resumed run): every `exact` and mistake value.

Written from the formulas on the page with Python's ``math``, ``fractions`` and plain loops over the weights,
independent of ``solutions/`` and of NumPy, so the answer key cannot inherit a bug of the reference.

Run by ``python -m kata.authoring.audit 15``, which prints every step; its ``--check`` compares with the key.
"""

from __future__ import annotations

import math
from fractions import Fraction

from kata.authoring.audit import four_decimals

# the worksheet's inputs (the page's tables)
W0 = [0.5, -1.0]  # the two weights before step 1
G1 = [0.0001, -4.0]  # the gradient of step 1: one tiny, one large
G2 = [0.0003, 2.0]  # the gradient of step 2: the second weight's has turned round
LR, BETA1, BETA2, EPS, DECAY = 0.1, 0.9, 0.999, 1e-8, 0.1
MAX_LR, MIN_LR, WARMUP, TOTAL = 0.1, 0.01, 4, 12
WARM_STEPS = [0, 1, 3]  # 15.3
DECAY_STEPS = [4, 6, 8, 11, 12, 20]  # 15.4: step 11 = total − 1 shows an end one step early
GRADS = {"W": [3.0, 4.0], "b": [12.0]}  # 15.5, 15.6: the global norm is 13
MAX_NORM = 1.0
MAX_NORMS = [1.0, 26.0]  # 15.6: above the global norm 13 the gradients are left alone


# -- AdamW, weight by weight -----------------------------------------------------------------------------------
def adamw(w, grads, *, correct=True, coupled=False, eps_inside=False, restart_at=None, forget_moments_at=None,
          decay_after=False):
    """The weights after len(grads) steps; each keyword plants one classic mistake.

    correct=False: no bias correction; coupled: the decay added to the gradient (Adam with L2);
    eps_inside: √(v̂ + ε); restart_at=k: the step count lost at step k (bias correction starts again at t = 1);
    forget_moments_at=k: m and v lost at step k (start again from 0, the step count kept);
    decay_after: the decay applied to the weight the Adam step has already moved, not to the weight before it.
    """
    w = list(w)
    m, v, t = [0.0] * len(w), [0.0] * len(w), 0
    for s, g in enumerate(grads):
        if restart_at == s:
            t = 0
        if forget_moments_at == s:
            m, v = [0.0] * len(w), [0.0] * len(w)
        t += 1
        for i in range(len(w)):
            gi = g[i] + DECAY * w[i] if coupled else g[i]
            m[i] = BETA1 * m[i] + (1 - BETA1) * gi
            v[i] = BETA2 * v[i] + (1 - BETA2) * gi * gi
            m_hat = m[i] / (1 - BETA1**t) if correct else m[i]
            v_hat = v[i] / (1 - BETA2**t) if correct else v[i]
            root = math.sqrt(v_hat + EPS) if eps_inside else math.sqrt(v_hat) + EPS
            if decay_after:
                moved = w[i] - LR * m_hat / root
                w[i] = moved - LR * DECAY * moved
            else:
                w[i] = w[i] - LR * (m_hat / root + (0.0 if coupled else DECAY * w[i]))
    return w


def adamw_mistakes(grads):
    """The classic mistakes' weights after len(grads) steps, named as in the key."""
    return {
        "no bias correction: m / (√v + ε) with m and v still biased towards 0": adamw(W0, grads, correct=False),
        "weight decay added to the gradient (Adam with an L2 penalty, not AdamW)": adamw(W0, grads, coupled=True),
        "ε inside the square root: √(v̂ + ε) instead of √v̂ + ε": adamw(W0, grads, eps_inside=True),
        DECAY_AFTER: adamw(W0, grads, decay_after=True),
    }


DECAY_AFTER = "weight decay applied to the updated weight: λ times the weight after the Adam step, not before it"


# -- the schedule ------------------------------------------------------------------------------------------------
def lr_at(step):
    """The page's schedule, steps counted from 0."""
    if step < WARMUP:
        return MAX_LR * (step + 1) / WARMUP
    if step >= TOTAL:
        return MIN_LR
    progress = (step - WARMUP) / (TOTAL - WARMUP)
    return MIN_LR + 0.5 * (MAX_LR - MIN_LR) * (1 + math.cos(math.pi * progress))


def lr_off_by_one(step):
    """Steps counted from 1 where the page counts from 0: step s gets what step s − 1 should."""
    return MAX_LR * step / WARMUP if step - 1 < WARMUP else lr_at(step - 1)


def lr_warm_too_long(step):
    """The warm-up tested with s ≤ warmup: step warmup is still warming up, past the peak."""
    return MAX_LR * (step + 1) / WARMUP if step <= WARMUP else lr_at(step)


def lr_decay_ahead(step):
    """The decay's progress counted from step + 1: step s decays as step s + 1 should, the peak never used."""
    if step < WARMUP or step >= TOTAL:
        return lr_at(step)
    progress = (step + 1 - WARMUP) / (TOTAL - WARMUP)
    return MIN_LR + 0.5 * (MAX_LR - MIN_LR) * (1 + math.cos(math.pi * progress))


def lr_end_early(step):
    """The decay's length counted one short, total − warmup − 1: it reaches min_lr at step total − 1."""
    if step < WARMUP or step >= TOTAL - 1:
        return lr_at(step) if step < WARMUP else MIN_LR
    progress = (step - WARMUP) / (TOTAL - WARMUP - 1)
    return MIN_LR + 0.5 * (MAX_LR - MIN_LR) * (1 + math.cos(math.pi * progress))


def lr_end_tested_early(step):
    """The end tested as s ≥ total − 1: step total − 1 already gets min_lr, the cosine otherwise right."""
    return MIN_LR if WARMUP <= step and step >= TOTAL - 1 else lr_at(step)


def lr_no_floor_in_cosine(step):
    """min_lr left out of the cosine: it decays from max_lr to 0 (the floor only after the end)."""
    if step < WARMUP or step >= TOTAL:
        return lr_at(step)
    progress = (step - WARMUP) / (TOTAL - WARMUP)
    return 0.5 * MAX_LR * (1 + math.cos(math.pi * progress))


# -- clipping, in fractions (every number here is a ratio of whole numbers) ---------------------------------------
def clip(grads, max_norm, per_tensor=False, always=False):
    """The clipped gradients; per_tensor: each tensor scaled by its own norm; always: scaled below the limit too."""
    out = {}
    total = math.sqrt(sum(Fraction(x) ** 2 for g in grads.values() for x in g))
    for k, g in grads.items():
        norm = math.sqrt(sum(Fraction(x) ** 2 for x in g)) if per_tensor else total
        scaled = always or norm > max_norm
        out[k] = [float(Fraction(x) * Fraction(max_norm) / Fraction(norm)) if scaled else x for x in g]
    return out


END_EARLY = "the decay ends one step early: min_lr is reached at step total − 1 instead of at step total"
END_TESTED_EARLY = ("the decay ends one step early: the end tested as s ≥ total − 1, so step total − 1 already gets "
                    "min_lr")
ALWAYS = "clipped although the norm is below max_norm: gradients under the limit were scaled up to it"
CLIPPED_NORM = "the norm after clipping returned: the global norm is the one before clipping, 13"


def audit() -> dict[str, dict]:
    """{step id: {"exact": value, "mistakes": {name: value}}}, the names as in the key."""
    steps: dict[str, dict] = {}
    steps["15.1"] = {"exact": adamw(W0, [G1]), "mistakes": adamw_mistakes([G1])}
    steps["15.2"] = {"exact": adamw(W0, [G1, G2]), "mistakes": adamw_mistakes([G1, G2])}
    off = "the schedule off by one step: steps counted from 1, so step s gets what step s − 1 should"
    steps["15.3"] = {"exact": [lr_at(s) for s in WARM_STEPS],
                     "mistakes": {off: [lr_off_by_one(s) for s in WARM_STEPS]}}
    too_long = ("the warm-up one step too long: s ≤ warmup instead of s < warmup, so step warmup gets "
                "max_lr·(warmup + 1)/warmup, above the peak")
    ahead = ("the decay one step ahead: p = (s + 1 − warmup)/(total − warmup), so step warmup already decays and "
             "the peak max_lr is never used")
    no_floor = "min_lr left out of the cosine: ½·max_lr·(1 + cos πp) decays towards 0, not to min_lr"
    steps["15.4"] = {"exact": [lr_at(s) for s in DECAY_STEPS],
                     "mistakes": {off: [lr_off_by_one(s) for s in DECAY_STEPS],
                                  too_long: [lr_warm_too_long(s) for s in DECAY_STEPS],
                                  ahead: [lr_decay_ahead(s) for s in DECAY_STEPS],
                                  no_floor: [lr_no_floor_in_cosine(s) for s in DECAY_STEPS],
                                  END_EARLY: [lr_end_early(s) for s in DECAY_STEPS],
                                  END_TESTED_EARLY: [lr_end_tested_early(s) for s in DECAY_STEPS]}}
    squares = sum(Fraction(x) ** 2 for g in GRADS.values() for x in g)
    steps["15.5"] = {"exact": math.sqrt(squares), "mistakes": {
        "the tensors' norms added (5 + 12) instead of one norm of all the numbers together":
            sum(math.sqrt(sum(Fraction(x) ** 2 for x in g)) for g in GRADS.values()),
        CLIPPED_NORM: MAX_NORM}}
    steps["15.6"] = {"exact": [x for m in MAX_NORMS for x in clip(GRADS, m)["W"]], "mistakes": {
        "each tensor clipped separately, by its own norm, instead of all by the global norm":
            [x for m in MAX_NORMS for x in clip(GRADS, m, per_tensor=True)["W"]],
        ALWAYS: [x for m in MAX_NORMS for x in clip(GRADS, m, always=True)["W"]]}}
    steps["15.7"] = {"exact": adamw(W0, [G1, G2]), "mistakes": {
        "the step count not saved: the resumed run's bias correction starts again at t = 1":
            adamw(W0, [G1, G2], restart_at=1),
        "the moments not saved: the resumed run starts m and v again from 0":
            adamw(W0, [G1, G2], forget_moments_at=1)}}
    return steps


def printed(value):
    """How the worksheet prints a value: 4 decimals (a whole number as it is)."""
    return four_decimals(value)
