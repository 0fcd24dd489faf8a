"""`benchmarks/bench_bpe.py`, the timing chapter 14's page sends a learner to, on an unfinished chapter 14.

Its figures are not tested (a benchmark never asserts a time); what is tested is that a learner whose
chapter 14 still holds a stub is told so in the trainer's words, not shown a traceback.
"""

from __future__ import annotations

import importlib.util
import re

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


def _bench():
    spec = importlib.util.spec_from_file_location("bench_bpe", ROOT / "benchmarks" / "bench_bpe.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_bench_bpe_prints_the_cpu_limit_the_capstone_enforces(capsys, monkeypatch):
    """beside train_bpe's time: its CPU time and the capstone's --timeout (train's default), not a number of its own"""
    from kata.learner.train import parser
    from kata.learner.train.child import TIMEOUT

    assert parser().parse_args(["--model", "gpt"]).timeout == TIMEOUT, "the capstone's default --timeout is TIMEOUT"
    bench = _bench()
    monkeypatch.setattr(bench, "corpus", lambda: "aaabéaaabaca. " * 20)  # a few merges: the figures, not the time
    assert bench.main(["--impl", "solutions", "--vocab-size", "260"]) == 0
    out = capsys.readouterr().out
    assert re.search(rf"4 merges in [\d.]+ s, [\d.]+ s of CPU \(the capstone allows {TIMEOUT:g} s of CPU per call\)",
                     out), out


def test_chapter_14_names_one_time_limit_the_capstones():
    """the page, the docstrings and the benchmarks name the capstone's limit (a learner read 60 s in one, 30 in another)"""
    from kata.learner.train.child import TIMEOUT

    files = ["docs/chapters/14-bpe.md", "solutions/chapter14_bpe.py", "exercises/chapter14_bpe.py",
             "benchmarks/bench_bpe.py", "benchmarks/bench_gpt.py"]
    said = []
    for name in files:
        text = " ".join((ROOT / name).read_text(encoding="utf-8").split())
        said += [(name, m.group(0)) for m in LIMIT.finditer(text) if float(m.group("s")) != TIMEOUT]
    assert not said, f"the capstone allows {TIMEOUT:g} s of CPU per call; these say otherwise: {said}"


LIMIT = re.compile(r"(?:target(?: is|:)? (?:≤ |<= |at most )?|takes at most |capstone's |allows )(?P<s>\d+(?:\.\d+)?) s")
