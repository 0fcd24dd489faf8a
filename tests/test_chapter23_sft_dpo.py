"""Chapter 23: Supervised fine-tuning and DPO — the course's own worksheet (Part IV), and beyond.

A vocabulary of four tokens whose logits are whole multiples of ln 2; the sequence 0 2 3 | 1 2 (a prompt of
three tokens, a response of two); a batch of two responses of unequal lengths; two preference pairs with β = ¼.
Each worksheet step is one test below, named as the claim it checks; the numbers come from
reference/chapter23_sft_dpo.toml (audited in whole multiples of ln 2 by scripts/audit_chapter23_sft_dpo.py).
Beyond the worksheet: the probabilities of every next token, and of every response to one prompt, sum to 1 under
your own functions; the prompt's rows and the last row of the logits change nothing; logits and margins a
thousand apart stay finite without a NumPy warning; your dpo_grad equals central differences of your own
dpo_loss (rtol 1e-5, atol 1e-8); then other shapes, and bad input.
"""

import itertools

import numpy as np
import pytest

from kata import close, expect, numerical_gradient, raises_clearly, returned, step_case

CHAPTER = 23
NUM = {"rtol": 1e-5, "atol": 1e-8}  # central differences of a loss near 1: good to about 1e-10
LN2 = np.log(2)
PER_SEQUENCE = "a mean per sequence, then over the batch"
NO_MASK = "the prompt's tokens counted"


def pair(result, what: str) -> tuple[np.ndarray, np.ndarray]:
    """(d_chosen, d_rejected), each checked as an array, as the docstring promises."""
    if not isinstance(result, tuple) or len(result) != 2:
        pytest.fail(f"{what}: expected a tuple (d_chosen, d_rejected), got {type(result).__name__}", pytrace=False)
    return returned(result[0], "array", f"{what}: d_chosen"), returned(result[1], "array", f"{what}: d_rejected")


def warned(what: str, warning: Warning, named: str):
    """A NumPy warning raised as an error in this suite: fail naming the mistake it looks like."""
    pytest.fail(f"{what} made NumPy warn: {warning}\n  looks like: {named}", pytrace=False)


def seeded_sequence(seed: int, seq: int = 6, vocab: int = 5):
    """Logits (seq, vocab) of several scales and ids, from a fixed seed."""
    rng = np.random.default_rng(seed)
    return rng.normal(0.0, 3.0, (seq, vocab)), [int(i) for i in rng.integers(0, vocab, seq)]


def pairs(seed: int, batch: int = 3) -> list[np.ndarray]:
    """Four arrays of sequence log-probabilities (policy chosen, policy rejected, reference chosen, rejected)."""
    rng = np.random.default_rng(seed)
    return [-rng.uniform(1.0, 8.0, batch) for _ in range(4)]


# -- the worksheet, step by step -------------------------------------------------------------------
@pytest.mark.step("23.1")
def test_each_row_scores_the_token_after_its_own_position(ch, ws):
    expect(ws, ch.token_log_probs(ws.input("logits"), ws.inputs["ids"]), kind="array")


@pytest.mark.step("23.2")
def test_the_mask_keeps_the_two_entries_that_score_the_response(ch, ws):
    expect(ws, ch.response_mask(ws.inputs["prompt_len"], ws.inputs["seq_len"]), kind="array")


@pytest.mark.step("23.3")
def test_the_response_given_its_prompt_is_the_sum_over_its_own_tokens(ch, ws):
    expect(ws, ch.sequence_log_prob(ws.input("logits"), ws.inputs["ids"], ws.inputs["prompt_len"]), kind="float")


@pytest.mark.parametrize("which", [
    step_case("23.4", "the_loss_of_one_sequence_is_the_mean_over_its_two_response_tokens", "23.4"),
    step_case("23.5", "a_batch_of_two_averages_over_its_three_response_tokens", "23.5"),
])
def test_sft_loss(ch, ws, which):
    expect(ws, ch.sft_loss(ws.input("log_probs"), ws.input("mask")), kind="float")


