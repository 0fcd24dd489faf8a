"""Chapter 14's snapshot builder: ``python -m kata.authoring.snapshots 14`` writes ``build()`` to chapter14.npz.

Authors only: it runs solutions/, and the student edition leaves it out. ``tests/test_snapshots.py`` checks that
the stored file is what ``build()`` makes today.
"""

from __future__ import annotations

import numpy as np

from kata.authoring.snapshots import Store
from kata.judge.snapshots import flatten


def build(seed: int | None = None) -> dict[str, np.ndarray]:
    """Chapter 14: byte-pair encoding on seeded texts (runs, ties, two- to four-byte characters), classic mistakes.

    Texts are stored as arrays of code points and merges as (k, 3) arrays of (a, b, new_id): a snapshot holds
    numbers only. The mistakes' values come from scripts/audit_chapter14_bpe.py's slow, obvious rules.
    """
    from kata.authoring.audit import script
    from solutions import chapter14_bpe as s

    audit = script(14)
    data = Store(1414, seed)
    rng = data.rng

    def ints(values):
        return np.asarray(list(values), dtype=np.int64).reshape(-1)

    def table(merges):
        return np.asarray([[a, b, t] for (a, b), t in merges], dtype=np.int64).reshape(-1, 3)

    def text(n, alphabet):
        return "".join(alphabet[int(i)] for i in rng.integers(0, len(alphabet), size=n))

    def points(t):
        return ints(ord(c) for c in t)

    def counts_table(counts):
        return np.asarray([[a, b, c] for (a, b), c in sorted(counts.items())], dtype=np.int64).reshape(-1, 3)

    small = "aab é🙂c"  # runs of a, ties, two- and four-byte characters
    wide = [chr(c) for c in (*range(32, 127), *range(0xA0, 0x180), *range(0x3041, 0x3097), *range(0x4E00, 0x4E40),
                             *range(0x1F600, 0x1F650), 0x10FFFF)]
    # to_byte_ids on any Unicode text
    for i, n in enumerate((0, 1, 7, 30)):
        t = text(n, wide)
        data[f"bytes/{i}/text"], data[f"bytes/{i}/ids"] = points(t), ints(s.to_byte_ids(t))
    # count_pairs on ids with runs
    for i, (n, k) in enumerate(((0, 3), (1, 3), (2, 2), (13, 2), (40, 3), (60, 5))):
        ids = [int(x) for x in rng.integers(0, k, size=n) * 40 + 60]
        data[f"pairs/{i}/ids"] = ints(ids)
        data[f"pairs/{i}/counts"] = counts_table(s.count_pairs(ids))
        data[f"pairs/{i}/non_overlapping"] = counts_table(audit.pair_counts(ids, overlapping=False))
        data[f"pairs/{i}/last_left_out"] = counts_table(audit.pair_counts(ids, last=False))
    # most_frequent_pair: ties at the top, stored in a shuffled order
    for i, (n_pairs, top) in enumerate(((1, 5), (4, 3), (9, 2), (16, 7))):
        pairs = {(int(a), int(b)) for a, b in rng.integers(0, 300, size=(3 * n_pairs, 2))}
        pairs = sorted(pairs)[:n_pairs]
        order = [pairs[int(j)] for j in rng.permutation(len(pairs))]
        counts = {p: top if j % 2 == 0 else int(rng.integers(1, top)) for j, p in enumerate(order)}
        data[f"best/{i}/counts"] = np.asarray([[a, b, c] for (a, b), c in counts.items()], dtype=np.int64)
        data[f"best/{i}/pair"] = ints(s.most_frequent_pair(counts))
        data[f"best/{i}/largest"] = ints(audit.best(counts, "largest"))
        data[f"best/{i}/first"] = ints(audit.best(counts, "first"))
        data[f"best/{i}/first_id"] = ints(audit.best(counts, "first id"))
    # merge_pair: a == b runs and a != b pairs
    for i, (n, k, pair) in enumerate(((0, 2, (1, 1)), (1, 2, (1, 1)), (9, 2, (1, 1)), (25, 3, (0, 2)),
                                     (40, 2, (0, 0)), (30, 4, (3, 1)), (2, 1, (0, 0)), (12, 3, (2, 1)))):
        ids = [int(x) for x in rng.integers(0, k, size=n)]
        if i >= 6:  # the pair at the very end
            ids[-2:] = pair
        new = 256 + i
        data[f"merge/{i}/ids"], data[f"merge/{i}/pair"], data[f"merge/{i}/new_id"] = ints(ids), ints(pair), ints([new])
        data[f"merge/{i}/out"] = ints(s.merge_pair(ids, pair, new))
        data[f"merge/{i}/from_right"] = ints(audit.replace(ids, pair, new, from_right=True))
        data[f"merge/{i}/last_dropped"] = ints(audit.replace(ids, pair, new, keep_last=False))
    # train_bpe: runs, ties, multi-byte characters; the last one runs out of pairs before vocab_size
    for i, (n, extra, alphabet) in enumerate(((40, 6, small), (120, 20, small), (200, 35, small), (80, 60, small),
                                               (3, 10, small), (90, 25, "\x01\x01\x01\x02 a"))):
        t = text(n, alphabet)
        merges = s.train_bpe(t, 256 + extra)
        data[f"train/{i}/text"], data[f"train/{i}/vocab_size"] = points(t), ints([256 + extra])
        data[f"train/{i}/merges"] = table(merges)
        for name, kw in (("largest", {"tie": "largest"}), ("first", {"tie": "first"}),
                         ("from_right", {"from_right": True}), ("non_overlapping", {"overlapping": False}),
                         ("first_id", {"tie": "first id"}), ("stopped", {"stop_at_one": True})):
            data[f"train/{i}/{name}"] = table(audit.train(t, 256 + extra, **kw))
        vocab = s.build_vocab(merges)
        data.update(flatten([ints(vocab[new]) for _, new in merges], f"train/{i}/tokens"))
        data.update(flatten([ints(vocab[b] + vocab[a]) for (a, b), _ in merges], f"train/{i}/right_first"))
        # encode and decode other texts with these merges
        other = text(n // 2 + 5, alphabet)
        ids = s.encode(other, merges)
        data[f"train/{i}/other"], data[f"train/{i}/encoded"] = points(other), ints(ids)
        data[f"train/{i}/by_frequency"] = ints(audit.encode(other, [[list(p), m] for p, m in merges],
                                                             by_frequency=True))
        data[f"train/{i}/reversed"] = ints(audit.encode(other, [[list(p), m] for p, m in reversed(merges)]))
        table_ = audit.token_bytes(merges)
        data[f"train/{i}/per_token"] = points(audit.decode(ids, table_, per_token=True))
    # round trips: random Unicode texts, encoded with merges learned on another one
    for i, n in enumerate((0, 1, 5, 40, 120)):
        data[f"roundtrip/{i}/text"] = points(text(n, wide))
    # most_frequent_pair: ties between pairs that share their first id, the larger second id counted first
    for i, counts in enumerate(({(97, 99): 3, (256, 97): 3, (97, 98): 3, (98, 97): 1},
                                {(300, 5): 2, (7, 400): 2, (7, 9): 2, (7, 8): 2, (6, 500): 1, (7, 7): 1}), start=4):
        data[f"best/{i}/counts"] = np.asarray([[a, b, c] for (a, b), c in counts.items()], dtype=np.int64)
        data[f"best/{i}/pair"] = ints(s.most_frequent_pair(counts))
        for name in ("largest", "first", "first id"):
            data[f"best/{i}/{name.replace(' ', '_')}"] = ints(audit.best(counts, name))
    return data
