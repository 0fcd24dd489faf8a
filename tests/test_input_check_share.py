"""The learner writes the maths, the course the plumbing (issue 31, item 2; CONTRIBUTING.md, "Input checks").

``scripts/input_check_share.py`` counts, in every public function of ``solutions/``, the lines after the given
``_check_*`` calls and, among them, the lines that refuse input. A check left in a learner's body must teach an
idea: it is declared "yours to write" in the function's docstring, and there is at most one per function. Every
other check belongs in a given helper, so the plumbing share of each chapter is 0.
"""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("input_check_share", ROOT / "scripts" / "input_check_share.py")
share = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(share)
FILES = sorted((ROOT / "solutions").glob("chapter*.py"))


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_check_a_learner_writes_teaches_an_idea(path):
    """each input check left in a public function's body is declared "yours to write", one per function at most"""
    for row in share.chapter_share(path):
        raising = [line for line in row["shown"] if line.startswith(("if ", "raise ", "assert "))]
        assert not row["checks"] or row["idea"], (
            f"{path.name}: {row['name']} checks its input in the learner's body ({raising}) without saying "
            "\"yours to write\" in its docstring: give the check in a _check_* helper, or say which idea it teaches")
        assert len(raising) <= 1, f"{path.name}: {row['name']} leaves {len(raising)} checks to the learner: {raising}"
