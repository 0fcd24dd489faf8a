"""Audit of chapter 23's worksheet (supervised fine-tuning and DPO): every `exact` and mistake value of the key.

Written from the formulas on the page with plain loops and ``math``, independent of ``solutions/`` and of
NumPy, so the answer key cannot inherit a bug of the reference. Every logit of the worksheet is a whole
multiple of ln 2 and so is every log-probability: the fine-tuning half is computed in those whole multiples
(``fractions.Fraction``), exactly, and turned into float64 at the end; the DPO half's margins are 0 and ln 2,
whose σ are ½ and ⅔. Each classic mistake is a switch of the one computation written here.

Run by ``python -m kata.authoring.audit 23``, which prints every step; its ``--check`` compares with the key.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

from kata.authoring.audit import four_decimals

LN2 = math.log(2)
# the worksheet's inputs (the page's tables), in units of ln 2: a vocabulary of four tokens
LOGITS = [[2, 0, 1, 0], [1, 2, 0, 0], [0, 2, 1, 0], [2, 0, 0, 1], [0, 0, 1, 2]]  # (seq, vocab) = (5, 4)
IDS = [0, 2, 3, 1, 2]  # the prompt 0 2 3, the response 1 2
PROMPT = 3
# a second sequence for the batch of 23.5: prompt of 2, response of 1, padded to the same length
LOG_PROBS_B = [-3, -1, -2, -2]  # its next-token log-probabilities (the last two are the padding's)
MASK_B = [0, 1, 0, 0]
# two preference pairs (sequence log-probabilities, in units of ln 2) and β
POLICY_CHOSEN, POLICY_REJECTED = [-4, -3], [-6, -9]
REF_CHOSEN, REF_REJECTED = [-5, -5], [-7, -7]
BETA = F(1, 4)

SWAPPED = "chosen and rejected swapped, or β's sign flipped: the margin negated"
NO_REF = "the reference model left out: β (log π_c − log π_r), as if the reference liked both equally"


def floats(value):
    """Multiples of ln 2 as float64 (a list stays a list)."""
    return [floats(v) for v in value] if isinstance(value, list) else float(value) * LN2


def log_softmax_row(row):
    """Each logit minus log Σ exp, in units of ln 2: the row's logits are whole, so Σ 2^logit is a whole number."""
    total = sum(2 ** x for x in row)
    exponent = math.log2(total)
    assert exponent == int(exponent), "the worksheet's rows sum to a power of 2"
    return [x - int(exponent) for x in row]


def token_log_probs(logits, ids, mistake=None):
    """ℓ_i = log softmax(row i)[ids[i + 1]], in units of ln 2, with the classic mistakes as switches."""
    if mistake == "unshifted":
        return [log_softmax_row(logits[i])[ids[i]] for i in range(len(ids) - 1)]
    if mistake == "unshifted, every row":
        return [log_softmax_row(logits[i])[ids[i]] for i in range(len(ids))]
    if mistake == "backwards":
        return [log_softmax_row(logits[i])[ids[i]] for i in range(1, len(ids))]
    if mistake == "max":
        return [logits[i][ids[i + 1]] - max(logits[i]) for i in range(len(ids) - 1)]
    return [log_softmax_row(logits[i])[ids[i + 1]] for i in range(len(ids) - 1)]


def mask(prompt, seq, first=None):
    """1 where the target of entry i, token i + 1, is a response token; ``first``: the first counted entry."""
    start = prompt - 1 if first is None else first
    return [1 if i >= start else 0 for i in range(seq - 1)]


def sft(rows, masks, mistake=None):
    """−Σ mℓ / Σ m over the batch (units of ln 2), with the classic mistakes as switches."""
    picked = sum(m * x for r, ms in zip(rows, masks, strict=True) for x, m in zip(r, ms, strict=True))
    count = sum(sum(ms) for ms in masks)
    every = sum(len(r) for r in rows)
    if mistake == "sum":
        return -picked
    if mistake == "prompt":
        return -F(sum(sum(r) for r in rows), every)
    if mistake == "denominator":
        return -F(picked, every)
    if mistake == "sign":
        return F(picked, count)
    if mistake == "per sequence":
        return -sum(F(sum(m * x for x, m in zip(r, ms, strict=True)), sum(ms))
                    for r, ms in zip(rows, masks, strict=True)) / len(rows)
    return -F(picked, count)


