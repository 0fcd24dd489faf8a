"""Chapter 1, written from the docstrings: lookups and closed forms."""

import numbers

VOCAB = ("A", "B", "C", "D")
_ID = {token: i for i, token in enumerate(VOCAB)}


def encode(text: str) -> list[int]:
    """Ids of space-separated tokens."""
    tokens = text.split()
    unknown = [t for t in tokens if t not in _ID]
    if unknown:
        raise ValueError(f"{unknown[0]!r} is not in the vocabulary {VOCAB}")
    return [_ID[t] for t in tokens]


def decode(ids: list[int]) -> str:
    """Tokens joined by spaces."""
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, numbers.Integral) or not 0 <= i < len(VOCAB):
            raise ValueError(f"bad id {i!r}: ids are whole numbers in 0..{len(VOCAB) - 1}")
    return " ".join(VOCAB[int(i)] for i in ids)


def next_token_examples(ids: list[int]) -> list[tuple[list[int], int]]:
    """Every prefix with the token after it."""
    ids = list(ids)
    return [(ids[:k], ids[k]) for k in range(1, len(ids))]


def _check(**positions: int) -> None:
    for name, value in positions.items():
        if value < 0:
            raise ValueError(f"{name} must be 0 or more, got {value}")


def rnn_distance(i: int, j: int) -> int:
    """|i - j|."""
    _check(i=i, j=j)
    return abs(int(i) - int(j))


def attention_distance(i: int, j: int) -> int:
    """0 for the same position, else 1."""
    _check(i=i, j=j)
    return int(i != j)


def causal_pair_count(n: int) -> int:
    """n(n + 1)/2."""
    _check(n=n)
    return int(n) * (int(n) + 1) // 2
