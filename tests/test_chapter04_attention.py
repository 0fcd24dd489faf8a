"""Chapter 4: Attention Intuition — the book's Example 1 worksheet, steps 3–5, and beyond.

Input "A B" with W_Q = W_K = W_V = 0.1·I, so Q = K = V = [[0.1, 0], [0, 0.1]]. Each worksheet step
is one test below, named as the claim it checks; the numbers come from reference/chapter04_attention.toml.
"""

import numpy as np
import pytest
from pytest_check import check

from kata import close, expect, raises_clearly, returned, snapshot

CHAPTER = 4
RNG = np.random.default_rng(4)
SNAP = snapshot(CHAPTER)  # tests/snapshots/chapter04.npz: inputs, the reference's results, classic mistakes


# The worksheet's Q = K = 0.1·I is symmetric, so Q @ K equals Q @ Kᵀ there. These worksheet-sized (2×2)
# queries and keys have distinct values: Q @ K is computable and different, so the mistake shows.
Q_ASYM, K_ASYM, V_ASYM = SNAP["asym/Q"], SNAP["asym/K"], SNAP["asym/V"]
NOT_TRANSPOSED = "K not transposed (Q K instead of Q Kᵀ)"
SCORES_TRANSPOSED = ("the scores transposed, K Qᵀ = (Q Kᵀ)ᵀ: the keys as rows and the queries as columns, where "
                     "row i should be query i's scores")
NO_DIAGONAL = "the diagonal masked: a position that cannot see itself (which triangle, and is its diagonal in it?)"
SUM_NOT_KEPT = ("the row sums not kept as a column (no keepdims): they broadcast along the row, so each entry is "
                "divided by another row's sum")


# -- the worksheet, step by step -------------------------------------------------------------------
@pytest.mark.step("4.1")
def test_raw_score_of_b_is_zero_against_a_and_a_hundredth_against_itself(ch, ws):
    S = returned(ch.raw_scores(ws.input("Q"), ws.input("K")), "array", "raw_scores(Q, K)")
    expect(ws, S[1])
    close(ch.raw_scores(Q_ASYM, K_ASYM), Q_ASYM @ K_ASYM.T,
          "4.1 raw_scores on a 2×2 Q and K with distinct entries (the worksheet's 0.1·I hides a missing transpose)",
          inputs={"Q": Q_ASYM, "K": K_ASYM}, mistakes=[(NOT_TRANSPOSED, Q_ASYM @ K_ASYM),
                                                     (SCORES_TRANSPOSED, K_ASYM @ Q_ASYM.T),
                                                     ("Kᵀ Q instead of Q Kᵀ: a (d_k, d_k) product of the features, "
                                                      "not a score for each query and key", K_ASYM.T @ Q_ASYM)],
          kind="array")


@pytest.mark.step("4.2")
def test_scaling_by_root_two_turns_the_hundredth_into_0_00707(ch, ws):
    S = returned(ch.attention_scores(ws.input("Q"), ws.input("K")), "array", "attention_scores(Q, K)")
    expect(ws, S[1])
    close(ch.attention_scores(Q_ASYM, K_ASYM), Q_ASYM @ K_ASYM.T / np.sqrt(2),
          "4.2 attention_scores on a 2×2 Q and K with distinct entries", inputs={"Q": Q_ASYM, "K": K_ASYM},
          mistakes=[(NOT_TRANSPOSED, Q_ASYM @ K_ASYM / np.sqrt(2)), ("no 1/√d_k scaling", Q_ASYM @ K_ASYM.T)],
          kind="array")


@pytest.mark.step("4.3")
def test_softmax_gives_b_slightly_more_weight_than_a(ch, ws):
    expect(ws, ch.softmax(ws.input("scores")), kind="array")
    scores = SNAP["asym/scores"]  # two rows whose exponentials sum differently: a row of the worksheet cannot show
    close(ch.softmax(scores), SNAP["asym/softmax"],
          "4.3 softmax of the 2×2 scaled scores of Q and K with distinct entries, row by row",
          inputs={"scores": scores}, kind="array",
          mistakes=[(SUM_NOT_KEPT, SNAP["asym/softmax_sum_not_kept"]),
                    ("the row maxima and the row sums not kept as columns (no keepdims): both broadcast along the "
                     "row, mixing the rows", SNAP["asym/softmax_nothing_kept"]),
                    ("softmax over the wrong axis (columns)", SNAP["asym/softmax_columns"]),
                    ("softmax's sum taken over the wrong axis (down each column)", SNAP["asym/softmax_sum_wrong_axis"])])


