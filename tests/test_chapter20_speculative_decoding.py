"""Chapter 20: Speculative decoding — the course's own worksheet (Part III), and beyond.

A vocabulary of three tokens; the target's p and the draft's q at two positions and the target's last row;
rounds of k = 2 draft tokens with explicit draws. Each worksheet step is one test below, named as the claim it
checks; the numbers come from reference/chapter20_speculative_decoding.toml (audited, in exact fractions, by
scripts/audit_chapter20_speculative_decoding.py). Beyond the worksheet, the chapter's claim on your own
speculative_step: every outcome of a round is enumerated — each draft, and each interval of the draws between
the points where the rule can change its mind (an acceptance probability, a running sum of the residual or of
the target's last row) — and the tokens it emits, completed by the target where the round stopped short, must
have exactly the target's distribution (to 1e-12); the tokens a round yields on average must be
1 + α + … + α^k; then other vocabularies and lengths, and bad input.
"""

import itertools

import numpy as np
import pytest

from kata import close, expect, raises_clearly, returned, step_case

CHAPTER = 20
EXACT = {"rtol": 1e-12, "atol": 1e-12}  # an enumeration of exact probabilities, summed in float64
CONTINUED = "continuing after the first rejection: the round ends at the first rejected token"
NO_BONUS = "no bonus token: when all k draft tokens are accepted, the target's last row gives one more"
AT_EQUAL = "u ≤ a accepted: a draw equal to the acceptance probability rejects (accept only when u < a)"

# a bigram target and draft over three tokens: row t is the distribution of the token after token t
TARGET = np.array([[0.2, 0.5, 0.3], [0.6, 0.3, 0.1], [0.1, 0.7, 0.2]])
DRAFT = np.array([[0.5, 0.3, 0.2], [0.4, 0.1, 0.5], [0.3, 0.3, 0.4]])


def tokens(got, what: str) -> list[int]:
    """The docstring promises a list of Python ints."""
    if not isinstance(got, list):
        pytest.fail(f"{what}: the docstring promises a list of ints, got {type(got).__name__}: {got!r:.200}",
                    pytrace=False)
    return [returned(i, "int", f"{what}, entry {n}") for n, i in enumerate(got)]


def rounds(ch, drafts, last_cut=True):
    """Every outcome of one round for each draft (with its probability): [(weight, the tokens emitted)].

    ``drafts`` maps a draft (a tuple of tokens) to (its probability, q (k, vocab), p (k + 1, vocab)). The draws
    u₀ … u_{k−1} are cut where your acceptance probability of each draft token lies, the last draw where a running
    sum of your residual of each position or of the target's last row lies (not cut when ``last_cut`` is False:
    the number of tokens does not depend on it); one call per piece, at its middle, weighted by its width. The
    worksheet checked those two functions; this is the claim about the round built on them.
    """
    found = []
    for draft, (chance, q, p) in drafts.items():
        k = len(draft)
        cuts = [[ch.acceptance_probability(p[i], q[i], x)] for i, x in enumerate(draft)]
        sums = [np.cumsum(ch.residual_distribution(p[i], q[i])) for i in range(k)] + [np.cumsum(p[k])]
        cuts.append([c for s in sums for c in s] if last_cut else [])
        pieces = []
        for points in cuts:  # a running sum rounded to just below or above 1 (or two that differ by a rounding) is no cut
            edges = np.unique([0.0, 1.0, *(x for x in points if 1e-12 < x < 1 - 1e-12)])
            pieces.append([((a + b) / 2, b - a) for a, b in zip(edges[:-1], edges[1:], strict=True) if b - a > 1e-12])
        for pick in itertools.product(*pieces):
            us = [u for u, _ in pick]
            out = tokens(ch.speculative_step(list(draft), q, p, us), f"speculative_step({list(draft)}, q, p, {us})")
            found.append((chance * np.prod([w for _, w in pick]), out))
    return found


def bigram_drafts(start, k):
    """Every draft of k tokens after ``start`` from DRAFT, with its probability and the rows q and p it meets."""
    drafts = {}
    for draft in itertools.product(range(3), repeat=k):
        before = (start, *draft)
        chance = np.prod([DRAFT[a, b] for a, b in itertools.pairwise(before)])
        drafts[draft] = (chance, DRAFT[list(before[:k])], TARGET[list(before)])
    return drafts


