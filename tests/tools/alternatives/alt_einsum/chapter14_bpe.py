"""Chapter 14, written from the docstrings: ids as NumPy arrays, pairs counted by np.unique, merges as masks."""

import numbers

import numpy as np

N_BYTES = 256


def _check(text) -> np.ndarray:
    if not isinstance(text, str):
        raise TypeError(f"text: a str is needed, got {type(text).__name__}")
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int64)


def to_byte_ids(text: str) -> list[int]:
    """np.frombuffer over the UTF-8 bytes."""
    return _check(text).tolist()


def _pairs(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unique neighbouring pairs (sorted) and their counts."""
    if arr.size < 2:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    stacked = np.stack([arr[:-1], arr[1:]], axis=1)
    uniq, counts = np.unique(stacked, axis=0, return_counts=True)
    return uniq[:, 0], uniq[:, 1], counts


def count_pairs(ids: list[int]) -> dict[tuple[int, int], int]:
    """np.unique over the rows (ids[i], ids[i+1])."""
    a, b, c = _pairs(np.asarray(ids, dtype=np.int64).reshape(-1))
    return {(int(x), int(y)): int(n) for x, y, n in zip(a, b, c, strict=True)}


def most_frequent_pair(counts: dict[tuple[int, int], int]) -> tuple[int, int]:
    """np.lexsort: count descending, then first id, then second id."""
    if not counts:
        raise ValueError("counts is empty: no pairs")
    keys = np.array(list(counts.keys()), dtype=np.int64).reshape(-1, 2)
    values = np.array(list(counts.values()), dtype=np.int64)
    order = np.lexsort((keys[:, 1], keys[:, 0], -values))
    return int(keys[order[0], 0]), int(keys[order[0], 1])


def _merge(arr: np.ndarray, a: int, b: int, new_id: int) -> np.ndarray:
    """Left-to-right, non-overlapping merge with masks; runs of a == b take every other start."""
    if arr.size < 2:
        return arr.copy()
    hit = (arr[:-1] == a) & (arr[1:] == b)
    if a == b:
        starts = hit.copy()
        # within a run of hits, keep the 1st, 3rd, 5th, …: the offset from the run's first hit is even
        idx = np.arange(hit.size)
        run_start = np.where(hit & ~np.concatenate([[False], hit[:-1]]), idx, 0)
        run_start = np.maximum.accumulate(run_start)
        starts = hit & ((idx - run_start) % 2 == 0)
    else:
        starts = hit
    keep = np.ones(arr.size, dtype=bool)
    keep[1:][starts] = False
    out = arr.copy()
    out[:-1][starts] = new_id
    return out[keep]


def merge_pair(ids: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    """Masks over the array."""
    arr = np.asarray(ids, dtype=np.int64).reshape(-1)
    return _merge(arr, int(pair[0]), int(pair[1]), int(new_id)).tolist()


def train_bpe(text: str, vocab_size: int) -> list[tuple[tuple[int, int], int]]:
    """Counted once with np.unique; a merge is a mask, and only the pairs touching its tokens are recounted.

    Those pairs are taken out of the counts before the merge and put back after it.
    """
    arr = _check(text)
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, numbers.Integral | np.integer) \
            or vocab_size < N_BYTES:
        raise ValueError(f"vocab_size {vocab_size!r} is not a whole number >= 256")
    a0, b0, c0 = _pairs(arr)
    counts = {(int(x), int(y)): int(n) for x, y, n in zip(a0, b0, c0, strict=True)}
    merges = []
    for new_id in range(N_BYTES, int(vocab_size)):
        if not counts:
            break
        pair = most_frequent_pair(counts)
        starts = _starts(arr, *pair)
        last = arr.size - 2  # the last adjacency
        before = np.unique(np.concatenate([starts - 1, starts, starts + 1]))
        _count(counts, arr, before[(before >= 0) & (before <= last)], -1)
        arr = _merge(arr, pair[0], pair[1], new_id)
        at = starts - np.arange(starts.size)  # where each merged token sits now
        after = np.unique(np.concatenate([at - 1, at]))
        _count(counts, arr, after[(after >= 0) & (after <= arr.size - 2)], +1)
        merges.append((pair, new_id))
    return merges


def _starts(arr: np.ndarray, a: int, b: int) -> np.ndarray:
    """Where the non-overlapping occurrences of (a, b) start, left to right (as _merge takes them)."""
    if arr.size < 2:
        return np.zeros(0, dtype=np.int64)
    hit = (arr[:-1] == a) & (arr[1:] == b)
    if a == b:
        idx = np.arange(hit.size)
        run_start = np.maximum.accumulate(np.where(hit & ~np.concatenate([[False], hit[:-1]]), idx, 0))
        hit = hit & ((idx - run_start) % 2 == 0)
    return np.flatnonzero(hit)


def _count(counts: dict, arr: np.ndarray, positions: np.ndarray, sign: int) -> None:
    """Add (sign +1) or take out (−1) the pairs starting at ``positions`` in counts."""
    if positions.size == 0:
        return
    rows = np.stack([arr[positions], arr[positions + 1]], axis=1)
    uniq, n = np.unique(rows, axis=0, return_counts=True)
    for (x, y), k in zip(uniq.tolist(), n.tolist(), strict=True):
        left = counts.get((x, y), 0) + sign * k
        if left:
            counts[(x, y)] = left
        else:
            counts.pop((x, y), None)


def build_vocab(merges: list[tuple[tuple[int, int], int]]) -> dict[int, bytes]:
    """bytes(range(256)) cut into singles, then each merge's two tokens concatenated."""
    singles = bytes(range(N_BYTES))
    vocab = {i: singles[i:i + 1] for i in range(N_BYTES)}
    for pair, new_id in merges:
        vocab[new_id] = vocab[pair[0]] + vocab[pair[1]]
    return vocab


def encode(text: str, merges: list[tuple[tuple[int, int], int]]) -> list[int]:
    """The masks, merge after merge, in the list's order."""
    arr = _check(text)
    for pair, new_id in merges:
        arr = _merge(arr, int(pair[0]), int(pair[1]), int(new_id))
    return arr.tolist()


def decode(ids: list[int], vocab: dict[int, bytes]) -> str:
    """b"".join of the looked-up tokens, one decode."""
    missing = [i for i in ids if i not in vocab]
    if missing:
        raise ValueError(f"unknown id {missing[0]}")
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")
