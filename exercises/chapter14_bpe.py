"""Chapter 14: Byte-Pair Encoding — a vocabulary learned from text, one merge of two tokens at a time.

Chapter 1 cut text at spaces and looked every word up in a fixed vocabulary; a word it had never seen had no
id. Byte-pair encoding starts from the 256 possible bytes instead, so every text has an encoding: the text
becomes its UTF-8 bytes, ids 0 to 255 (a character outside ASCII takes two to four of them). Training counts
every pair of neighbouring ids, gives the most frequent pair a new id (256, 257, …) and replaces it in the
text, then counts again: each merge is one new token, and the list of merges, in the order they were
learned, is the tokenizer. Encoding a new text replays the merges in that order; decoding joins every
token's bytes and decodes them together as UTF-8.

The conventions, stated once and used by every function below:

- counting: every adjacent position counts, so the run "aaa" holds the pair (a, a) twice;
- merging: left to right, without overlap, so merging (a, a) turns "aaa" into "aa"+"a", never "a"+"aa";
- ties: among pairs of equal count, the smallest pair wins, comparing (first id, second id) as numbers.

Worksheet: this course's own (Part II goes beyond the book): the text "aaabéaaabaca.", five merges found with
a pencil; see docs/chapters/14-bpe.md.
"""

import heapq  # noqa: F401 - yours to use: a fast encode (see the page's "How fast?")
from itertools import pairwise  # noqa: F401 - yours to use: pairwise([1, 2, 3]) gives (1, 2), (2, 3)

N_BYTES = 256  # ids 0..255 are the bytes themselves; the first merge gets id 256


def to_byte_ids(text: str) -> list[int]:
    r"""The text's UTF-8 bytes, each as an id from 0 to 255: the tokens before any merge.

    $$\mathrm{ids} = [\,b_0, b_1, \dots, b_{n-1}\,], \qquad b_0 b_1 \dots b_{n-1} = \mathrm{utf8}(\mathrm{text})$$

    A character outside ASCII becomes two to four ids ("é" is 195, 169; "🙂" four ids), so there are as many
    ids as the text has bytes, not characters: a character's code point ("é" is 233) is not its bytes.

    Args:
        text: any str, the empty one too.

    Returns:
        A list of ints, one per UTF-8 byte, each from 0 to 255.

    Raises:
        TypeError: if text is not a str (bytes, a list, None: the message says "str" and names the type
            that came).

    See docs: chapter 14, step 14.1.
    """
    _check_text(text)
    raise NotImplementedError("14.1 to_byte_ids: the text's UTF-8 bytes, each read as a whole number from 0 to 255 (1 line)")


def count_pairs(ids: list[int]) -> dict[tuple[int, int], int]:
    r"""How often every pair of neighbouring ids occurs: every adjacent position counts.

    $$\mathrm{count}(a, b) = \#\{\,i : \mathrm{ids}[i] = a,\ \mathrm{ids}[i+1] = b\,\}$$

    A run overlaps itself: [97, 97, 97] ("aaa") holds the pair (97, 97) twice, at positions 0 and 1.

    Args:
        ids: a list of ints (fewer than two give no pairs).

    Returns:
        A dict from the pair, a tuple (a, b) of ints, to its count, an int ≥ 1; pairs that do not occur are
        absent. ids is not modified.

    See docs: chapter 14, step 14.2.
    """
    raise NotImplementedError("14.2 count_pairs: a dict from each pair of neighbouring ids to how often it occurs (4 lines)")


def most_frequent_pair(counts: dict[tuple[int, int], int]) -> tuple[int, int]:
    r"""The pair with the highest count; among equal counts, the smallest pair.

    $$\mathrm{best} = \min\{\,(a, b) : \mathrm{count}(a, b) = \max \mathrm{count}\,\}$$

    "Smallest" compares the pairs as tuples of numbers: first ids first, then second ids, so (97, 98) comes
    before (256, 97) and (97, 99). The order the pairs were counted in, or stored in the dict, plays no part.

    Args:
        counts: a dict from pairs (a, b) of ints to counts, as ``count_pairs`` returns.

    Returns:
        The winning pair, a tuple (a, b) of two ints. counts is not modified.

    Raises:
        ValueError: if counts is empty (the message says "no pairs"): the check given above the ``raise``.

    See docs: chapter 14, step 14.3.
    """
    _check_counts(counts)
    raise NotImplementedError("14.3 most_frequent_pair: the pair of highest count, a tie going to the smallest pair (1 line)")


