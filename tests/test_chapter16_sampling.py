"""Chapter 16: Sampling and the KV Cache — the course's own worksheet (Part II), and beyond.

The worksheet: four logits [1, 3, 0, 2] through temperature, top-k and top-p, four draws by the inverse CDF (two
of them exactly on a boundary), choose_next in five settings (the last with both filters); then one decode step
with a cache of two positions (d_model 4, two heads): the attention, the block, a whole model of vocab 5 prefilling the prompt [1, 3] and
decoding token 2, and three generated tokens. Beyond it: sampling on other sizes, ties and limits; u swept over
[0, 1) drawing each token as often as its probability says; the KV cache against the full forward with no cache
(tests/snapshots/chapter16.npz: inputs and chapter 13's full forward, written by the authors): every decoded
step's logits equal the full forward's to 1e-10, on four models, in chunks of every size; generation that picks
what the full forward picks at every step; inputs left untouched; bad input named. Nothing here computes what a
function of the chapter computes: the expected values are stored, or the learner's own functions are compared
with each other (an invariant).
"""


import numpy as np
import pytest

from kata import close, expect, float_tree, raises_clearly, returned, snapshot, step_case

CHAPTER = 16
SNAP = snapshot(CHAPTER)
RNG = np.random.default_rng(16)
EXACT = {"rtol": 0.0, "atol": 1e-10}  # the cache changes where the work is done, not what is computed

MULTIPLIED = "temperature multiplied instead of divided: softmax(z·T)"
NO_RENORM = "no renormalisation after filtering: the kept probabilities no longer sum to 1"
RESTART = "positions restarted at 0 in the cache: the new token rotated as if it were the first"
TWICE = "the cached keys rotated again: they were stored already rotated"
UNMASKED = "the new rows not masked among themselves: a row of the prefill reads the rows after it"
KEYS_AT_ZERO = "the new keys rotated from position 0: the queries turned by their position t + i, the keys by i"
KEYS_FIRST = "the new keys put before the cached ones: every key at another position than its value"
BLOCK0 = "every block read block 0's cache: each block attends over its own keys and values, so it needs its own cache"
G1_TWICE = "g1 used in the second RMSNorm too (g2 never read)"
FIRST_ROW = "the first token drawn from the prefill's first row: the next token follows the prompt's last row"


def cache_of(ws):
    """The worksheet's cache: {"K", "V"} arrays of shape (n_heads, t, d_head)."""
    return {k: np.array(v, dtype=np.float64) for k, v in ws.inputs["cache"].items()}


def ints(got, what: str) -> list[int]:
    """The docstring promises a list of Python ints (or ints one by one)."""
    if not isinstance(got, list):
        pytest.fail(f"{what}: the docstring promises a list of ints, got {type(got).__name__}: {got!r:.200}",
                    pytrace=False)
    return [returned(i, "int", f"{what}, entry {n}") for n, i in enumerate(got)]


def cache_pair(got, what: str):
    """(out, new_cache) with new_cache a dict holding K and V arrays."""
    if not isinstance(got, tuple) or len(got) != 2:
        pytest.fail(f"{what} must return a pair (out, new_cache), got {type(got).__name__}", pytrace=False)
    out, cache = got
    if not isinstance(cache, dict) or not {"K", "V"} <= set(cache):
        pytest.fail(f"{what}: new_cache must be a dict with the keys K and V, got {cache!r:.200}", pytrace=False)
    return returned(out, "array", what), cache


def forward_pair(got, what: str):
    """(logits, caches) from gpt_forward: the logits an array; the caches as they came (see ``caches_of``)."""
    if not isinstance(got, tuple) or len(got) != 2:
        pytest.fail(f"{what} must return a pair (logits, new_caches), got {type(got).__name__}: {got!r:.200}",
                    pytrace=False)
    return returned(got[0], "array", what), got[1]


def caches_of(caches, what: str, n_blocks: int, given=None) -> list:
    """gpt_forward's new caches: a list with one dict per block holding the arrays K and V, whatever came back.

    ``given``: the caches the call was given (None for none); new caches that are those, or a list of Nones after
    a call given none, are named as the mistake of handing back the given caches.
    """
    if given is None:  # the first call: given no caches, it must hand back new ones
        handed_back = caches is None or (isinstance(caches, list) and bool(caches)
                                         and all(cache is None for cache in caches))
    else:
        handed_back = caches is given or (isinstance(caches, list) and len(caches) == len(given)
                                          and all(a is b for a, b in zip(caches, given, strict=True)))
    if handed_back:
        pytest.fail(f"{what}: its new caches are the ones it was given ({caches!r:.200})\n  looks like: the caches "
                    "it was given handed back instead of the new ones: the next call would not see the positions "
                    "this call added", pytrace=False)
    if not isinstance(caches, list) or len(caches) != n_blocks:
        pytest.fail(f"{what}: the new caches must be a list with one cache per block ({n_blocks}), got "
                    f"{type(caches).__name__}: {caches!r:.200}", pytrace=False)
    for b, cache in enumerate(caches):
        if not isinstance(cache, dict) or not {"K", "V"} <= set(cache) \
                or not all(isinstance(cache[name], np.ndarray) for name in ("K", "V")):
            pytest.fail(f"{what}: block {b}'s new cache must be a dict holding the arrays K and V, got "
                        f"{type(cache).__name__}: {cache!r:.200}", pytrace=False)
    return caches


