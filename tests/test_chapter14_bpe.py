"""Chapter 14: Byte-Pair Encoding — the course's own worksheet (Part II goes beyond the book), and beyond.

The worksheet: the text "aaabéaaabaca." (13 characters, 14 bytes) becomes byte ids, its pairs are counted (the
run aaa holds (a, a) twice), five merges are learned (the second a tie won by the smaller first id, the last two
of pairs seen once, the fourth a tie won by the smaller second id), the vocabulary is built, and the word "abaabé" is encoded with the merges in the order learned and decoded back.
Beyond it: every function on seeded texts and id lists with runs, ties and two- to four-byte characters
against stored snapshots (tests/snapshots/chapter14.npz: texts as code points, merges as rows (a, b, new_id),
the reference's results and the values classic mistakes give, written by the authors), round trips on random
Unicode text, training that runs out of pairs, inputs left untouched, and bad input. Nothing here computes
what a function of the chapter computes.
"""

import numpy as np
import pytest
from pytest_check import check

from kata import DidNotReturn, OverBudget, close, expect, raises_clearly, snapshot

CHAPTER = 14
SNAP = snapshot(CHAPTER)

NON_OVERLAPPING = "a run counted without overlap: \"aaa\" holds (a, a) once instead of twice"
TIES = "ties broken another way: the largest pair, or the first one counted, instead of the smallest"
FROM_RIGHT = "merged from the right: \"aaa\" became \"a\" + \"aa\" instead of \"aa\" + \"a\""
RIGHT_FIRST = "the right token's bytes put first"
BY_FREQUENCY = "merges applied most frequent first in this text instead of in the order learned"
REVERSED = "merges applied from the last learned to the first"
PER_TOKEN = "every token decoded on its own: a character's bytes split across tokens became �"
FIRST_ID = ("a tie broken on the first id only: among tied pairs with the same first id, the first one counted won "
            "instead of the smaller second id")
STOPPED = "training stopped while a pair still occurs: a pair seen once is still merged"
LAST_LEFT_OUT = "the last pair left out: the window stopped one position short"
LAST_DROPPED = "the last id dropped: the scan stopped one short of the end"
RECOUNTED = ("the text recounted at every merge: each of the 256 merges reads the whole text again, where only the "
             "pairs around the merged occurrences change")
NO_MERGES = []  # a tokenizer of the 256 bytes alone


def text_of(points) -> str:
    """A stored text: its code points back into a str."""
    return "".join(chr(int(c)) for c in points)


def as_merges(rows) -> list:
    """Stored rows (a, b, new_id) as the list of ((a, b), new_id) the functions take."""
    return [((int(a), int(b)), int(t)) for a, b, t in rows]


def rows_of(merges, what: str) -> np.ndarray:
    """A list of ((a, b), new_id) as rows (a, b, new_id), or a failure saying what came instead."""
    try:
        return np.array([[p[0], p[1], t] for p, t in merges], dtype=np.int64).reshape(-1, 3)
    except (TypeError, ValueError, IndexError, KeyError):
        pytest.fail(f"{what}: expected a list of ((a, b), new_id), got {merges!r:.300}", pytrace=False)


def table_of(counts, what: str) -> np.ndarray:
    """A dict {(a, b): count} as rows (a, b, count) sorted by pair, or a failure saying what came instead."""
    if not isinstance(counts, dict):
        pytest.fail(f"{what}: expected a dict from pairs to counts, got {type(counts).__name__}: {counts!r:.300}",
                    pytrace=False)
    try:
        return np.array(sorted([p[0], p[1], c] for p, c in counts.items()), dtype=np.int64).reshape(-1, 3)
    except (TypeError, ValueError, IndexError):
        pytest.fail(f"{what}: expected keys (a, b) and whole-number counts, got {counts!r:.300}", pytrace=False)


def vocab_with(tokens) -> dict:
    """The 256 single bytes and the stored tokens 256, 257, … (the test's own vocabulary for decode)."""
    vocab = {i: bytes([i]) for i in range(256)}
    vocab.update({256 + j: bytes(int(b) for b in tok) for j, tok in enumerate(tokens)})
    return vocab


def list_of_ints(got, what: str) -> None:
    """The docstring promises a list of ints."""
    with check:
        assert isinstance(got, list) and all(isinstance(i, int | np.integer) and not isinstance(i, bool) for i in got), (
            f"{what}: the docstring promises a list of ints, got {type(got).__name__}: {got!r:.200}")


