"""How a test says which worksheet step it checks, and how the tools that read test files find out.

A step's test carries ``@pytest.mark.step("4.3")``; a parametrized test checks one step per case with
``step_case("4.3", ...)``. The plugin reads the marker of each collected item (a case's marks are its own);
``marked_steps`` reads the same from a test file's source, for the tools that do not collect
(``kata/grading/strict.py``, the suite's own checks of the chapter files).
"""

from __future__ import annotations

import ast
from typing import Any


def step_case(number: str, claim: str, *values: Any) -> Any:
    """One worksheet step as a case of a parametrized test: its ``step`` marker, its claim as the case's id.

    For steps whose tests differ only in a value (the key of a dict the function returns): the plugin reads
    the marker of each case as it reads a step test's, so each step keeps its title, its own result and its
    "not started". ``claim`` is what the step's own test would have been named, without ``test_``.
    """
    import pytest

    return pytest.param(*values, marks=pytest.mark.step(number), id=claim)


def marked_steps(function: ast.FunctionDef) -> list[str]:
    """The worksheet steps a test function checks, read from its source (for the tests that read the files).

    A step is given by ``@pytest.mark.step("4.3")``, or by one ``step_case("4.3", ...)`` per case of the
    function's ``parametrize``.
    """
    found = []
    for decorator in function.decorator_list:
        for node in ast.walk(decorator):
            if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
                continue
            named = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if named in ("step", "step_case"):  # pytest.mark.step("4.3") or step_case("4.3", ...)
                found.append(node.args[0].value)
    return found
