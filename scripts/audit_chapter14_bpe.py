"""Audit of chapter 14's worksheet (byte-pair encoding): every `exact`, `printed` and mistake value of the key.

Written from the rules on the page, independent of ``solutions/``: tokens are kept as tuples of bytes (a
merge glues two byte strings together) and every round recounts the whole text with plain loops, the slow
and obvious way, so the answer key cannot inherit a bug of the reference's incremental counting.

Run by ``python -m kata.authoring.audit 14``, which prints every step; its ``--check`` compares with the key.
"""

from __future__ import annotations

# the worksheet's inputs (the page's tables)
TEXT = "aaabéaaabaca."  # 13 characters, 14 bytes: é is two
VOCAB_SIZE = 261  # five merges: the last two of pairs seen once, the fourth a tie of (97, 99) and (97, 46)
WORD = "abaabé"  # encoded with the five merges, then decoded


# -- the rules, one at a time ---------------------------------------------------------------------------------
def byte_ids(text, code_points=False):
    """The UTF-8 bytes as ints (right), or each character's code point (the mistake: é is 233, one id)."""
    if code_points:
        return [ord(c) for c in text]
    return [b for b in text.encode("utf-8")]


def pair_counts(ids, overlapping=True, last=True):
    """{(a, b): count} in the order first seen.

    A run counts every adjacent position (overlapping=True, right) or only non-overlapping pairs read left to
    right (the mistake); last=False is the other mistake, the window stopped one short: the last pair left out.
    """
    counts = {}
    i = 0
    while i + 1 < len(ids) - (0 if last else 1):
        pair = (ids[i], ids[i + 1])
        counts[pair] = counts.get(pair, 0) + 1
        skip = not overlapping and ids[i] == ids[i + 1]
        i += 2 if skip else 1
    return counts


def best(counts, tie="smallest"):
    """The highest count; among ties the smallest pair (right), or one of the mistakes.

    The mistakes: the largest, the first seen, or the first seen of those with the smallest first id (the tie
    broken on the first id only).
    """
    top = max(counts.values())
    tied = [p for p, c in counts.items() if c == top]  # in the order first seen
    if tie == "smallest":
        return sorted(tied)[0]
    if tie == "first id":
        return [p for p in tied if p[0] == min(q[0] for q in tied)][0]
    if tie == "largest":
        return sorted(tied)[-1]
    return tied[0]


def replace(ids, pair, new, from_right=False, overlap=False, keep_last=True):
    """Merge ``pair`` into ``new`` without overlap, scanning from the left (right) or the right (mistake).

    ``overlap`` is the other mistake: stepping on by one after a match instead of past both ids, so the middle
    a of "aaa" goes into two merges; keep_last=False another: the scan stopped one short, the last id dropped.
    """
    seq = list(reversed(ids)) if from_right else list(ids)
    want = (pair[1], pair[0]) if from_right else pair
    out, i = [], 0
    while i < len(seq) - (0 if keep_last else 1):
        if i + 1 < len(seq) and (seq[i], seq[i + 1]) == want:
            out.append(new)
            i += 1 if overlap else 2
        else:
            out.append(seq[i])
            i += 1
    return list(reversed(out)) if from_right else out


def train(text, vocab_size, overlapping=True, tie="smallest", from_right=False, stop_at_one=False):
    """Recount the whole text every round; one merge per new id.

    stop_at_one: the mistake of stopping while pairs still occur, once none occurs twice.
    """
    ids = byte_ids(text)
    merges = []
    for new in range(256, vocab_size):
        counts = pair_counts(ids, overlapping)
        if not counts or (stop_at_one and max(counts.values()) < 2):
            break
        pair = best(counts, tie)
        merges.append([list(pair), new])
        ids = replace(ids, pair, new, from_right)
    return merges


def token_bytes(merges, right_first=False):
    """Each merge's token as a byte string: left token's bytes, then the right one's (or the mistake)."""
    table = {i: bytes([i]) for i in range(256)}
    for (a, b), new in merges:
        table[new] = table[b] + table[a] if right_first else table[a] + table[b]
    return table


def encode(text, merges, by_frequency=False):
    """Every merge once, in the order learned (right), or the most frequent known pair first (the mistake)."""
    ids = byte_ids(text)
    if not by_frequency:
        for pair, new in merges:
            ids = replace(ids, tuple(pair), new)
        return ids
    known = {tuple(p): new for p, new in merges}
    while True:
        counts = {p: c for p, c in pair_counts(ids).items() if p in known}
        if not counts:
            return ids
        pair = best(counts)
        ids = replace(ids, pair, known[pair])


def decode(ids, table, per_token=False):
    """Join the bytes, then decode once (right), or decode every token on its own (the mistake)."""
    if per_token:
        return "".join(table[i].decode("utf-8", errors="replace") for i in ids)
    return b"".join(table[i] for i in ids).decode("utf-8", errors="replace")


