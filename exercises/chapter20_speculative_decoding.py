"""Chapter 20: Speculative decoding — a small draft model proposes, the large target model verifies.

Generating with a large model costs one call of it per token. Speculative decoding lets a small, fast
**draft** model propose k tokens, one after another; one call of the **target** model then scores all of
them at once and gives k + 1 rows of probabilities: row i for the position of draft token i, row k for the
position after the last. Each draft token x, drawn from the draft's q, is **accepted** with probability
min(1, p(x) / q(x)); at the first rejection the position is filled from the **residual**
max(0, p − q), renormalised, and the round ends; when all k are accepted, row k gives one more, the
**bonus** token. Every token emitted is distributed exactly as the target's own sample would be: the draft
only decides how many tokens one call of the target yields.

Every draw here is an explicit uniform u in [0, 1) (as chapter 16's ``sample_index`` takes it), so every
result is reproducible and can be checked by hand: u < min(1, p(x) / q(x)) accepts, and a token is drawn
from a distribution by chapter 16's inverse cumulative distribution.

Worksheet: this course's own. A vocabulary of three tokens; at the first position the target gives
p = [0.2, 0.5, 0.3] and the draft q = [0.5, 0.3, 0.2]; rounds of k = 2 draft tokens.

Types, as every docstring below uses them: an array is a NumPy array (a Python list where an array is
documented fails its checks, the message naming list; token ids may be a list of ints); a distribution is a 1-D
array of finite probabilities ≥ 0 summing to 1 (within 1e-6); a number (α, u) is a Python or NumPy int or float
or a 0-d array of one, never a bool or a string; a whole number is a Python or NumPy int (not a bool, not a
float).
"""

import numpy as np

from .chapter16_sampling import sample_index  # noqa: F401 - yours to use


def acceptance_probability(p: np.ndarray, q: np.ndarray, token: int) -> float:
    r"""The probability that the target accepts a draft token: p(x) / q(x), capped at 1.

    $$a(x) = \min\!\left(1,\ \frac{p(x)}{q(x)}\right)$$

    A token the target likes at least as much as the draft (p(x) ≥ q(x)) is always accepted; one the draft
    over-proposes is accepted in the proportion p(x) / q(x).

    Args:
        p: the target's distribution at this position, shape (vocab,).
        q: the draft's distribution at this position, shape (vocab,), the one the token was drawn from.
        token: the draft token x, a whole number in 0 … vocab − 1.

    Returns:
        a(x), a Python float in [0, 1].

    Raises:
        ValueError: if q(x) is 0 (the message names ``q`` and the token: the draft cannot have proposed a
            token it gives probability 0), p or q are not distributions of one length, or the token is not a
            whole number in range: the checks given above the ``raise``, which hand you p and q as float64
            arrays.

    See docs: chapter 20, steps 20.1 and 20.2.
    """
    p, q = _check_pair(p, q)
    _check_token(token, len(p), "token")
    _check_proposed(q, token)
    raise NotImplementedError("20.1 acceptance_probability: the target's probability of the token over the draft's, capped at 1 (1 line)")