# -- the worksheet, step by step -------------------------------------------------------------------
@pytest.mark.parametrize("token", [
    step_case("20.1", "a_token_the_draft_over_proposes_is_accepted_in_the_proportion_p_over_q", 0),
    step_case("20.2", "a_token_the_target_wants_more_is_always_accepted", 1),
])
def test_acceptance_probability(ch, ws, token):
    expect(ws, ch.acceptance_probability(ws.input("p"), ws.input("q"), token), kind="float")


@pytest.mark.step("20.3")
def test_the_residual_keeps_what_the_target_wants_beyond_the_draft_renormalised(ch, ws):
    expect(ws, ch.residual_distribution(ws.input("p"), ws.input("q")), kind="array")


@pytest.mark.step("20.4")
def test_the_acceptance_rate_is_the_sum_of_the_smaller_probabilities(ch, ws):
    expect(ws, ch.acceptance_rate(ws.input("p"), ws.input("q")), kind="float")


@pytest.mark.step("20.5")
def test_a_call_of_the_target_yields_one_plus_alpha_plus_alpha_squared_tokens(ch, ws):
    expect(ws, ch.expected_tokens(ws.inputs["alpha"], ws.inputs["k"]), kind="float")


@pytest.mark.parametrize("which", [
    step_case("20.6", "both_draft_tokens_accepted_then_the_bonus_token", "20.6"),
    step_case("20.7", "the_first_draft_token_rejected_ends_the_round_with_a_residual_token", "20.7"),
    step_case("20.8", "the_second_draft_token_rejected_is_filled_from_the_second_positions_residual", "20.8"),
])
def test_speculative_step(ch, ws, which):
    got = ch.speculative_step(ws.inputs["draft"], ws.input("q"), ws.input("p"), ws.inputs["us"])
    expect(ws, tokens(got, f"{which} speculative_step"))


# -- beyond the worksheet: the output is the target's, exactly ------------------------------------------------
@pytest.mark.parametrize("start", [0, 1, 2])
def test_a_round_completed_by_the_target_gives_every_three_tokens_the_targets_probability(ch, start):
    """Every round of k = 2 from a bigram draft, completed by the target, gives each 3 tokens p's probability (1e-12)"""
    law = np.zeros((3, 3, 3))
    for weight, out in rounds(ch, bigram_drafts(start, 2)):
        if not 1 <= len(out) <= 3:
            pytest.fail(f"a round of k = 2 emitted {out}: between 1 and k + 1 = 3 tokens", pytrace=False)
        for tail in itertools.product(range(3), repeat=3 - len(out)):  # the target alone goes on
            seq = (*out, *tail)
            law[seq] += weight * np.prod([TARGET[a, b] for a, b in itertools.pairwise((out[-1], *tail))])
    want = TARGET[start][:, None, None] * TARGET[:, :, None] * TARGET[None, :, :]
    close(law, want, f"the law of the first 3 tokens after token {start}: a round of k = 2 of speculative_step "
          "(every draft and every interval of the draws), completed by the target", **EXACT)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_first_token_over_five_tokens_is_distributed_as_p(ch, seed):
    """k = 1 over a vocabulary of 5 (zeros in p and q): the first token emitted is distributed exactly as p (1e-12)"""
    rng = np.random.default_rng(seed)
    p, q = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
    p[seed], q[4 - seed] = 0.0, 0.0
    p, q = p / p.sum(), q / q.sum()
    after = rng.dirichlet(np.ones(5))
    drafts = {(x,): (q[x], q[None, :], np.stack([p, after])) for x in range(5) if q[x] > 0}
    law = np.zeros(5)
    for weight, out in rounds(ch, drafts):
        law[out[0]] += weight
    close(law, p, f"the law of the first token of a round of k = 1 over 5 tokens, p = {p.round(4).tolist()}, "
          f"q = {q.round(4).tolist()}", **EXACT)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_the_tokens_a_round_yields_on_average_are_one_plus_alpha_up_to_alpha_to_the_k(ch, k):
    """Every round of k draft tokens enumerated (the same p and q at every position): on average 1 + α + … + α^k tokens"""
    p, q = TARGET[0], DRAFT[0]
    alpha = float(np.minimum(p, q).sum())
    drafts = {d: (np.prod(q[list(d)]), np.tile(q, (k, 1)), np.tile(p, (k + 1, 1)))
              for d in itertools.product(range(3), repeat=k)}
    mean = sum(weight * len(out) for weight, out in rounds(ch, drafts, last_cut=False))
    close(mean, sum(alpha ** i for i in range(k + 1)), f"the tokens a round of k = {k} yields on average, α = "
          f"{alpha:.4f}, by enumeration", kind="float", **EXACT,
          mistakes=[(CONTINUED, 1 + k * alpha), (NO_BONUS, sum(alpha ** i for i in range(k)))])
    close(ch.expected_tokens(ch.acceptance_rate(p, q), k), mean, f"expected_tokens(acceptance_rate(p, q), {k}) "
          "against the enumeration", kind="float", **EXACT)


