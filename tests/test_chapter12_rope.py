"""Chapter 12: Rotary Position Embeddings — this course's worksheet, and beyond.

d = 4: step 12.1 the default base 10000 (θ = [1, 0.01] radians per position for the pairs (x0, x1) and
(x2, x3)), every later step base 100 (θ = [1, 0.1]); steps 12.2, 12.4 and 12.7 start at position 2, so a base
or a start ignored fails a step. Each worksheet step is one test below, named as the claim it checks; the numbers come from
reference/chapter12_rope.toml (audited by scripts/audit_chapter12_rope.py). Beyond the worksheet: other widths,
heads, starting positions and bases against the stored snapshot, the gradient against central differences,
and the property RoPE exists for — a score depends on m − n only — on random inputs.
"""

import numpy as np
import pytest
from pytest_check import check

from kata import close, expect, raises_clearly, returned, snapshot

CHAPTER = 12
RNG = np.random.default_rng(12)
SNAP = snapshot(CHAPTER)  # tests/snapshots/chapter12.npz: inputs, the reference's results, classic mistakes

HALVES = "the halves pairing convention (x_i with x_{i+d/2}) instead of adjacent pairs"
SIGN = "the angle's sign flipped (turned clockwise)"
FROM_ONE = "positions counted from 1"
EXPONENT = "the frequency exponent without its factor 2: base^(−i/d)"
START = "start ignored (every call counted from position 0)"
BASE = "the base argument ignored (10000 used)"


def rope_mistakes(k):
    """The classic mistakes' values stored for snapshot case ``k`` (a d = 2 case has no halves mistake)."""
    names = {"halves": HALVES, "sign": SIGN, "from_one": FROM_ONE, "exponent": EXPONENT,
             "start_ignored": START, "base_ignored": BASE}
    return [(why, SNAP[f"{k}/mistakes/{name}"]) for name, why in names.items()]


# -- the worksheet, step by step -------------------------------------------------------------------
@pytest.mark.step("12.1")
def test_with_d_4_the_pairs_turn_at_1_and_at_0_01_radians_per_position(ch, ws):
    expect(ws, ch.rope_frequencies(ws.input("d")), kind="array")


@pytest.mark.step("12.2")
def test_from_start_2_with_base_100_position_p_turns_by_p_and_p_over_10(ch, ws):
    got = ch.rope_angles(ws.input("seq_len"), ws.input("d"), base=ws.input("base"), start=ws.input("start"))
    expect(ws, got, kind="array")


@pytest.mark.step("12.3")
def test_the_pair_1_2_turned_by_one_radian_lands_at_minus_1_14_and_1_92(ch, ws):
    expect(ws, ch.rotate_pairs(ws.input("X"), ws.input("angles")), kind="array")


@pytest.mark.step("12.4")
def test_one_token_at_three_positions_walks_around_the_circle(ch, ws):
    expect(ws, ch.apply_rope(ws.input("X"), base=ws.input("base"), start=ws.input("start")), kind="array")


@pytest.mark.step("12.5")
def test_shifting_query_and_key_by_one_position_leaves_their_score_unchanged(ch, ws):
    S = returned(ch.rope_scores(ws.input("Q"), ws.input("K"), base=ws.input("base")), "array",
                 "rope_scores(Q, K, base)")
    expect(ws, np.array([S[1, 0], S[2, 1]]) if S.shape == (3, 3) else S)


@pytest.mark.step("12.6")
def test_with_rope_each_position_attends_most_to_itself_and_never_ahead(ch, ws):
    output, weights = ch.rope_attention(ws.input("Q"), ws.input("K"), ws.input("V"), base=ws.input("base"))
    returned(weights, "array", "the weights rope_attention returns")
    expect(ws, returned(output, "array", "the output rope_attention returns"))


@pytest.mark.step("12.7")
def test_the_gradient_turns_back_by_the_same_angles(ch, ws):
    expect(ws, ch.rope_backward(ws.input("dY"), base=ws.input("base"), start=ws.input("start")), kind="array")


