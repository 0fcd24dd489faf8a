"""Chapter 1, written from the docstrings: loops and explicit checks."""

VOCAB = ("A", "B", "C", "D")


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def encode(text: str) -> list[int]:
    """Ids of space-separated tokens."""
    ids = []
    for token in text.split():
        found = -1
        for i, known in enumerate(VOCAB):
            if known == token:
                found = i
                break
        if found < 0:
            raise ValueError(f"unknown token {token!r}; the vocabulary is {', '.join(VOCAB)}")
        ids.append(found)
    return ids


def decode(ids: list[int]) -> str:
    """Tokens joined by spaces."""
    words = []
    for i in ids:
        if not _whole(i) or i < 0 or i >= len(VOCAB):
            raise ValueError(f"id {i!r} is not an id in 0..{len(VOCAB) - 1}")
        words.append(VOCAB[i])
    return " ".join(words)


def next_token_examples(ids: list[int]) -> list[tuple[list[int], int]]:
    """Every prefix with the token after it."""
    examples = []
    k = 1
    while k < len(ids):
        examples.append((list(ids[:k]), ids[k]))
        k += 1
    return examples


def _position(value, name: str) -> int:
    if value < 0:
        raise ValueError(f"position {name} = {value} is negative")
    return value


def rnn_distance(i: int, j: int) -> int:
    """Hops from i to j, one position at a time."""
    i, j = _position(i, "i"), _position(j, "j")
    hops = 0
    while i != j:
        i += 1 if i < j else -1
        hops += 1
    return hops


def attention_distance(i: int, j: int) -> int:
    """0 for the same position, else 1."""
    i, j = _position(i, "i"), _position(j, "j")
    return 0 if i == j else 1


def causal_pair_count(n: int) -> int:
    """Pairs (i, j) with j <= i < n."""
    if n < 0:
        raise ValueError(f"n = {n} is negative")
    count = 0
    for i in range(n):
        for _ in range(i + 1):
            count += 1
    return count