# -- beyond the worksheet: each function on other numbers --------------------------------------------------------
def distributions(seed, vocab=6):
    """p and q over ``vocab`` tokens, each with a zero somewhere, from a fixed seed."""
    rng = np.random.default_rng(seed)
    p, q = rng.dirichlet(np.ones(vocab)), rng.dirichlet(np.ones(vocab))
    p[1], q[3] = 0.0, 0.0
    return p / p.sum(), q / q.sum()


def test_acceptance_probabilities_over_six_tokens(ch):
    """min(1, p(x)/q(x)) for every token q proposes, over 6 tokens: 0 where p is 0, 1 wherever p ≥ q"""
    p, q = distributions(20)
    for x in range(6):
        if q[x] > 0:
            close(ch.acceptance_probability(p, q, x), min(1.0, p[x] / q[x]),
                  f"acceptance_probability(p, q, {x}), p = {p.round(4).tolist()}, q = {q.round(4).tolist()}",
                  kind="float", mistakes=[("p/q not capped at 1", p[x] / q[x])])
    close(ch.acceptance_probability(q, q, 2), 1.0, "acceptance_probability(q, q, 2): the draft is the target",
          kind="float")


def test_the_residual_over_six_tokens(ch):
    """max(0, p − q) / Σ max(0, p − q) over 6 tokens: zero wherever p ≤ q, summing to 1"""
    for seed in (21, 22):
        p, q = distributions(seed)
        r = np.maximum(p - q, 0.0)
        close(ch.residual_distribution(p, q), r / r.sum(), f"residual_distribution(p, q), p = {p.round(4).tolist()}, "
              f"q = {q.round(4).tolist()}", kind="array", mistakes=[("not renormalised", r)])


def test_the_acceptance_rate_over_six_tokens(ch):
    """α = 1 − ½ Σ|p − q| over 6 tokens; 1 when the draft is the target, 0 when they share no token"""
    p, q = distributions(23)
    close(ch.acceptance_rate(p, q), 1 - 0.5 * np.abs(p - q).sum(), "acceptance_rate(p, q) over 6 tokens",
          kind="float", mistakes=[("Σ max(p, q): the larger of each pair instead of the smaller",
                                   1 + 0.5 * np.abs(p - q).sum())])
    close(ch.acceptance_rate(p, p), 1.0, "acceptance_rate(p, p): the draft is the target", kind="float")
    close(ch.acceptance_rate(np.array([0.5, 0.5, 0.0]), np.array([0.0, 0.0, 1.0])), 0.0,
          "acceptance_rate of two distributions without a common token", kind="float")


@pytest.mark.parametrize("alpha, k, want", [(1.0, 3, 4.0), (0.0, 4, 1.0), (0.5, 5, 1.96875), (0.9, 1, 1.9)])
def test_expected_tokens_from_one_to_k_plus_one(ch, alpha, k, want):
    """1 + α + … + α^k: k + 1 at α = 1 (every token accepted), 1 at α = 0"""
    close(ch.expected_tokens(alpha, k), want, f"expected_tokens({alpha}, {k})", kind="float",
          mistakes=[("α + … + α^k: the token the target adds to every round forgotten", want - 1),
                    ("1 + α + … + α^(k−1): one power short, the sum stops at α^k", want - alpha ** k)])


