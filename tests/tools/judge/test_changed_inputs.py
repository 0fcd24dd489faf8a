"""The chapters' "does not modify its inputs" checks fail on code that modifies its inputs.

Those checks only call the learner's functions: a test's own comparison of its arrays with copies could never
fail, since the learner's function works on copies in its own process and the proxy restores the caller's arrays
(``kata/judge/proxy.py``). What fails such a call is the proxy, with ``ChangedItsInput`` naming the function and
the argument. This test plants, in every chapter with such a check (a test named for it: ``…does_not_modify…``,
``…leave(s) their inputs alone``, ``…untouched``, ``nothing_modifies…``), functions that give the right result and
then change their arguments' arrays in place, and requires every one of those checks to fail, saying so.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys

from kata import project
from kata.judge import runner

from ..conftest import ROOT, copy_solutions

# Appended to a chapter's solution: every public function of the module, once it has returned its right result
# to the caller (the outermost learner call, across chapters), adds 1 to each float array among its arguments
# (and among the values of a dict argument), an item to a list argument and a key to a dict argument that holds
# no float array: a function that changes its input in place.
CHANGES_ITS_INPUTS = '''
import builtins as _kata_builtins
import functools as _kata_functools

import numpy as _kata_np

_kata_depth = _kata_builtins.__dict__.setdefault("_kata_depth", [0])


def _kata_changes_its_inputs(function):
    @_kata_functools.wraps(function)
    def changed(*args, **kwargs):
        _kata_depth[0] += 1
        try:
            result = function(*args, **kwargs)
        finally:
            _kata_depth[0] -= 1
        if _kata_depth[0] == 0:
            for given in [*args, *kwargs.values()]:
                if isinstance(given, list):
                    given.append(given[-1] if given else 0)
                    continue
                changed = False
                for value in given.values() if isinstance(given, dict) else [given]:
                    if isinstance(value, _kata_np.ndarray) and value.dtype.kind == "f" and value.flags.writeable:
                        value += 1.0
                        changed = True
                if isinstance(given, dict) and not changed:
                    given["_kata_added"] = 0
        return result
    return changed


for _kata_name, _kata_value in list(globals().items()):
    if (not _kata_name.startswith("_") and callable(_kata_value) and not isinstance(_kata_value, type)
            and getattr(_kata_value, "__module__", None) == __name__):
        globals()[_kata_name] = _kata_changes_its_inputs(_kata_value)
'''


# A test that checks a function leaves its inputs as they were says so in its name.
NAMED = re.compile(r"modif|untouched|inputs_alone")


def untouched_checks() -> dict[str, list[str]]:
    """Chapter module -> the node ids of its tests named as a "does not modify its inputs" check."""
    found: dict[str, list[str]] = {}
    for chapter in project.chapters():
        tree = ast.parse((ROOT / chapter.test_file).read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_") and NAMED.search(node.name):
                found.setdefault(chapter.module, []).append(f"{chapter.test_file}::{node.name}")
    return found


def test_every_does_not_modify_check_fails_on_a_function_that_modifies_its_inputs(tmp_path):
    checks = untouched_checks()
    assert len(checks) >= 18, checks  # the chapters' checks are found (eighteen chapters have one today)
    impl = copy_solutions(tmp_path / "changes", {module: CHANGES_ITS_INPUTS for module in checks})
    stream = tmp_path / "results.jsonl"
    nodeids = [n for ids in checks.values() for n in ids]
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--impl", str(impl),
                           *runner.stream_options(stream), *nodeids],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    results = runner.read(stream).results
    missing = [n for n in nodeids if not any(r == n or r.startswith(n + "[") for r in results)]
    assert not missing, f"not run: {missing}\n{proc.stdout[-3000:]}"
    for nodeid, result in results.items():
        assert result["status"] == "failed" and "changed its argument" in (result["message"] or ""), (nodeid, result)
