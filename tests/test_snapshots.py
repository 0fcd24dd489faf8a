"""The stored snapshots (tests/snapshots/chapterNN.npz) are what solutions/ gives today.

A chapter's tests compare the learner's results with these files instead of with an implementation written
in the test. When a solution or a chapter's builder (tests/snapshots/chapterNN.py) changes, the file must be written
again: ``python -m kata.authoring.snapshots N``.
"""

import numpy as np
import pytest

from kata.authoring import snapshots as builders
from kata.judge import snapshots


@pytest.mark.parametrize("chapter", builders.chapters())
def test_the_stored_snapshot_is_what_the_solutions_give(chapter):
    """every stored array has the key, shape, dtype and (to snapshots.TOLERANCE) the values the builder makes"""
    problems = builders.differences(chapter)
    assert not problems, (f"chapter {chapter}'s snapshot is not what its builder makes (write it again: "
                          f"python -m kata.authoring.snapshots {chapter}):\n" + "\n".join(problems[:10]))


@pytest.mark.parametrize("chapter", builders.chapters())
def test_a_snapshot_holds_plain_numbers_only(chapter):
    """the file opens with allow_pickle=False and holds only numeric arrays"""
    with np.load(snapshots.path(chapter), allow_pickle=False) as archive:
        kinds = {archive[k].dtype.kind for k in archive.files}
    assert kinds <= set("biuf"), f"chapter {chapter}'s snapshot holds arrays of kinds {kinds}"


def test_a_changed_snapshot_is_named_key_by_key(tmp_path, monkeypatch):
    """a stored file with a key missing, one extra and one value moved: each difference is named"""
    data = dict(builders.build(4))
    moved, gone = sorted(data)[0], sorted(data)[-1]
    data[moved] = np.asarray(data[moved]) + 1.0
    data["extra/0/x"] = np.zeros(2)
    del data[gone]
    monkeypatch.setattr(snapshots, "path", lambda chapter: tmp_path / f"chapter{chapter:02d}.npz")
    snapshots.write(4, data)
    problems = builders.differences(4)
    assert f"{moved}: stored values differ from the solutions'" in problems, problems
    assert "extra/0/x: stored but no longer built" in problems and f"{gone}: built but not stored" in problems, problems


def test_the_builders_stay_with_the_authors():
    """the student edition ships each chapter's snapshot but not its builder (it runs solutions/)"""
    from kata.grading import release

    assert release.belongs("tests/snapshots/chapter04.npz") and not release.belongs("tests/snapshots/chapter04.py")