def test_a_longer_round_over_five_tokens(ch):
    """k = 4 over 5 tokens: all accepted then the bonus, or cut at the first rejection, whatever the later draws"""
    q, p = np.full((4, 5), 0.2), np.array([[0.1, 0.1, 0.2, 0.3, 0.3]] * 5)
    draft = [3, 4, 0, 1]  # accepted with probabilities 1, 1, 1/2, 1/2
    got = tokens(ch.speculative_step(draft, q, p, [0.9, 0.9, 0.25, 0.25, 0.95]), "speculative_step, k = 4")
    close(got, [3, 4, 0, 1, 4], "speculative_step, k = 4: all four accepted, then the bonus from p's last row",
          mistakes=[(NO_BONUS, [3, 4, 0, 1])])
    got = tokens(ch.speculative_step(draft, q, p, [0.9, 0.9, 0.75, 0.25, 0.3]), "speculative_step, k = 4")
    close(got, [3, 4, 3], "speculative_step, k = 4: the third rejected; its residual [0, 0, 0, ½, ½] with u = 0.3",
          mistakes=[(CONTINUED, [3, 4, 3, 1, 2])])
    got = tokens(ch.speculative_step(draft, q, p, [0.9, 0.9, 0.75, 0.95, 0.3]), "speculative_step, k = 4")
    close(got, [3, 4, 3], "speculative_step, k = 4, the same with another draw after the rejection: the same round",
          mistakes=[(CONTINUED, [3, 4, 3, 2])])
    got = tokens(ch.speculative_step(draft, q, p, [0.9, 0.9, 0.5, 0.25, 0.3]), "speculative_step, k = 4")
    close(got, [3, 4, 3], "speculative_step, k = 4: u = 0.5 exactly on the third token's acceptance probability "
          "0.5 rejects it (accepted only when u < a)", mistakes=[(AT_EQUAL, [3, 4, 0, 1, 2])])


def test_nothing_modifies_its_inputs(ch):
    """acceptance_probability, residual_distribution, acceptance_rate and speculative_step leave their inputs as they were"""
    p, q = np.array([0.2, 0.5, 0.3]), np.array([0.5, 0.3, 0.2])
    rows_q, rows_p, us = np.stack([q, q]), np.stack([p, p, p]), np.array([0.5, 0.5, 0.5])
    # the judge fails a call that changes one of its arguments in place (ChangedItsInput)
    ch.acceptance_probability(p, q, 0)
    ch.residual_distribution(p, q)
    ch.acceptance_rate(p, q)
    ch.speculative_step([0, 2], rows_q, rows_p, us)


# -- bad input gets a clear error (the checks marked given are the stubs': CONTRIBUTING.md) -----------------
@pytest.mark.given
def test_a_token_the_draft_gives_probability_0_is_refused(ch):
    """acceptance_probability of a token with q(x) = 0 raises ValueError naming q: the draft cannot have proposed it"""
    p, q = np.array([0.2, 0.5, 0.3]), np.array([0.0, 0.6, 0.4])
    raises_clearly(lambda: ch.acceptance_probability(p, q, 0), ValueError, names=("q",),
                   hint="q(0) is 0: refuse the token before dividing by it")


@pytest.mark.given
def test_no_residual_when_p_never_exceeds_q(ch):
    """residual_distribution(p, p) raises ValueError saying "no residual": nothing to renormalise"""
    p = np.array([0.2, 0.5, 0.3])
    raises_clearly(lambda: ch.residual_distribution(p, p), ValueError, "no residual",
                   hint="max(0, p − q) is zero everywhere: refuse before dividing by its sum")


@pytest.mark.given
def test_distributions_that_are_not_are_refused(ch):
    """p or q not a 1-D NumPy array of finite numbers ≥ 0 summing to 1, or of two lengths: ValueError naming which"""
    good = np.array([0.2, 0.5, 0.3])
    for bad in ([0.2, 0.5, 0.3], np.array([0.2, 0.5, 0.4]), np.array([-0.2, 0.9, 0.3]), np.array([[0.5, 0.5]]),
                np.array([np.nan, 0.5, 0.5]), np.array([]), np.array([True, False])):
        raises_clearly(lambda bad=bad: ch.acceptance_probability(bad, good, 0), ValueError, names=("p",))
        raises_clearly(lambda bad=bad: ch.residual_distribution(good, bad), ValueError, names=("q",))
        raises_clearly(lambda bad=bad: ch.acceptance_rate(good, bad), ValueError, names=("q",))
    raises_clearly(lambda: ch.acceptance_rate(good, np.array([0.5, 0.5])), ValueError, "(3,)", "(2,)")
    raises_clearly(lambda: ch.acceptance_rate([0.2, 0.5, 0.3], good), ValueError, "list", names=("p",))
    row = np.array([[0.5, 0.5]])
    raises_clearly(lambda: ch.acceptance_rate(row, row), ValueError, names=("p",))
    close(ch.acceptance_rate(np.array([1.0]), np.array([1.0])), 1.0, "acceptance_rate over a vocabulary of one token",
          kind="float")