def updated_counts(ids, pair, new, old_neighbours=False):
    """The pair counts after each occurrence of ``pair`` is merged, updated around it (the page's run case).

    The occurrences are taken from the left without overlap, as ``replace`` takes them. At each, x a b y
    becomes x new y: (x, a), (a, b) and (b, y) lose one, (x, new) and (new, y) gain one, where x is the id to
    the left *as the merges before it left it* (a new token when the occurrence before touches it) and y the
    id to the right, not merged yet. old_neighbours=True is the mistake: x read from the ids before the merge.
    Returns the counts before the merge and after each occurrence, a dict each (pairs with no count drop out).
    """
    counts = pair_counts(ids)
    stages = [dict(counts)]
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            x = (ids[i - 1] if i > 0 else None) if old_neighbours else (out[-1] if out else None)
            y = ids[i + 2] if i + 2 < len(ids) else None
            lost = [(x, pair[0]) if x is not None else None, pair, (pair[1], y) if y is not None else None]
            gained = [(x, new) if x is not None else None, (new, y) if y is not None else None]
            for p in lost:
                if p is not None:
                    counts[p] = counts.get(p, 0) - 1
            for p in gained:
                if p is not None:
                    counts[p] = counts.get(p, 0) + 1
            counts = {p: c for p, c in counts.items() if c != 0}
            stages.append(dict(counts))
            out.append(new)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return stages


def as_table(counts):
    """A dict of counts as the key stores it: [[a, b], count] sorted by pair."""
    return [[list(p), c] for p, c in sorted(counts.items())]


# -- the worksheet ------------------------------------------------------------------------------------------
def computed() -> dict[str, dict]:
    """Every step: its exact value and its mistakes' values by the audit's own labels, from the rules above."""
    ids = byte_ids(TEXT)
    merges = train(TEXT, VOCAB_SIZE)
    first = replace(ids, (97, 97), 256)
    table = token_bytes(merges)
    word_ids = encode(WORD, merges)
    return {
        "14.1": {"exact": ids, "mistakes": {"code points": byte_ids(TEXT, code_points=True)}},
        "14.2": {"exact": as_table(pair_counts(ids)),
                 "mistakes": {"non-overlapping": as_table(pair_counts(ids, overlapping=False)),
                              "last left out": as_table(pair_counts(ids, last=False))}},
        "14.3": {"exact": list(best(pair_counts(first))),
                 "inputs": [[list(p), c] for p, c in pair_counts(first).items()],
                 "mistakes": {"largest": list(best(pair_counts(first), "largest")),
                              "first": list(best(pair_counts(first), "first"))}},
        "14.4": {"exact": first, "mistakes": {"from the right": replace(ids, (97, 97), 256, from_right=True),
                                              "with overlap": replace(ids, (97, 97), 256, overlap=True),
                                              "last dropped": replace(ids, (97, 97), 256, keep_last=False)}},
        "14.5": {"exact": merges,
                 "mistakes": {"largest": train(TEXT, VOCAB_SIZE, tie="largest"),
                              "first": train(TEXT, VOCAB_SIZE, tie="first"),
                              "first id": train(TEXT, VOCAB_SIZE, tie="first id"),
                              "stopped": train(TEXT, VOCAB_SIZE, stop_at_one=True),
                              "from the right": train(TEXT, VOCAB_SIZE, from_right=True),
                              "non-overlapping": train(TEXT, VOCAB_SIZE, overlapping=False),
                              "one too many": train(TEXT, VOCAB_SIZE + 1),
                              "one too few": train(TEXT, VOCAB_SIZE - 1)}},
        "14.6": {"exact": [list(table[new]) for _, new in merges],
                 "mistakes": {"right first": [list(token_bytes(merges, right_first=True)[new]) for _, new in merges]}},
        "14.7": {"exact": word_ids, "mistakes": {"by frequency": encode(WORD, merges, by_frequency=True),
                                                 "reversed": encode(WORD, merges[::-1])}},
        "14.8": {"exact": decode(word_ids, table), "mistakes": {"per token": decode(word_ids, table, per_token=True)}},
    }


def printed(sid: str, exact):
    """What the worksheet prints for a step: ids as numbers, pairs with their counts, tokens as text."""
    if sid == "14.2":
        return [f"({a}, {b}): {c}" for (a, b), c in exact]
    if sid == "14.5":
        return [f"({a}, {b}) → {new}" for (a, b), new in exact]
    if sid == "14.6":
        return [bytes(b).decode("utf-8", errors="replace") for b in exact]
    if sid == "14.8":
        return exact
    return [str(i) for i in exact]


# on the worksheet's word both wrong orders give the same ids, so one name says both
BY_FREQUENCY_OR_REVERSED = ("merges applied most frequent first in this text, or merges applied from the last "
                            "learned to the first, instead of in the order learned")

