"""Chapter 17: Online softmax and tiled (flash) attention — the course's own worksheet (Part III), and beyond.

One row of four scores [0, 1, 2, 1] in two tiles of two; two queries against four keys (d = 4) in tiles of two;
four causal positions whose first query tile skips the second key tile; the backward's D and dQ. Each worksheet
step is one test below, named as the claim it checks; the numbers come from
reference/chapter17_flash_attention.toml (audited by scripts/audit_chapter17_flash_attention.py). Beyond the
worksheet: chapter 4's attention, computed here in the open with NumPy from fixed small arrays, for tile sizes
that divide the length and that do not, causal and not (to 1e-12); the backward against central differences of
the learner's own forward; the memory a call holds at once, measured, not timed.
"""

import numpy as np
import pytest
from pytest_check import check

from kata import close, expect, numerical_gradient, raises_clearly, returned
from kata.judge.checks import show

CHAPTER = 17
RNG = np.random.default_rng(17)
EXACT = {"rtol": 1e-12, "atol": 1e-12}  # tiled attention is chapter 4's attention, rounded differently
NUM = {"rtol": 1e-5, "atol": 1e-8}  # central differences (CONTRIBUTING.md, "Tolerances")
NAN = ("a tile whose every score is masked giving nan: exp(−∞ − (−∞)) is nan; subtract 0 where the maximum is "
       "still −∞")
PER_TILE = "the tile normalised by its own sum (normalising per tile)"
UNRESCALED = "the accumulator not rescaled by exp(m_old − m_new)"
LAST_TILE = "the last, shorter tile left out (the number of tiles rounded down)"
DIAGONAL = ("the diagonal masked: a query sees its own key, only the keys after it are −∞ (a key b is hidden from "
            "query a when b > a, not b ≥ a)")


def state(result, what):
    """(m, ℓ, acc) of online_softmax_step, checked as arrays, flattened to [m…, ℓ…, acc…] as the worksheet shows."""
    if not isinstance(result, tuple) or len(result) != 3:
        pytest.fail(f"{what}: expected a tuple (m, ell, acc), got {type(result).__name__}", pytrace=False)
    parts = [returned(x, "array", f"{what}: {name}") for x, name in zip(result, ("m", "ell", "acc"), strict=True)]
    return np.concatenate([np.ravel(p) for p in parts])


def no_nan(ws, got):
    """Fail naming the masked-tile mistake when a state holds nan (a nan is no value the answer key can name)."""
    if np.isnan(got).any():
        pytest.fail("\n".join([f"{ws.id} {ws.title}", f"  expected  {ws.exact.tolist()}", f"  got       {got.tolist()}",
                               f"  looks like: {NAN}"]), pytrace=False)


def pair(result, what):
    """(O, lse) of the forward pass, checked as arrays."""
    if not isinstance(result, tuple) or len(result) != 2:
        pytest.fail(f"{what}: expected a tuple (O, lse), got {type(result).__name__}", pytrace=False)
    return returned(result[0], "array", f"{what}: O"), returned(result[1], "array", f"{what}: lse")


# -- the worksheet, step by step -------------------------------------------------------------------
@pytest.mark.step("17.1")
def test_after_the_first_tile_the_row_holds_its_maximum_1_and_an_unnormalised_sum(ch, ws):
    got = state(ch.online_softmax_step(*(ws.input(k) for k in ("m", "ell", "acc", "S", "V"))), "17.1")
    no_nan(ws, got)
    expect(ws, got)


@pytest.mark.step("17.2")
def test_a_larger_maximum_shrinks_the_old_sum_and_accumulator_by_exp_of_minus_1(ch, ws):
    got = state(ch.online_softmax_step(*(ws.input(k) for k in ("m", "ell", "acc", "S", "V"))), "17.2")
    no_nan(ws, got)
    expect(ws, got)