@pytest.mark.step("23.6")
def test_the_rejected_answers_rewards_are_beta_times_their_log_ratios(ch, ws):
    expect(ws, ch.implicit_reward(ws.input("policy_logp"), ws.input("ref_logp"), ws.inputs["beta"]), kind="array")


def dpo_inputs(ws):
    """The four arrays and β of a DPO step."""
    names = ("policy_chosen", "policy_rejected", "ref_chosen", "ref_rejected")
    return [ws.input(n) for n in names] + [ws.inputs["beta"]]


@pytest.mark.step("23.7")
def test_the_dpo_loss_is_the_mean_of_minus_log_sigma_of_the_margins(ch, ws):
    expect(ws, ch.dpo_loss(*dpo_inputs(ws)), kind="float")


@pytest.mark.step("23.8")
def test_the_gradient_lowers_the_rejected_and_raises_the_chosen_answer(ch, ws):
    got = pair(ch.dpo_grad(*dpo_inputs(ws)), "23.8 dpo_grad")
    expect(ws, np.stack(got))


# -- beyond the worksheet: log-probabilities -----------------------------------------------------------------
def test_the_next_token_probabilities_of_every_row_sum_to_1(ch):
    """exp of token_log_probs over every possible next token sums to 1 at each position, for logits of 5 scales"""
    logits, _ = seeded_sequence(0)
    logits = logits * np.array([[0.01], [1.0], [10.0], [100.0], [1.0], [1.0]])
    total = np.zeros(5)
    for v in range(5):  # every entry scores token v
        got = returned(ch.token_log_probs(logits, [0] + [v] * 5), "array", f"token_log_probs, every next token {v}")
        if got.shape != (5,):
            pytest.fail(f"token_log_probs of 6 rows returned shape {got.shape}: one entry per row but the last, (5,)",
                        pytrace=False)
        total += np.exp(got)
    close(total, np.ones(5), "Σ over the next token v of exp(token_log_probs), at each of 5 positions", kind="array")


def test_token_log_probs_of_seeded_logits(ch):
    """6 rows of 5 logits: entry i is row i's logit at ids[i + 1] minus the row's log-sum-exp"""
    for seed in (1, 2):
        logits, ids = seeded_sequence(seed)
        rows = logits[:-1]
        want = rows[np.arange(5), ids[1:]] - np.log(np.exp(rows).sum(axis=1))
        close(ch.token_log_probs(logits, ids), want, f"token_log_probs of seeded (6, 5) logits, ids {ids}",
              kind="array", mistakes=[("not shifted: row i scored at token i",
                                       logits[np.arange(6), ids] - np.log(np.exp(logits).sum(axis=1)))])
        moved = logits + np.array([[3.0], [-7.0], [0.5], [100.0], [-40.0], [2.0]])
        close(ch.token_log_probs(moved, ids), want, "token_log_probs after adding a constant to each row: unchanged",
              kind="array")


def test_logits_a_thousand_apart_stay_finite(ch):
    """rows [0, 1000, −1000, 0], [1000, 1001, 1000, 999] and [−1000, −999, −1000, −1001]: finite, no NumPy warning"""
    logits = np.array([[0.0, 1000.0, -1000.0, 0.0], [1000.0, 1001.0, 1000.0, 999.0],
                       [-1000.0, -999.0, -1000.0, -1001.0], [0.0, 0.0, 0.0, 0.0]])
    try:
        got = ch.token_log_probs(logits, [3, 2, 1, 1])
    except RuntimeWarning as warning:
        warned("token_log_probs of rows [0, 1000, −1000, 0], [1000, 1001, 1000, 999], [−1000, −999, −1000, −1001]",
               warning, "log of the softmax, a log-sum-exp without subtracting the row's maximum, or one maximum for "
               "every row: exp(1000) overflows, and exp(−2000) underflows to 0, whose log is −inf; subtract each "
               "row's own maximum first")
    # row 0 at token 2: −1000 − (1000 + log(1 + 2e^−1000 + e^−2000)) = −2000; rows 1 and 2 at their largest logit,
    # with the others 0, 1 and 2 below it: −log(1 + 2/e + 1/e²)
    second = -np.log(1 + 2 / np.e + np.exp(-2.0))
    close(got, np.array([-2000.0, second, second]), "token_log_probs of logits 1000 apart", kind="array")


