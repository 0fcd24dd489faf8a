"""Chapter 18's snapshot builder: ``python -m kata.authoring.snapshots 18`` writes ``build()`` to chapter18.npz.

Authors only: it runs solutions/, and the student edition leaves it out. ``tests/test_snapshots.py`` checks that
the stored file is what ``build()`` makes today.

Only masks are stored: the tests compute grouped-query attention's expected values with the learner's own
chapter 4 attention (an invariant), and take the masks it is given from here rather than writing
``sliding_window_mask`` out in the test file. No input is drawn, so every seed builds the same file.
"""

from __future__ import annotations

import numpy as np

from kata.authoring.snapshots import Store

# (n, window) of test_the_window_keeps_exactly_the_last_window_positions
WINDOWS = [(5, 1), (5, 2), (5, 3), (5, 5), (5, 9), (1, 1), (7, 4)]
# (seq, window) of the attention and decoding tests (window None: causal), each with window + 1 for the mistake
ATTENTION = [(5, None), (5, 2), (4, None), (4, 3), (3, None), (6, 1), (6, 4), (2, 9), (4, 1), (6, 3)]


def build(seed: int | None = None) -> dict[str, np.ndarray]:
    """Chapter 18: sliding-window masks of other sizes, the masks classic mistakes give, and the attention tests' masks."""
    from solutions import chapter04_attention as attention
    from solutions import chapter18_grouped_query_attention as s

    data = Store(1818, seed)

    for k, (n, w) in enumerate(WINDOWS):
        mask = s.sliding_window_mask(n, w)
        minus = s.sliding_window_mask(n, w - 1) if w > 1 else np.zeros((n, n), dtype=bool)  # a window of 0 sees nothing
        data.put(f"window/{k}", n=n, window=w, mask=mask, plus=s.sliding_window_mask(n, w + 1), minus=minus,
                 both_sides=mask | mask.T)  # |i − j| < w: the band without its causal half

    for seq, w in ATTENTION:
        data.put(f"mask/{seq}", **{"causal" if w is None else str(w): attention.causal_mask(seq) if w is None
                                   else s.sliding_window_mask(seq, w)})
        if w is not None:
            data.put(f"mask/{seq}", **{str(w + 1): s.sliding_window_mask(seq, w + 1)})
    return data
