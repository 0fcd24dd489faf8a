"""stubgen writes a stub that passes ruff and binds what the chapter's exercise file binds.

``python -m kata.authoring.stubgen solutions/chapterNN_<topic>.py > exercises/chapterNN_<topic>.py`` is where a
new chapter's stubs start (CONTRIBUTING.md); its output must pass ``ruff check`` as it stands in exercises/
(import order, no unused import left unmarked) and keep every name the solution binds but its private helpers.
"""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from kata import project
from kata.authoring import stubgen
from kata.judge import answer_key
from kata.learners_code import GIVEN, is_stub

ROOT = answer_key.ROOT
SOLUTIONS = list(project.chapter_files(ROOT / "solutions").values())


def ruff(source: str, as_file: str) -> subprocess.CompletedProcess:
    """``ruff check`` (the one in this environment, the lint group) on ``source`` as if it were ``as_file``."""
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--stdin-filename", as_file, "-"],
                          input=source, capture_output=True, text=True, cwd=ROOT, timeout=60, check=False)


def bound(source: str) -> set[str]:
    """The names a module binds at its top level: imports, assignments, functions, classes."""
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            names |= {a.asname or a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.stem)
def test_the_stub_of_every_chapter_passes_ruff(solution):
    """stubgen's output for solutions/chapterNN_*.py passes `ruff check` as exercises/chapterNN_*.py"""
    proc = ruff(stubgen.stub(solution.read_text(encoding="utf-8")), f"exercises/{solution.name}")
    assert proc.returncode == 0, f"stubgen {solution.relative_to(ROOT)} fails ruff:\n{proc.stdout}{proc.stderr}"


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.stem)
def test_the_stub_binds_the_names_of_the_exercise_file(solution):
    """the stub keeps every import, constant and public function: the names exercises/ binds, no helper more"""
    stub = stubgen.stub(solution.read_text(encoding="utf-8"))
    exercise = (ROOT / "exercises" / solution.name).read_text(encoding="utf-8")
    assert bound(stub) == bound(exercise), (
        f"{solution.name}: the stub binds {sorted(bound(stub) - bound(exercise))} that exercises/ does not, "
        f"and not {sorted(bound(exercise) - bound(stub))}")
    helpers = [f.name for f in ast.parse(stub).body if isinstance(f, ast.FunctionDef) and f.name.startswith("_")
               and not f.name.startswith(GIVEN)]
    assert not helpers, f"{solution.name}: the stub keeps the solution's helpers {helpers}"


EARLIER = '''"""Chapter 99: a made-up chapter."""

import math

import numpy as np

from .chapter04_attention import causal_mask, softmax


def _helper(x):
    return softmax(x) * math.pi


def weights(x: np.ndarray) -> np.ndarray:
    """Weights.

    Returns:
        The weights.
    """
    return _helper(x) + causal_mask(2)


def _last_helper(x):
    return x
'''


def test_stubgen_marks_imports_only_the_dropped_code_used_and_drops_helpers_cleanly():
    """an earlier chapter's import and `math`, used only in bodies: kept and marked; no blank lines pile up"""
    stub = stubgen.stub(EARLIER)
    assert "from .chapter04_attention import causal_mask, softmax  # noqa: F401 - yours to use\n" in stub
    assert "import math  # noqa: F401 - yours to use\n" in stub
    assert "import numpy as np\n" in stub  # used in the signature: no mark
    assert "_helper" not in stub and "\n\n\n\n" not in stub and stub.endswith('not written yet")\n')
    proc = ruff(stub, "exercises/chapter99_made_up.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_ruff_check_here_fails_on_an_unmarked_unused_import():
    """the check can fail: the same stub without the marks is refused by ruff, naming F401 and the import"""
    unmarked = stubgen.stub(EARLIER).replace(stubgen.UNUSED, "")
    proc = ruff(unmarked, "exercises/chapter99_made_up.py")
    assert proc.returncode == 1 and "F401" in proc.stdout and "causal_mask" in proc.stdout, proc.stdout
    piled = stubgen.stub(EARLIER).replace("\n\n\ndef weights", "\n\n\n\n\ndef weights")
    assert "I001" in ruff(piled, "exercises/chapter99_made_up.py").stdout


GIVEN_CHECKS = '''"""Chapter 99: a made-up chapter."""

import numpy as np

from .chapter13_modern_block import _check_rows, _other


def scaled(x: np.ndarray, c: float) -> np.ndarray:
    """Scaled.

    Returns:
        x times c.

    See docs: chapter 99, step 99.1.
    """
    x = _check_rows(x, "scaled: x")
    W = _check_c(c)
    if c == 0:
        raise ValueError("c must not be 0")
    return _twice(x) * W / 2


# -- given ---
def _check_c(c):
    """The float c."""
    return float(c)


# the solution's own
def _twice(x):
    return 2 * x
'''


def test_stubgen_keeps_the_given_checks_and_drops_the_rest():
    """the `_check_*` calls opening a body, the `_check_*` helpers and their imports stay; the learner's check goes"""
    stub = stubgen.stub(GIVEN_CHECKS)
    assert 'x = _check_rows(x, "scaled: x")\n' in stub and "W = _check_c(c)  # noqa: F841 - yours to use\n" in stub
    assert "c must not be 0" not in stub and "_twice" not in stub and "the solution's own" not in stub
    assert "def _check_c(c):\n" in stub and "return float(c)" in stub and "# -- given ---" in stub
    assert "from .chapter13_modern_block import _check_rows\n" in stub and "_other" not in stub
    function = next(n for n in ast.parse(stub).body if isinstance(n, ast.FunctionDef) and n.name == "scaled")
    assert is_stub(function), "kata.learners_code.is_stub must take a stub with given checks for a stub"
    assert ruff(stub, "exercises/chapter99_made_up.py").returncode == 0