@pytest.mark.step("17.3")
def test_a_tile_with_every_score_masked_changes_nothing(ch, ws):
    try:
        first = ch.online_softmax_step(ws.input("m"), ws.input("ell"), ws.input("acc"), ws.input("S1"), ws.input("V1"))
    except RuntimeWarning as err:  # NumPy's "invalid value encountered", raised as an error in a learner's run
        pytest.fail("\n".join([f"{ws.id} {ws.title}", f"  the masked tile raised RuntimeWarning: {err}",
                               f"  looks like: {NAN}"]), pytrace=False)
    state(first, "17.3, after the masked tile")
    got = state(ch.online_softmax_step(*first, ws.input("S2"), ws.input("V2")), "17.3")
    no_nan(ws, got)
    expect(ws, got)


@pytest.mark.step("17.4")
def test_causal_attention_in_tiles_of_two_computes_three_of_the_four_tile_pairs(ch, ws):
    n_q, n_k, tile = ws.inputs["n_q"], ws.inputs["n_k"], ws.inputs["tile"]
    what = f"tile_pairs({n_q}, {n_k}, {tile}, causal=True)"
    got = returned(ch.tile_pairs(n_q, n_k, tile, causal=True), "array", what)
    off = {"the causal skip off by one tile: j ≤ i + 1, a tile above the diagonal computed": [[0, 0], [0, 1], [1, 0],
                                                                                             [1, 1]],
           "the causal skip off by one tile: j < i, the diagonal tile skipped": [[1, 0]],
           f"{LAST_TILE}: position 2 is a tile of its own": [[0, 0]]}
    for name, value in off.items():  # other shapes than the answer's: named here, not by the key
        if got.shape == np.shape(value) and np.array_equal(got, value):
            pytest.fail("\n".join([f"{ws.id} {ws.title}", f"  input     {what}",
                                   f"  expected  {show(ws.exact)}  (whole numbers)", f"  got       {show(got)}",
                                   f"  looks like: {name}"]), pytrace=False)
    expect(ws, got)


@pytest.mark.step("17.5")
def test_query_tile_0_against_key_tile_1_is_a_2_by_2_block_of_the_scores(ch, ws):
    expect(ws, ch.tile_scores(ws.input("Q"), ws.input("K"), 0, 1, 2), kind="array")


@pytest.mark.step("17.6")
def test_two_queries_in_two_tiles_give_chapter_4s_attention_output(ch, ws):
    out, _ = pair(ch.flash_attention_forward(ws.input("Q"), ws.input("K"), ws.input("V"), 2), "17.6")
    expect(ws, out)


@pytest.mark.step("17.7")
def test_the_log_sum_exp_is_m_plus_log_l(ch, ws):
    _, lse = pair(ch.flash_attention_forward(ws.input("Q"), ws.input("K"), ws.input("V"), 2), "17.7")
    expect(ws, lse)


def own_key_hidden(ch, ws, got: str) -> None:
    """Fail naming DIAGONAL when your tile_scores hides a query's own key in step 17.8's first diagonal tile.

    Asked only once the causal forward has failed its step: a probe, so a tile_scores that cannot answer
    (unfinished, or not what the forward uses) names nothing and the step reports as usual.
    """
    try:
        S = np.asarray(ch.tile_scores(ws.input("Q"), ws.input("K"), 0, 0, 2, causal=True), dtype=np.float64)
    except Exception:  # a probe only: the step's own check says what went wrong
        return
    if S.shape == (2, 2) and np.isneginf(np.diagonal(S)).any():
        pytest.fail("\n".join([f"{ws.id} {ws.title}", f"  expected  {show(ws.exact)}", f"  got       {got}",
                               f"  tile_scores(Q, K, 0, 0, 2, causal=True) = {show(S)}: query 0 sees no key at all",
                               f"  looks like: {DIAGONAL}"]), pytrace=False)


@pytest.mark.step("17.8")
def test_causal_the_first_query_tile_skips_the_second_key_tile(ch, ws):
    try:
        result, error = ch.flash_attention_forward(ws.input("Q"), ws.input("K"), ws.input("V"), 2, causal=True), None
    except (RuntimeWarning, ArithmeticError) as err:  # 0 / 0 in NumPy (a warning, an error here) or in Python
        result, error = None, err
    if error is not None:  # named outside the except block, so that the message stands alone
        own_key_hidden(ch, ws, f"{type(error).__name__}: {error}")
        raise error
    out, _ = pair(result, "17.8")
    if out.shape != ws.exact.shape or not np.allclose(out, ws.exact, rtol=1e-6, atol=1e-9):
        own_key_hidden(ch, ws, show(out))
    expect(ws, out)