def reward(policy, ref, beta=BETA, mistake=None):
    """β (log π − log π_ref), in units of ln 2, with the classic mistakes as switches."""
    if mistake == "sign":
        return [-beta * (p - r) for p, r in zip(policy, ref, strict=True)]
    if mistake == "no ref":
        return [beta * p for p in policy]
    if mistake == "no beta":
        return [F(p - r) for p, r in zip(policy, ref, strict=True)]
    if mistake == "over beta":
        return [(p - r) / beta for p, r in zip(policy, ref, strict=True)]
    return [beta * (p - r) for p, r in zip(policy, ref, strict=True)]


def margins(mistake=None):
    """The margins z = r_c − r_r of the pairs, as floats (nats)."""
    if mistake == NO_REF:
        return [float(BETA * (c - r)) * LN2 for c, r in zip(POLICY_CHOSEN, POLICY_REJECTED, strict=True)]
    rc, rr = reward(POLICY_CHOSEN, REF_CHOSEN), reward(POLICY_REJECTED, REF_REJECTED)
    z = [float(a - b) * LN2 for a, b in zip(rc, rr, strict=True)]
    return [-x for x in z] if mistake == SWAPPED else z


def softplus(x):
    """log(1 + e^x), for the worksheet's small margins."""
    return math.log1p(math.exp(x))


def sigmoid(x):
    """σ(x) = 1 / (1 + e^{−x})."""
    return 1 / (1 + math.exp(-x))


def dpo(mistake=None):
    """The mean of −log σ(z) = log(1 + e^{−z}) over the pairs, with the classic mistakes as switches."""
    z = margins(mistake if mistake in (SWAPPED, NO_REF) else None)
    losses = [softplus(-x) for x in z]
    if mistake == "sum":
        return math.fsum(losses)
    if mistake == "sign":
        return -math.fsum(losses) / len(z)
    if mistake == "beta outside":
        h = [x / float(BETA) for x in z]
        return float(BETA) * math.fsum(softplus(-x) for x in h) / len(z)
    return math.fsum(losses) / len(z)


def dpo_grad(mistake=None):
    """[∂L/∂ log π_c, ∂L/∂ log π_r] = [−(β/B) σ(−z), +(β/B) σ(−z)], with the classic mistakes as switches."""
    z, beta = margins(), float(BETA)
    weight = [sigmoid(x) if mistake == "sigma z" else sigmoid(-x) for x in z]
    scale = {"no beta": 1 / len(z), "no batch": beta}.get(mistake, beta / len(z))
    d = [-scale * w for w in weight]
    if mistake == "sign":
        return [[-x for x in d], d]
    return [d, [-x for x in d]]


