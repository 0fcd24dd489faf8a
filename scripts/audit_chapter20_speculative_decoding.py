"""Audit of chapter 20's worksheet (speculative decoding): every `exact` and mistake value of the key.

Written from the formulas on the page in exact fractions (``fractions.Fraction``) with plain loops,
independent of ``solutions/`` and of NumPy, so the answer key cannot inherit a bug of the reference. Each
classic mistake is a switch of the one round written here. The audit also proves the chapter's claim on
the worksheet's own numbers, exactly: the first token of a round is distributed as p, and a whole round of
a three-token bigram target and draft, completed by the target where it stopped short, gives every
sequence of three tokens the target's own probability (``_proof``, the audit's own step, not compared).

Run by ``python -m kata.authoring.audit 20``, which prints every step; its ``--check`` compares with the key.
"""

from __future__ import annotations

import itertools
from fractions import Fraction as F

from kata.authoring.audit import four_decimals

# the worksheet's inputs (the page's tables): a vocabulary of three tokens, rounds of k = 2
P0 = [F(2, 10), F(5, 10), F(3, 10)]  # the target at the first position (20.1-20.5, row 0 of 20.6-20.8)
Q0 = [F(5, 10), F(3, 10), F(2, 10)]  # the draft at the first position
P1 = [F(6, 10), F(3, 10), F(1, 10)]  # the target at the second position
Q1 = [F(4, 10), F(1, 10), F(5, 10)]  # the draft at the second position
P2 = [F(1, 10), F(7, 10), F(2, 10)]  # the target after the second draft token: the bonus row
Q, P = [Q0, Q1], [P0, P1, P2]
K = 2
ROUNDS = {  # step: (the draft tokens, the draws u0, u1, u2)
    "20.6": ([0, 2], [F(30, 100), F(5, 100), F(35, 100)]),  # both accepted, then the bonus token
    "20.7": ([0, 0], [F(40, 100), F(30, 100), F(75, 100)]),  # the first rejected: u0 exactly its a = 2/5
    "20.8": ([1, 2], [F(85, 100), F(25, 100), F(55, 100)]),  # the first accepted, the second rejected
}
NO_BONUS = "no bonus token: when all k draft tokens are accepted, the target's last row gives one more"
BONUS_FROM_DRAFT = "the bonus token drawn from the draft's last row q instead of the target's last row p"
CONTINUED = "continuing after the first rejection: the round ends at the first rejected token"
REUSED = "one uniform draw reused for accepting and resampling: the residual's draw is the last u"
WRONG_POSITION = "the residual drawn at the wrong position (the target's next row): the rejected position's p and q"
FROM_P = "at a rejection, a draw from p itself instead of the residual max(0, p − q), renormalised"
QP = "min(1, q/p) instead of min(1, p/q): the draft's probability over the target's"
Q_POSITION = "q of the wrong position: every draft token tested against the first position's q"
AT_EQUAL = "u ≤ a accepted: a draw equal to the acceptance probability rejects (accept only when u < a)"


def acceptance(p, q, x, capped=True, inverted=False):
    """a(x) = min(1, p(x)/q(x)), with the classic mistakes as switches."""
    ratio = q[x] / p[x] if inverted else p[x] / q[x]
    return min(F(1), ratio) if capped else ratio


def residual(p, q, renormalise=True, reverse=False, absolute=False):
    """max(0, p − q) over its sum, with the classic mistakes as switches."""
    r = [abs(a - b) if absolute else max(F(0), (b - a) if reverse else (a - b)) for a, b in zip(p, q, strict=True)]
    total = sum(r)
    return [x / total for x in r] if renormalise else r


def sample(probs, u):
    """Chapter 16's inverse cumulative distribution: the first token whose running sum passes u."""
    running = F(0)
    for i, x in enumerate(probs):
        running += x
        if u < running:
            return i
    raise AssertionError("the worksheet's draws never fall past the last running sum")