# which key mistake (by name) each audit mistake is
NAMES = {
    ("14.1", "code points"): "code points instead of bytes: ord(\"é\") is 233, one id, where UTF-8 has two bytes",
    ("14.2", "non-overlapping"): "a run counted without overlap: \"aaa\" holds (a, a) once instead of twice",
    ("14.2", "last left out"): "the last pair left out: the window stopped one position short",
    ("14.3", "largest"): "ties broken another way: the largest pair, or the first one counted, instead of the smallest",
    ("14.4", "from the right"): "merged from the right: \"aaa\" became \"a\" + \"aa\" instead of \"aa\" + \"a\"",
    ("14.4", "with overlap"): "merged with overlap: the middle a of \"aaa\" went into two merges",
    ("14.4", "last dropped"): "the last id dropped: the scan stopped one short of the end",
    ("14.5", "largest"): "ties broken another way: the largest pair, or the first one counted, instead of the smallest",
    ("14.5", "first id"): ("a tie broken on the first id only: among tied pairs with the same first id, the first one "
                           "counted won instead of the smaller second id"),
    ("14.5", "stopped"): "training stopped while a pair still occurs: a pair seen once is still merged",
    ("14.5", "from the right"): "merged from the right: \"aaa\" became \"a\" + \"aa\" instead of \"aa\" + \"a\"",
    ("14.5", "one too many"):
        "one merge too many: vocab_size counts the 256 bytes, so 261 is five merges (ids 256–260)",
    ("14.5", "one too few"): "one merge too few: vocab_size 261 is the 256 bytes and five merges (ids 256–260)",
    ("14.6", "right first"): "the right token's bytes put first",
    ("14.7", "by frequency"): BY_FREQUENCY_OR_REVERSED,
    ("14.7", "reversed"): BY_FREQUENCY_OR_REVERSED,
    ("14.8", "per token"): "every token decoded on its own: the two bytes of é split into two �",
}


RUN = "baaaac"  # the page's case of two matches side by side: (a, a) merged into 256 in a run of four a's
RUN_COLUMNS = [(98, 97), (97, 97), (97, 99), (98, 256), (256, 97), (97, 256), (256, 256), (256, 99)]


def page_table() -> dict[str, list[str]]:
    """The page's table of a run's neighbouring matches ("How fast?"), row by row: {row label: its counts}.

    Merging (97, 97) into 256 in "baaaac" = 98 97 97 97 97 99 finds two occurrences side by side; the counts
    of the pairs in ``RUN_COLUMNS`` before the merge, after the first occurrence and after the second (each
    updated with its neighbours as the merges before it left them, which must agree with a recount), and
    after both updated with the neighbours of the ids before the merge (the mistake). Not part of the key:
    tests/test_audits.py checks that a page line holds each row's label and numbers, in order.
    """
    ids = byte_ids(RUN)
    stages = updated_counts(ids, (97, 97), 256)
    if stages[-1] != pair_counts(replace(ids, (97, 97), 256)):
        raise ValueError("the run's counts updated occurrence by occurrence differ from a recount")
    wrong = updated_counts(ids, (97, 97), 256, old_neighbours=True)[-1]

    def row(counts):
        return [str(counts.get(p, 0)).replace("-", "−") for p in RUN_COLUMNS]

    return {"before the merge": row(stages[0]), "after the first occurrence": row(stages[1]),
            "after the second": row(stages[2]), "both with the neighbours before the merge": row(wrong)}


def audit() -> dict[str, dict]:
    """Every step as the key holds it: its inputs, exact value, printed text, and each mistake under its name."""
    found = computed()
    # the two tie rules the mistake's name joins agree on the worksheet; so do a run counted either way in training
    for sid in ("14.3", "14.5"):
        if found[sid]["mistakes"]["first"] != found[sid]["mistakes"]["largest"]:
            raise ValueError(f"{sid}: the largest pair and the first counted differ (the mistake's name joins them)")
    if found["14.7"]["mistakes"]["by frequency"] != found["14.7"]["mistakes"]["reversed"]:
        raise ValueError("14.7: most frequent first and last learned first differ (the mistake's name joins them)")
    steps = {}
    for sid, step in found.items():
        named = {}
        for label, value in step["mistakes"].items():
            name = NAMES.get((sid, label))
            if name is None and value != step["exact"] and label not in ("first", "non-overlapping"):
                raise ValueError(f"{sid}: the audit's mistake {label!r} has no name in NAMES")
            if name is not None:
                named[name] = value
        steps[sid] = {"exact": step["exact"], "printed": printed(sid, step["exact"]), "mistakes": named}
        if "inputs" in step:
            steps[sid]["inputs"] = {"counts": step["inputs"]}
    steps["_page"] = page_table()
    return steps