def test_response_masks_of_other_lengths(ch):
    """one entry per next token; 1 from entry prompt_len − 1 on: a prompt of 1, a response of 1, and between"""
    for (prompt_len, seq_len), want in {(1, 2): [1.0], (1, 4): [1.0, 1.0, 1.0], (4, 5): [0.0, 0.0, 0.0, 1.0],
                                        (2, 6): [0.0, 1.0, 1.0, 1.0, 1.0]}.items():
        close(ch.response_mask(prompt_len, seq_len), want, f"response_mask({prompt_len}, {seq_len})", kind="array",
              mistakes=[("the mask not shifted with the targets: the first response token left out",
                         [float(i >= prompt_len) for i in range(seq_len - 1)]),
                        (NO_MASK, [1.0] * (seq_len - 1))])


def test_every_response_to_one_prompt_has_probability_summing_to_1(ch):
    """Σ over all 9 responses of 2 tokens (vocab 3) of exp(sequence_log_prob) = 1: the prompt's rows do not count"""
    logits, _ = seeded_sequence(3, seq=5, vocab=3)
    total = 0.0
    for response in itertools.product(range(3), repeat=2):
        ids = [2, 0, 1, *response]
        total += np.exp(returned(ch.sequence_log_prob(logits, ids, 3), "float", f"sequence_log_prob of ids {ids}"))
    close(total, 1.0, "Σ over every response of 2 tokens of exp(sequence_log_prob(logits, prompt + response, 3))",
          kind="float")
    total = sum(np.exp(ch.sequence_log_prob(logits[2:], [1, *response], 1))
                for response in itertools.product(range(3), repeat=2))
    close(total, 1.0, "Σ over every response of 2 tokens of exp(sequence_log_prob), after a prompt of 1 token",
          kind="float")


def test_only_the_rows_that_predict_the_response_matter(ch):
    """the prompt's own rows and the last row of the logits can be anything: the response's log-probability stays"""
    logits, ids = seeded_sequence(4, seq=7, vocab=4)
    want = ch.sequence_log_prob(logits, ids, 4)
    other = logits.copy()
    other[:3], other[-1] = -logits[:3] + 5.0, 0.0  # rows 0-2 predict prompt tokens 1-3; the last predicts nothing
    close(ch.sequence_log_prob(other, ids, 4), want, "sequence_log_prob with the prompt's rows and the last row "
          "changed", kind="float")
    rows = logits[3:6]
    close(want, float(np.sum(rows[np.arange(3), ids[4:]] - np.log(np.exp(rows).sum(axis=1)))),
          f"sequence_log_prob of seeded (7, 4) logits, ids {ids}, prompt of 4", kind="float")


# -- beyond the worksheet: the fine-tuning loss --------------------------------------------------------------
def test_a_batch_of_three_responses_of_3_1_and_2_tokens(ch):
    """a mean over the 6 response tokens of the batch, the padding ignored whatever it holds"""
    rng = np.random.default_rng(5)
    log_probs = -rng.uniform(0.1, 4.0, (3, 5))
    mask = np.array([[0, 1, 1, 1, 0], [0, 0, 0, 1, 0], [0, 0, 1, 1, 0]], dtype=float)
    per_seq = np.mean([-(log_probs[b] * mask[b]).sum() / mask[b].sum() for b in range(3)])
    close(ch.sft_loss(log_probs, mask), -(log_probs * mask).sum() / 6, "sft_loss of a batch of responses of 3, 1 "
          "and 2 tokens", kind="float", mistakes=[(PER_SEQUENCE, per_seq), (NO_MASK, -log_probs.mean())])
    close(ch.sft_loss(log_probs, np.ones((3, 5))), -log_probs.mean(), "sft_loss with every entry a response token",
          kind="float")