# -- the worksheet, step by step -------------------------------------------------------------------
@pytest.mark.step("14.1")
def test_thirteen_characters_make_fourteen_byte_ids(ch, ws):
    got = ch.to_byte_ids(ws.inputs["text"])
    list_of_ints(got, "to_byte_ids")
    expect(ws, got)


@pytest.mark.step("14.2")
def test_the_run_aaa_holds_the_pair_a_a_twice(ch, ws):
    got = ch.count_pairs([int(i) for i in ws.inputs["ids"]])
    expect(ws, [[[int(a), int(b)], int(c)] for a, b, c in table_of(got, "count_pairs")])


@pytest.mark.step("14.3")
def test_a_tie_goes_to_the_smaller_pair(ch, ws):
    counts = {tuple(p): c for p, c in ws.inputs["counts"]}
    expect(ws, ch.most_frequent_pair(counts))


@pytest.mark.step("14.4")
def test_merging_a_a_reads_aaa_as_aa_then_a(ch, ws):
    got = ch.merge_pair([int(i) for i in ws.inputs["ids"]], tuple(ws.inputs["pair"]), ws.inputs["new_id"])
    list_of_ints(got, "merge_pair")
    expect(ws, got)


@pytest.mark.step("14.5")
def test_five_merges_the_last_two_of_pairs_seen_once(ch, ws):
    expect(ws, ch.train_bpe(ws.inputs["text"], ws.inputs["vocab_size"]))


@pytest.mark.step("14.6")
def test_token_258_stands_for_aaab(ch, ws):
    merges = [(tuple(p), t) for p, t in ws.inputs["merges"]]
    vocab = ch.build_vocab(merges)
    expect(ws, [list(vocab[t]) if t in vocab else None for _, t in merges])


@pytest.mark.step("14.7")
def test_abaabe_is_encoded_with_the_merges_in_the_order_learned(ch, ws):
    got = ch.encode(ws.inputs["text"], [(tuple(p), t) for p, t in ws.inputs["merges"]])
    list_of_ints(got, "encode")
    expect(ws, got)


@pytest.mark.step("14.8")
def test_the_bytes_of_e_acute_are_joined_before_decoding(ch, ws):
    vocab = vocab_with([tok for _, tok in ws.inputs["tokens"]])
    expect(ws, ch.decode(list(ws.inputs["ids"]), vocab))


# -- beyond the worksheet: other texts and ids, against the stored snapshot ------------------------------
@pytest.mark.parametrize("i", range(SNAP.count("bytes")))
def test_to_byte_ids_gives_every_utf8_byte_of_any_text(ch, i):
    """to_byte_ids on random Unicode texts of 0, 1, 7 and 30 characters (ASCII, Latin, kana, CJK, emoji)"""
    text = text_of(SNAP[f"bytes/{i}/text"])
    got = ch.to_byte_ids(text)
    list_of_ints(got, f"to_byte_ids({text!r})")
    close(got, SNAP[f"bytes/{i}/ids"], f"to_byte_ids({text!r})")


@pytest.mark.parametrize("i", range(SNAP.count("pairs")))
def test_count_pairs_counts_every_adjacent_position(ch, i):
    """count_pairs on ids of length 0, 1, 2, 13, 40 and 60 with runs: rows (a, b, count) sorted by pair"""
    ids = [int(x) for x in SNAP[f"pairs/{i}/ids"]]
    got = table_of(ch.count_pairs(ids), f"count_pairs of {len(ids)} ids")
    close(got, SNAP[f"pairs/{i}/counts"], f"count_pairs({ids}) as rows (a, b, count)",
          mistakes=[(NON_OVERLAPPING, SNAP[f"pairs/{i}/non_overlapping"]),
                    (LAST_LEFT_OUT, SNAP[f"pairs/{i}/last_left_out"])])
    with check:
        assert int(got[:, 2].sum()) == max(len(ids) - 1, 0), (
            f"count_pairs of {len(ids)} ids: the counts add up to {int(got[:, 2].sum())}, not to one per adjacent "
            f"position ({max(len(ids) - 1, 0)})")


@pytest.mark.parametrize("i", range(SNAP.count("best")))
def test_most_frequent_pair_takes_the_smallest_of_tied_pairs(ch, i):
    """most_frequent_pair of 1, 4, 9, 16 counts (half tied at the top, shuffled), 4 and 6 (ties sharing a first id)"""
    rows = SNAP[f"best/{i}/counts"]
    counts = {(int(a), int(b)): int(c) for a, b, c in rows}
    close(ch.most_frequent_pair(counts), SNAP[f"best/{i}/pair"], f"most_frequent_pair of {len(counts)} counts",
          inputs={"counts": rows}, mistakes=[(FIRST_ID, SNAP[f"best/{i}/first_id"]), (TIES, SNAP[f"best/{i}/largest"]),
                                             (TIES, SNAP[f"best/{i}/first"])])


