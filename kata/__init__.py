"""The kata machinery. Learners never edit this package; tests import from it.

The folders tell the design ("Architecture" in CONTRIBUTING.md; README.md maps every module):

- ``judge/``: decides every result. The answer key, the teaching comparisons, the pytest plugin, and
  the proxy through which tests call the learner's functions. It never imports the learner's code.
- ``worker/``: runs the learner's code, in a separate, resource-limited process. Only
  ``judge/proxy.py`` starts it; it speaks plain data (``wire.py``) and is never trusted with a verdict.
- ``grading/``: grades a repository (or a class) with the judge and writes the reports.
- ``learner/``: the learner's loop (watch, hint, worksheet, doctor), built on the judge.
- ``authoring/``: tools for course authors (stubs, audits, and the snapshots each chapter's builder makes).

``import kata`` gives the tests what they use (``close``, ``expect``, ``numerical_gradient``, …), loaded
on first use so that the worker can import ``kata.wire`` without pulling in pytest.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "DidNotReturn": "kata.judge.proxy",
    "OverBudget": "kata.judge.proxy",
    "check": "kata.learner.notebook",
    "hint": "kata.learner.notebook",
    "load": "kata.judge.answer_key",
    "close": "kata.judge.checks",
    "copy_tree": "kata.judge.snapshots",
    "float_tree": "kata.judge.snapshots",
    "leaves": "kata.judge.snapshots",
    "expect": "kata.judge.checks",
    "numerical_gradient": "kata.judge.gradient",
    "raises_clearly": "kata.judge.checks",
    "returned": "kata.judge.checks",
    "snapshot": "kata.judge.plugin:snapshot",
    "step_case": "kata.judge.markers",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        module, _, attribute = _EXPORTS[name].partition(":")
        return getattr(importlib.import_module(module), attribute or name)
    raise AttributeError(f"module 'kata' has no attribute {name!r}")