def residual_distribution(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    r"""Where a rejected position draws from: the mass the target has beyond the draft, renormalised.

    $$r(x) = \frac{\max\bigl(0,\ p(x) - q(x)\bigr)}{\sum_y \max\bigl(0,\ p(y) - q(y)\bigr)}$$

    The draft proposed too much of some tokens (q > p) and too little of others (p > q); acceptance removes
    the excess, and r puts back exactly what is missing, so that a token comes out with probability p.

    Args:
        p: the target's distribution at the rejected position, shape (vocab,).
        q: the draft's distribution there, shape (vocab,).

    Returns:
        r, a new distribution, float64, shape (vocab,), summing to 1, zero wherever p ≤ q. p and q are not
        modified.

    Raises:
        ValueError: if no token has p > q (the message says "no residual": p and q are then the same
            distribution, every draft token is accepted, and there is nothing to renormalise), or p and q are
            not distributions of one length: the checks given above the ``raise``.

    See docs: chapter 20, step 20.3.
    """
    p, q = _check_pair(p, q)
    _check_residual(p, q)
    raise NotImplementedError("20.3 residual_distribution: what the target wants beyond the draft (token by token and never below 0) divided by its sum (2 lines)")


def acceptance_rate(p: np.ndarray, q: np.ndarray) -> float:
    r"""α, the probability that a token the draft proposes (drawn from q) is accepted.

    $$\alpha = \sum_x q(x)\,\min\!\left(1, \frac{p(x)}{q(x)}\right) = \sum_x \min\bigl(p(x),\ q(x)\bigr)
      = 1 - \tfrac12 \sum_x \lvert p(x) - q(x) \rvert$$

    1 when the draft is the target, 0 when they share no token; 1 − α is the mass of the residual before
    it is renormalised.

    Args:
        p: the target's distribution, shape (vocab,).
        q: the draft's distribution, shape (vocab,).

    Returns:
        α, a Python float in [0, 1].

    Raises:
        ValueError: if p or q is not a distribution, or they differ in length: the check given above the
            ``raise``.

    See docs: chapter 20, step 20.4.
    """
    p, q = _check_pair(p, q)
    raise NotImplementedError("20.4 acceptance_rate: α, the chance that a token the draft proposes is accepted over everything the draft may propose (the page's formula) (1 line)")


def expected_tokens(alpha: float, k: int) -> float:
    r"""How many tokens one call of the target yields on average, each draft token accepted with probability α.

    The round emits the accepted draft tokens up to the first rejection, then one token from the target (the
    residual's or the bonus), so it yields n + 1 tokens when the first n are accepted; with each accepted
    independently with probability α:

    $$E = \sum_{i=0}^{k} \alpha^i = 1 + \alpha + \dots + \alpha^k \ \Bigl(= \frac{1 - \alpha^{k+1}}{1 - \alpha}
      \text{ for } \alpha < 1\Bigr)$$

    At α = 1 every round yields k + 1 tokens; at α = 0, one.

    Args:
        alpha: the acceptance rate α, a number with 0 ≤ α ≤ 1.
        k: how many tokens the draft proposes per round, a whole number ≥ 1.

    Returns:
        E, a Python float in [1, k + 1].

    Raises:
        ValueError: if alpha is not a number in [0, 1] (the message names ``alpha``) or k is not a whole number
            ≥ 1 (the message names ``k``): the check given above the ``raise``.

    See docs: chapter 20, step 20.5.
    """
    _check_rate(alpha, k)
    raise NotImplementedError("20.5 expected_tokens: E, the average number of tokens one round yields with a rejection ending it (the page's sum) (1 line)")


def speculative_step(draft, q: np.ndarray, p: np.ndarray, us) -> list[int]:
    r"""One round of speculative decoding: verify k draft tokens, then one token from the target.

    For i = 0, 1, …, k − 1 in order, draft token xᵢ is accepted when

    $$u_i < \min\!\left(1, \frac{p_i(x_i)}{q_i(x_i)}\right)$$

    (``acceptance_probability``) and emitted. At the first rejection, position i is filled by chapter 16's
    ``sample_index`` from the ``residual_distribution`` of pᵢ and qᵢ with the last draw u_k, and the round
    ends: the draft tokens after it were proposed after a token that is not emitted. When all k are accepted,
    the bonus token is drawn by ``sample_index`` from p_k with u_k. So the draws u₀ … u_{k−1} only accept or
    reject, and u_k only draws the one token the target adds.

    Args:
        draft: the k draft tokens x₀ … x_{k−1}, k ≥ 1: a 1-D array of whole numbers (or a list of ints), each
            in 0 … vocab − 1, with qᵢ(xᵢ) > 0.
        q: the draft's distributions, shape (k, vocab): row i is the distribution xᵢ was drawn from.
        p: the target's distributions from its one call, shape (k + 1, vocab): row i for the position of xᵢ,
            row k for the position after the last draft token.
        us: the k + 1 uniform draws u₀ … u_k, each 0 ≤ u < 1 (a list or a 1-D array).

    Returns:
        The tokens the round emits, a list of Python ints: the accepted draft tokens, then the residual's or
        the bonus token; between 1 and k + 1 of them. Nothing given is modified.

    Raises:
        ValueError: if draft, q, p or us do not fit one another (k + 1 rows of p, k + 1 draws, each row a
            distribution), a draw is not in [0, 1) or a draft token is out of range or has probability 0
            under its q: the check given above the ``raise``, which hands you draft as a list of ints, q, p
            and us as float64 arrays.

    See docs: chapter 20, steps 20.6, 20.7 and 20.8.
    """
    draft, q, p, us = _check_step(draft, q, p, us)
    raise NotImplementedError("20.6 speculative_step: the draft tokens that stand in one round by the page's rule and the one token the target adds, each draw serving only the purpose the docstring gives it (9 lines)")


# -- input checks: the course's, given in the stubs (CONTRIBUTING.md, "The stub") -----------------------------
def _check_number(value, name: str) -> float:
    """A real number (a Python or NumPy int or float, or a 0-d array of one; not a bool, not a string) as float."""
    value = value.item() if isinstance(value, np.ndarray) and value.ndim == 0 else value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    return float(value)


def _check_whole(value, name: str) -> None:
    """Refuse what is not a whole number (a bool or a float such as 2.0 is not one)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be a whole number, got {value!r}")


def _check_distribution(d, name: str) -> np.ndarray:
    """The array d as float64, after checking it is a distribution: 1-D, non-empty, finite, ≥ 0, summing to 1."""
    if not isinstance(d, np.ndarray):
        raise ValueError(f"{name} must be a NumPy array, got {type(d).__name__}")
    if d.dtype.kind not in "iuf":
        raise ValueError(f"{name} must hold numbers, got dtype {d.dtype}")
    d = d.astype(np.float64)
    if d.ndim != 1 or len(d) < 1:
        raise ValueError(f"{name} must be 1-D (vocab,) with at least one entry, got shape {d.shape}")
    # the least entry >= 0 and the sum within 1e-6 of 1: a NaN fails both, an infinity the sum (see _check_rows)
    if not (d.min() >= 0 and abs(d.sum() - 1.0) <= 1e-6):
        raise ValueError(f"{name} must be a distribution: finite, >= 0 and summing to 1, got {d.tolist()}")
    return d


def _check_rows(a: np.ndarray, name: str) -> np.ndarray:
    """The 2-D array a as float64, after checking every row is a distribution; the first that is not is named.

    Every row at once, in two reductions: the least entry ≥ 0 and each row's sum within 1e-6 of 1 (a NaN makes
    the least entry and its row's sum NaN, an infinity the sum infinite or NaN, and a comparison with NaN is
    false, so "finite" needs no test of its own; each row's sum is the one its own ``sum()`` gives: pairwise,
    along a contiguous row). Only when something is wrong are the rows walked, by ``_check_distribution``, to
    name the first bad one (``q[2]``) with its message: the refusals of a check row by row, without its Python
    loop on every call (``nox -s serve`` calls ``speculative_step`` once a round). A subclass of ndarray (a
    ``np.matrix``, whose rows are 2-D) is walked too.
    """
    if type(a) is np.ndarray and a.dtype.kind in "iuf" and a.shape[1] >= 1:
        rows = a.astype(np.float64, order="C")
        if rows.min() >= 0 and abs(rows.sum(axis=1) - 1.0).max() <= 1e-6:
            return rows
    return np.stack([_check_distribution(row, f"{name}[{i}]") for i, row in enumerate(a)])


def _check_pair(p, q) -> tuple[np.ndarray, np.ndarray]:
    """(p, q) as float64 arrays, after checking both are distributions over the same vocabulary."""
    p, q = _check_distribution(p, "p"), _check_distribution(q, "q")
    if p.shape != q.shape:
        raise ValueError(f"p {p.shape} and q {q.shape} must be distributions over the same vocabulary")
    return p, q


def _check_token(token, vocab: int, name: str) -> None:
    """Refuse a token that is not a whole number in 0 … vocab − 1."""
    _check_whole(token, name)
    if not 0 <= token < vocab:
        raise ValueError(f"{name} {token} is outside the vocabulary of {vocab} tokens")


def _check_rate(alpha, k) -> None:
    """Refuse an alpha that is not a number in [0, 1] and a k that is not a whole number >= 1."""
    a = _check_number(alpha, "alpha")
    if not 0 <= a <= 1:
        raise ValueError(f"alpha must be a probability in [0, 1], got {alpha!r}")
    _check_whole(k, "k")
    if k < 1:
        raise ValueError(f"k must be at least 1 (the draft proposes k tokens), got {k}")


def _check_step(draft, q, p, us) -> tuple[list[int], np.ndarray, np.ndarray, np.ndarray]:
    """(draft as a list of ints, q, p, us as float64 arrays), after checking they fit one another."""
    ids = np.asarray(draft)
    if ids.ndim != 1 or len(ids) < 1 or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"draft must be a 1-D array of whole numbers with at least one token, got {draft!r}")
    k = len(ids)
    for name, a, rows in (("q", q, k), ("p", p, k + 1)):
        if not isinstance(a, np.ndarray) or a.ndim != 2 or len(a) != rows:
            raise ValueError(f"{name} must be a 2-D array of {rows} rows for {k} draft tokens, got shape "
                             f"{np.shape(a)}")
    if q.shape[1] != p.shape[1]:
        raise ValueError(f"q {q.shape} and p {p.shape} must have the same vocabulary (columns)")
    q, p = _check_rows(q, "q"), _check_rows(p, "p")
    u = np.asarray(us)
    if u.ndim != 1 or len(u) != k + 1:
        raise ValueError(f"us must hold k + 1 = {k + 1} draws for {k} draft tokens, got shape {u.shape}")
    # every draw at once; only when one is not a number in [0, 1) are they walked, to name the first
    if u.dtype.kind not in "iuf" or not (u.min() >= 0 and u.max() < 1):
        for i, value in enumerate(u):
            if not 0 <= _check_number(value, f"us[{i}]") < 1:
                raise ValueError(f"us[{i}] = {value!r}: a draw must satisfy 0 <= u < 1")
    # every token at once, in range and proposed with a probability > 0; else they are walked, to name the first
    if not (ids.min() >= 0 and ids.max() < q.shape[1] and q[np.arange(k), ids].min() > 0):
        for i, x in enumerate(ids):
            _check_token(x, q.shape[1], f"draft[{i}]")
            if q[i, x] == 0:
                raise ValueError(f"draft[{i}] = {x} has probability 0 under q[{i}]: the draft cannot have proposed it")
    return [int(x) for x in ids], q, p, u.astype(np.float64)


def _check_proposed(q: np.ndarray, token: int) -> None:
    """Refuse a token the draft gives probability 0: it cannot have proposed it (the message names q and token)."""
    if q[token] == 0:
        raise ValueError(f"q gives token {token} probability 0: the draft cannot have proposed it")


def _check_residual(p: np.ndarray, q: np.ndarray) -> None:
    """Refuse p and q where p never exceeds q: there is no residual to renormalise (the message says so)."""
    if not np.any(p > q):
        raise ValueError("p never exceeds q: there is no residual (p and q are the same distribution)")