@pytest.mark.parametrize("i", range(SNAP.count("merge")))
def test_merge_pair_reads_left_to_right_without_overlap(ch, i):
    """merge_pair on ids of length 0 to 40: runs of the pair (a, a), pairs (a, b) of two ids, the pair at the end"""
    ids = [int(x) for x in SNAP[f"merge/{i}/ids"]]
    pair = tuple(int(x) for x in SNAP[f"merge/{i}/pair"])
    new_id = int(SNAP[f"merge/{i}/new_id"][0])
    got = ch.merge_pair(ids, pair, new_id)
    list_of_ints(got, "merge_pair")
    close(got, SNAP[f"merge/{i}/out"], f"merge_pair({ids}, {pair}, {new_id})",
          mistakes=[(FROM_RIGHT, SNAP[f"merge/{i}/from_right"]), (LAST_DROPPED, SNAP[f"merge/{i}/last_dropped"])])


@pytest.mark.parametrize("i", range(SNAP.count("train")))
def test_train_bpe_learns_the_merges_in_order(ch, i):
    """train_bpe on texts of 3 to 200 characters from "aab é🙂c" or control bytes, 6 to 60 merges (one runs out)"""
    text, vocab_size = text_of(SNAP[f"train/{i}/text"]), int(SNAP[f"train/{i}/vocab_size"][0])
    got = rows_of(ch.train_bpe(text, vocab_size), "train_bpe")
    k = f"train/{i}"
    close(got, SNAP[f"{k}/merges"], f"train_bpe({text!r}, {vocab_size}) as rows (a, b, new_id)",
          mistakes=[(TIES, SNAP[f"{k}/largest"]), (TIES, SNAP[f"{k}/first"]), (FROM_RIGHT, SNAP[f"{k}/from_right"]),
                    (NON_OVERLAPPING, SNAP[f"{k}/non_overlapping"]), (FIRST_ID, SNAP[f"{k}/first_id"]),
                    (STOPPED, SNAP[f"{k}/stopped"])])


@pytest.mark.parametrize(("text", "vocab_size", "n_merges"),
                         [("", 300, 0), ("a", 300, 0), ("ab", 300, 1), ("aaaa", 300, 2), ("abc", 256, 0)])
def test_train_bpe_stops_when_no_pair_is_left(ch, text, vocab_size, n_merges):
    """training stops early once the text is one token (or empty); vocab_size 256 learns no merge"""
    got = rows_of(ch.train_bpe(text, vocab_size), "train_bpe")
    with check:
        assert len(got) == n_merges, (
            f"train_bpe({text!r}, {vocab_size}) learned {len(got)} merges, expected {n_merges}"
            + (f"\n  looks like: {STOPPED}" if len(got) < n_merges else ""))
    with check:
        assert got[:, 2].tolist() == list(range(256, 256 + len(got))), (
            f"train_bpe({text!r}, {vocab_size}): new ids {got[:, 2].tolist()}, expected 256, 257, … in turn")


@pytest.mark.parametrize("i", range(SNAP.count("train")))
def test_build_vocab_joins_the_left_token_then_the_right(ch, i):
    """build_vocab of the stored merges: the 256 single bytes, then every merge's tokens joined in order"""
    merges = as_merges(SNAP[f"train/{i}/merges"])
    vocab = ch.build_vocab(merges)
    with check:
        assert isinstance(vocab, dict) and sorted(vocab) == list(range(256 + len(merges))), (
            f"build_vocab of {len(merges)} merges must hold the ids 0 to {255 + len(merges)}, got "
            f"{sorted(vocab)[:5] if isinstance(vocab, dict) else type(vocab).__name__} …")
    with check:
        wrong = [b for b in range(256) if vocab.get(b) != bytes([b])]
        assert not wrong, f"build_vocab: ids {wrong[:5]} are not their own single byte (bytes([i]))"
    tokens = [bytes(int(b) for b in tok) for tok in SNAP.tree(f"train/{i}/tokens")] if merges else []
    flipped = [bytes(int(b) for b in tok) for tok in SNAP.tree(f"train/{i}/right_first")] if merges else []
    got = [vocab.get(t) for _, t in merges]
    if got != tokens:
        first = next(j for j, (g, w) in enumerate(zip(got, tokens, strict=True)) if g != w)
        named = f"\n  looks like: {RIGHT_FIRST}" if got == flipped else ""
        pytest.fail(f"build_vocab: token {256 + first} (the merge {merges[first][0]}) is {got[first]!r}, "
                    f"expected {tokens[first]!r}{named}", pytrace=False)