@pytest.mark.given
def test_tokens_alphas_and_ks_that_do_not_fit_are_refused(ch):
    """a token not a whole number in range, α not a number in [0, 1], k not a whole number ≥ 1: ValueError naming it"""
    p = np.array([0.2, 0.5, 0.3])
    for token in (3, -1, 1.0, True):
        raises_clearly(lambda token=token: ch.acceptance_probability(p, p, token), ValueError, names=("token",))
    for alpha in (-0.1, 1.5, True, "0.5", np.nan, np.array(True)):
        raises_clearly(lambda alpha=alpha: ch.expected_tokens(alpha, 2), ValueError, names=("alpha",))
    close(ch.expected_tokens(np.array(0.5), 2), 1.75, "expected_tokens of a 0-d array α = 0.5, k = 2", kind="float")
    for k in (0, 2.0, False):
        raises_clearly(lambda k=k: ch.expected_tokens(0.5, k), ValueError, names=("k",))


@pytest.mark.given
def test_rounds_that_do_not_fit_are_refused(ch):
    """draft, q, p and us of the wrong sizes, a draw outside [0, 1), a draft token out of range or of q-probability 0"""
    q, p, us = np.array([[0.5, 0.3, 0.2]] * 2), np.array([[0.2, 0.5, 0.3]] * 3), [0.1, 0.2, 0.3]
    step = ch.speculative_step
    raises_clearly(lambda: step([], q[:0], p[:1], us[:1]), ValueError, names=("draft",))
    raises_clearly(lambda: step(np.array([], dtype=int), q[:0], p[:1], us[:1]), ValueError, names=("draft",))
    raises_clearly(lambda: step(np.array([[0, 1]]), q, p, us), ValueError, names=("draft",))
    raises_clearly(lambda: step([0.0, 1.0], q, p, us), ValueError, names=("draft",))
    raises_clearly(lambda: step([0, 1], q[:1], p, us), ValueError, "(1, 3)", names=("q",))
    raises_clearly(lambda: step([0, 1], np.array([[0.5, 0.3, 0.2], [0.5, 0.3, 0.3]]), p, us), ValueError, "q[1]")
    raises_clearly(lambda: step([0, 1], q, p[:2], us), ValueError, names=("p",))
    raises_clearly(lambda: step([0, 1], q.tolist(), p, us), ValueError, names=("q",))
    raises_clearly(lambda: step([0, 1], q, p[:, :2], us), ValueError, "(2, 3)", "(3, 2)")
    raises_clearly(lambda: step([0, 1], q, np.array([[0.2, 0.5, 0.4]] * 3), us), ValueError, names=("p",))
    raises_clearly(lambda: step([0, 1], q, p, us[:2]), ValueError, "3", names=("us",))
    raises_clearly(lambda: step([0, 1], q, p, [False, False, True]), ValueError, "us[0]")
    tokens(step([0, 1], q, p, [0.0, 0.0, 0.0]), "speculative_step with every draw 0, a draw like any other")
    raises_clearly(lambda: step([0, 1], q, p, [0.1, 1.0, 0.3]), ValueError, "us[1]")
    raises_clearly(lambda: step([0, 1], q, p, [0.1, 0.2, True]), ValueError, "us[2]")
    raises_clearly(lambda: step([0, 3], q, p, us), ValueError, "draft[1]")
    zero = np.array([[0.5, 0.5, 0.0], [0.5, 0.3, 0.2]])
    raises_clearly(lambda: step([2, 1], zero, p, us), ValueError, "draft[0]", "q[0]")


@pytest.mark.given
def test_a_round_names_the_first_row_draw_or_token_that_does_not_fit(ch):
    """each row of q and p, each draw and each draft token is checked, and the first that does not fit is named

    Rows of booleans (one-hot, each summing to 1), rows that each sum to 1/3 (all together 1), draws that are all
    False, a draw of 1 after a draw of 0 (which is one), a token of probability 0 after one that is not.
    """
    q, p, us = np.array([[0.5, 0.3, 0.2]] * 2), np.array([[0.2, 0.5, 0.3]] * 3), [0.1, 0.2, 0.3]
    step = ch.speculative_step
    raises_clearly(lambda: step([0, 1], np.eye(3, dtype=bool)[:2], p, us), ValueError, "q[0]")
    raises_clearly(lambda: step([0, 1], q, np.full((3, 3), 1 / 9), us), ValueError, "p[0]")
    raises_clearly(lambda: step([0, 1], q, p, [False, False, False]), ValueError, "us[0]")
    raises_clearly(lambda: step([0, 1], q, p, [0.0, 1.0, 0.3]), ValueError, "us[1]")
    zero = np.array([[0.5, 0.3, 0.2], [0.5, 0.5, 0.0]])
    raises_clearly(lambda: step([1, 2], zero, p, us), ValueError, "draft[1]", "q[1]")