def model_of(k):
    """A stored model, its number of heads."""
    return SNAP.tree(f"{k}/model"), SNAP.number(f"{k}/n_heads")


def option(k, name):
    """A stored top_k / top_p setting (−1 for None)."""
    value = SNAP.number(f"{k}/{name}")
    return None if value == -1 else value


# -- the worksheet, step by step -------------------------------------------------------------------
@pytest.mark.step("16.1")
def test_temperature_two_halves_every_gap_between_the_logits(ch, ws):
    expect(ws, ch.softmax_with_temperature(ws.input("logits"), ws.inputs["temperature"]), kind="array")


@pytest.mark.step("16.2")
def test_top_k_keeps_the_two_most_likely_tokens_and_renormalises(ch, ws):
    expect(ws, ch.top_k_filter(ws.input("probs"), ws.inputs["k"]), kind="array")


@pytest.mark.step("16.3")
def test_top_p_keeps_the_token_that_crosses_p(ch, ws):
    expect(ws, ch.top_p_filter(ws.input("probs"), ws.inputs["p"]), kind="array")


@pytest.mark.step("16.4")
def test_a_u_on_a_boundary_belongs_to_the_next_token(ch, ws):
    probs = ws.input("probs")
    got = [ch.sample_index(probs, u) for u in ws.inputs["us"]]
    expect(ws, [returned(i, "int", f"sample_index(probs, {u})") for i, u in zip(got, ws.inputs["us"], strict=True)])


@pytest.mark.step("16.5")
def test_choose_next_is_greedy_at_zero_and_samples_after_the_filters(ch, ws):
    logits = ws.input("logits")
    got = [ch.choose_next(logits, **case) for case in ws.inputs["cases"]]
    expect(ws, [returned(i, "int", f"choose_next(logits, **{case})") for i, case in
                zip(got, ws.inputs["cases"], strict=True)])


@pytest.mark.step("16.6")
def test_the_new_row_at_position_two_attends_to_the_cache_and_to_itself(ch, ws):
    got = ch.attention_with_cache(ws.input("x_new"), float_tree(ws.inputs["params"]), ws.inputs["n_heads"],
                                  cache_of(ws))
    out, cache = cache_pair(got, "attention_with_cache")
    expect(ws, out, kind="array")
    close(np.shape(cache["K"]), (2, 3, 2), "16.6 the new cache's K holds t + m = 3 positions: shape (2, 3, 2)")


@pytest.mark.step("16.7")
def test_the_block_decodes_one_row_from_the_cache(ch, ws):
    got = ch.block_with_cache(ws.input("x_new"), float_tree(ws.inputs["params"]), ws.inputs["n_heads"],
                              cache_of(ws))
    y, _ = cache_pair(got, "block_with_cache")
    expect(ws, y, kind="array")


@pytest.mark.parametrize("which", [
    step_case("16.8", "by_hand_a_block_that_adds_nothing_leaves_each_token_its_own_row", "the by-hand model"),
    step_case("16.9", "prefill_then_one_decode_step_give_the_full_forwards_rows", "the model"),
])
def test_the_whole_model_prefills_then_decodes_from_the_caches(ch, ws, which):
    model, n_heads = float_tree(ws.inputs["model"]), ws.inputs["n_heads"]
    prefill, caches = forward_pair(ch.gpt_forward(np.array(ws.inputs["prompt"]), model, n_heads),
                                   f"gpt_forward of the prompt, {which}")
    step, _ = forward_pair(ch.gpt_forward(np.array([ws.inputs["next_id"]]), model, n_heads, caches),
                           f"gpt_forward of the next id with the caches, {which}")
    expect(ws, np.vstack([prefill, step]), kind="array")


@pytest.mark.parametrize("which", [
    step_case("16.10", "by_hand_generate_draws_each_token_from_the_row_of_the_token_before", "the by-hand model"),
    step_case("16.11", "generate_draws_three_tokens_after_the_prompt", "the model"),
])
def test_generate_draws_tokens_after_the_prompt(ch, ws, which):
    got = ch.generate(ws.inputs["prompt"], float_tree(ws.inputs["model"]), ws.inputs["n_heads"], ws.inputs["us"],
                      temperature=ws.inputs["temperature"])
    expect(ws, ints(got, f"generate, {which}"))


# -- beyond the worksheet: sampling ------------------------------------------------------------------------
@pytest.mark.parametrize("case", range(SNAP.count("temperature")))
def test_softmax_with_temperature_on_other_sizes(ch, case):
    """softmax(z / T) on 7, 12, 30 and 3 logits with T = 0.5, 1.7, 1 and 0.05"""
    k = f"temperature/{case}"
    z, T = SNAP[f"{k}/logits"], SNAP.number(f"{k}/temperature")
    close(ch.softmax_with_temperature(z, T), SNAP[f"{k}/out"], f"softmax_with_temperature, {len(z)} logits, T = {T}",
          kind="array", inputs={"logits": z}, mistakes=[(MULTIPLIED, SNAP[f"{k}/multiplied"]),
                                                        ("the temperature ignored", SNAP[f"{k}/ignored"])])