def merge_pair(ids: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    r"""Replace every occurrence of ``pair`` by ``new_id``, reading left to right, without overlap.

    $$[\dots, a, b, \dots] \;\to\; [\dots, \mathrm{new\_id}, \dots]$$

    Occurrences are taken from the left, and an id that went into one occurrence cannot start the next, so a
    run overlaps nothing: merging (97, 97) turns [97, 97, 97] into [new_id, 97] and [97, 97, 97, 97] into
    [new_id, new_id].

    Args:
        ids: a list of ints.
        pair: a tuple (a, b) of two ints.
        new_id: the int that replaces each occurrence.

    Returns:
        A new list of ints, shorter by the number of occurrences replaced; ids is not modified.

    See docs: chapter 14, step 14.4.
    """
    raise NotImplementedError("14.4 merge_pair: ids with every occurrence of the pair replaced by new_id, left to right and never overlapping (10 lines)")


def train_bpe(text: str, vocab_size: int) -> list[tuple[tuple[int, int], int]]:
    r"""Learn ``vocab_size - 256`` merges from a text: count, merge the most frequent pair, repeat.

    $$(a_t, b_t) = \underset{(a, b)}{\arg\max}\ \#_{\mathrm{ids}_t}(a, b),\qquad
      t = 256, \dots, \mathrm{vocab\_size} - 1,$$

    $$\mathrm{ids}_{t+1} = \mathrm{ids}_t \text{ with every } (a_t, b_t) \text{ replaced by } t,$$

    where $\mathrm{ids}_{256}$ are the text's bytes and $\#_{\mathrm{ids}}(a, b)$ counts the positions where
    a is followed by b.

    Start from ``to_byte_ids(text)``; every round counts every adjacent position (runs overlap), takes the
    most frequent pair (ties: the smallest pair) and merges it left to right without overlap, giving it the
    next id: 256, then 257, and so on. A merged token pairs up again in later rounds, so a token may stand
    for many bytes. A pair seen once is still merged. Training stops early, with fewer merges, when the text
    has no pair left (it is down to one token, or empty); ``vocab_size`` 256 learns no merge.

    Count once, then update: a merge changes only the pairs around its occurrences. Where x a b y becomes
    x new y, the counts of (x, a), (a, b) and (b, y) lose one and (x, new) and (new, y) gain one; so keep
    where each pair occurs and visit only the occurrences of the pair being merged. Recounting the whole text
    every round learns the same merges but reads the text once per merge, too slow for the capstone (256
    merges on half a million bytes, 30 s of CPU per call): a check counts the lines of your code that train_bpe runs
    for 256 merges on 10,000 characters of Python's documentation and allows 250 per byte of text (counting
    once and updating runs about 70 to 130; recounting every round about 870).

    Args:
        text: the training text, a str.
        vocab_size: the size of the vocabulary wanted, an int ≥ 256: the 256 bytes plus one id per merge.

    Returns:
        The merges in the order learned: a list of ((a, b), new_id), each pair a tuple of two ints, new_id
        256, 257, … in turn.

    Raises:
        TypeError: if text is not a str (as ``to_byte_ids``).
        ValueError: if vocab_size is not a whole number ≥ 256 (the message says "vocab_size" and "256" and
            names the value; a bool or a float such as 300.0 is refused too).

    See docs: chapter 14, step 14.5.
    """
    _check_vocab_size(vocab_size)
    raise NotImplementedError("14.5 train_bpe: the merges learned greedily until no pair is left, the counts kept up to date around each merge rather than recounted (34 lines)")


def build_vocab(merges: list[tuple[tuple[int, int], int]]) -> dict[int, bytes]:
    r"""Every id's bytes: the 256 single bytes, then each merge's two tokens joined, in the order learned.

    $$\mathrm{vocab}[i] = \text{the single byte } i\ (i < 256), \qquad
    \mathrm{vocab}[\mathrm{new\_id}] = \mathrm{vocab}[a] \,\|\, \mathrm{vocab}[b]$$

    ‖ joins two byte strings, the left token's bytes first, then the right one's: a merge of (256, 257) with
    vocab[256] = b"aa" and vocab[257] = b"ab" stands for b"aaab".

    Args:
        merges: a list of ((a, b), new_id) as ``train_bpe`` returns, each pair made of ids already in the
            vocabulary.

    Returns:
        A dict from every id (0 to 255 and each new_id) to its bytes; merges is not modified.

    See docs: chapter 14, step 14.6.
    """
    raise NotImplementedError("14.6 build_vocab: each id's bytes (its own single byte below 256, its two parts' bytes joined for a merge) (4 lines)")


def encode(text: str, merges: list[tuple[tuple[int, int], int]]) -> list[int]:
    r"""A text's token ids: its UTF-8 bytes, then every merge applied in the order it was learned.

    $$\mathrm{encode}(\text{text}) = (\mu_K \circ \cdots \circ \mu_1)\bigl(\mathrm{bytes}(\text{text})\bigr),$$

    where $\mu_k$ replaces every occurrence of the $k$-th merge's pair $(a_k, b_k)$ by its id $t_k$, left to
    right without overlap (as ``merge_pair`` does), and $K$ is the number of merges. The order is the list's,
    the order training learned the merges in, whatever the pairs' counts in this text: a later merge may build
    on an earlier one's token, never the other way round. Encoding the training text gives the tokens that
    training ended with.

    Args:
        text: a str.
        merges: a list of ((a, b), new_id) in the order learned, as ``train_bpe`` returns.

    Returns:
        A list of ints; merges is not modified.

    Raises:
        TypeError: if text is not a str (as ``to_byte_ids``).

    See docs: chapter 14, step 14.7.
    """
    raise NotImplementedError("14.7 encode: the text's bytes with every merge replayed in the order training learned them (4 lines)")


def decode(ids: list[int], vocab: dict[int, bytes]) -> str:
    r"""The text of a list of token ids: every token's bytes joined first, then decoded once as UTF-8.

    $$\mathrm{text} = \mathrm{utf8}^{-1}\big(\mathrm{vocab}[\mathrm{ids}_0] + \mathrm{vocab}[\mathrm{ids}_1]
    + \dots\big)$$

    Join the bytes before decoding: a character's bytes may lie in two tokens (195 and 169 are "é" only
    together), and decoding each token on its own would turn both halves into "�". Bytes that are not valid
    UTF-8 become "�" (U+FFFD, UTF-8's "replace" error handler) rather than raising, so any list of known ids
    decodes.

    Args:
        ids: a list of ints.
        vocab: a dict from id to bytes, as ``build_vocab`` returns.

    Returns:
        A str; ids and vocab are not modified.

    Raises:
        ValueError: if an id is not in vocab (the message says "unknown" and names the id): the check given
            above the ``raise``, which hands you ids as a list.

    See docs: chapter 14, step 14.8.
    """
    ids = _check_known_ids(ids, vocab)
    raise NotImplementedError("14.8 decode: the UTF-8 text of all the tokens' bytes together (a character may span tokens) with bad bytes replaced (2 lines)")


def _check_text(text) -> None:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")


def _check_vocab_size(vocab_size) -> None:
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < N_BYTES:
        raise ValueError(f"vocab_size must be a whole number ≥ 256 (the bytes themselves), got {vocab_size!r}")


def _check_counts(counts) -> None:
    """The counts hold at least one pair: an empty dict has no most frequent pair."""
    if not counts:
        raise ValueError("most_frequent_pair needs at least one pair: counts is empty, there are no pairs")


def _check_known_ids(ids, vocab) -> list:
    """The ids as a list, after checking every id is a key of vocab (the message names the first that is not)."""
    ids = list(ids)
    for i in ids:
        if i not in vocab:
            raise ValueError(f"decode got the unknown id {i}: the vocabulary has no such token")
    return ids