def test_the_loss_of_one_sequence_is_its_log_probability_over_its_length(ch):
    """sft_loss of one sequence = −sequence_log_prob / the response's length (your own functions)"""
    logits, ids = seeded_sequence(6, seq=6, vocab=4)
    row = returned(ch.token_log_probs(logits, ids), "array", "token_log_probs")[None, :]
    mask = returned(ch.response_mask(2, 6), "array", "response_mask(2, 6)")[None, :]
    close(ch.sft_loss(row, mask), -ch.sequence_log_prob(logits, ids, 2) / 4, "sft_loss of one sequence with a "
          "response of 4 tokens against −sequence_log_prob / 4", kind="float")


# -- beyond the worksheet: DPO -------------------------------------------------------------------------------
def test_rewards_are_zero_where_the_policy_is_the_reference_and_grow_with_beta(ch):
    """r = β (log π − log π_ref) over 3 answers: 0 for π = π_ref, and twice as large for twice β"""
    pc, _, rc, _ = pairs(7)
    close(ch.implicit_reward(pc, pc, 0.3), np.zeros(3), "implicit_reward of the reference itself", kind="array")
    close(ch.implicit_reward(pc, rc, 0.2), 0.2 * (pc - rc), "implicit_reward, β = 0.2, 3 answers", kind="array",
          mistakes=[("β's sign", -0.2 * (pc - rc)), ("the reference model left out", 0.2 * pc)])
    close(ch.implicit_reward(pc, rc, 1), pc - rc, "implicit_reward, β = 1 given as an int", kind="array")


def test_the_dpo_loss_starts_at_ln_2_and_mirrors_when_the_answers_swap(ch):
    """ln 2 when the policy is the reference; L(chosen, rejected) and L(rejected, chosen) are the means of log(1 + e^∓z)"""
    pc, pr, rc, rr = pairs(8)
    close(ch.dpo_loss(rc, rr, rc, rr, 0.1), LN2, "dpo_loss when the policy is the reference (every z = 0)",
          kind="float", mistakes=[("the reference model left out", np.mean(np.logaddexp(0, -0.1 * (rc - rr))))])
    z = 0.5 * ((pc - rc) - (pr - rr))
    close(ch.dpo_loss(pc, pr, rc, rr, 0.5), np.mean(np.logaddexp(0, -z)), "dpo_loss of 3 pairs, β = 0.5",
          kind="float", mistakes=[("chosen and rejected swapped", np.mean(np.logaddexp(0, z))),
                                  ("a sum over the pairs, not the mean", np.sum(np.logaddexp(0, -z)))])
    close(ch.dpo_loss(pr, pc, rr, rc, 0.5), np.mean(np.logaddexp(0, z)), "dpo_loss with chosen and rejected "
          "swapped: the margins negated", kind="float")


@pytest.mark.parametrize("beta", [0.1, 2.0])
def test_the_gradient_is_central_differences_of_your_own_loss(ch, beta):
    """dpo_grad equals central differences of your dpo_loss in each policy log-probability (rtol 1e-5, atol 1e-8)"""
    pc, pr, rc, rr = pairs(9 + int(beta))
    d_chosen, d_rejected = pair(ch.dpo_grad(pc, pr, rc, rr, beta), f"dpo_grad, β = {beta}")
    close(d_chosen, numerical_gradient(lambda x: ch.dpo_loss(x, pr, rc, rr, beta), pc),
          f"d_chosen of 3 pairs, β = {beta}, against central differences of dpo_loss", kind="array", **NUM)
    close(d_rejected, numerical_gradient(lambda x: ch.dpo_loss(pc, x, rc, rr, beta), pr),
          f"d_rejected of 3 pairs, β = {beta}, against central differences of dpo_loss", kind="array", **NUM)