@pytest.mark.parametrize("case", range(SNAP.count("top_k")))
def test_top_k_filter_on_other_sizes_and_ties(ch, case):
    """top_k_filter on 7, 12 and 30 tokens (k = 3, 1, 10), and ties at the boundary in 6 and 40 (lower index kept)"""
    k = f"top_k/{case}"
    p, n = SNAP[f"{k}/probs"], SNAP.number(f"{k}/k")
    close(ch.top_k_filter(p, n), SNAP[f"{k}/out"], f"top_k_filter, {len(p)} tokens, k = {n}", kind="array",
          inputs={"probs": p}, mistakes=[(NO_RENORM, SNAP[f"{k}/no_renorm"]),
                                         ("the first k tokens kept, not the k most likely", SNAP[f"{k}/first_k"]),
                                         ("a tie at the boundary kept the higher index", SNAP[f"{k}/tie_upper"])])


@pytest.mark.parametrize("case", range(SNAP.count("top_p")))
def test_top_p_filter_on_other_sizes_and_ties(ch, case):
    """top_p_filter on 7, 12, 30, 5 tokens (p = 0.5, 0.9, 0.75, 0.3) and ties among 6 and 40 (the lower indices first)"""
    k = f"top_p/{case}"
    probs, p = SNAP[f"{k}/probs"], SNAP.number(f"{k}/p")
    close(ch.top_p_filter(probs, p), SNAP[f"{k}/out"], f"top_p_filter, {len(probs)} tokens, p = {p}", kind="array",
          inputs={"probs": probs},
          mistakes=[("the top-p boundary token dropped", SNAP[f"{k}/dropped"]), (NO_RENORM, SNAP[f"{k}/no_renorm"]),
                    ("the running sum taken in index order, not from the most likely token",
                     SNAP[f"{k}/index_order"])])


def test_one_token_is_a_whole_distribution(ch):
    """a vocabulary of one token: probability 1 at any temperature, kept by every filter, drawn by every u"""
    one = np.array([1.0])
    close(ch.softmax_with_temperature(np.array([0.7]), 2.0), one, "softmax_with_temperature([0.7], 2)", kind="array")
    close(ch.top_k_filter(one, 1), one, "top_k_filter([1], 1)", kind="array")
    close(ch.top_p_filter(one, 0.5), one, "top_p_filter([1], 0.5)", kind="array")
    close(returned(ch.sample_index(one, 0.99), "int", "sample_index([1], 0.99)"), 0, "sample_index([1], 0.99)")
    close(returned(ch.choose_next(np.array([-3.0]), 0.5), "int", "choose_next([-3], 0.5)"), 0, "choose_next([-3], 0.5)")


def test_top_p_stops_at_a_running_sum_exactly_equal_to_p(ch):
    """[0.25, 0.5, 0, 0.25] with p = 0.75: 0.5 + 0.25 is exactly 0.75, which reaches p: two tokens, not three"""
    got = ch.top_p_filter(np.array([0.25, 0.5, 0.0, 0.25]), 0.75)
    close(got, np.array([1.0, 2.0, 0.0, 0.0]) / 3, "top_p_filter([0.25, 0.5, 0, 0.25], p = 0.75): tokens 1 and 0 "
          "(the tie of 0.25 goes to the lower index) reach 0.75 exactly", kind="array",
          mistakes=[("a running sum equal to p treated as not reaching it", np.array([0.25, 0.5, 0.0, 0.25]))])


def test_the_filters_keep_everything_at_their_limits(ch):
    """top_k with k = vocab (or more) and top_p with p = 1 keep every token: the distribution comes back as it was"""
    for probs in (SNAP["top_k/0/probs"], SNAP["top_p/2/probs"], np.array([0.5, 0.0, 0.5])):
        n = len(probs)
        close(ch.top_k_filter(probs, n), probs, f"top_k_filter(probs, k = {n}) of {n} tokens keeps them all",
              kind="array")
        close(ch.top_k_filter(probs, n + 3), probs, f"top_k_filter(probs, k = {n + 3}) of {n} tokens keeps them all",
              kind="array")
        close(ch.top_p_filter(probs, 1.0), probs, f"top_p_filter(probs, p = 1) of {n} tokens keeps them all",
              kind="array")


@pytest.mark.parametrize("case", range(SNAP.count("sample")))
def test_sample_index_over_a_grid_of_u(ch, case):
    """sample_index for 50 evenly spaced u and u exactly on every boundary: 5, 9 and 20 tokens in 1024ths (exact sums)"""
    k = f"sample/{case}"
    # the snapshot holds u = j/400 for j = 0 … 399, then every boundary: each eighth of the first, all of the rest
    # (every call crosses to your process: the boundaries pin each slice, 50 points between them are plenty)
    pick = np.r_[0:400:8, 400:len(SNAP[f"{k}/us"])]
    p, us = SNAP[f"{k}/probs"], SNAP[f"{k}/us"][pick]
    got = [returned(ch.sample_index(p, float(u)), "int", f"sample_index(probs, {u})") for u in us]
    close(np.array(got), SNAP[f"{k}/out"][pick], f"sample_index over {len(us)} values of u, {len(p)} tokens",
          inputs={"probs": p},
          mistakes=[("u ≤ c instead of u < c: a u on a boundary goes to the token before",
                     SNAP[f"{k}/at_most"][pick])])