def rate(p, q):
    """α = Σ min(p, q)."""
    return sum(min(a, b) for a, b in zip(p, q, strict=True))


def round_(draft, q, p, us, mistake=None):
    """One round, the page's rule: accept while u_i < a(x_i); the first rejection draws from the residual with u_k."""
    k, out = len(draft), []
    for i, x in enumerate(draft):
        a = acceptance(p[i], q[0] if mistake == Q_POSITION else q[i], x)
        if us[i] < a or (mistake == AT_EQUAL and us[i] == a):
            out.append(x)
            continue
        if mistake == REUSED:
            out.append(sample(residual(p[i], q[i]), us[i]))
        elif mistake == WRONG_POSITION:
            out.append(sample(residual(p[i + 1], q[i]), us[k]))
        elif mistake == FROM_P:
            out.append(sample(p[i], us[k]))
        else:
            out.append(sample(residual(p[i], q[i]), us[k]))
        if mistake != CONTINUED:
            return out
    if mistake == NO_BONUS:
        return out
    return out + [sample(q[k - 1] if mistake == BONUS_FROM_DRAFT else p[k], us[k])]


def floats(value):
    """Fractions as float64 (a list stays a list)."""
    return [floats(v) for v in value] if isinstance(value, list) else float(value)


# -- the claim, proved on these numbers ----------------------------------------------------------------------
def first_token(p, q):
    """P(first token = y) = q(y)·a(y) + (1 − α)·r(y): accepted as drafted, or drawn after a rejection."""
    r, alpha = residual(p, q), rate(p, q)
    return [q[y] * acceptance(p, q, y) + (1 - alpha) * r[y] for y in range(len(p))]


def cells(points):
    """The intervals [0, 1) is cut into by these points: (a representative u, the width)."""
    cuts = sorted({F(0), F(1), *(x for x in points if 0 < x < 1)})
    return [((a + b) / 2, b - a) for a, b in itertools.pairwise(cuts)]


def proof() -> dict:
    """A bigram target and draft (row = the previous token): every round enumerated, completed by the target."""
    target = [P0, P1, P2]  # the row of the previous token
    drafter = [Q0, Q1, [F(3, 10), F(3, 10), F(4, 10)]]
    start, vocab = 0, 3
    law: dict[tuple, F] = {}
    accepted = F(0)
    for x in itertools.product(range(vocab), repeat=K):
        chance = drafter[start][x[0]] * drafter[x[0]][x[1]]
        q, p = [drafter[start], drafter[x[0]]], [target[start], target[x[0]], target[x[1]]]
        grids = [cells([acceptance(p[i], q[i], x[i])]) for i in range(K)]
        last = cells([sum(d[:j]) for d in (residual(p[0], q[0]), residual(p[1], q[1]), p[2]) for j in range(4)])
        for pick in itertools.product(*grids, last):
            weight = chance
            for _, width in pick:
                weight *= width
            out = round_(list(x), q, p, [u for u, _ in pick])
            accepted += weight * (len(out) - 1)
            prev = out[-1]
            tails = itertools.product(range(vocab), repeat=3 - len(out))
            for tail in tails:  # the target alone continues where the round stopped short
                w, before = weight, prev
                for y in tail:
                    w, before = w * target[before][y], y
                seq = tuple(out) + tail
                law[seq] = law.get(seq, F(0)) + w
    for y in itertools.product(range(vocab), repeat=3):
        assert law.get(y, F(0)) == target[start][y[0]] * target[y[0]][y[1]] * target[y[1]][y[2]], y
    want = rate(target[start], drafter[start]) + sum(min(target[start][a], drafter[start][a]) *
                                                     rate(target[a], drafter[a]) for a in range(vocab))
    assert accepted == want, (accepted, want)
    assert first_token(P0, Q0) == P0 and first_token(P1, Q1) == P1
    return {"exact": floats(P0), "mistakes": {}}


