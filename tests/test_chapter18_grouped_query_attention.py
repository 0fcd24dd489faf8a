"""Chapter 18: Grouped-Query Attention, Sliding Windows and the KV Cache's Memory — the course's own worksheet, and beyond.

Three positions, four query heads and two key/value heads of width 1: which head each query head reads, a window
of 2, the shared heads' gradients, one position decoded with a cache of the window, and a cache's bytes. Each
worksheet step is one test below, named as the claim it checks; the numbers come from
reference/chapter18_grouped_query_attention.toml (audited by scripts/audit_chapter18_grouped_query_attention.py).
Beyond the worksheet: grouped-query attention against your chapter 4 attention of every query head on the key
and value head of its group, multi-query and multi-head as its two ends, windows of every size (the masks stored
in tests/snapshots/chapter18.npz, written by the authors), the
backward against central differences of the learner's own forward, decoding one position at a time against the
whole sequence, and the cache's bytes against the arrays the learner's cache holds.
"""

import numpy as np
import pytest
from pytest_check import check

from kata import close, expect, numerical_gradient, raises_clearly, returned, snapshot

CHAPTER = 18
SNAP = snapshot(CHAPTER)
RNG = np.random.default_rng(18)
NUM = {"rtol": 1e-5, "atol": 1e-8}  # central differences (CONTRIBUTING.md, "Tolerances")
INTERLEAVED = "groups interleaved instead of contiguous: h mod n_kv_heads"
ONE_HEAD = "the gradient of a shared head taken from one query head only"
WINDOW_PLUS = "the window off by one: window + 1 positions seen"
WINDOW_MINUS = "the window off by one: window − 1 positions seen"


def pair(result, what, names=("out", "weights")):
    """A tuple of two arrays, checked as such."""
    if not isinstance(result, tuple) or len(result) != 2:
        pytest.fail(f"{what}: expected a tuple ({', '.join(names)}), got {type(result).__name__}", pytrace=False)
    return tuple(returned(x, "array" if n != "new_cache" else None, f"{what}: {n}") for x, n in zip(result, names,
                                                                                                  strict=True))


def triple(result, what):
    """(dQ, dK, dV) of the backward, checked as arrays."""
    if not isinstance(result, tuple) or len(result) != 3:
        pytest.fail(f"{what}: expected a tuple (dQ, dK, dV), got {type(result).__name__}", pytrace=False)
    return tuple(returned(x, "array", f"{what}: {n}") for x, n in zip(result, ("dQ", "dK", "dV"), strict=True))


def qkv(ws):
    """The worksheet's Q, K, V and head counts, in the order the functions take them."""
    return [ws.input(k) for k in ("Q", "K", "V", "n_heads", "n_kv_heads")]


# -- the worksheet, step by step -------------------------------------------------------------------
@pytest.mark.step("18.1")
def test_query_heads_0_and_1_read_kv_head_0_and_heads_2_and_3_read_head_1(ch, ws):
    expect(ws, ch.kv_head_of(ws.input("n_heads"), ws.input("n_kv_heads")), kind="array")


@pytest.mark.step("18.2")
def test_a_window_of_2_lets_each_position_see_itself_and_the_one_before(ch, ws):
    expect(ws, ch.sliding_window_mask(ws.input("n"), ws.input("window")), kind="array")


@pytest.mark.step("18.3")
def test_four_query_heads_read_two_shared_heads_causally(ch, ws):
    out, _ = pair(ch.grouped_query_attention(*qkv(ws)), "18.3")
    expect(ws, out)


@pytest.mark.step("18.4")
def test_a_window_of_2_changes_only_the_last_position(ch, ws):
    out, _ = pair(ch.grouped_query_attention(*qkv(ws), window=ws.input("window")), "18.4")
    expect(ws, out)


@pytest.mark.step("18.5")
def test_each_shared_head_gets_the_sum_of_its_groups_gradients(ch, ws):
    expect(ws, ch.group_sum(ws.input("dH"), ws.input("n_kv_heads")), kind="array")