# -- beyond the worksheet: other widths, bases and starts ----------------------------------------------
@pytest.mark.parametrize("case", range(SNAP.count("angles")))
def test_frequencies_and_angles_match_the_formula_for_other_widths_bases_and_starts(ch, case):
    """rope_frequencies and rope_angles match base^(−2i/d) and (start + m)·θ_i for d = 2 … 10, bases 1.5 … 10⁶, 0 positions too"""
    k = f"angles/{case}"
    n, d, base, start = (SNAP.number(f"{k}/{x}") for x in ("n", "d", "base", "start"))
    i = np.arange(d // 2)
    theta = base ** (-2.0 * i / d)
    close(ch.rope_frequencies(d, base), theta, f"rope_frequencies({d}, base={base})", kind="array",
          mistakes=[(EXPONENT, base ** (-1.0 * i / d)), ("the exponent's pair index counted from 1",
                                                          base ** (-2.0 * (i + 1) / d)),
                    ("the exponents spaced evenly from 0 to 1, both ends included: the last pair must stop short of "
                     "base^(−1)", base ** -np.linspace(0, 1, d // 2)),
                    ("the exponent's sign flipped: base^(+2i/d), frequencies that grow from pair to pair",
                     base ** (2.0 * i / d))])
    want = np.array([[(start + m) * t for t in theta] for m in range(n)]).reshape(n, d // 2)
    close(ch.rope_angles(n, d, base, start), want, f"rope_angles({n}, {d}, base={base}, start={start})",
          kind="array", mistakes=[(FROM_ONE, want + theta), ("start ignored", want - start * theta),
                                  (EXPONENT, np.outer(start + np.arange(n), base ** (-1.0 * i / d)))])
    close(SNAP[f"{k}/out"], want, "the stored angles (a check of the test itself)")
    empty = returned(ch.rope_angles(0, d, base, start), "array", f"rope_angles(0, {d})")
    with check:
        assert empty.shape == (0, d // 2), f"rope_angles(0, {d}) should have shape (0, {d // 2}), got {empty.shape}"


def test_without_base_or_start_the_defaults_are_base_10000_and_position_0(ch):
    """rope_angles(3, 4) and rope_backward(dY) called without base or start use base 10000 and start 0"""
    i = np.arange(2)
    theta = 10000.0 ** (-2.0 * i / 4)
    want = np.outer(np.arange(3), theta)
    close(ch.rope_angles(3, 4), want, "rope_angles(3, 4) with the default base and start", kind="array",
          mistakes=[(FROM_ONE, want + theta)])
    X = RNG.normal(size=(50, 4))  # 50 positions: a default base a little off shows in the late rows
    Y = ch.apply_rope(X, base=10000.0, start=0)
    close(ch.rope_backward(Y), X, "rope_backward(apply_rope(X, base=10000.0, start=0)) with the default base and "
          "start", kind="array")


def test_whole_number_inputs_give_float64_results(ch):
    """apply_rope and rotate_pairs of an integer array return float64 values, not numbers cut to integers"""
    X = SNAP["integers/X"]
    got = returned(ch.apply_rope(X, start=1), "array", f"apply_rope of an integer {X.shape} array")
    with check:
        assert got.dtype == np.float64, f"apply_rope of integers should return float64, got dtype {got.dtype}"
    close(got, SNAP["integers/out"], f"apply_rope(X, start=1) of an integer {X.shape} array", inputs={"X": X},
          mistakes=[("the result was stored in an integer array (np.empty_like of an integer X)",
                     np.trunc(SNAP["integers/out"])), (START, SNAP["integers/start_ignored"])])
    close(ch.rotate_pairs(np.array([[1, 2]]), np.array([[1]])), [[np.cos(1) - 2 * np.sin(1), np.sin(1) + 2 * np.cos(1)]],
          "rotate_pairs of the integer pair [[1, 2]] by the integer angle [[1]]", kind="array")


def test_rotate_pairs_turns_every_head_by_the_same_angles(ch):
    """rotate_pairs on (3 heads, 4 positions, d 6) with random angles matches the rotation formula, pair by pair"""
    X, angles = SNAP["rotate/X"], SNAP["rotate/angles"]
    c, s = np.cos(angles), np.sin(angles)
    want = np.empty_like(X)
    want[..., 0::2] = X[..., 0::2] * c - X[..., 1::2] * s
    want[..., 1::2] = X[..., 0::2] * s + X[..., 1::2] * c
    close(ch.rotate_pairs(X, angles), want, "rotate_pairs of a (3, 4, 6) array", kind="array",
          mistakes=[(SIGN, SNAP["rotate/sign"])])


@pytest.mark.parametrize("case", range(SNAP.count("rope")))
def test_apply_rope_matches_the_rotation_on_other_shapes(ch, case):
    """apply_rope on (seq, d) and (n_heads, seq, d_head) inputs, seq up to 8, d up to 16, other bases and starts"""
    k = f"rope/{case}"
    X, base, start = SNAP[f"{k}/X"], SNAP.number(f"{k}/base"), SNAP.number(f"{k}/start")
    got = ch.apply_rope(X, base=base, start=start)
    close(got, SNAP[f"{k}/out"], f"apply_rope of a {X.shape} array, base {base:g}, start {start}", kind="array",
          inputs={"X": X, "base": base, "start": start}, mistakes=rope_mistakes(f"{k}"))


@pytest.mark.parametrize("case", range(SNAP.count("rope")))
def test_apply_rope_keeps_every_pair_at_its_length(ch, case):
    """a rotation keeps each pair's length: |(y_2i, y_2i+1)| = |(x_2i, x_2i+1)| for every row"""
    X = SNAP[f"rope/{case}/X"]
    got = returned(ch.apply_rope(X, start=3), "array", f"apply_rope of a {X.shape} array")
    if got.shape != X.shape:
        pytest.fail(f"apply_rope of a {X.shape} array returned shape {got.shape}: it must keep X's shape",
                    pytrace=False)
    close(np.hypot(got[..., 0::2], got[..., 1::2]), np.hypot(X[..., 0::2], X[..., 1::2]),
          f"the length of every pair after apply_rope, {X.shape}")


# -- beyond the worksheet: the property RoPE is for ---------------------------------------------------
@pytest.mark.parametrize("d", [2, 6, 16])
def test_a_score_depends_only_on_the_distance_between_query_and_key(ch, d):
    """for random q and k at random positions m, n: RoPE(q at m) · RoPE(k at n) = RoPE(q at m+s) · RoPE(k at n+s)"""
    for _ in range(4):
        q, k = RNG.normal(size=(1, d)), RNG.normal(size=(1, d))
        m, n, shift = (int(v) for v in RNG.integers(0, 50, size=3))
        score = float((ch.apply_rope(q, start=m) @ ch.apply_rope(k, start=n).T)[0, 0])
        shifted = float((ch.apply_rope(q, start=m + shift) @ ch.apply_rope(k, start=n + shift).T)[0, 0])
        close(shifted, score, f"q·k with d = {d} at positions ({m + shift}, {n + shift}) against ({m}, {n})",
              rtol=1e-9, atol=1e-9, inputs={"q": q, "k": k})


def test_a_cache_of_keys_gets_the_same_angles_row_by_row(ch):
    """apply_rope(X[t:], start=t) equals rows t… of apply_rope(X): what a KV cache relies on"""
    X = RNG.normal(size=(2, 7, 8))
    whole = returned(ch.apply_rope(X), "array", "apply_rope of a (2, 7, 8) array")
    for t in (1, 4, 6):
        close(ch.apply_rope(X[:, t:], start=t), whole[:, t:], f"apply_rope(X[:, {t}:], start={t})", kind="array",
              mistakes=[("start ignored", ch.apply_rope(X[:, t:]))])


@pytest.mark.parametrize("case", range(SNAP.count("scores")))
def test_rope_scores_match_rotated_queries_times_rotated_keys(ch, case):
    """rope_scores on (seq, d) and (n_heads, seq, d) queries and keys, d up to 16, bases 100 and 10000"""
    k = f"scores/{case}"
    Q, K, base = SNAP[f"{k}/Q"], SNAP[f"{k}/K"], SNAP.number(f"{k}/base")
    got = ch.rope_scores(Q, K) if base == 10000.0 else ch.rope_scores(Q, K, base)
    close(got, SNAP[f"{k}/out"], f"rope_scores of Q and K {Q.shape}, base {base:g}", kind="array",
          mistakes=[("the keys were not rotated (only the queries)", SNAP[f"{k}/keys_unrotated"]),
                    ("the base argument ignored (10000 used)", SNAP[f"{k}/base_ignored"]),
                    ("no rotation at all", SNAP[f"{k}/plain"]), (HALVES, SNAP[f"{k}/halves"])])


@pytest.mark.parametrize("case", range(SNAP.count("scores")))
def test_shifting_every_position_leaves_all_scores_unchanged(ch, case):
    """Q and K rotated from position 17 on give the same scores as from position 0 (random Q and K)"""
    Q, K, base = SNAP[f"scores/{case}/Q"], SNAP[f"scores/{case}/K"], SNAP.number(f"scores/{case}/base")
    shifted = ch.apply_rope(Q, base, start=17) @ np.swapaxes(ch.apply_rope(K, base, start=17), -1, -2)
    close(shifted, SNAP[f"scores/{case}/out"], f"apply_rope(Q, start=17) @ apply_rope(K, start=17)ᵀ for {Q.shape}",
          kind="array", rtol=1e-9, atol=1e-9, mistakes=[("start ignored (or positions not rotated at all)",
                                                         SNAP[f"scores/{case}/plain"])])


@pytest.mark.parametrize("case", range(SNAP.count("attention")))
def test_rope_attention_rotates_queries_and_keys_but_not_values(ch, case):
    """rope_attention on (seq, d, d_v) = (4, 6, 3), (6, 8, 8), (3, 4, 5) (base 30), (5, 2, 2), (8, 16, 4): causal, V untouched"""
    k = f"attention/{case}"
    Q, K, V, base = SNAP[f"{k}/Q"], SNAP[f"{k}/K"], SNAP[f"{k}/V"], SNAP.number(f"{k}/base")
    # the default base is part of the promise: call without it where the case uses 10000
    output, weights = ch.rope_attention(Q, K, V) if base == 10000.0 else ch.rope_attention(Q, K, V, base)
    names = {"v_rotated": "V was rotated too (RoPE belongs on Q and K only)", "no_rope": "no rotation at all",
             "base_ignored": "the base argument ignored (10000 used)",
             "unmasked": "the causal mask was left out"}
    found = [(why, SNAP[f"{k}/mistakes/{name}"]) for name, why in names.items() if f"{k}/mistakes/{name}" in SNAP.data]
    shapes = f"Q, K {Q.shape}, V {V.shape}, base {base:g}"
    close(weights, SNAP[f"{k}/weights"], f"rope_attention's weights, {shapes}", kind="array",
          mistakes=[(why, SNAP[f"{k}/weight_mistakes/{name}"]) for name, why in names.items()
                    if f"{k}/weight_mistakes/{name}" in SNAP.data])
    close(output, SNAP[f"{k}/output"], f"rope_attention's output, {shapes}", kind="array", mistakes=found)


# -- beyond the worksheet: the gradient -----------------------------------------------------------------
@pytest.mark.parametrize("case", range(SNAP.count("backward")))
def test_rope_backward_matches_central_differences(ch, case):
    """rope_backward(dY) is the gradient of sum(dY · apply_rope(X)) by central differences, heads and starts too"""
    k = f"backward/{case}"
    dY, base, start = SNAP[f"{k}/dY"], SNAP.number(f"{k}/base"), SNAP.number(f"{k}/start")
    got = ch.rope_backward(dY, base=base, start=start)
    close(got, SNAP[f"{k}/numerical"], f"rope_backward of a {dY.shape} gradient, base {base:g}, start {start}, "
          "vs central differences", kind="array", rtol=1e-6, atol=1e-8,
          mistakes=[("the forward rotation instead of its inverse (the angle's sign)", SNAP[f"{k}/forward"]),
                    (FROM_ONE, SNAP[f"{k}/from_one"]), (START, SNAP[f"{k}/start_ignored"]),
                    (BASE, SNAP[f"{k}/base_ignored"])])


@pytest.mark.parametrize("shape", [(5, 6), (3, 4, 8)])
def test_rope_backward_undoes_apply_rope(ch, shape):
    """rope_backward(apply_rope(X)) gives back X: the inverse rotation"""
    X = RNG.normal(size=shape)
    Y = ch.apply_rope(X, base=300.0, start=5)
    close(ch.rope_backward(Y, base=300.0, start=5), X, f"rope_backward(apply_rope(X)) for X {shape}", kind="array")


def test_nothing_modifies_its_inputs(ch):
    """apply_rope, rope_backward, rotate_pairs, rope_scores and rope_attention leave their inputs untouched"""
    X, angles = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(3, 2))
    Q, K, V = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    # the judge fails a call that changes one of its arguments in place (ChangedItsInput)
    ch.apply_rope(X, start=2)
    ch.rope_backward(X, start=2)
    ch.rotate_pairs(X, angles)
    ch.rope_scores(Q, K)
    ch.rope_attention(Q, K, V)


# -- bad input gets a clear error (the checks marked given are the stubs': CONTRIBUTING.md) -----------------
def test_an_odd_width_is_refused(ch):
    """d = 1, 3 or 5 raises ValueError saying "odd": RoPE turns features two at a time"""
    raises_clearly(lambda: ch.rope_frequencies(3), ValueError, "odd", names=("d",))
    raises_clearly(lambda: ch.rope_frequencies(1), ValueError, "odd", names=("d",),
                   hint="1 is a positive whole number but odd: the message must say so")
    raises_clearly(lambda: ch.rope_angles(2, 5), ValueError, "odd")
    raises_clearly(lambda: ch.apply_rope(np.ones((2, 3))), ValueError, "odd")
    raises_clearly(lambda: ch.rope_backward(np.ones((2, 2, 5))), ValueError, "odd")


@pytest.mark.given
@pytest.mark.parametrize("base", [1.0, 0.5, 0.0, -10.0, float("inf"), float("nan")])
def test_a_base_that_is_not_a_finite_number_above_1_is_refused(ch, base):
    """base 1, 0.5, 0, −10, inf or nan raises ValueError naming base: the frequencies must fall from pair to pair"""
    raises_clearly(lambda: ch.rope_frequencies(4, base), ValueError, "base")
    raises_clearly(lambda: ch.apply_rope(np.ones((2, 4)), base=base), ValueError, "base")


@pytest.mark.given
def test_fewer_than_two_dimensions_are_refused(ch):
    """a 1-D X or dY raises ValueError naming its shape: RoPE needs (..., seq, d)"""
    why = "check X.ndim < 2 first: a single vector has no position axis (make it X[None] for one position)"
    raises_clearly(lambda: ch.apply_rope(np.ones(4)), ValueError, "(4,)", hint=why)
    raises_clearly(lambda: ch.rope_backward(np.ones(6)), ValueError, "(6,)", hint=why)
    raises_clearly(lambda: ch.rotate_pairs(np.ones(4), np.ones((1, 2))), ValueError, "(4,)", hint=why)
    raises_clearly(lambda: ch.apply_rope(np.float64(1.0)), ValueError, "()", hint=why)


@pytest.mark.given
@pytest.mark.parametrize("bad", [-1, 0, 2.0, True])
def test_a_width_length_or_start_that_is_not_a_whole_number_in_range_is_refused(ch, bad):
    """d ≥ 1, seq_len ≥ 0 and start ≥ 0 must be whole numbers: −1, 0 (for d), 2.0 and True raise ValueError naming which"""
    whole = "a bool or a float is not a whole number, even 2.0: check isinstance(n, bool) or not isinstance(n, int)"
    if bad != 0 or isinstance(bad, bool):
        raises_clearly(lambda: ch.rope_angles(bad, 4), ValueError, names=("seq_len",), hint=whole)
        raises_clearly(lambda: ch.rope_angles(2, 4, start=bad), ValueError, names=("start",), hint=whole)
        raises_clearly(lambda: ch.apply_rope(np.ones((2, 4)), start=bad), ValueError, names=("start",), hint=whole)
        raises_clearly(lambda: ch.rope_backward(np.ones((2, 4)), start=bad), ValueError, names=("start",), hint=whole)
    d = 4.0 if bad == 2.0 and not isinstance(bad, bool) else bad  # 4.0: even, so only its type is wrong
    raises_clearly(lambda: ch.rope_frequencies(d), ValueError, str(d), names=("d",),
                   hint="refuse d unless it is a whole number ≥ 1 (a bool or a float is not one), before checking it is even")


@pytest.mark.given
def test_angles_of_the_wrong_shape_are_refused(ch):
    """rotate_pairs with an odd width, or angles that are not (seq, d/2), raises ValueError naming both shapes"""
    raises_clearly(lambda: ch.rotate_pairs(np.ones((2, 3)), np.ones((2, 1))), ValueError, "odd")
    raises_clearly(lambda: ch.rotate_pairs(np.ones((3, 4)), np.ones((3, 4))), ValueError, "(3, 4)")
    raises_clearly(lambda: ch.rotate_pairs(np.ones((3, 4)), np.ones((2, 2))), ValueError, "(2, 2)", "(3, 4)")
    raises_clearly(lambda: ch.rotate_pairs(np.ones((2, 3, 4)), np.ones(2)), ValueError, "(2,)", "(2, 3, 4)")


@pytest.mark.given
def test_queries_and_keys_of_different_shapes_are_refused(ch):
    """rope_scores and rope_attention with Q and K of different shapes (or 3-D for attention) raise ValueError naming the shapes"""
    raises_clearly(lambda: ch.rope_scores(np.ones((3, 4)), np.ones((2, 4))), ValueError, "(3, 4)", "(2, 4)")
    raises_clearly(lambda: ch.rope_attention(np.ones((3, 4)), np.ones((3, 6)), np.ones((3, 2))), ValueError,
                   "(3, 4)", "(3, 6)")
    raises_clearly(lambda: ch.rope_attention(np.ones((2, 3, 4)), np.ones((2, 3, 4)), np.ones((3, 2))), ValueError,
                   "(2, 3, 4)", hint="rope_attention takes one sequence (seq, d): chapter 4's attention refuses more")


@pytest.mark.given
def test_values_with_the_wrong_number_of_rows_are_refused(ch):
    """rope_attention with V of a different number of rows than K raises ValueError naming V's shape"""
    raises_clearly(lambda: ch.rope_attention(np.ones((2, 4)), np.ones((2, 4)), np.ones((3, 2))), ValueError, "(3, 2)")