@pytest.mark.step("17.9")
def test_d_is_the_row_sums_of_do_times_o(ch, ws):
    expect(ws, ch.softmax_delta(ws.input("dO"), ws.input("out")), kind="array")


@pytest.mark.step("17.10")
def test_the_backward_recomputes_each_tiles_weights_from_the_log_sum_exp(ch, ws):
    args = [ws.input(k) for k in ("dO", "Q", "K", "V", "out", "lse")]
    grads = ch.flash_attention_backward(*args, 2)
    if not isinstance(grads, tuple) or len(grads) != 3:
        pytest.fail(f"17.10: expected a tuple (dQ, dK, dV), got {type(grads).__name__}", pytrace=False)
    expect(ws, grads[0], kind="array")


# -- beyond the worksheet: chapter 4's attention, tile sizes that divide and that do not ---------------------
CASES = [(5, 7, 3, 2, 1), (5, 7, 3, 2, 2), (5, 7, 3, 2, 3), (6, 6, 4, 3, 4), (6, 6, 4, 3, 6), (6, 6, 4, 3, 9),
         (8, 8, 2, 5, 3), (1, 4, 2, 1, 2)]


def inputs(n_q, n_k, d, d_v):
    """Fixed small arrays: queries, keys and values of distinct entries, scores of several sizes."""
    rng = np.random.default_rng(100 * n_q + 10 * n_k + d)
    return rng.normal(size=(n_q, d)) * 1.5, rng.normal(size=(n_k, d)) * 1.5, rng.normal(size=(n_k, d_v))


@pytest.mark.parametrize("case", [(*c, causal) for c in CASES for causal in (False, True) if not causal or c[0] == c[1]],
                         ids=lambda c: "nq{}-nk{}-d{}-dv{}-tile{}-causal{}".format(*c))
def test_tiled_attention_equals_chapter_4s_attention_to_1e_12(ch, case):
    """O and lse equal softmax(Q Kᵀ/√d + mask) V and log Σ exp of each row, to 1e-12, for tiles that divide the length or not"""
    n_q, n_k, d, d_v, tile, causal = case
    Q, K, V = inputs(n_q, n_k, d, d_v)
    S = Q @ K.T / np.sqrt(d)
    if causal:
        S = np.where(np.tril(np.ones((n_q, n_k), dtype=bool)), S, -np.inf)
    top = S.max(axis=1, keepdims=True)
    W = np.exp(S - top)
    want_O, want_lse = W @ V / W.sum(axis=1, keepdims=True), top[:, 0] + np.log(W.sum(axis=1))
    short = n_k - n_k % tile if n_k % tile and n_k > tile else n_k  # the keys of the whole tiles only
    Ws = W[:, :short]
    mistakes = [(LAST_TILE, Ws @ V[:short] / np.maximum(Ws.sum(axis=1, keepdims=True), 1e-300))] if short < n_k else []
    what = f"flash_attention_forward, Q {Q.shape}, K {K.shape}, V {V.shape}, tile {tile}, causal={causal}"
    out, lse = pair(ch.flash_attention_forward(Q, K, V, tile, causal=causal), what)
    close(out, want_O, f"{what}: O", mistakes=mistakes, **EXACT)
    close(lse, want_lse, f"{what}: lse", mistakes=[("the log-sum-exp as log ℓ without m", want_lse - top[:, 0])],
          **EXACT)