def test_each_token_is_drawn_as_often_as_its_probability(ch):
    """over 100 evenly spaced u, token i is drawn p_i·100 times (to within one), and a token of probability 0 never"""
    n = 100  # every call crosses to your process; the distributions in 1024ths are swept, boundaries and all, above
    us = (np.arange(n) + 0.5) / n
    for p in (np.array([0.1, 0.0, 0.45, 0.25, 0.2]), SNAP["top_k/2/out"]):
        counts = np.bincount([ch.sample_index(p, float(u)) for u in us], minlength=len(p))
        close(np.abs(counts - p * n) <= 1.0, np.ones(len(p), dtype=bool),
              f"how often each of {len(p)} tokens is drawn over {n} evenly spaced u (counts {counts.tolist()}), "
              f"against probs·{n}", inputs={"probs": p})
        close(counts[p == 0], np.zeros(int(np.sum(p == 0))), "draws of the tokens of probability 0")


def test_sample_index_never_returns_a_token_of_probability_zero_even_at_the_end(ch):
    """with trailing zeros, u just below 1 gives the last token of non-zero probability"""
    p = np.array([0.5, 0.5, 0.0, 0.0])
    for u in (0.5, 0.999999, 1 - 1e-16):
        close(returned(ch.sample_index(p, u), "int", f"sample_index({p.tolist()}, {u})"), 1,
              f"sample_index({p.tolist()}, u = {u!r}): token 1, the last of non-zero probability")
    tenths, u = np.array([0.1] * 10 + [0.0]), float(np.nextafter(1.0, 0.0))  # ten 0.1s add up to just below 1
    close(returned(ch.sample_index(tenths, u), "int", "sample_index"), 9,
          f"sample_index(ten 0.1s and a 0, u = {u!r}): the running sums end at 0.9999999999999999, not above u, so "
          "the answer is the last token of non-zero probability, 9 (not 10, whose probability is 0)")


@pytest.mark.parametrize("case", range(SNAP.count("choose")))
def test_choose_next_on_other_sizes(ch, case):
    """choose_next with top-p, top-k, both, and greedy, on 9, 12, 15 and 6 logits, 25 draws each"""
    k = f"choose/{case}"
    z, us, T = SNAP[f"{k}/logits"], SNAP[f"{k}/us"], SNAP.number(f"{k}/temperature")
    kw = {"temperature": T, "top_k": option(k, "top_k"), "top_p": option(k, "top_p")}
    got = [returned(ch.choose_next(z, float(u), **kw), "int", f"choose_next(logits, {u}, **{kw})") for u in us]
    close(np.array(got), SNAP[f"{k}/out"], f"choose_next, {len(z)} logits, {kw}", inputs={"logits": z},
          mistakes=[(MULTIPLIED, SNAP[f"{k}/multiplied"])] if T else [])


def test_choose_next_defaults_to_temperature_one_without_filters(ch):
    """choose_next(logits, u) with nothing else draws from softmax(z) itself: temperature 1, no top-k, no top-p"""
    z = SNAP["choose/1/logits"] / 4  # a flat distribution: every u draws what T = 1 says, not what T = 2 would
    for u in (0.05, 0.3, 0.55, 0.8, 0.97):
        want = ch.sample_index(ch.softmax_with_temperature(z, 1.0), u)
        close(returned(ch.choose_next(z, u), "int", "choose_next(logits, u)"), want,
              f"choose_next(logits, u = {u}) against sample_index(softmax_with_temperature(logits, 1), u), your own "
              "functions: the defaults are temperature 1.0, top_k None, top_p None")


def test_choose_next_at_temperature_zero_is_the_argmax(ch):
    """temperature 0 is greedy: the largest logit, the first on ties, whatever u, top_k and top_p are"""
    for z in (RNG.normal(size=7), RNG.normal(size=30), np.array([1.0, 3.0, 3.0, 0.0])):
        for u in (0.0, 0.5, 0.999):
            close(returned(ch.choose_next(z, u, temperature=0.0), "int", "choose_next at temperature 0"),
                  int(np.argmax(z)), f"choose_next(logits, u = {u}, temperature = 0) of {z.round(3).tolist()}",
                  mistakes=[("the last maximum on ties", len(z) - 1 - int(np.argmax(z[::-1])))])
        close(returned(ch.choose_next(z, 0.3, temperature=0, top_k=2, top_p=0.5), "int", "choose_next"),
              int(np.argmax(z)), "choose_next at temperature 0 with top_k and top_p given")


