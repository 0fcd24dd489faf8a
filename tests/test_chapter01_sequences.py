"""Chapter 1: Why Transformers? — tokens, next-token examples, and how far information travels.

The book's chapter 1 has no worksheet; its facts (the four-token vocabulary, predicting the next token,
"sat" reaching back to "cat") become the steps in reference/chapter01_sequences.toml.
"""

import numpy as np
import pytest

from kata import close, expect, raises_clearly
from kata.judge.checks import plain

CHAPTER = 1
RNG = np.random.default_rng(1)


@pytest.mark.step("1.1")
def test_a_b_encodes_to_zero_one(ch, ws):
    expect(ws, ch.encode(ws.input("text")))


@pytest.mark.step("1.2")
def test_two_three_zero_decodes_to_c_d_a(ch, ws):
    expect(ws, ch.decode(ws.inputs["ids"]))


@pytest.mark.step("1.3")
def test_every_prefix_predicts_the_token_after_it(ch, ws):
    expect(ws, ch.next_token_examples(ws.inputs["ids"]))


@pytest.mark.step("1.4")
def test_an_rnn_needs_five_hops_from_cat_to_sat(ch, ws):
    expect(ws, ch.rnn_distance(ws.inputs["i"], ws.inputs["j"]), kind="int")


@pytest.mark.step("1.5")
def test_attention_needs_one_hop_from_cat_to_sat(ch, ws):
    expect(ws, ch.attention_distance(ws.inputs["i"], ws.inputs["j"]), kind="int")


@pytest.mark.step("1.6")
def test_causal_attention_scores_21_pairs_for_six_tokens(ch, ws):
    expect(ws, ch.causal_pair_count(ws.inputs["n"]), kind="int")


# -- beyond the worksheet ----------------------------------------------------------------------------
def test_encode_then_decode_gives_the_text_back(ch):
    """decode(encode(text)) == text for random texts of many lengths"""
    vocab = ("A", "B", "C", "D")
    for n in (0, 1, 5, 12):
        ids = [int(i) for i in RNG.integers(0, 4, size=n)]
        text = " ".join(vocab[i] for i in ids)
        try:
            got = ch.encode(text)
        except ValueError as err:
            pytest.fail(f"encode({text!r}) raised ValueError: {err}", pytrace=False)
        assert plain(got) == ids, f"encode({text!r}) gave {got!r}, expected {ids!r}"
        try:
            back = ch.decode(ids)
        except ValueError as err:
            pytest.fail(f"decode({ids!r}) raised ValueError: {err}", pytrace=False)
        assert back == text, f"decode({ids!r}) gave {back!r}, expected {text!r}"


def test_encode_ignores_extra_white_space(ch):
    """encode("  A   B  C ") with tabs and runs of spaces is [0, 1, 2]"""
    got = ch.encode("  A   B\tC ")
    assert plain(got) == [0, 1, 2], f"encode('  A   B\\tC ') gave {got!r}"


@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_next_token_examples_on_other_lengths(ch, n):
    """n tokens give n − 1 examples, each a prefix and the token after it"""
    ids = [int(i) for i in RNG.integers(0, 4, size=n)]
    want = [[ids[:k], ids[k]] for k in range(1, n)]
    got = ch.next_token_examples(ids)
    assert plain(got) == want, f"next_token_examples({ids}) gave {got!r}, expected {want!r}"


def test_distances_on_many_pairs(ch):
    """RNN distance is |i − j|; attention distance is 1 between different positions, 0 to itself"""
    for i, j in [(0, 0), (0, 9), (9, 0), (3, 4), (17, 2)]:
        r = ch.rnn_distance(i, j)
        a = ch.attention_distance(i, j)
        close(r, abs(i - j), f"rnn_distance({i}, {j})", kind="int")
        close(a, 0 if i == j else 1, f"attention_distance({i}, {j})", mistakes=[("the RNN's distance", abs(i - j))],
              kind="int")


@pytest.mark.parametrize("n", [0, 1, 2, 10, 100])
def test_causal_pair_count_matches_counting_the_mask(ch, n):
    """causal_pair_count(n) equals the number of (i, j) with j <= i, counted in a loop"""
    want = sum(1 for i in range(n) for j in range(n) if j <= i)
    close(ch.causal_pair_count(n), want, f"causal_pair_count({n})", mistakes=[("n², every pair", n * n)], kind="int")


@pytest.mark.given
def test_an_unknown_token_is_named(ch):
    """encode("A X") raises ValueError naming 'X'"""
    raises_clearly(lambda: ch.encode("A X"), ValueError, "'X'")


@pytest.mark.given
@pytest.mark.parametrize("bad", [4, -1])
def test_an_id_outside_the_vocabulary_is_named(ch, bad):
    """decode([0, 4]) and decode([0, -1]) raise ValueError naming the id and the range 0..3"""
    raises_clearly(lambda: ch.decode([0, bad]), ValueError, str(bad), "0..3")


@pytest.mark.given
@pytest.mark.parametrize("bad", [True, 1.0])
def test_an_id_that_is_not_an_int_is_refused(ch, bad):
    """decode([0, True]) and decode([0, 1.0]) raise ValueError naming the id: a bool or a float is not a token id"""
    raises_clearly(lambda: ch.decode([0, bad]), ValueError, str(bad),
                   hint="an id must be an int and not a bool (True would silently read as 1): check "
                   "isinstance(i, bool) or not isinstance(i, int), with or between them")


@pytest.mark.given
def test_negative_positions_and_counts_are_refused(ch):
    """negative positions or token counts raise ValueError"""
    raises_clearly(lambda: ch.rnn_distance(-1, 2), ValueError, "-1")
    raises_clearly(lambda: ch.attention_distance(0, -3), ValueError, "-3")
    raises_clearly(lambda: ch.causal_pair_count(-2), ValueError, "-2")