@pytest.mark.step("4.4")
def test_context_of_b_mixes_both_values_almost_equally(ch, ws):
    output, weights = ch.scaled_dot_product_attention(ws.input("Q"), ws.input("K"), ws.input("V"))
    returned(weights, "array", "the weights scaled_dot_product_attention returns")
    expect(ws, returned(output, "array", "the output scaled_dot_product_attention returns")[1])
    got, _ = ch.scaled_dot_product_attention(Q_ASYM, K_ASYM, V_ASYM)
    close(got, SNAP["asym/output"], "4.4 attention on a 2×2 Q, K and V with distinct entries",
          inputs={"Q": Q_ASYM, "K": K_ASYM, "V": V_ASYM},
          mistakes=[(NOT_TRANSPOSED, SNAP["asym/k_not_transposed"]),
                    ("softmax over the wrong axis (columns)", SNAP["asym/columns"]),
                    ("softmax's sum taken over the wrong axis (down each column)", SNAP["asym/sum_wrong_axis"]),
                    ("weights transposed (Wᵀ V)", SNAP["asym/weights_transposed"])], kind="array")


@pytest.mark.step("4.5")
def test_causal_mask_lets_each_position_see_itself_and_the_past(ch, ws):
    expect(ws, ch.causal_mask(ws.input("n")), kind="array")


@pytest.mark.step("4.6")
def test_with_the_causal_mask_a_sees_only_itself(ch, ws):
    Q, K, V = ws.input("Q"), ws.input("K"), ws.input("V")
    output, _ = ch.scaled_dot_product_attention(Q, K, V, mask=ws.input("mask"))
    expect(ws, output, kind="array")


# -- beyond the worksheet: other shapes, other values, expected values from the stored snapshot ----------
@pytest.mark.parametrize("case", range(SNAP.count("softmax")))
def test_softmax_matches_the_formula_on_other_shapes(ch, case):
    """softmax matches exp / sum on shapes (3, 5), (6, 4) and (1, 7), row by row"""
    x = SNAP[f"softmax/{case}/x"]
    got = ch.softmax(x)
    close(got, SNAP[f"softmax/{case}/out"], f"softmax of a {x.shape} array, along the last axis", inputs={"x": x},
          kind="array", mistakes=[("softmax over the wrong axis (columns instead of rows)", SNAP[f"softmax/{case}/columns"]),
                                  ("softmax over every entry at once", SNAP[f"softmax/{case}/every_entry"])])


def test_softmax_respects_the_axis_argument(ch):
    """softmax(x, axis=0) normalises columns"""
    x = SNAP["softmax_axis0/x"]
    close(ch.softmax(x, axis=0), SNAP["softmax_axis0/out"], "softmax(x, axis=0) of a (4, 3) array",
          mistakes=[("the axis argument was ignored", SNAP["softmax_axis0/last_axis"])])


def test_softmax_is_stable_for_large_scores(ch):
    """softmax([1000, 1001]) is finite and right (subtract the max first)"""
    try:
        got = ch.softmax(np.array([1000.0, 1001.0]))
    except RuntimeWarning as warning:  # NumPy's overflow warning, raised as an error in this suite
        pytest.fail(f"softmax([1000, 1001]) made NumPy warn: {warning}\n"
                    "  looks like: exp overflowed: subtract the max before exponentiating (appendix C, mistake 2)",
                    pytrace=False)
    close(got, [1 / (1 + np.e), np.e / (1 + np.e)], "softmax([1000, 1001])")
    got = ch.softmax(np.array([-1000.0, -1001.0]))
    close(got, [np.e / (1 + np.e), 1 / (1 + np.e)], "softmax([-1000, -1001]) (underflow)")
    rows = np.array([[0.0, 1.0], [1000.0, 1001.0]])  # one max for both rows would underflow row 0 to 0 / 0
    try:
        got = ch.softmax(rows)
    except RuntimeWarning as warning:
        pytest.fail(f"softmax([[0, 1], [1000, 1001]]) made NumPy warn: {warning}\n"
                    "  looks like: one max for the whole array: subtract each slice's own max along axis",
                    pytrace=False)
    close(got, [[1 / (1 + np.e), np.e / (1 + np.e)]] * 2, "softmax([[0, 1], [1000, 1001]]), row by row")


def test_softmax_does_not_modify_its_input(ch):
    """softmax leaves its input untouched"""
    x = RNG.normal(size=(3, 4))
    before = x.copy()
    ch.softmax(x)
    close(x, before, "the input array after softmax(x)")


def test_softmax_of_masked_entries_is_zero(ch):
    """softmax gives -inf entries probability 0"""
    got = ch.softmax(np.array([0.5, -np.inf, 1.5]))
    close(got, [1 / (1 + np.e), 0.0, np.e / (1 + np.e)], "softmax([0.5, -inf, 1.5])")