@pytest.mark.step("18.6")
def test_the_backward_sums_dv_over_the_two_query_heads_of_each_group(ch, ws):
    Q, K, V, n_heads, n_kv_heads = qkv(ws)
    _, weights = pair(ch.grouped_query_attention(Q, K, V, n_heads, n_kv_heads), "18.6, the forward")
    _, _, dV = triple(ch.grouped_query_attention_backward(ws.input("dO"), Q, K, V, weights, n_heads, n_kv_heads),
                      "18.6")
    expect(ws, dV)


@pytest.mark.step("18.7")
def test_decoding_with_a_cache_of_the_window_gives_the_windowed_output(ch, ws):
    Q, K, V, n_heads, n_kv_heads = qkv(ws)
    cache = None
    for t in range(len(Q)):
        out, cache = pair(ch.decode_step(Q[t:t + 1], K[t:t + 1], V[t:t + 1], cache, n_heads, n_kv_heads,
                                         window=ws.input("window")), f"18.7, position {t}", ("out", "new_cache"))
    expect(ws, out)


@pytest.mark.step("18.8")
def test_a_small_cache_holds_512_bytes(ch, ws):
    sizes = {k: ws.input(k) for k in ("n_layers", "n_kv_heads", "d_head", "seq", "bytes_per_number")}
    expect(ws, ch.kv_cache_bytes(**{k: int(v) for k, v in sizes.items()}), kind="int")


# -- beyond the worksheet: the groups, the window, attention written in the open -----------------------------
@pytest.mark.parametrize("case", [(6, 3), (8, 2), (6, 2), (5, 1), (4, 4), (1, 1)])
def test_groups_are_contiguous_from_multi_query_to_multi_head(ch, case):
    """kv_head_of(n, k) is ⌊h / (n/k)⌋ for every head h: all 0 at k = 1 (multi-query), 0 … n−1 at k = n (multi-head)"""
    n_heads, n_kv_heads = case
    heads = np.arange(n_heads)
    close(ch.kv_head_of(n_heads, n_kv_heads), heads // (n_heads // n_kv_heads), f"kv_head_of({n_heads}, {n_kv_heads})",
          kind="array", mistakes=[(INTERLEAVED, heads % n_kv_heads)])


@pytest.mark.parametrize("case", range(SNAP.count("window")))
def test_the_window_keeps_exactly_the_last_window_positions(ch, case):
    """sliding_window_mask(n, w)[i, j] is i − w < j ≤ i: the identity at w = 1, chapter 4's causal mask at w ≥ n"""
    k = f"window/{case}"
    n, window = SNAP.number(f"{k}/n"), SNAP.number(f"{k}/window")
    got = returned(ch.sliding_window_mask(n, window), "array", f"sliding_window_mask({n}, {window})")
    with check:
        assert got.dtype == bool, f"sliding_window_mask should return booleans (dtype bool), got dtype {got.dtype}"
    close(got, SNAP[f"{k}/mask"], f"sliding_window_mask({n}, {window})",
          mistakes=[(WINDOW_PLUS, SNAP[f"{k}/plus"]), (WINDOW_MINUS, SNAP[f"{k}/minus"]),
                    ("a band on both sides: the window without the causal part", SNAP[f"{k}/both_sides"])])


CASES = [(5, 6, 3, 2, None), (5, 6, 3, 2, 2), (4, 4, 1, 3, None), (4, 4, 1, 3, 3), (3, 2, 2, 1, None),
         (6, 8, 4, 2, 1), (6, 8, 2, 2, 4), (2, 2, 1, 5, 9), (3, 1, 1, 1, None)]  # seq, n_heads, n_kv_heads, d_head, window


def inputs(seq, n_heads, n_kv_heads, d_head):
    """Fixed small arrays of distinct entries: Q (seq, n_heads·d_head), K and V (seq, n_kv_heads·d_head)."""
    rng = np.random.default_rng(1000 * seq + 100 * n_heads + 10 * n_kv_heads + d_head)
    return (rng.normal(size=(seq, n_heads * d_head)), rng.normal(size=(seq, n_kv_heads * d_head)),
            rng.normal(size=(seq, n_kv_heads * d_head)))