@pytest.mark.parametrize("i", range(SNAP.count("train")))
def test_encode_applies_the_merges_in_the_order_learned(ch, i):
    """encode of another text with the stored merges: every merge once, in the list's order"""
    k = f"train/{i}"
    text, merges = text_of(SNAP[f"{k}/other"]), as_merges(SNAP[f"{k}/merges"])
    got = ch.encode(text, merges)
    list_of_ints(got, "encode")
    close(got, SNAP[f"{k}/encoded"], f"encode({text!r}) with {len(merges)} merges",
          mistakes=[(BY_FREQUENCY, SNAP[f"{k}/by_frequency"]), (REVERSED, SNAP[f"{k}/reversed"])])


@pytest.mark.parametrize("i", range(SNAP.count("train")))
def test_decode_joins_the_bytes_before_decoding(ch, i):
    """decode of the stored ids with the stored tokens gives the text back, its multi-byte characters whole"""
    k = f"train/{i}"
    ids = [int(x) for x in SNAP[f"{k}/encoded"]]
    tokens = SNAP.tree(f"{k}/tokens") if len(SNAP[f"{k}/merges"]) else []
    want = text_of(SNAP[f"{k}/other"])
    got = ch.decode(ids, vocab_with(tokens))
    if got != want:
        named = f"\n  looks like: {PER_TOKEN}" if got == text_of(SNAP[f"{k}/per_token"]) else ""
        pytest.fail(f"decode({ids}) gave {got!r}, expected {want!r}{named}", pytrace=False)


def test_decode_replaces_bytes_that_are_not_utf8(ch):
    """a lone byte of a character, or a byte no UTF-8 text holds, becomes U+FFFD instead of raising"""
    vocab = vocab_with([])
    for ids, want in (([195], "\ufffd"), ([97, 255, 98], "a\ufffdb"), ([240, 159, 153, 130], "🙂"), ([], "")):
        got = ch.decode(ids, vocab)
        with check:
            assert got == want, f"decode({ids}) gave {got!r}, expected {want!r} (errors=\"replace\")"


@pytest.mark.parametrize("j", range(SNAP.count("roundtrip")))
def test_decode_of_encode_gives_any_unicode_text_back(ch, j):
    """decode(encode(t, merges), build_vocab(merges)) == t for random Unicode texts, with every stored merge list"""
    text = text_of(SNAP[f"roundtrip/{j}/text"])
    for i in range(SNAP.count("train")):
        merges = as_merges(SNAP[f"train/{i}/merges"])
        back = ch.decode(ch.encode(text, merges), ch.build_vocab(merges))
        with check:
            assert back == text, f"decode(encode({text!r})) with {len(merges)} merges gave {back!r}"


@pytest.mark.parametrize("j", range(SNAP.count("roundtrip")))
def test_a_text_encoded_with_its_own_merges_comes_back(ch, j):
    """train_bpe on a random Unicode text, then decode(encode(text)) is the text, in fewer tokens than bytes"""
    text = text_of(SNAP[f"roundtrip/{j}/text"])
    merges = ch.train_bpe(text, 280)
    ids = ch.encode(text, merges)
    back = ch.decode(ids, ch.build_vocab(merges))
    with check:
        assert back == text, f"decode(encode({text!r})) with its own {len(merges)} merges gave {back!r}"
    n_bytes = len(text.encode("utf-8"))
    with check:
        assert len(ids) <= n_bytes - len(merges), (
            f"{text!r} ({n_bytes} bytes) encoded with its own {len(merges)} merges into {len(ids)} tokens: every "
            "merge training learned occurs in its own text, so each one shortens it by at least one token")


def test_nothing_modifies_its_inputs(ch):
    """count_pairs, most_frequent_pair, merge_pair, build_vocab, encode and decode leave their inputs untouched"""
    ids = [int(x) for x in SNAP["merge/2/ids"]]
    counts = {(int(a), int(b)): int(c) for a, b, c in SNAP["best/3/counts"]}
    merges = as_merges(SNAP["train/1/merges"])
    vocab = vocab_with(SNAP.tree("train/1/tokens"))
    copies = (list(ids), dict(counts), list(merges), dict(vocab))
    ch.count_pairs(ids)
    ch.most_frequent_pair(counts)
    ch.merge_pair(ids, (1, 1), 300)
    ch.build_vocab(merges)
    encoded = ch.encode(text_of(SNAP["train/1/other"]), merges)
    ch.decode(encoded, vocab)
    for name, now, before in zip(("ids", "counts", "merges", "vocab"), (ids, counts, merges, vocab), copies,
                                 strict=True):
        with check:
            assert now == before, f"{name} changed during the calls"