@pytest.mark.parametrize(("n_q", "n_k", "d_k"), [(3, 5, 4), (6, 6, 3), (2, 7, 8), (4, 4, 4)])
def test_scores_match_a_loop_over_query_key_pairs(ch, n_q, n_k, d_k):
    """raw and scaled scores match a loop over every query–key pair, non-square too"""
    Q, K = RNG.normal(size=(n_q, d_k)), RNG.normal(size=(n_k, d_k))
    loop = np.array([[sum(Q[i, d] * K[j, d] for d in range(d_k)) for j in range(n_k)] for i in range(n_q)])
    raw = ch.raw_scores(Q, K)
    scaled = ch.attention_scores(Q, K)
    close(raw, loop, f"raw_scores for Q {Q.shape}, K {K.shape}", kind="array",
          mistakes=[(NOT_TRANSPOSED, Q @ K)] if n_k == d_k else [])
    close(scaled, loop / np.sqrt(d_k), f"attention_scores for Q {Q.shape}, K {K.shape}", kind="array",
          mistakes=[("no 1/√d_k scaling (appendix C, mistake 1)", loop), ("divided by d_k, not √d_k", loop / d_k),
                    ("scaled by the number of keys instead of d_k", loop / np.sqrt(n_k))])


@pytest.mark.parametrize("n", [1, 3, 6])
def test_causal_mask_is_the_lower_triangle(ch, n):
    """causal_mask(n) is True exactly where j <= i"""
    want = np.array([[j <= i for j in range(n)] for i in range(n)])
    got = returned(ch.causal_mask(n), "array", f"causal_mask({n})")
    with check:
        assert got.dtype == bool, f"causal_mask should return booleans (dtype bool), got dtype {got.dtype}"
    close(got, want, f"causal_mask({n})", mistakes=[("the upper triangle: looking ahead", want.T),
                                                   (NO_DIAGONAL, want & ~np.eye(n, dtype=bool))])


@pytest.mark.parametrize("case", range(SNAP.count("attention")))
def test_attention_matches_a_numpy_one_liner(ch, case):
    """attention output and weights match softmax(QKᵀ/√d_k)V on (n_q, n_k, d_k, d_v) = (3, 3, 4, 5), (5, 5, 2, 3), (2, 6, 3, 1), (3, 3, 3, 5)"""
    k = f"attention/{case}"
    Q, K, V = SNAP[f"{k}/Q"], SNAP[f"{k}/K"], SNAP[f"{k}/V"]
    output, weights = ch.scaled_dot_product_attention(Q, K, V)
    shapes = f"Q {Q.shape}, K {K.shape}, V {V.shape}"
    close(weights, SNAP[f"{k}/weights"], f"attention weights, {shapes}", kind="array",
          mistakes=[("no 1/√d_k scaling", SNAP[f"{k}/no_scaling"]), ("softmax over the wrong axis", SNAP[f"{k}/columns"])])
    mistakes = [("no 1/√d_k scaling", SNAP[f"{k}/no_scaling_output"])]
    if f"{k}/k_not_transposed_output" in SNAP.data:
        mistakes.append((NOT_TRANSPOSED, SNAP[f"{k}/k_not_transposed_output"]))
    close(output, SNAP[f"{k}/output"], f"attention output, {shapes}", kind="array", mistakes=mistakes)


@pytest.mark.parametrize("case", range(SNAP.count("masked")))
def test_masked_attention_never_looks_ahead(ch, case):
    """causal attention matches softmax(masked QKᵀ/√d_k)V on 3 and 5 positions: zero weight above the diagonal"""
    k = f"masked/{case}"
    Q, K, V, mask = SNAP[f"{k}/Q"], SNAP[f"{k}/K"], SNAP[f"{k}/V"], SNAP[f"{k}/mask"]
    n = len(Q)
    output, weights = ch.scaled_dot_product_attention(Q, K, V, mask=mask)
    close(weights, SNAP[f"{k}/weights"], f"causal attention weights, {n} positions",
          mistakes=[("the mask was ignored", SNAP[f"{k}/mask_ignored"])])
    with check:
        assert np.all(np.asarray(weights)[~mask] == 0), f"weights above the diagonal must be exactly 0 ({n} positions)"
    close(output, SNAP[f"{k}/output"], f"causal attention output, {n} positions")


def test_attention_does_not_modify_its_inputs(ch):
    """attention leaves Q, K, V and the mask untouched"""
    Q, K, V = RNG.normal(size=(3, 2)), RNG.normal(size=(3, 2)), RNG.normal(size=(3, 2))
    mask = np.tril(np.ones((3, 3), dtype=bool))
    # the judge fails a call that changes one of its arguments in place (ChangedItsInput)
    ch.scaled_dot_product_attention(Q, K, V, mask=mask)