# -- beyond the worksheet: the KV cache against the full forward -------------------------------------------
@pytest.mark.parametrize("case", range(SNAP.count("attention")))
def test_attention_with_cache_gives_the_rows_of_full_attention(ch, case):
    """the new rows' attention equals rows t… of chapter 13's full attention: (t, m, d_model, heads) = (3, 1, 8, 2), (4, 3, 8, 2), (0, 5, 4, 1), (6, 2, 16, 4), (2, 2, 12, 3)"""
    k = f"attention/{case}"
    x, params, n, t = SNAP[f"{k}/x"], SNAP.tree(f"{k}/params"), SNAP.number(f"{k}/n_heads"), SNAP.number(f"{k}/t")
    K, V = SNAP[f"{k}/K"], SNAP[f"{k}/V"]
    cache = None if t == 0 else {"K": K[:, :t].copy(), "V": V[:, :t].copy()}
    out, new = cache_pair(ch.attention_with_cache(x[t:], params, n, cache), "attention_with_cache")
    what = f"attention_with_cache, {t} cached, {len(x) - t} new, d_model {x.shape[1]}, {n} heads"
    close(out, SNAP[f"{k}/out"], what, **EXACT, kind="array",
          mistakes=[(RESTART, SNAP[f"{k}/restart"]), (TWICE, SNAP[f"{k}/twice"]), (UNMASKED, SNAP[f"{k}/unmasked"]),
                    (KEYS_AT_ZERO, SNAP[f"{k}/keys_at_zero"]), (KEYS_FIRST, SNAP[f"{k}/keys_first"])])
    close(new["K"], K, f"{what}: the new cache's K, every key rotated at its own position", **EXACT, kind="array")
    close(new["V"], V, f"{what}: the new cache's V, the values as they are", **EXACT, kind="array")


@pytest.mark.parametrize("case", range(SNAP.count("block")))
def test_block_with_cache_gives_the_rows_of_the_full_block(ch, case):
    """the new rows equal rows t… of chapter 13's prenorm_block: (t, m, d_model, d_ff, heads) = (3, 1, 8, 12, 2), (2, 3, 4, 6, 1), (5, 2, 16, 8, 4)"""
    k = f"block/{case}"
    x, params, n, t = SNAP[f"{k}/x"], SNAP.tree(f"{k}/params"), SNAP.number(f"{k}/n_heads"), SNAP.number(f"{k}/t")
    K, V = SNAP[f"{k}/K"], SNAP[f"{k}/V"]
    y, new = cache_pair(ch.block_with_cache(x[t:], params, n, {"K": K[:, :t].copy(), "V": V[:, :t].copy()}),
                        "block_with_cache")
    what = f"block_with_cache, {t} cached, {len(x) - t} new, d_model {x.shape[1]}, {n} heads"
    close(y, SNAP[f"{k}/y"], what, **EXACT, kind="array",
          mistakes=[(RESTART, SNAP[f"{k}/restart"]), (G1_TWICE, SNAP[f"{k}/g1_twice"])])
    close(new["K"], K, f"{what}: the new cache's K (the normalised rows' keys, rotated)", **EXACT, kind="array")
    close(new["V"], V, f"{what}: the new cache's V", **EXACT, kind="array")