def heads_on(ch, Q, K, V, n_heads, n_kv_heads, reads, mask):
    """Chapter 4's attention (yours: the module binds it) of query head h on key/value head reads[h], side by side.

    An invariant, not an oracle: the heads are the equal column blocks of Q and of K and V, as chapter 11 cuts them.
    """
    Qs, Ks, Vs = np.split(Q, n_heads, axis=1), np.split(K, n_kv_heads, axis=1), np.split(V, n_kv_heads, axis=1)
    outs = [pair(ch.scaled_dot_product_attention(Qs[h], Ks[r], Vs[r], mask=mask), "chapter 4's attention")
            for h, r in enumerate(reads)]
    return np.concatenate([o for o, _ in outs], axis=1), np.stack([w for _, w in outs])


def stored_mask(seq, window):
    """The stored mask of seq positions with this window (chapter 4's causal mask when window is None)."""
    return SNAP[f"mask/{seq}/{'causal' if window is None else window}"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "seq{}-h{}-kv{}-d{}-w{}".format(*c))
def test_grouped_query_attention_is_attention_with_each_kv_head_repeated_for_its_group(ch, case):
    """out and weights equal attention of every query head on key/value head ⌊h / g⌋, causal or windowed, to 1e-12"""
    seq, n_heads, n_kv_heads, d_head, window = case
    Q, K, V = inputs(seq, n_heads, n_kv_heads, d_head)
    heads, mask = np.arange(n_heads), stored_mask(seq, window)
    want, W = heads_on(ch, Q, K, V, n_heads, n_kv_heads, heads // (n_heads // n_kv_heads), mask)
    mistakes = [(INTERLEAVED, heads_on(ch, Q, K, V, n_heads, n_kv_heads, heads % n_kv_heads, mask)[0])]
    if window is not None:
        mistakes += [(WINDOW_PLUS, heads_on(ch, Q, K, V, n_heads, n_kv_heads, heads // (n_heads // n_kv_heads),
                                            stored_mask(seq, window + 1))[0])]
    what = f"grouped_query_attention, seq {seq}, n_heads {n_heads}, n_kv_heads {n_kv_heads}, d_head {d_head}, " \
           f"window {window}"
    out, weights = pair(ch.grouped_query_attention(Q, K, V, n_heads, n_kv_heads, window=window), what)
    close(out, want, f"{what}: out", mistakes=mistakes, rtol=1e-12, atol=1e-12)
    close(weights, W, f"{what}: weights", rtol=1e-12, atol=1e-12)


def test_group_sum_over_six_heads_for_every_group_size(ch):
    """group_sum of (6, 3, 2) gradients into 1, 2, 3 and 6 heads: each the sum of its g neighbouring heads"""
    dH = RNG.normal(size=(6, 3, 2))
    for n_kv_heads in (1, 2, 3, 6):
        g = 6 // n_kv_heads
        want = np.stack([dH[k * g:(k + 1) * g].sum(axis=0) for k in range(n_kv_heads)])
        close(ch.group_sum(dH, n_kv_heads), want, f"group_sum of (6, 3, 2) into {n_kv_heads} heads", kind="array",
              mistakes=[(f"{ONE_HEAD} (the first of its group)", dH[::g]),
                        (INTERLEAVED, np.stack([dH[k::n_kv_heads].sum(axis=0) for k in range(n_kv_heads)])),
                        ("the group averaged instead of summed", want / g)])


@pytest.mark.parametrize("case", [(4, 4, 2, 2, None), (3, 6, 2, 1, None), (4, 4, 1, 2, 2), (3, 2, 2, 2, None)])
def test_the_backward_matches_central_differences_of_the_forward(ch, case):
    """dQ, dK, dV of sum(dO ∘ out) against central differences of the learner's own grouped_query_attention"""
    seq, n_heads, n_kv_heads, d_head, window = case
    Q, K, V = inputs(seq, n_heads, n_kv_heads, d_head)
    dO = RNG.normal(size=Q.shape)
    what = f"grouped_query_attention_backward, seq {seq}, n_heads {n_heads}, n_kv_heads {n_kv_heads}, window {window}"
    _, weights = pair(ch.grouped_query_attention(Q, K, V, n_heads, n_kv_heads, window=window), "the forward")
    grads = triple(ch.grouped_query_attention_backward(dO, Q, K, V, weights, n_heads, n_kv_heads), what)
    forward = ch.grouped_query_attention

    def loss(q, k, v):
        return float(np.sum(dO * forward(q, k, v, n_heads, n_kv_heads, window=window)[0]))

    numerical = [numerical_gradient(lambda x: loss(x, K, V), Q), numerical_gradient(lambda x: loss(Q, x, V), K),
                 numerical_gradient(lambda x: loss(Q, K, x), V)]
    g = n_heads // n_kv_heads
    for name, got, want in zip(("dQ", "dK", "dV"), grads, numerical, strict=True):
        close(got, want, f"{what}: {name} vs central differences", **NUM,
              mistakes=[] if name == "dQ" or g == 1 else [(ONE_HEAD, want / g)])


@pytest.mark.parametrize("case", [(5, 4, 2, 2, None), (5, 4, 2, 2, 2), (4, 3, 1, 2, 1), (6, 4, 4, 1, 3)])
def test_decoding_one_position_at_a_time_gives_the_whole_sequences_rows(ch, case):
    """decode_step position after position: each out is that row of the windowed attention, the cache min(t+1, w) long"""
    seq, n_heads, n_kv_heads, d_head, window = case
    Q, K, V = inputs(seq, n_heads, n_kv_heads, d_head)
    heads = np.arange(n_heads)
    want, _ = heads_on(ch, Q, K, V, n_heads, n_kv_heads, heads // (n_heads // n_kv_heads), stored_mask(seq, window))
    plus = heads_on(ch, Q, K, V, n_heads, n_kv_heads, heads // (n_heads // n_kv_heads),
                    stored_mask(seq, None if window is None else window + 1))[0]
    cache = None
    for t in range(seq):
        what = f"decode_step at position {t}, n_heads {n_heads}, n_kv_heads {n_kv_heads}, window {window}"
        out, cache = pair(ch.decode_step(Q[t:t + 1], K[t:t + 1], V[t:t + 1], cache, n_heads, n_kv_heads,
                                         window=window), what, ("out", "new_cache"))
        close(out, want[t:t + 1], what, rtol=1e-12, atol=1e-12,
              mistakes=[("the window off by one: the cache keeps window + 1 positions", plus[t:t + 1])])
        kept = t + 1 if window is None else min(t + 1, window)
        for name in ("K", "V"):
            held = returned(cache.get(name) if isinstance(cache, dict) else None, "array", f"{what}: new_cache {name}")
            with check:
                assert held.shape == (n_kv_heads, kept, d_head), (
                    f"{what}: the cache's {name} has shape {held.shape}, expected (n_kv_heads, kept, d_head) = "
                    f"{(n_kv_heads, kept, d_head)}" + ("" if window is None else
                                                       f": a window of {window} keeps the last {window} positions"))


@pytest.mark.parametrize("case", [(32, 32, 128, 4096, 2, None), (80, 8, 128, 4096, 2, None), (2, 2, 4, 8, 2, 3),
                                  (3, 1, 5, 7, 8, 9), (1, 4, 2, 6, 4, 6), (2, 2, 4, 8, 2, 1)])
def test_the_cache_bytes_from_a_7b_model_to_a_window(ch, case):
    """kv_cache_bytes is 2 × layers × kv heads × d_head × min(seq, window) × bytes, as a Python or NumPy int"""
    n_layers, n_kv_heads, d_head, seq, size, window = case
    kept = seq if window is None else min(seq, window)
    want = 2 * n_layers * n_kv_heads * d_head * kept * size
    got = returned(ch.kv_cache_bytes(n_layers, n_kv_heads, d_head, seq, size, window=window), "int",
                   f"kv_cache_bytes({n_layers}, {n_kv_heads}, {d_head}, {seq}, {size}, window={window})")
    mistakes = [("the factor 2 for keys and values forgotten", want // 2)]
    if window is not None and window < seq:
        mistakes += [("the whole sequence counted: a window caps the positions kept", want // kept * seq)]
    close(got, want, f"kv_cache_bytes({n_layers}, {n_kv_heads}, {d_head}, {seq}, {size}, window={window})",
          rtol=0, atol=0, mistakes=mistakes)


def test_the_cache_bytes_are_the_bytes_the_decoding_cache_holds(ch):
    """after 5 positions with window 3, the cache's K and V hold kv_cache_bytes(1, 2, 3, 5, 8, window=3) bytes"""
    Q, K, V = inputs(5, 4, 2, 3)
    cache = None
    for t in range(5):
        _, cache = pair(ch.decode_step(Q[t:t + 1], K[t:t + 1], V[t:t + 1], cache, 4, 2, window=3),
                        f"decode_step at position {t}", ("out", "new_cache"))
    held = sum(returned(cache[k], "array", f"new_cache {k}").astype(np.float64).nbytes for k in ("K", "V"))
    want = returned(ch.kv_cache_bytes(1, 2, 3, 5, 8, window=3), "int", "kv_cache_bytes(1, 2, 3, 5, 8, window=3)")
    with check:
        assert held == want, f"the decoding cache holds {held} bytes of float64, kv_cache_bytes says {want}"


def test_nothing_modifies_its_inputs(ch):
    """every chapter 18 function leaves its arrays and the cache it is given untouched"""
    Q, K, V = inputs(4, 4, 2, 2)
    dO, dH = RNG.normal(size=Q.shape), RNG.normal(size=(4, 3, 2))
    cache = {"K": RNG.normal(size=(2, 2, 2)), "V": RNG.normal(size=(2, 2, 2))}
    # the judge fails a call that changes one of its arguments in place (ChangedItsInput)
    _, weights = ch.grouped_query_attention(Q, K, V, 4, 2, window=2)
    ch.group_sum(dH, 2)
    ch.grouped_query_attention_backward(dO, Q, K, V, weights, 4, 2)
    ch.decode_step(Q[:1], K[:1], V[:1], cache, 4, 2, window=2)


# -- bad input gets a clear error (the checks marked given are the stubs': CONTRIBUTING.md) -----------------
def test_head_counts_that_do_not_divide_are_refused(ch):
    """6 query heads in 4 groups raises ValueError saying "divisible", naming n_heads and n_kv_heads"""
    raises_clearly(lambda: ch.kv_head_of(6, 4), ValueError, "divisible", names=("n_heads", "n_kv_heads"))
    Q, K, V = np.ones((3, 6)), np.ones((3, 4)), np.ones((3, 4))
    raises_clearly(lambda: ch.grouped_query_attention(Q, K, V, 6, 4), ValueError, "divisible",
                   hint="the heads' groups come from kv_head_of, which refuses them")


@pytest.mark.given
def test_a_window_below_1_is_refused(ch):
    """window 0 or −1 raises ValueError naming window and saying "at least 1": a query sees at least itself"""
    raises_clearly(lambda: ch.sliding_window_mask(4, 0), ValueError, "at least 1", names=("window",))
    raises_clearly(lambda: ch.sliding_window_mask(4, -1), ValueError, "at least 1", names=("window",))
    Q = np.ones((3, 2))
    raises_clearly(lambda: ch.grouped_query_attention(Q, Q, Q, 2, 2, window=0), ValueError, names=("window",),
                   hint="the forward takes its mask from sliding_window_mask, which refuses the window")


@pytest.mark.given
def test_counts_sizes_and_windows_that_are_not_whole_numbers_are_refused(ch):
    """head counts, sizes and windows must be whole numbers (≥ 1 where a count): ValueError naming which"""
    raises_clearly(lambda: ch.kv_head_of(0, 1), ValueError, names=("n_heads",))
    raises_clearly(lambda: ch.kv_head_of(4, 2.0), ValueError, names=("n_kv_heads",))
    raises_clearly(lambda: ch.kv_head_of(4, 0), ValueError, names=("n_kv_heads",))
    raises_clearly(lambda: ch.sliding_window_mask(0, 2), ValueError, names=("n",))
    for k, name in enumerate(("n_layers", "n_kv_heads", "d_head")):
        raises_clearly(lambda k=k: ch.kv_cache_bytes(*[0 if i == k else 2 for i in range(3)], 8, 2), ValueError,
                       names=(name,))
    raises_clearly(lambda: ch.sliding_window_mask(True, 2), ValueError, names=("n",))
    raises_clearly(lambda: ch.sliding_window_mask(4, 1.5), ValueError, names=("window",))
    raises_clearly(lambda: ch.kv_cache_bytes(2, 2, 4, 0, 2), ValueError, names=("seq",))
    raises_clearly(lambda: ch.kv_cache_bytes(2, 2, 4, 8, 2.0), ValueError, names=("bytes_per_number",))
    raises_clearly(lambda: ch.kv_cache_bytes(2, 2, 4, 8, 2, window=0), ValueError, names=("window",))
    Q = np.ones((1, 2))
    raises_clearly(lambda: ch.decode_step(Q, Q, Q, None, 2, 2, window=0), ValueError, names=("window",))
    raises_clearly(lambda: ch.grouped_query_attention(np.ones((3, 2)), np.ones((3, 2)), np.ones((3, 2)), 2, 2,
                                                      window=2.0), ValueError, names=("window",))


@pytest.mark.given
def test_shapes_that_do_not_fit_are_refused(ch):
    """Q, K, V that do not fit the head counts, dO or weights of other shapes, dH not 3-D, a bad cache: ValueError"""
    raises_clearly(lambda: ch.grouped_query_attention(np.ones((3, 5)), np.ones((3, 2)), np.ones((3, 2)), 2, 2),
                   ValueError, "(3, 5)")
    raises_clearly(lambda: ch.grouped_query_attention(np.ones((3, 4)), np.ones((3, 4)), np.ones((3, 2)), 4, 2),
                   ValueError, "(3, 4)", "(3, 2)")
    raises_clearly(lambda: ch.grouped_query_attention(np.ones((3, 4)), np.ones((2, 2)), np.ones((2, 2)), 4, 2),
                   ValueError, "(2, 2)")
    raises_clearly(lambda: ch.grouped_query_attention(np.ones((0, 4)), np.ones((0, 2)), np.ones((0, 2)), 4, 2),
                   ValueError, "(0, 4)")
    raises_clearly(lambda: ch.grouped_query_attention(np.ones((3, 0)), np.ones((3, 0)), np.ones((3, 0)), 2, 2),
                   ValueError, "(3, 0)")
    raises_clearly(lambda: ch.group_sum(np.ones((4, 3)), 2), ValueError, "(4, 3)")
    raises_clearly(lambda: ch.group_sum(np.ones((6, 3, 2)), 4), ValueError, "divisible")
    Q, K = np.ones((3, 4)), np.ones((3, 2))
    raises_clearly(lambda: ch.grouped_query_attention_backward(np.ones((3, 2)), Q, K, K, np.ones((4, 3, 3)), 4, 2),
                   ValueError, "(3, 2)", "(3, 4)")
    raises_clearly(lambda: ch.grouped_query_attention_backward(Q, Q, K, K, np.ones((2, 3, 3)), 4, 2),
                   ValueError, "(2, 3, 3)")
    q, k = np.ones((1, 4)), np.ones((1, 2))
    raises_clearly(lambda: ch.decode_step(np.ones((2, 4)), np.ones((2, 2)), np.ones((2, 2)), None, 4, 2),
                   ValueError, "(2, 4)")
    raises_clearly(lambda: ch.decode_step(q, k, k, [1, 2], 4, 2), ValueError, "cache", "list")
    raises_clearly(lambda: ch.decode_step(q, k, k, ["K", "V"], 4, 2), ValueError, "cache", "list")
    raises_clearly(lambda: ch.decode_step(q, k, k, {"K": np.ones((2, 1, 1)), "V": np.ones((2, 2, 1))}, 4, 2),
                   ValueError, "cache", "(2, 2, 1)")
    raises_clearly(lambda: ch.decode_step(q, k, k, {"K": np.ones((2, 1, 1))}, 4, 2), ValueError, "cache")
    raises_clearly(lambda: ch.decode_step(q, k, k, {"K": np.ones((1, 1, 1)), "V": np.ones((1, 1, 1))}, 4, 2),
                   ValueError, "(1, 1, 1)")
