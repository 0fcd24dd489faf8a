"""The project's own test suite: one file per chapter, plus the checks that prove the suite and the key.

What every chapter's tests share lives here (``from tests import left_untouched``): this module ships in
the student edition and is part of the course's version (``kata/grading/release.py``, ``course.py``) with the
chapter tests, which a module of its own beside them would not be.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np


@contextmanager
def left_untouched(after: str, **inputs: Any) -> Iterator[None]:
    """Check that the calls made inside the ``with`` block leave every one of ``inputs`` as it was.

    Each input is an array (``x=x``), or a dict of arrays (``params=params``), whose entries are checked one
    by one as ``params['WQ']``. It is copied on entering the block; on leaving it, each entry is compared
    with its copy by ``kata.close`` at its default tolerance, and a change fails the test as
    "<name> after <after>". An exception raised inside the block (a stub's "not started" among them) passes
    through unchanged: unlike pytest-check's ``with check:``, nothing is swallowed.
    """
    from kata import close

    def entries(name: str, value: Any) -> list[tuple[str, Any]]:
        if isinstance(value, dict):
            return [(f"{name}[{key!r}]", entry) for key, entry in value.items()]
        return [(name, value)]

    watched = [(label, value, value.copy()) for name, given in inputs.items() for label, value in entries(name, given)]
    yield
    for label, now, before in watched:
        close(now, before, f"{label} after {after}")


def float_tree(value: Any) -> Any:
    """A tree of numbers from the answer key (nested lists in dicts and lists of dicts) as float64 arrays.

    Dicts and lists of dicts keep their layout (a model's blocks); any other list is one array.
    """
    if isinstance(value, dict):
        return {k: float_tree(v) for k, v in value.items()}
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return [float_tree(v) for v in value]
    return np.array(value, dtype=np.float64)


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
            named = node.func.attr if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else \
                getattr(getattr(node, "func", None), "id", None)
            if named in ("step", "step_case") and node.args and isinstance(node.args[0], ast.Constant):
                found.append(node.args[0].value)
    return found