# -- bad input gets a clear error ------------------------------------------------------------------
@pytest.mark.parametrize("bad", [b"abc", None, ["a", "b"]], ids=["bytes", "None", "list"])
def test_text_that_is_not_a_str_is_refused(ch, bad):
    """bytes, None or a list of characters as text raise TypeError saying 'str' and naming the type that came"""
    kind = type(bad).__name__
    why = "check isinstance(text, str) first: bytes are already encoded, a list is not text"
    raises_clearly(lambda: ch.to_byte_ids(bad), TypeError, "str", kind, hint=why)
    raises_clearly(lambda: ch.train_bpe(bad, 300), TypeError, "str", kind, hint=why)
    raises_clearly(lambda: ch.encode(bad, NO_MERGES), TypeError, "str", kind, hint=why)


@pytest.mark.given
@pytest.mark.parametrize("size", [255, 0, -1, True, 300.0, "300"])
def test_a_vocab_size_below_256_or_not_a_whole_number_is_refused(ch, size):
    """vocab_size 255, 0, −1, True, 300.0 and "300" raise ValueError saying 'vocab_size' and '256'"""
    why = "the 256 bytes are always in the vocabulary: refuse a bool, a non-int or a vocab_size below 256"
    raises_clearly(lambda: ch.train_bpe("abc", size), ValueError, "vocab_size", "256", str(size), hint=why)


@pytest.mark.given
def test_most_frequent_pair_of_no_counts_is_refused(ch):
    """an empty dict of counts raises ValueError saying 'no pairs'"""
    raises_clearly(lambda: ch.most_frequent_pair({}), ValueError, "no pairs")


@pytest.mark.given
@pytest.mark.parametrize("bad", [999, 256, -1])
def test_an_unknown_id_is_named(ch, bad):
    """decode of an id the vocabulary lacks raises ValueError saying 'unknown' and naming the id"""
    raises_clearly(lambda: ch.decode([97, bad], vocab_with(NO_MERGES)), ValueError, "unknown", str(bad),
                   hint="look every id up before joining: an id outside the vocabulary has no bytes")


# -- fast enough for the capstone: work done, not time (last: a stopped call is not called again) ---------
BYTES_OF_TEXT = 10_000  # characters of the capstone's corpus, Python's own documentation
# a budget of lines of your code per byte of text: counting once and updating runs about 70 (the reference) to 130
# (explicit loops), recounting the text at every merge about 870
LINES_PER_BYTE = 250


def test_train_bpe_counts_once_and_updates_only_around_each_merge(ch):
    """train_bpe: 256 merges on 10,000 characters of Python's documentation run at most 250 lines of your code per byte"""
    from pydoc_data.topics import topics  # the corpus the capstone trains its tokenizer on (shipped with Python)

    text = "".join(topics.values())[:BYTES_OF_TEXT]
    n_bytes = len(text.encode("utf-8"))
    budget = LINES_PER_BYTE * n_bytes
    why = ("the capstone trains the same 256 merges on about 466,000 bytes of this text with 30 s per call. Count "
           "the pairs once; at each merge visit only the occurrences of the merged pair (keep where each pair "
           "occurs) and update the counts of the pairs on either side: (x, a) and (b, y) lose one, (x, new) and "
           "(new, y) gain one. Then a merge costs its occurrences, not the whole text (\"How fast?\" on the page)")
    stopped = ""
    try:
        merges, lines = ch.train_bpe.counted(budget, text, 512)
    except OverBudget as err:
        stopped = f"ran more than {budget:,} lines of your code ({LINES_PER_BYTE} per byte) and was stopped at {err.where}"
    except DidNotReturn as err:
        stopped = f"did not finish within the time a call may take ({err})"
    if stopped:
        pytest.fail(f"train_bpe({BYTES_OF_TEXT:,} characters, {n_bytes:,} bytes, 512) {stopped}: {why}.\n"
                    f"  looks like: {RECOUNTED}", pytrace=False)
    got = rows_of(merges, "train_bpe")
    with check:
        assert got[:, 2].tolist() == list(range(256, 512)), (
            f"train_bpe of {n_bytes:,} bytes with vocab_size 512: new ids {got[:6, 2].tolist()} …, expected 256 to 511")
    with check:
        assert lines <= budget, f"train_bpe ran {lines:,} lines of your code, over the budget of {budget:,}"