def test_margins_a_thousand_apart_stay_finite(ch):
    """z = ±1000: the losses 0 and 1000, weights σ(−z) of 0 and 1, finite and without a NumPy warning"""
    pc, pr, ref = np.array([0.0, -1000.0]), np.array([-1000.0, 0.0]), np.zeros(2)
    named = ("−log σ(z) or σ(−z) taken through e^(−z) or e^z, which overflows at z = ∓1000; take −log σ(z) as a "
             "log-sum-exp of 0 and −z, and σ(−z) as the exponential of minus the log-sum-exp of 0 and z")
    try:
        loss = ch.dpo_loss(pc, pr, ref, ref, 1.0)
        grads = pair(ch.dpo_grad(pc, pr, ref, ref, 1.0), "dpo_grad of margins ±1000")
    except RuntimeWarning as warning:
        warned("dpo_loss or dpo_grad of margins 1000 and −1000", warning, named)
    close(loss, 500.0, "dpo_loss of margins 1000 and −1000: the mean of 0 and 1000", kind="float")
    close(np.stack(grads), [[0.0, -0.5], [0.0, 0.5]], "dpo_grad of margins 1000 and −1000", kind="array")


def test_nothing_modifies_its_inputs(ch):
    """every chapter 23 function leaves its arrays as they were"""
    logits, ids = seeded_sequence(11)
    lp, mask = -np.ones((2, 3)), np.array([[0.0, 1.0, 1.0], [0.0, 0.0, 1.0]])
    pc, pr, rc, rr = pairs(12)
    # the judge fails a call that changes one of its arguments in place (ChangedItsInput)
    ch.token_log_probs(logits, ids)
    ch.sequence_log_prob(logits, ids, 2)
    ch.sft_loss(lp, mask)
    ch.implicit_reward(pc, rc, 0.5)
    ch.dpo_loss(pc, pr, rc, rr, 0.5)
    ch.dpo_grad(pc, pr, rc, rr, 0.5)


# -- bad input gets a clear error (the checks marked given are the stubs': CONTRIBUTING.md) -----------------
@pytest.mark.given
def test_a_prompt_of_no_token_or_of_every_token_is_refused(ch):
    """response_mask with prompt_len 0 or ≥ seq_len raises ValueError naming prompt_len"""
    for prompt_len in (0, -1, 5, 6):
        raises_clearly(lambda prompt_len=prompt_len: ch.response_mask(prompt_len, 5), ValueError,
                       names=("prompt_len",), hint="a prompt holds at least one token, and a response at least one")


@pytest.mark.given
def test_a_mask_without_a_response_token_is_refused(ch):
    """sft_loss with a mask of zeros raises ValueError saying "no response": nothing to average"""
    raises_clearly(lambda: ch.sft_loss(-np.ones((2, 3)), np.zeros((2, 3))), ValueError, "no response",
                   hint="the mask's sum is 0: refuse before dividing by it")


@pytest.mark.given
def test_a_beta_not_above_0_is_refused(ch):
    """implicit_reward with β ≤ 0 raises ValueError naming beta (given, as for dpo_loss and dpo_grad)"""
    logp = np.array([-1.0, -2.0])
    for beta in (0, 0.0, -0.1):
        raises_clearly(lambda beta=beta: ch.implicit_reward(logp, logp, beta), ValueError, names=("beta",))


@pytest.mark.given
def test_logits_and_ids_that_do_not_fit_are_refused(ch):
    """logits not a 2-D finite array of ≥ 2 rows, ids not one whole number in range per row: ValueError naming it"""
    logits = np.zeros((3, 4))
    for bad in (logits.tolist(), np.zeros((1, 4)), np.zeros(4), np.array([[0.0, np.nan]] * 3), np.zeros((3, 0)),
                np.ones((3, 4), dtype=bool)):
        raises_clearly(lambda bad=bad: ch.token_log_probs(bad, [0, 1, 2]), ValueError, names=("logits",))
        raises_clearly(lambda bad=bad: ch.sequence_log_prob(bad, [0, 1, 2], 1), ValueError, names=("logits",))
    for ids in ([0, 1], [0, 1, 4], [0, -1, 2], [0.0, 1.0, 2.0], [[0, 1, 2]]):
        raises_clearly(lambda ids=ids: ch.token_log_probs(logits, ids), ValueError, names=("ids",))
    returned(ch.token_log_probs(logits, np.array([0, 1, 3])), "array", "token_log_probs of ids as a NumPy array")
    returned(ch.token_log_probs(logits[:2], [0, 1]), "array", "token_log_probs of 2 rows, the fewest there can be")
    for prompt_len in (0, 3, 1.0, True):
        raises_clearly(lambda prompt_len=prompt_len: ch.sequence_log_prob(logits, [0, 1, 2], prompt_len),
                       ValueError, names=("prompt_len",))
    for prompt_len, seq_len, name in ((1.0, 3, "prompt_len"), (True, 3, "prompt_len"), (1, 1, "seq_len"),
                                      (1, 3.0, "seq_len")):
        raises_clearly(lambda p=prompt_len, s=seq_len: ch.response_mask(p, s), ValueError, names=(name,))