# -- the worksheet ---------------------------------------------------------------------------------------------
def audit() -> dict[str, dict]:
    """{step id: {"exact": value, "mistakes": {name: value}}}, the names as in the key."""
    steps: dict[str, dict] = {"_proof": proof()}
    steps["20.1"] = {"exact": float(acceptance(P0, Q0, 0)), "mistakes": {
        QP: float(acceptance(P0, Q0, 0, inverted=True))}}
    steps["20.2"] = {"exact": float(acceptance(P0, Q0, 1)), "mistakes": {
        "p/q not capped at 1: a probability cannot exceed 1": float(acceptance(P0, Q0, 1, capped=False)),
        QP: float(acceptance(P0, Q0, 1, inverted=True))}}
    steps["20.3"] = {"exact": floats(residual(P0, Q0)), "mistakes": {
        "the residual not renormalised: max(0, p − q) sums to 1 − α, not 1":
            floats(residual(P0, Q0, renormalise=False)),
        "max(0, q − p): the draft's excess instead of the target's": floats(residual(P0, Q0, reverse=True)),
        "|p − q| renormalised: the draft's excess counted too": floats(residual(P0, Q0, absolute=True))}}
    w = [F(1, 3)] * 3
    steps["20.4"] = {"exact": float(rate(P0, Q0)), "mistakes": {
        "1 − Σ|p − q|: the ½ forgotten (α = 1 − ½ Σ|p − q|)":
            float(1 - sum(abs(a - b) for a, b in zip(P0, Q0, strict=True))),
        "min(1, p/q) averaged over the vocabulary: each token weighs q(x), the chance the draft proposes it":
            float(sum(w[x] * acceptance(P0, Q0, x) for x in range(3))),
        "min(1, p/q) weighted by p instead of q":
            float(sum(P0[x] * acceptance(P0, Q0, x) for x in range(3))),
        "Σ max(p, q): the larger of each pair instead of the smaller":
            float(sum(max(a, b) for a, b in zip(P0, Q0, strict=True)))}}
    alpha = rate(P0, Q0)
    steps["20.5"] = {"exact": float(sum(alpha ** i for i in range(K + 1))), "mistakes": {
        "α + … + α^k: the token the target adds to every round forgotten":
            float(sum(alpha ** i for i in range(1, K + 1))),
        "1 + k·α: every draft token counted as if tested on its own (a round ends at the first rejection)":
            float(1 + K * alpha),
        "1 + α + … + α^(k−1): one power short, the sum stops at α^k (k + 1 tokens when all k are accepted)":
            float(sum(alpha ** i for i in range(K)))}}
    mistakes = {"20.6": (NO_BONUS, BONUS_FROM_DRAFT), "20.7": (CONTINUED, REUSED, WRONG_POSITION, AT_EQUAL),
                "20.8": (FROM_P, Q_POSITION)}
    for step, (draft, us) in ROUNDS.items():
        right = round_(draft, Q, P, us)
        steps[step] = {"inputs": {"draft": draft, "q": floats(Q), "p": floats(P), "us": floats(us)}, "exact": right,
                       "mistakes": {m: round_(draft, Q, P, us, m) for m in mistakes[step]}}
        for m in mistakes[step]:  # each mistake fails here first: not at an earlier round, and differently
            assert steps[step]["mistakes"][m] != right, (step, m)
            assert all(round_(ROUNDS[s][0], Q, P, ROUNDS[s][1], m) == round_(ROUNDS[s][0], Q, P, ROUNDS[s][1])
                       for s in ROUNDS if s < step), (step, m)
        values = [tuple(v) for v in steps[step]["mistakes"].values()]
        assert len(set(values)) == len(values), step
    return steps


def printed(value):
    """How the worksheet prints a value: a whole number as it is, else 4 decimals."""
    return four_decimals(value, zeros=False)