@pytest.mark.parametrize("case", range(SNAP.count("model")))
def test_every_decoded_step_equals_the_full_forward(ch, case):
    """prefill, then decode in chunks: every row's logits equal the full forward's (no cache) to 1e-10; 4 models"""
    k = f"model/{case}"
    model, n = model_of(k)
    ids, chunks, full = SNAP[f"{k}/ids"], [int(c) for c in SNAP[f"{k}/chunks"]], SNAP[f"{k}/logits"]
    caches, at = None, 0
    shape = f"vocab {full.shape[1]}, d_model {model['tok_emb'].shape[1]}, {len(model['blocks'])} blocks, {n} heads"
    for size in chunks:
        given = caches
        logits, caches = forward_pair(ch.gpt_forward(ids[at:at + size], model, n, caches),
                                      f"gpt_forward of ids {ids[at:at + size].tolist()} after {at} cached positions")
        close(logits, full[at:at + size], f"gpt_forward of ids {ids[at:at + size].tolist()} after {at} cached "
              f"positions ({shape}): the full forward's rows {at}…{at + size - 1}", **EXACT, kind="array",
              mistakes=[(RESTART, SNAP[f"{k}/restart"][at:at + size]), (TWICE, SNAP[f"{k}/twice"][at:at + size]),
                        (UNMASKED, SNAP[f"{k}/unmasked"][at:at + size]),
                        (KEYS_AT_ZERO, SNAP[f"{k}/keys_at_zero"][at:at + size]),
                        (KEYS_FIRST, SNAP[f"{k}/keys_first"][at:at + size]),
                        (BLOCK0, SNAP[f"{k}/block0_cache"][at:at + size])])
        at += size
        caches = caches_of(caches, f"gpt_forward after {at} positions", len(model["blocks"]), given)
        for b, cache in enumerate(caches):
            close(np.shape(cache["K"]), (n, at, model["tok_emb"].shape[1] // n),
                  f"block {b}'s cache after {at} positions: K of shape (n_heads, {at}, d_head)")


def test_gpt_forward_without_caches_is_the_full_forward(ch):
    """caches=None over the whole sequence at once gives every row of the full forward"""
    for case in range(SNAP.count("model")):
        k = f"model/{case}"
        model, n = model_of(k)
        logits, _ = forward_pair(ch.gpt_forward(SNAP[f"{k}/ids"], model, n), "gpt_forward with no caches")
        close(logits, SNAP[f"{k}/logits"], f"gpt_forward of all {len(SNAP[f'{k}/ids'])} ids, no caches", **EXACT,
              kind="array", mistakes=[(UNMASKED, SNAP[f"{k}/unmasked"])])


def test_a_cache_can_be_decoded_from_twice(ch):
    """the same next token decoded twice from the same caches gives the full forward's row both times (caches kept)"""
    model, n = model_of("model/0")
    ids = SNAP["model/0/ids"]
    _, caches = forward_pair(ch.gpt_forward(ids[:3], model, n), "gpt_forward of 3 ids with no caches")
    caches_of(caches, "gpt_forward of 3 ids with no caches", len(model["blocks"]))
    first, _ = forward_pair(ch.gpt_forward(ids[3:4], model, n, caches), "gpt_forward of the next id")
    again, _ = forward_pair(ch.gpt_forward(ids[3:4], model, n, caches), "gpt_forward of the next id, again")
    close(again, first, "the same next token decoded twice from the same caches (the first call must leave them as "
          "they were)", **EXACT, kind="array")
    close(first, SNAP["model/0/logits"][3:4], "the decode from the caches against the full forward", **EXACT)


@pytest.mark.parametrize("case", range(SNAP.count("generate")))
def test_generate_picks_what_the_full_forward_picks_at_every_step(ch, case):
    """generate's ids are choose_next of the full forward at every step: sampling, top-k, top-p and greedy"""
    k = f"generate/{case}"
    model, n = model_of(k)
    prompt, us = [int(i) for i in SNAP[f"{k}/prompt"]], [float(u) for u in SNAP[f"{k}/us"]]
    kw = {"temperature": SNAP.number(f"{k}/temperature"), "top_k": option(k, "top_k"), "top_p": option(k, "top_p")}
    kw = {name: v for name, v in kw.items() if v != {"temperature": 1.0}.get(name)}  # the defaults left to generate
    got = ints(ch.generate(prompt, model, n, us, **kw), "generate")
    close(np.array(got), SNAP[f"{k}/ids"], f"generate({prompt}, {len(us)} draws, {kw})",
          mistakes=[(FIRST_ROW, SNAP[f"{k}/first_row"])])


def test_generate_returns_one_id_per_draw_and_none_for_no_draws(ch):
    """len(us) new ids, the prompt not included; no draws: an empty list"""
    model, n = model_of("generate/0")
    close(len(ints(ch.generate([1], model, n, [0.5, 0.1]), "generate")), 2, "len(generate(prompt, us = 2 draws))")
    close(len(ints(ch.generate([1, 2, 3], model, n, []), "generate")), 0, "len(generate(prompt, us = []))")


def test_nothing_given_is_modified(ch):
    """logits, probs, x_new, params, the cache, the model and the caches are as they were after every call"""
    z, p = RNG.normal(size=6), RNG.dirichlet(np.ones(6))
    k = "attention/1"
    x, params, t = SNAP[f"{k}/x"], SNAP.tree(f"{k}/params"), SNAP.number(f"{k}/t")
    cache = {"K": SNAP[f"{k}/K"][:, :t].copy(), "V": SNAP[f"{k}/V"][:, :t].copy()}
    block, bt = SNAP.tree("block/0/params"), SNAP.number("block/0/t")
    bcache = {"K": SNAP["block/0/K"][:, :bt].copy(), "V": SNAP["block/0/V"][:, :bt].copy()}
    model, n = model_of("model/0")
    ids = SNAP["model/0/ids"].copy()
    arrays = {"logits": z, "probs": p, "x": x, **{f"params[{key}]": v for key, v in params.items()},
              "cache K": cache["K"], "cache V": cache["V"], "block cache K": bcache["K"], "ids": ids,
              "tok_emb": model["tok_emb"], "W_out": model["W_out"], "WQ of block 0": model["blocks"][0]["WQ"]}
    before = {name: a.copy() for name, a in arrays.items()}
    ch.softmax_with_temperature(z, 0.7)
    ch.top_k_filter(p, 3)
    ch.top_p_filter(p, 0.6)
    ch.sample_index(p, 0.4)
    ch.choose_next(z, 0.4, temperature=0.9, top_k=4, top_p=0.8)
    ch.attention_with_cache(x[t:], params, 2, cache)
    ch.block_with_cache(SNAP["block/0/x"][bt:], block, SNAP.number("block/0/n_heads"), bcache)
    _, caches = forward_pair(ch.gpt_forward(ids[:3], model, n), "gpt_forward of 3 ids with no caches")
    caches = caches_of(caches, "gpt_forward of 3 ids with no caches", len(model["blocks"]))
    kept = [{"K": c["K"].copy(), "V": c["V"].copy()} for c in caches]
    ch.gpt_forward(ids[3:5], model, n, caches)
    ch.generate(ids[:2], model, n, [0.3, 0.6])
    for name, a in arrays.items():
        close(a, before[name], f"{name} after the chapter's functions")
    for b, (c, k0) in enumerate(zip(caches, kept, strict=True)):
        close(c["K"], k0["K"], f"block {b}'s cache K after gpt_forward decoded from it")


# -- bad input gets a clear error ------------------------------------------------------------------
def test_a_temperature_that_is_not_above_zero_is_refused(ch):
    """T = 0 or negative: softmax_with_temperature (and choose_next, generate through it) raise ValueError naming it"""
    z = np.array([1.0, 3.0, 2.0, 2.0])
    for T in (0.0, -1.0, -0.5):
        raises_clearly(lambda T=T: ch.softmax_with_temperature(z, T), ValueError, names=("temperature",),
                       hint="T = 0 is greedy, choose_next's; z / T means nothing there, nor for T < 0")
    raises_clearly(lambda: ch.choose_next(z, 0.5, temperature=-0.5), ValueError, names=("temperature",))
    model, n = model_of("model/0")
    raises_clearly(lambda: ch.generate([1], model, n, [0.5], temperature=-1.0), ValueError, names=("temperature",))


@pytest.mark.given
def test_sampling_names_a_bad_temperature_k_p_or_u(ch):
    """T nan, inf, a string or a bool; k = 0, 2.0 or True; p = 0, 1.5 or nan; u = −0.1, 1 or nan: ValueError naming it"""
    z, p = np.array([1.0, 3.0, 0.0, 2.0]), np.array([0.25, 0.5, 0.0, 0.25])
    for T in (np.nan, np.inf, "2", True, [2.0], None):
        raises_clearly(lambda T=T: ch.softmax_with_temperature(z, T), ValueError, names=("temperature",))
    for T in (np.float32(2.0), np.array(2.0), 2):  # a NumPy float, a 0-d array and an int are numbers
        close(ch.softmax_with_temperature(z, T), ch.softmax_with_temperature(z, 2.0),
              f"softmax_with_temperature(logits, {T!r}) against the same at T = 2.0, your own function", kind="array")
    for T in ("1", -np.inf):
        raises_clearly(lambda T=T: ch.choose_next(z, 0.5, temperature=T), ValueError, names=("temperature",))
    for k in (0, 2.0, True, -1):
        raises_clearly(lambda k=k: ch.top_k_filter(p, k), ValueError, names=("k",))
    for top in (0.0, 1.5, np.nan, -0.2, True, "0.5"):
        raises_clearly(lambda top=top: ch.top_p_filter(p, top), ValueError, names=("p",))
    for u in (-0.1, 1.0, np.nan, 2.0, "0.5", False):
        raises_clearly(lambda u=u: ch.sample_index(p, u), ValueError, names=("u",))
    for u in (np.float32(0.3), np.array(0.3), 0):  # a NumPy float, a 0-d array and an int are numbers
        close(returned(ch.sample_index(p, u), "int", f"sample_index(probs, {u!r})"), 0 if u == 0 else 1,
              f"sample_index({p.tolist()}, u = {u!r})")
    raises_clearly(lambda: ch.choose_next(z, 1.5), ValueError, names=("u",))


@pytest.mark.given
def test_sampling_names_bad_logits_or_probs(ch):
    """logits not 1-D, empty or with nan; probs negative, not summing to 1 or not 1-D: ValueError naming them"""
    raises_clearly(lambda: ch.softmax_with_temperature(np.ones((2, 2)), 1.0), ValueError, names=("logits",))
    raises_clearly(lambda: ch.softmax_with_temperature(np.zeros(0), 1.0), ValueError, names=("logits",))
    raises_clearly(lambda: ch.softmax_with_temperature(np.array([1.0, np.nan]), 1.0), ValueError, names=("logits",))
    raises_clearly(lambda: ch.choose_next(np.array([1.0, np.inf]), 0.5), ValueError, names=("logits",))
    for bad in (np.array([0.5, -0.1, 0.6]), np.array([0.5, 0.2, 0.2]), np.ones((2, 2)) / 4, np.zeros(0)):
        raises_clearly(lambda bad=bad: ch.top_k_filter(bad, 1), ValueError, names=("probs",))
        raises_clearly(lambda bad=bad: ch.top_p_filter(bad, 0.5), ValueError, names=("probs",))
        raises_clearly(lambda bad=bad: ch.sample_index(bad, 0.5), ValueError, names=("probs",))


@pytest.mark.given
def test_the_cached_attention_names_what_does_not_fit(ch):
    """x_new not 2-D, bad heads, a missing weight, a cache without V or of the wrong shape: ValueError naming it"""
    x, W = np.ones((1, 8)), {k: np.eye(8) for k in ("WQ", "WK", "WV", "WO")}
    cache = {"K": np.zeros((2, 3, 4)), "V": np.zeros((2, 3, 4))}
    raises_clearly(lambda: ch.attention_with_cache(np.ones(8), W, 2, cache), ValueError, "(8,)", names=("x_new",))
    raises_clearly(lambda: ch.attention_with_cache(np.ones((0, 8)), W, 2, cache), ValueError, names=("x_new",))
    raises_clearly(lambda: ch.attention_with_cache(x, W, 3, None), ValueError, "divisible")
    raises_clearly(lambda: ch.attention_with_cache(np.ones((1, 6)), {k: np.eye(6) for k in W}, 2, None), ValueError,
                   "odd")
    for bad in (True, 0, 2.0):
        raises_clearly(lambda bad=bad: ch.attention_with_cache(x, W, bad, None), ValueError, names=("n_heads",))
    raises_clearly(lambda: ch.attention_with_cache(np.ones((1, 1)), {k: np.eye(1) for k in W}, 1, None), ValueError,
                   "odd", hint="one feature and one head: d_head = 1 is odd, RoPE needs pairs")
    raises_clearly(lambda: ch.attention_with_cache(x, list(W.values()), 2, None), ValueError, "list", names=("params",))
    raises_clearly(lambda: ch.attention_with_cache(x, dict(W, WK=np.ones((8, 4))), 2, None), ValueError, "(8, 4)",
                   names=("WK",))
    raises_clearly(lambda: ch.attention_with_cache(x, {k: v for k, v in W.items() if k != "WO"}, 2, None),
                   ValueError, names=("WO",))
    raises_clearly(lambda: ch.attention_with_cache(x, W, 2, {"K": cache["K"]}), ValueError, names=("cache", "V"))
    raises_clearly(lambda: ch.attention_with_cache(x, W, 2, [cache["K"], cache["V"]]), ValueError, "list",
                   names=("cache",))
    for shape in ((4, 3, 4), (2, 3, 2), (3, 4), (4, 3, 2)):  # the wrong heads, the wrong width, 2-D, both wrong
        raises_clearly(lambda shape=shape: ch.attention_with_cache(x, W, 2, {"K": np.zeros(shape), "V": np.zeros(shape)}),
                       ValueError, str(shape), names=("cache", "K"))
    raises_clearly(lambda: ch.attention_with_cache(x, W, 2, {"K": cache["K"], "V": np.zeros((2, 2, 4))}),
                   ValueError, "(2, 2, 4)", names=("cache", "V"))
    raises_clearly(lambda: ch.block_with_cache(x, {k: v for k, v in W.items()}, 2, None), ValueError, names=("g1",))
    block = SNAP.tree("block/0/params")
    raises_clearly(lambda: ch.block_with_cache(x, list(block.values()), 2, None), ValueError, "list", names=("params",))
    raises_clearly(lambda: ch.block_with_cache(x, dict(block, bias=np.zeros(8)), 2, None), ValueError, "bias",
                   hint="the message should name the key that does not belong, so a misspelt one shows")
    for key in ("g1", "g2"):
        raises_clearly(lambda key=key: ch.block_with_cache(x, dict(block, **{key: np.ones(5)}), 2, None), ValueError,
                       "(5,)", names=(key,))
    raises_clearly(lambda: ch.block_with_cache(np.ones(8), block, 2, None), ValueError, "(8,)", names=("x_new",))


@pytest.mark.given
def test_the_model_names_what_does_not_fit(ch):
    """an id outside the vocabulary, ids not whole numbers, a missing model key, caches of the wrong length"""
    model, n = model_of("model/0")
    vocab = model["tok_emb"].shape[0]
    raises_clearly(lambda: ch.gpt_forward(np.array([1, vocab + 2]), model, n), ValueError, str(vocab + 2))
    raises_clearly(lambda: ch.gpt_forward(np.array([1, vocab]), model, n), ValueError, str(vocab))
    raises_clearly(lambda: ch.gpt_forward(np.array([1, -1]), model, n), ValueError, "-1")
    raises_clearly(lambda: ch.gpt_forward(np.array([1.0, 2.0]), model, n), ValueError, names=("ids",))
    raises_clearly(lambda: ch.gpt_forward(np.array([], dtype=int), model, n), ValueError, names=("ids",))
    raises_clearly(lambda: ch.gpt_forward(np.array([1]), {k: v for k, v in model.items() if k != "W_out"}, n),
                   ValueError, names=("W_out",))
    raises_clearly(lambda: ch.gpt_forward(np.array([1]), dict(model, g_final=np.ones(3)), n), ValueError, "(3,)",
                   names=("g_final",))
    raises_clearly(lambda: ch.gpt_forward(np.array([1]), dict(model, W_out=np.ones((8, 3))), n), ValueError, "(8, 3)",
                   names=("W_out",))
    raises_clearly(lambda: ch.gpt_forward(np.array([1]), dict(model, tok_emb=np.ones(8)), n), ValueError, "(8,)",
                   names=("tok_emb",))
    raises_clearly(lambda: ch.gpt_forward(np.array([1]), list(model.values()), n), ValueError, "list", names=("model",))
    for bad in ([], {"0": model["blocks"][0]}):
        raises_clearly(lambda bad=bad: ch.gpt_forward(np.array([1]), dict(model, blocks=bad), n), ValueError,
                       names=("blocks",))
    _, caches = ch.gpt_forward(np.array([1, 2]), model, n)
    raises_clearly(lambda: ch.gpt_forward(np.array([3]), model, n, caches[:1]), ValueError, "1", "2",
                   names=("caches",))
    raises_clearly(lambda: ch.gpt_forward(np.array([3]), model, n, dict(enumerate(caches))), ValueError, "dict",
                   names=("caches",))
    raises_clearly(lambda: ch.generate([], model, n, [0.5]), ValueError, names=("prompt_ids",))
