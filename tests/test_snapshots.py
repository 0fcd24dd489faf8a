"""The stored snapshots (tests/snapshots/chapterNN.npz) are what solutions/ gives today.

A chapter's tests compare the learner's results with these files instead of with an implementation written
in the test. When a solution or a builder in kata/authoring/snapshots.py changes, the file must be written again:
``python -m kata.authoring.snapshots``.
"""

import numpy as np
import pytest

from kata.authoring import snapshots as builders
from kata.judge import snapshots


@pytest.mark.parametrize("chapter", sorted(builders.BUILDERS))
def test_the_stored_snapshot_is_what_the_solutions_give(chapter):
    """every stored array has the key, shape, dtype and (to snapshots.TOLERANCE) the values the builder makes"""
    stored = snapshots.load(chapter).data
    fresh = builders.build(chapter)
    again = "regenerate it: python -m kata.authoring.snapshots"
    assert sorted(stored) == sorted(fresh), (
        f"chapter {chapter}'s snapshot has other keys than the builder makes ({again}): "
        f"missing {sorted(set(fresh) - set(stored))[:5]}, extra {sorted(set(stored) - set(fresh))[:5]}")
    for key in sorted(fresh):
        a, b = stored[key], np.asarray(fresh[key])
        assert a.shape == b.shape and a.dtype == b.dtype, f"{key}: stored {a.shape} {a.dtype}, built {b.shape} {b.dtype} ({again})"
        assert np.allclose(a, b, **snapshots.TOLERANCE), f"{key}: stored values differ from the solutions' ({again})"


@pytest.mark.parametrize("chapter", sorted(builders.BUILDERS))
def test_a_snapshot_holds_plain_numbers_only(chapter):
    """the file opens with allow_pickle=False and holds only numeric arrays"""
    with np.load(snapshots.path(chapter), allow_pickle=False) as archive:
        kinds = {archive[k].dtype.kind for k in archive.files}
    assert kinds <= set("biuf"), f"chapter {chapter}'s snapshot holds arrays of kinds {kinds}"