def audit() -> dict[str, dict]:
    """{step id: {"exact": value, "mistakes": {name: value}}}, the names as in the key."""
    lp = token_log_probs(LOGITS, IDS)
    m = mask(PROMPT, len(IDS))
    steps = {}
    steps["23.1"] = {"exact": floats(lp), "inputs": {"logits": floats(LOGITS), "ids": IDS}, "mistakes": {
        "not shifted: row i scored at token i, not at the next token i + 1":
            floats(token_log_probs(LOGITS, IDS, "unshifted")),
        "not shifted, and the last row kept: every row scored at its own token":
            floats(token_log_probs(LOGITS, IDS, "unshifted, every row")),
        "shifted the wrong way: row i + 1 scored at token i + 1 (row 0 left out, the last row used)":
            floats(token_log_probs(LOGITS, IDS, "backwards")),
        "the probability, not its log": [2.0 ** x for x in lp],
        "the log-sum-exp left out: the logit minus the row's maximum": floats(token_log_probs(LOGITS, IDS, "max"))}}
    steps["23.2"] = {"exact": [float(x) for x in m], "inputs": {"prompt_len": PROMPT, "seq_len": len(IDS)},
                     "mistakes": {
        "the prompt's tokens counted: every entry 1": [1.0] * (len(IDS) - 1),
        "the mask not shifted with the targets: the first response token left out":
            [float(x) for x in mask(PROMPT, len(IDS), first=PROMPT)],
        "the last prompt token counted: one entry too early":
            [float(x) for x in mask(PROMPT, len(IDS), first=PROMPT - 2)],
        "a mask over the ids (seq entries), not over the targets (seq − 1)":
            [float(i >= PROMPT) for i in range(len(IDS))]}}
    total = sum(a * b for a, b in zip(m, lp, strict=True))
    steps["23.3"] = {"exact": float(total) * LN2, "inputs": {"logits": floats(LOGITS), "ids": IDS,
                                                             "prompt_len": PROMPT}, "mistakes": {
        "the prompt's tokens counted: every next-token log-probability summed": float(sum(lp)) * LN2,
        "the mean over the response's tokens, not the sum": float(F(total, sum(m))) * LN2,
        "the mask not shifted with the targets: the first response token left out":
            float(sum(a * b for a, b in zip(mask(PROMPT, len(IDS), first=PROMPT), lp, strict=True))) * LN2,
        "the last prompt token counted: one entry too early":
            float(sum(a * b for a, b in zip(mask(PROMPT, len(IDS), first=PROMPT - 2), lp, strict=True))) * LN2}}
    one = ([lp], [m])
    steps["23.4"] = {"exact": float(sft(*one)) * LN2, "inputs": {"log_probs": [floats(lp)], "mask": [m]},
                     "mistakes": {
        "the sum over the response's tokens, not the mean": float(sft(*one, "sum")) * LN2,
        "the prompt's tokens counted: the mean of every entry": float(sft(*one, "prompt")) * LN2,
        "every position counted in the denominator: divided by all entries, not by the mask's sum":
            float(sft(*one, "denominator")) * LN2,
        "the sign: the mean log-probability, not its negative": float(sft(*one, "sign")) * LN2}}
    two = ([lp, LOG_PROBS_B], [m, MASK_B])
    steps["23.5"] = {"exact": float(sft(*two)) * LN2, "inputs": {"log_probs": [floats(lp), floats(LOG_PROBS_B)],
                                                                 "mask": [m, MASK_B]}, "mistakes": {
        "a mean per sequence, then over the batch: the short response's token weighs double":
            float(sft(*two, "per sequence")) * LN2,
        "the sum over the response's tokens, not the mean": float(sft(*two, "sum")) * LN2,
        "the prompt's and the padding's entries counted: the mean of every entry": float(sft(*two, "prompt")) * LN2,
        "every position counted in the denominator: divided by all entries, not by the mask's sum":
            float(sft(*two, "denominator")) * LN2}}
    steps["23.6"] = {"exact": floats(reward(POLICY_REJECTED, REF_REJECTED)), "inputs": {
        "policy_logp": floats(POLICY_REJECTED), "ref_logp": floats(REF_REJECTED), "beta": float(BETA)},
        "mistakes": {
        "β's sign: −β (log π − log π_ref)": floats(reward(POLICY_REJECTED, REF_REJECTED, mistake="sign")),
        "the reference model left out: β log π": floats(reward(POLICY_REJECTED, REF_REJECTED, mistake="no ref")),
        "β left out: the log-ratio alone": floats(reward(POLICY_REJECTED, REF_REJECTED, mistake="no beta")),
        "divided by β instead of multiplied": floats(reward(POLICY_REJECTED, REF_REJECTED, mistake="over beta"))}}
    pairs = {"policy_chosen": floats(POLICY_CHOSEN), "policy_rejected": floats(POLICY_REJECTED),
             "ref_chosen": floats(REF_CHOSEN), "ref_rejected": floats(REF_REJECTED), "beta": float(BETA)}
    steps["23.7"] = {"exact": dpo(), "inputs": pairs, "mistakes": {
        SWAPPED: dpo(SWAPPED), NO_REF: dpo(NO_REF),
        "a sum over the pairs, not the mean": dpo("sum"),
        "log σ without its minus: a loss that falls below 0": dpo("sign"),
        "β outside the σ: −β log σ(margin) instead of −log σ(β margin)": dpo("beta outside")}}
    steps["23.8"] = {"exact": dpo_grad(), "inputs": pairs, "mistakes": {
        "σ(z) instead of σ(−z): the weight is the chance the rewards get the pair wrong": dpo_grad("sigma z"),
        "β left out: z = β·margin, so the chain rule brings β out": dpo_grad("no beta"),
        "not divided by the number of pairs: the loss is a mean": dpo_grad("no batch"),
        "the sign flipped, or the two gradients swapped: the chosen answer's log-probability must rise":
            dpo_grad("sign")}}
    for sid, step in steps.items():  # each mistake distinguishable from the answer and from every other
        values = [repr(v) for v in step["mistakes"].values()]
        assert len(set(values)) == len(values) and repr(step["exact"]) not in values, sid
    assert lp == [-2, -3, -1, -3] and total == -4 and sft(*two) == F(5, 3), "the page's worked numbers"
    assert margins() == [0.0, LN2] and math.isclose(dpo(), math.log(3) / 2, rel_tol=1e-15)
    return steps


def printed(value):
    """How the worksheet prints a value: a whole number as it is, else 4 decimals."""
    return four_decimals(value, zeros=False)
