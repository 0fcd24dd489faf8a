"""`benchmarks/bench_bpe.py`, the timing chapter 14's page sends a learner to, on an unfinished chapter 14.

Its figures are not tested (a benchmark never asserts a time); what is tested is that a learner whose
chapter 14 still holds a stub is told so in the trainer's words, not shown a traceback.
"""

from __future__ import annotations

import importlib.util

from ..conftest import ROOT


def test_bench_bpe_refuses_an_unfinished_chapter_14_as_the_trainer_does(capsys):
    """exercises/ (the stubs): 'chapter 14 is not finished: train_bpe stops at …', how to finish it, exit 1"""
    spec = importlib.util.spec_from_file_location("bench_bpe", ROOT / "benchmarks" / "bench_bpe.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--impl", "exercises"]) == 1
    err = capsys.readouterr().err
    assert "chapter 14 is not finished: train_bpe stops at exercises/chapter14_bpe.py:" in err, err
    assert "NotImplementedError: 14.5 train_bpe:" in err and "`nox -s chapter14` passes every step" in err, err
    assert "Traceback" not in err, err
