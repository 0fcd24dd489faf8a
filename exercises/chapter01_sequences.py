"""Chapter 1: Why Transformers? — sequences as next-token prediction.

A language model reads a sequence of tokens and predicts the next one. This chapter sets up the tiny
four-token vocabulary every later chapter uses, turns text into token ids and back, cuts a sequence
into (context, next token) training examples, and counts how far information has to travel in a
recurrent network compared with attention.
"""

VOCAB = ("A", "B", "C", "D")


def encode(text: str) -> list[int]:
    """Turn space-separated tokens into their ids in ``VOCAB``.

    Args:
        text: tokens separated by white space, e.g. ``"A B"``.

    Returns:
        One id per token, e.g. ``[0, 1]``; an empty list for empty text.

    Raises:
        ValueError: if a token is not in ``VOCAB``: the check given above the ``raise``.

    See docs: chapter 1, step 1.1.
    """
    _check_tokens(text)
    raise NotImplementedError("1.1 encode: the VOCAB id of each white-space-separated token (4 lines)")


def decode(ids: list[int]) -> str:
    """Turn token ids back into space-separated text.

    Args:
        ids: token ids, each an int in ``range(len(VOCAB))`` (a bool or a float such as 1.0 is not an id).

    Returns:
        The tokens joined by single spaces, e.g. ``"C D A"`` for ``[2, 3, 0]``.

    Raises:
        ValueError: if an id is not an int or is outside the vocabulary (negative ids too): the check given
            above the ``raise``.

    See docs: chapter 1, step 1.2.
    """
    _check_ids(ids)
    raise NotImplementedError("1.2 decode: the words of the ids, joined by single spaces (4 lines)")


def next_token_examples(ids: list[int]) -> list[tuple[list[int], int]]:
    """Cut one sequence into next-token training examples.

    Every prefix predicts the token that follows it: ``[0, 1, 2]`` gives ``([0], 1)`` and ``([0, 1], 2)``.

    Args:
        ids: a sequence of token ids, length n.

    Returns:
        n − 1 pairs ``(context, target)``: ``context`` is the list of the first k ids and ``target`` is
        ``ids[k]``, the id that follows them, for k = 1 … n − 1. Empty for sequences shorter than 2.

    See docs: chapter 1, step 1.3.
    """
    raise NotImplementedError("1.3 next_token_examples: one example per position from 1 on, its context every id before it and its target the id there (1 line)")


def rnn_distance(i: int, j: int) -> int:
    """How many recurrent steps information needs to get from position i to position j.

    A recurrent network passes its hidden state one position at a time.

    Args:
        i: a position, 0-based.
        j: another position, 0-based.

    Returns:
        The number of hops, ``|i − j|``, an int.

    Raises:
        ValueError: if a position is negative: the check given above the ``raise``.

    See docs: chapter 1, step 1.4.
    """
    _check_positions(i, j)
    raise NotImplementedError("1.4 rnn_distance: one hop per position in between (1 line)")


def attention_distance(i: int, j: int) -> int:
    """How many attention steps information needs to get from position i to position j.

    Args:
        i: a position, 0-based.
        j: another position, 0-based.

    Returns:
        0 when i == j, otherwise 1 (an int): any position reads any other directly.

    Raises:
        ValueError: if a position is negative: the check given above the ``raise``.

    See docs: chapter 1, step 1.5.
    """
    _check_positions(i, j)
    raise NotImplementedError("1.5 attention_distance: every position reads every other directly (1 line)")


def causal_pair_count(n: int) -> int:
    """How many query–key pairs causal attention scores for n tokens.

    Position i compares its query with the keys of positions 0 … i.

    Args:
        n: number of tokens, 0 or more.

    Returns:
        1 + 2 + … + n = n(n + 1)/2, an int (whole-number division: 21, not 21.0).

    Raises:
        ValueError: if n is negative: the check given above the ``raise``.

    See docs: chapter 1, step 1.6.
    """
    _check_count(n)
    raise NotImplementedError("1.6 causal_pair_count: the sum over every position i of the i + 1 keys it scores (1 line)")


# -- input checks: the course's, given in the stubs (CONTRIBUTING.md, "The stub") -----------------------------
def _check_tokens(text: str) -> None:
    """Refuse a token that is not in VOCAB (the message names it and the vocabulary)."""
    for token in text.split():
        if token not in VOCAB:
            raise ValueError(f"unknown token {token!r}: the vocabulary is {', '.join(VOCAB)}")


def _check_ids(ids) -> None:
    """Refuse an id that is not an int (a bool or a float is not one) or is outside 0..len(VOCAB) − 1."""
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(VOCAB):
            raise ValueError(f"token id {i!r} is outside the vocabulary 0..{len(VOCAB) - 1}")


def _check_positions(i: int, j: int) -> None:
    """Refuse a negative position (the message names both)."""
    if i < 0 or j < 0:
        raise ValueError(f"positions must be 0 or more, got {i} and {j}")


def _check_count(n: int) -> None:
    """Refuse a negative number of tokens (the message names it)."""
    if n < 0:
        raise ValueError(f"the number of tokens must be 0 or more, got {n}")
