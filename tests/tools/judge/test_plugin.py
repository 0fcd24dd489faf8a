"""The judge's plugin remembers which functions pass only for the code it saw (``kata/judge/plugin.py``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from kata.judge import runner

from ..conftest import ROOT, copy_solutions


def test_the_pass_memory_is_of_the_code_it_saw_not_of_the_chapter(tmp_path):
    """after a run on stubs, a run on a folder whose chapter 7 is complete never blames chapter 7 as not started"""
    cache = tmp_path / "cache"
    stubs = tmp_path / "stubs"
    shutil.copytree(ROOT / "exercises", stubs, ignore=shutil.ignore_patterns("__pycache__"))
    done = copy_solutions(tmp_path / "done", {"chapter08_batch_training": (
        "_right = batch_gradients\n\n\n"
        "def batch_gradients(*args, **kwargs):\n"
        "    loss, grads = _right(*args, **kwargs)\n"
        "    return loss, {k: 2 * g for k, g in grads.items()}\n")})

    def run(impl, test, out):
        subprocess.run([sys.executable, "-m", "pytest", f"tests/{test}", "--impl", str(impl), "-q",
                        "-o", f"cache_dir={cache}", *runner.stream_options(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
                       env={**os.environ, "KATA_WARM": "0"})
        return list(runner.read(out).results.values())

    on_stubs = run(stubs, "test_chapter07_backprop.py", tmp_path / "7.jsonl")
    assert {r["status"] for r in on_stubs} == {"not started"}
    on_done = run(done, "test_chapter08_batch_training.py", tmp_path / "8.jsonl")
    failing = [r["message"] for r in on_done if r["status"] == "failed"]
    assert failing, "the planted mistake in chapter 8 was not caught"
    assert not [m for m in failing if "(chapter 7), which is not started" in m], failing[0]


def test_a_failure_a_chapter_test_writes_itself_ends_with_the_steps_hint_and_page(tmp_path):
    """a step's failure written by its chapter test (not by `expect`) still ends with the hint and the docs line"""
    wrong = copy_solutions(tmp_path / "wrong", {"chapter17_flash_attention": (
        "_right = online_softmax_step\n\n\n"
        "def online_softmax_step(m, ell, acc, S, V):\n"
        "    import warnings\n\n"
        "    warnings.warn('invalid value encountered in subtract', RuntimeWarning)\n"
        "    return _right(m, ell, acc, S, V)\n")})
    out = tmp_path / "17.jsonl"
    subprocess.run([sys.executable, "-m", "pytest", "tests/test_chapter17_flash_attention.py", "--impl", str(wrong),
                    "-q", "-p", "no:cacheprovider", *runner.stream_options(out)],
                   cwd=ROOT, capture_output=True, text=True, timeout=300, check=False, env={**os.environ, "KATA_WARM": "0"})
    step = next(r for r in runner.read(out).results.values() if r.get("step") == "17.3")
    lines = step["message"].splitlines()
    assert step["status"] == "failed" and "the masked tile raised RuntimeWarning" in step["message"], step
    assert lines[-1] == "  docs      docs/chapters/17-flash-attention.md#step-17-3", lines
    assert "  hint      " in "\n".join(lines[-4:]) and len([x for x in lines if x.startswith("  docs")]) == 1, lines
