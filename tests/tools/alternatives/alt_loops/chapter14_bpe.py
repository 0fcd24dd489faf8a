"""Chapter 14, written from the docstrings: one byte at a time; training keeps its tokens as linked objects."""

import numbers

N_BYTES = 256


def _need_str(text) -> None:
    if not isinstance(text, str):
        raise TypeError(f"expected text as a str, but a {type(text).__name__} came")


def to_byte_ids(text: str) -> list[int]:
    """Every UTF-8 byte, appended one by one."""
    _need_str(text)
    out = []
    for byte in bytearray(text, "utf-8"):
        out.append(int(byte))
    return out


def count_pairs(ids: list[int]) -> dict[tuple[int, int], int]:
    """Position by position."""
    counts = {}
    for i in range(len(ids) - 1):
        key = (ids[i], ids[i + 1])
        if key in counts:
            counts[key] += 1
        else:
            counts[key] = 1
    return counts


def most_frequent_pair(counts: dict[tuple[int, int], int]) -> tuple[int, int]:
    """One pass, keeping the best so far: a higher count wins, an equal count goes to the smaller pair."""
    if len(counts) == 0:
        raise ValueError("there are no pairs to choose from (counts is empty)")
    best, best_count = None, -1
    for pair, n in counts.items():
        if n > best_count or (n == best_count and (pair[0] < best[0] or (pair[0] == best[0] and pair[1] < best[1]))):
            best, best_count = pair, n
    return (best[0], best[1])


def merge_pair(ids: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    """A cursor moving right, one or two ids at a time."""
    first, second = pair[0], pair[1]
    out = []
    pos = 0
    n = len(ids)
    while pos < n:
        if pos < n - 1 and ids[pos] == first and ids[pos + 1] == second:
            out.append(new_id)
            pos = pos + 2
            continue
        out.append(ids[pos])
        pos = pos + 1
    return out


class _Token:
    """One token of the text being trained on, linked to its neighbours."""

    __slots__ = ("alive", "id", "next", "place", "prev")

    def __init__(self, token_id: int, place: int) -> None:
        self.id, self.place, self.alive = token_id, place, True
        self.prev = None
        self.next = None


def train_bpe(text: str, vocab_size: int) -> list[tuple[tuple[int, int], int]]:
    """Counted once; each merge visits the occurrences of its pair and updates the pairs on either side."""
    ids = to_byte_ids(text)
    if not isinstance(vocab_size, numbers.Integral) or isinstance(vocab_size, bool) or vocab_size < N_BYTES:
        raise ValueError(f"vocab_size must be a whole number of at least 256, but vocab_size = {vocab_size!r}")
    tokens = []
    for place in range(len(ids)):
        tokens.append(_Token(ids[place], place))
    for place in range(len(tokens) - 1):
        tokens[place].next = tokens[place + 1]
        tokens[place + 1].prev = tokens[place]
    counts = {}
    lefts = {}  # pair -> the tokens it started at (some no longer hold it)

    def add(pair, left):
        counts[pair] = counts.get(pair, 0) + 1
        lefts.setdefault(pair, []).append(left)

    def take(pair):
        counts[pair] -= 1
        if counts[pair] == 0:
            del counts[pair]

    for place in range(len(tokens) - 1):
        add((tokens[place].id, tokens[place + 1].id), tokens[place])
    merges = []
    next_id = N_BYTES
    while next_id < vocab_size and counts:
        pair = most_frequent_pair(counts)
        first, second = pair
        found = sorted(set(lefts.pop(pair)), key=lambda token: token.place)  # left to right
        for left in found:
            right = left.next
            if not left.alive or right is None or left.id != first or right.id != second:
                continue  # used up by an earlier occurrence of this merge, or changed by another merge
            before, after = left.prev, right.next
            take(pair)
            if before is not None:
                take((before.id, first))
            if after is not None:
                take((second, after.id))
            left.id, left.next = next_id, after
            right.alive = False
            if after is not None:
                after.prev = left
                add((next_id, after.id), left)
            if before is not None:
                add((before.id, next_id), before)
        merges.append((pair, next_id))
        next_id += 1
    return merges


def build_vocab(merges: list[tuple[tuple[int, int], int]]) -> dict[int, bytes]:
    """A dict filled byte by byte, then merge by merge."""
    vocab = {}
    for i in range(N_BYTES):
        vocab[i] = bytes([i])
    for merge in merges:
        (left, right), new_id = merge
        vocab[new_id] = b"".join([vocab[left], vocab[right]])
    return vocab


def encode(text: str, merges: list[tuple[tuple[int, int], int]]) -> list[int]:
    """Every merge over the whole list, in the list's order."""
    ids = to_byte_ids(text)
    for merge in merges:
        ids = merge_pair(ids, tuple(merge[0]), merge[1])
    return ids


def decode(ids: list[int], vocab: dict[int, bytes]) -> str:
    """A bytearray extended token by token, decoded at the end."""
    buffer = bytearray()
    for token in ids:
        if token not in vocab:
            raise ValueError(f"id {token} is unknown: it is not in the vocabulary")
        buffer.extend(vocab[token])
    return bytes(buffer).decode("utf-8", "replace")