# -- bad input gets a clear error (the checks marked given are the stubs': CONTRIBUTING.md) -----------------
@pytest.mark.given
def test_scores_of_mismatched_widths_name_both_shapes(ch):
    """Q (2, 3) against K (2, 2) raises ValueError naming both shapes"""
    raises_clearly(lambda: ch.raw_scores(np.ones((2, 3)), np.ones((2, 2))), ValueError, "(2, 3)", "(2, 2)")
    raises_clearly(lambda: ch.attention_scores(np.ones((2, 3)), np.ones((2, 2))), ValueError, "(2, 3)", "(2, 2)")


@pytest.mark.given
def test_values_with_the_wrong_number_of_rows_are_refused(ch):
    """V with a different number of rows than K raises ValueError naming V's shape"""
    raises_clearly(lambda: ch.scaled_dot_product_attention(np.ones((2, 2)), np.ones((2, 2)), np.ones((3, 2))),
                   ValueError, "(3, 2)")


@pytest.mark.given
def test_a_mask_of_the_wrong_shape_is_refused(ch):
    """a (3, 3) mask for (2, 2) scores raises ValueError naming both shapes"""
    raises_clearly(lambda: ch.scaled_dot_product_attention(np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2)),
                                                           mask=np.ones((3, 3), dtype=bool)),
                   ValueError, "(3, 3)", "(2, 2)")


@pytest.mark.given
def test_causal_mask_refuses_zero_positions(ch):
    """causal_mask(0) raises ValueError"""
    raises_clearly(lambda: ch.causal_mask(0), ValueError, "0")


@pytest.mark.given
@pytest.mark.parametrize("n", [2.5, 2.0, True, -1])
def test_causal_mask_refuses_what_is_not_a_positive_whole_number(ch, n):
    """causal_mask(2.5), causal_mask(2.0), causal_mask(True) and causal_mask(−1) raise ValueError naming n"""
    raises_clearly(lambda: ch.causal_mask(n), ValueError, str(n),
                   hint="refuse n unless it is a whole number ≥ 1: a bool is not one, and neither is a float "
                   "(check isinstance(n, bool) or not isinstance(n, int) or n < 1, with or between them)")


@pytest.mark.given
def test_scores_of_a_query_or_key_that_is_not_a_matrix_are_refused(ch):
    """a 1-D or 3-D Q or K raises ValueError naming its shape, even when the other one is a matrix"""
    why = "check that Q and K are each 2-D: Q.ndim != 2 or K.ndim != 2 (either one being wrong is enough)"
    raises_clearly(lambda: ch.raw_scores(np.ones(3), np.ones((2, 3))), ValueError, "(3,)", hint=why)
    raises_clearly(lambda: ch.raw_scores(np.ones((2, 3)), np.ones(3)), ValueError, "(3,)", hint=why)
    raises_clearly(lambda: ch.raw_scores(np.ones((2, 3, 3)), np.ones((4, 3))), ValueError, "(2, 3, 3)", hint=why)
    raises_clearly(lambda: ch.attention_scores(np.ones((4, 3)), np.ones((2, 3, 3))), ValueError, "(2, 3, 3)",
                   hint=why)


@pytest.mark.given
def test_softmax_of_nothing_is_refused(ch):
    """softmax of an empty array raises ValueError"""
    raises_clearly(lambda: ch.softmax(np.array([])), ValueError, "softmax")


@pytest.mark.given
def test_softmax_of_a_row_that_is_all_minus_infinity_is_refused(ch):
    """softmax of a row that is all -inf (every position masked) raises ValueError saying -inf"""
    raises_clearly(lambda: ch.softmax(np.array([[0.0, 1.0], [-np.inf, -np.inf]])), ValueError, "-inf")


@pytest.mark.given
def test_a_mask_row_that_allows_nothing_is_refused(ch):
    """a mask row with no True entry raises ValueError saying "mask" and naming the row"""
    mask = np.array([[True, False], [False, False]])
    why = ("check every row of the mask before the softmax (mask.any(axis=-1) for each query), not the mask "
           "as a whole: the softmax's own error about -inf does not say which query sees nothing")
    raises_clearly(lambda: ch.scaled_dot_product_attention(np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2)),
                                                           mask=mask), ValueError, "mask", "row 1", hint=why)
    # 2 queries, 3 keys: row 0 sees nothing; columns 1 and 2 are seen by nobody (that is allowed)
    mask = np.array([[False, False, False], [True, False, False]])
    raises_clearly(lambda: ch.scaled_dot_product_attention(np.ones((2, 2)), np.ones((3, 2)), np.ones((3, 2)),
                                                           mask=mask), ValueError, "mask", "row 0", hint=why)