@pytest.mark.given
def test_log_probs_and_masks_that_do_not_fit_are_refused(ch):
    """log_probs and mask not 2-D finite arrays of one shape, or a mask of other values than 0 and 1: ValueError"""
    lp, mask = -np.ones((2, 3)), np.ones((2, 3))
    raises_clearly(lambda: ch.sft_loss(lp.tolist(), mask), ValueError, "list", names=("log_probs",))
    raises_clearly(lambda: ch.sft_loss(lp[0], mask[0]), ValueError, names=("log_probs",))
    raises_clearly(lambda: ch.sft_loss(lp, mask[:, :2]), ValueError, "(2, 3)", "(2, 2)")
    raises_clearly(lambda: ch.sft_loss(lp, 0.5 * mask), ValueError, names=("mask",))
    raises_clearly(lambda: ch.sft_loss(lp, mask.tolist()), ValueError, "list", names=("mask",))
    raises_clearly(lambda: ch.sft_loss(lp, np.full((2, 3), np.nan)), ValueError, names=("mask",))
    raises_clearly(lambda: ch.sft_loss(np.full((2, 3), -np.inf), mask), ValueError, names=("log_probs",))
    close(ch.sft_loss(-np.ones((2, 3), dtype=int), np.ones((2, 3), dtype=int)), 1.0, "sft_loss of integer arrays",
          kind="float")


@pytest.mark.given
def test_log_probabilities_and_betas_that_do_not_fit_are_refused(ch):
    """the DPO arrays not 1-D, non-empty, finite and of one shape, β not a finite number > 0"""
    a, b = np.array([-1.0, -2.0]), np.array([-3.0, -1.0])
    raises_clearly(lambda: ch.implicit_reward(a.tolist(), b, 0.5), ValueError, "list", names=("policy_logp",))
    raises_clearly(lambda: ch.implicit_reward(a, b[:1], 0.5), ValueError, "(2,)", "(1,)")
    raises_clearly(lambda: ch.implicit_reward(a, np.array([[-1.0, -2.0]]), 0.5), ValueError, names=("ref_logp",))
    for beta in (True, "0.5", None, np.inf, np.array([0.5])):
        raises_clearly(lambda beta=beta: ch.implicit_reward(a, b, beta), ValueError, names=("beta",))
    close(ch.implicit_reward(a, b, np.array(0.5)), 0.5 * (a - b), "implicit_reward with β a 0-d array", kind="array")
    for beta in (0.0, -1.0, True, np.nan):
        raises_clearly(lambda beta=beta: ch.dpo_loss(a, b, a, b, beta), ValueError, names=("beta",))
        raises_clearly(lambda beta=beta: ch.dpo_grad(a, b, a, b, beta), ValueError, names=("beta",))
    for i, name in enumerate(("policy_chosen", "policy_rejected", "ref_chosen", "ref_rejected")):
        for bad in (np.array([-1.0]), np.array([-1.0, np.nan]), [-1.0, -2.0], np.array([])):
            args = [a, b, a, b]
            args[i] = bad
            raises_clearly(lambda args=args: ch.dpo_loss(*args, 0.5), ValueError, names=(name,))
            raises_clearly(lambda args=args: ch.dpo_grad(*args, 0.5), ValueError, names=(name,))