@pytest.mark.parametrize("case", [(3, 5, 2), (4, 4, 1), (7, 7, 3), (6, 3, 4)])
def test_tile_pairs_count_every_tile_rounding_up(ch, case):
    """tile_pairs lists ⌈n_q/tile⌉ × ⌈n_k/tile⌉ pairs in order (causal: those with j ≤ i), the last tile shorter"""
    n_q, n_k, tile = case
    n_i, n_j = -(-n_q // tile), -(-n_k // tile)
    want = np.array([(i, j) for i in range(n_i) for j in range(n_j)]).reshape(-1, 2)
    close(ch.tile_pairs(n_q, n_k, tile), want, f"tile_pairs({n_q}, {n_k}, {tile})", kind="array",
          mistakes=[(LAST_TILE, np.array([(i, j) for i in range(n_q // tile) for j in range(n_k // tile)]))])
    if n_q == n_k:
        close(ch.tile_pairs(n_q, n_k, tile, causal=True), want[want[:, 1] <= want[:, 0]],
              f"tile_pairs({n_q}, {n_k}, {tile}, causal=True)", kind="array",
              mistakes=[("the causal skip off by one tile", want[want[:, 1] <= want[:, 0] + 1]),
                        ("the causal skip off by one tile (the diagonal skipped)", want[want[:, 1] < want[:, 0]])])


@pytest.mark.parametrize("causal", [False, True])
def test_tile_scores_are_blocks_of_the_scaled_scores(ch, causal):
    """tile_scores(Q, K, i, j, 3) is rows 3i… and columns 3j… of Q Kᵀ/√d (−∞ above the diagonal when causal), 7 positions"""
    Q, K, _ = inputs(7, 7, 3, 1)
    S = Q @ K.T / np.sqrt(3)
    full = np.where(np.tril(np.ones((7, 7), dtype=bool)), S, -np.inf) if causal else S
    for i, j in [(0, 0), (1, 0), (2, 1), (2, 2), (1, 1)]:
        got = returned(ch.tile_scores(Q, K, i, j, 3, causal=causal), "array", f"tile_scores(Q, K, {i}, {j}, 3)")
        want = full[3 * i:3 * i + 3, 3 * j:3 * j + 3]
        with check:
            assert got.shape == want.shape, f"tile_scores(Q, K, {i}, {j}, 3) of 7 positions: shape {got.shape}, " \
                                            f"expected {want.shape} (the last tile holds one position)"
        if got.shape == want.shape:
            finite = np.isfinite(want)
            with check:
                assert np.array_equal(np.isneginf(got), ~finite), \
                    f"tile_scores(Q, K, {i}, {j}, 3, causal={causal}): −∞ exactly where a key comes after its " \
                    f"query, got {got.tolist()}" + ("\n  looks like: the diagonal tile not masked" if causal else "")
            close(got[finite], want[finite], f"tile_scores(Q, K, {i}, {j}, 3, causal={causal}), the finite scores")


def test_one_step_over_a_whole_row_equals_steps_over_its_tiles(ch):
    """online_softmax_step over 3 rows of 5 scores at once equals the same rows taken 2 + 2 + 1 scores at a time"""
    S, V = RNG.normal(size=(3, 5)) * 3, RNG.normal(size=(5, 2))
    empty = (np.full(3, -np.inf), np.zeros(3), np.zeros((3, 2)))
    top = S.max(axis=1)
    P = np.exp(S - top[:, None])
    close(state(ch.online_softmax_step(*empty, S, V), "one step"), np.concatenate([top, P.sum(axis=1), (P @ V).ravel()]),
          "online_softmax_step of 3 rows of 5 scores from the empty state", **EXACT)
    now = empty
    for c in (slice(0, 2), slice(2, 4), slice(4, 5)):
        now = ch.online_softmax_step(*now, S[:, c], V[c])
    close(state(now, "three steps"), np.concatenate([top, P.sum(axis=1), (P @ V).ravel()]),
          "online_softmax_step over the tiles of 2, 2 and 1 scores", **EXACT)


@pytest.mark.parametrize("case", [(4, 5, 3, 2, 2, False), (5, 5, 2, 3, 2, True), (6, 6, 3, 2, 4, True)])
def test_the_backward_matches_central_differences_of_the_forward(ch, case):
    """dQ, dK, dV of sum(dO ∘ O) against central differences of the learner's own flash_attention_forward"""
    n_q, n_k, d, d_v, tile, causal = case
    Q, K, V = inputs(n_q, n_k, d, d_v)
    dO = RNG.normal(size=(n_q, d_v))
    out, lse = pair(ch.flash_attention_forward(Q, K, V, tile, causal=causal), "flash_attention_forward")
    grads = ch.flash_attention_backward(dO, Q, K, V, out, lse, tile, causal=causal)
    if not isinstance(grads, tuple) or len(grads) != 3:
        pytest.fail(f"flash_attention_backward: expected a tuple (dQ, dK, dV), got {type(grads).__name__}",
                    pytrace=False)
    forward = ch.flash_attention_forward
    numerical = [numerical_gradient(lambda x: float(np.sum(dO * forward(x, K, V, tile, causal=causal)[0])), Q),
                 numerical_gradient(lambda x: float(np.sum(dO * forward(Q, x, V, tile, causal=causal)[0])), K),
                 numerical_gradient(lambda x: float(np.sum(dO * forward(Q, K, x, tile, causal=causal)[0])), V)]
    for name, got, want in zip(("dQ", "dK", "dV"), grads, numerical, strict=True):
        close(got, want, f"flash_attention_backward's {name}, Q {Q.shape}, K {K.shape}, tile {tile}, causal={causal}, "
              "vs central differences", kind="array", **NUM,
              mistakes=[("dQ and dK without their 1/√d", want * np.sqrt(d))] if name != "dV" else [])


def test_a_tile_size_of_its_own_in_the_backward(ch):
    """the backward with tile 3 gives the gradients of the backward with tile 2: any tile, the same sums"""
    Q, K, V = inputs(5, 5, 2, 2)
    dO = RNG.normal(size=(5, 2))
    out, lse = pair(ch.flash_attention_forward(Q, K, V, 2, causal=True), "flash_attention_forward")
    two = ch.flash_attention_backward(dO, Q, K, V, out, lse, 2, causal=True)
    three = ch.flash_attention_backward(dO, Q, K, V, out, lse, 3, causal=True)
    for name, a, b in zip(("dQ", "dK", "dV"), three, two, strict=True):
        close(a, b, f"flash_attention_backward's {name} with tile 3 against tile 2", kind="array", rtol=1e-10,
              atol=1e-12)


# -- beyond the worksheet: memory, measured (never time) -------------------------------------------------------
@pytest.mark.parametrize("causal", [False, True])
def test_the_memory_held_at_once_grows_as_seq_times_tile_not_seq_squared(ch, causal):
    """at 256 positions, tile 16: forward and backward never hold 128 KiB at once (tracemalloc), a quarter of one seq × seq float64 array"""
    n, tile = 256, 16
    Q, K, V = (np.cos(np.arange(n * 2).reshape(n, 2) * (k + 1) * 0.37) for k in range(3))
    limit = n * n * 8 // 4
    result, peak = ch.flash_attention_forward.traced(Q, K, V, tile, causal=causal)
    with check:
        assert peak is not None and peak < limit, (
            f"flash_attention_forward of {n} positions, tile {tile}, causal={causal}, held {peak} bytes at once "
            f"(limit {limit:,}: a quarter of one {n} × {n} float64 array)\n  looks like: a seq × seq array "
            "(all the scores, their weights or a mask) was built: keep one tile of scores at a time")
    out, lse = pair(result, "flash_attention_forward")
    dO = np.sin(np.arange(n * 2).reshape(n, 2))
    _, peak = ch.flash_attention_backward.traced(dO, Q, K, V, out, lse, tile, causal=causal)
    with check:
        assert peak is not None and peak < limit, (
            f"flash_attention_backward of {n} positions, tile {tile}, causal={causal}, held {peak} bytes at once "
            f"(limit {limit:,})\n  looks like: a seq × seq array (all the weights P or dS) was built: recompute "
            "one tile's weights at a time")


def test_nothing_modifies_its_inputs(ch):
    """online_softmax_step, tile_scores, the forward, softmax_delta and the backward leave their inputs untouched"""
    Q, K, V = inputs(5, 5, 3, 2)
    m, ell, acc, S = np.array([0.5, -3.0]), np.array([1.0, 0.0]), np.ones((2, 2)), RNG.normal(size=(2, 5))
    dO = RNG.normal(size=(5, 2))
    # the judge fails a call that changes one of its arguments in place (ChangedItsInput)
    ch.online_softmax_step(m, ell, acc, S, V)
    ch.tile_scores(Q, K, 1, 1, 2, causal=True)
    out, lse = ch.flash_attention_forward(Q, K, V, 2, causal=True)
    ch.softmax_delta(dO, out)
    ch.flash_attention_backward(dO, Q, K, V, out, lse, 2, causal=True)


# -- bad input gets a clear error (the checks marked given are the stubs': CONTRIBUTING.md) -----------------
@pytest.mark.given
def test_a_tile_below_1_is_refused(ch):
    """tile 0 or −2 raises ValueError naming tile and saying "at least 1": a tile holds at least one position"""
    raises_clearly(lambda: ch.tile_pairs(4, 4, 0), ValueError, "at least 1", names=("tile",))
    raises_clearly(lambda: ch.tile_pairs(4, 4, -2, causal=True), ValueError, "at least 1", names=("tile",))


def test_the_forward_refuses_a_tile_below_1(ch):
    """flash_attention_forward with tile 0 raises ValueError naming tile"""
    Q = np.ones((3, 2))
    raises_clearly(lambda: ch.flash_attention_forward(Q, Q, Q, 0), ValueError, names=("tile",),
                   hint="the forward takes its pairs from tile_pairs, which refuses the tile")


@pytest.mark.given
def test_lengths_tiles_and_causal_that_do_not_fit_are_refused(ch):
    """n_q, n_k, tile must be whole numbers (n ≥ 1), causal a bool, and causal needs n_q = n_k: ValueError naming which"""
    raises_clearly(lambda: ch.tile_pairs(0, 4, 2), ValueError, names=("n_q",))
    raises_clearly(lambda: ch.tile_pairs(4, 2.0, 2), ValueError, names=("n_k",))
    raises_clearly(lambda: ch.tile_pairs(4, 4, 2.0), ValueError, names=("tile",))
    raises_clearly(lambda: ch.tile_pairs(4, 4, True), ValueError, names=("tile",))
    raises_clearly(lambda: ch.tile_pairs(4, 4, 2, causal=1), ValueError, names=("causal",))
    raises_clearly(lambda: ch.tile_pairs(3, 4, 2, causal=True), ValueError, "causal", "n_q = 3", "n_k = 4")


@pytest.mark.given
def test_shapes_that_do_not_fit_are_refused(ch):
    """mismatched Q, K, V, a state that does not fit its tile, dO unlike O, a tile out of range: ValueError naming the shapes"""
    raises_clearly(lambda: ch.flash_attention_forward(np.ones((3, 2)), np.ones((4, 3)), np.ones((4, 2)), 2),
                   ValueError, "(3, 2)", "(4, 3)")
    raises_clearly(lambda: ch.flash_attention_forward(np.ones((3, 2)), np.ones((4, 2)), np.ones((5, 2)), 2),
                   ValueError, "(5, 2)")
    raises_clearly(lambda: ch.flash_attention_forward(np.ones((3, 2)), np.ones((4, 2)), np.ones((4, 2)), 2,
                                                      causal=True), ValueError, "causal")
    raises_clearly(lambda: ch.online_softmax_step(np.zeros(2), np.zeros(2), np.zeros((2, 3)), np.zeros((2, 4)),
                                                  np.zeros((3, 3))), ValueError, "(3, 3)")
    raises_clearly(lambda: ch.online_softmax_step(np.zeros(2), np.zeros(2), np.zeros((2, 3)), np.zeros((2, 0)),
                                                  np.zeros((0, 3))), ValueError, "(2, 0)")
    raises_clearly(lambda: ch.softmax_delta(np.ones((2, 3)), np.ones((3, 2))), ValueError, "(2, 3)", "(3, 2)")
    raises_clearly(lambda: ch.tile_scores(np.ones((4, 2)), np.ones((4, 2)), 2, 0, 2), ValueError, names=("i",))
    raises_clearly(lambda: ch.tile_scores(np.ones((4, 2)), np.ones((4, 2)), 0, -1, 2), ValueError, names=("j",))
    Q = np.ones((3, 2))
    raises_clearly(lambda: ch.flash_attention_backward(np.ones((3, 2)), Q, Q, Q, np.ones((3, 2)), np.ones(2), 2),
                   ValueError, "(2,)")


@pytest.mark.given
def test_every_misfit_of_the_state_and_the_tile_is_refused(ch):
    """each shape of online_softmax_step's state and tile that does not fit, on its own, raises ValueError naming it"""
    m, acc, S, V = np.zeros(2), np.zeros((2, 3)), np.zeros((2, 4)), np.zeros((4, 3))
    for args, shape in [((np.zeros((2, 1)), np.zeros((2, 1)), acc, S, V), "(2, 1)"),  # m and ell 2-D alike
                        ((m, np.zeros(3), acc, S, V), "(3,)"),  # ell of another length
                        ((m, m, np.zeros(2), S, V), "(2,)"),  # acc 1-D
                        ((m, m, acc, np.zeros(2), V), "(2,)"),  # S 1-D
                        ((m, m, np.zeros((3, 3)), S, V), "(3, 3)"),  # acc of other rows
                        ((m, m, acc, np.zeros((3, 4)), V), "(3, 4)")]:  # S of other rows
        raises_clearly(lambda args=args: ch.online_softmax_step(*args), ValueError, shape)


@pytest.mark.given
def test_every_misfit_of_queries_keys_values_and_tiles_is_refused(ch):
    """Q, K or V not 2-D, Q and K of other widths, a tile index past the end, i, j, tile not whole: ValueError naming it"""
    Q = np.ones((4, 2))
    raises_clearly(lambda: ch.flash_attention_forward(np.ones(2), Q, Q, 2), ValueError, "(2,)")
    raises_clearly(lambda: ch.flash_attention_forward(Q, np.ones(4), Q, 2), ValueError, "(4,)")
    raises_clearly(lambda: ch.flash_attention_forward(Q, Q, np.ones(4), 2), ValueError, "(4,)")
    raises_clearly(lambda: ch.tile_scores(np.ones(2), Q, 0, 0, 2), ValueError, "(2,)")
    raises_clearly(lambda: ch.tile_scores(Q, np.ones(4), 0, 0, 2), ValueError, "(4,)")
    raises_clearly(lambda: ch.tile_scores(Q, np.ones((4, 3)), 0, 0, 2), ValueError, "(4, 2)", "(4, 3)")
    raises_clearly(lambda: ch.tile_scores(Q, Q, 0, 2, 2), ValueError, names=("j",))
    raises_clearly(lambda: ch.tile_scores(Q, Q, 1.0, 0, 2), ValueError, names=("i",))
    raises_clearly(lambda: ch.tile_scores(Q, Q, 0, True, 2), ValueError, names=("j",))
    raises_clearly(lambda: ch.tile_scores(Q, Q, 0, 0, 2.0), ValueError, names=("tile",))


@pytest.mark.given
def test_integer_arrays_are_taken_as_numbers(ch):
    """whole-number Q, K, V and dO give the forward and backward of the same arrays as float64"""
    Q, K, V = np.array([[2, 0], [0, 2], [1, 1]]), np.array([[0, 1], [1, 0], [2, 0]]), np.array([[1, 0], [0, 1], [2, 2]])
    dO = np.array([[1, 0], [1, 1], [0, 2]])
    out, lse = pair(ch.flash_attention_forward(Q, K, V, 2, causal=True), "flash_attention_forward, integer arrays")
    want = pair(ch.flash_attention_forward(*(x.astype(float) for x in (Q, K, V)), 2, causal=True), "float64 arrays")
    close(out, want[0], "flash_attention_forward's O of integer arrays against the same as float64")
    grads = ch.flash_attention_backward(dO, Q, K, V, out, lse, 2, causal=True)
    floats = ch.flash_attention_backward(dO.astype(float), *(x.astype(float) for x in (Q, K, V)), out, lse, 2,
                                         causal=True)
    for name, a, b in zip(("dQ", "dK", "dV"), grads, floats, strict=True):
        close(a, b, f"flash_attention_backward's {name} of integer arrays against the same as float64", kind="array")
