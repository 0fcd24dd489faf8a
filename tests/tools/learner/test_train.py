"""`nox -s train` and `nox -s generate` (kata/learner/train/, generate.py), run as a learner runs them.

One shortened training run of the reference (the default model, 1,000 steps instead of 4,000, seed 0) is shared
by the tests of what a run writes; the checks before training and the time limit are run on copies of
solutions/ with one planted problem. The full default run is `python benchmarks/bench_train.py`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from kata import learners_code
from kata.learner import generate, train
from kata.learner.train import child

from ..conftest import ROOT, assert_drawn_png, copy_solutions, tool

pytestmark = pytest.mark.slow  # tool runs (training, seconds each): handed out first under pytest-xdist

STEPS = 1000


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A shortened reference run: (its folder, the tool's output)."""
    runs = tmp_path_factory.mktemp("runs")
    proc = tool("train", "--impl", "solutions", "--steps", str(STEPS), "--sample-every", "500", "--runs", str(runs),
                "--name", "short", timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return runs / "short", proc.stdout


def test_a_shortened_run_halves_the_loss_and_writes_every_file(run):
    """1,000 steps of the default model on the Zen of Python: the loss falls by half; run.json says so"""
    folder, out = run
    assert sorted(p.name for p in folder.iterdir()) == ["attention.png", "loss.png", "model.npz", "run.json",
                                                         "samples.txt"]
    info = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    for key in ("settings", "first_loss", "final_loss", "seconds", "tokens_per_second"):
        assert key in info, f"run.json has no {key}"
    assert info["settings"]["steps"] == STEPS and info["settings"]["seed"] == 0
    assert info["impl"] == "solutions" and info["chapters"] == {"10": "solutions/chapter10_transformer.py"}, info
    assert len(info["losses"]) == STEPS and info["first_loss"] == info["losses"][0]
    assert info["first_loss"] > 3.0, "the first loss should be near ln(vocab) = ln 45 ≈ 3.8"
    assert info["final_loss"] <= info["first_loss"] / 2, (info["first_loss"], info["final_loss"])
    assert info["seconds"] > 0 and info["tokens_per_second"] > 0
    assert re.search(r"✓ all \d+ gradient numbers of a tiny model match central differences", out), out
    assert "step  500" in out and "final" in out and "Beautiful" in out
    samples = (folder / "samples.txt").read_text(encoding="utf-8")
    assert samples.startswith("step 500 ") and f"step {STEPS} " in samples
    assert info["final_sample"].startswith("Beautiful") and len(info["final_sample"]) == len("Beautiful") + 200


@pytest.mark.parametrize("name", ["loss.png", "attention.png"])
def test_the_figures_are_pngs_with_something_drawn(run, name):
    """loss.png and attention.png are valid PNG files whose pixels are not all one colour"""
    assert_drawn_png(run[0] / name, 200)


def test_the_model_loads_without_pickle_and_generate_continues_a_prompt(run):
    """model.npz is plain arrays; `generate` writes the prompt and --n more characters from it"""
    with np.load(run[0] / "model.npz", allow_pickle=False) as npz:
        assert {"vocab", "tok_emb", "pos_emb", "blocks.0.WQ", "blocks.1.W2", "WO"} <= set(npz.files)
        assert npz["tok_emb"].shape == (45, 32) and npz["pos_emb"].shape == (32, 32)
    proc = tool("generate", str(run[0]), "--prompt", "Beautiful", "--n", "40", timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = proc.stdout.rstrip("\n")
    assert text.startswith("Beautiful") and len(text) == len("Beautiful") + 40, text
    assert "greedy" in proc.stderr and "solutions/chapter10_transformer.py" in proc.stderr


def test_generate_refuses_characters_the_model_never_saw(run, capsys):
    """a prompt with a character outside the run's vocabulary is refused, listing the characters there are"""
    assert generate.main([str(run[0]), "--prompt", "Quiet"]) == 2
    err = capsys.readouterr().err
    assert "--prompt 'Quiet' has characters this model never saw: ['Q']" in err, err


def test_the_same_seed_gives_the_same_run():
    """two runs with one seed have the same loss at every step and the same parameters; another seed differs"""
    from solutions import chapter10_transformer as ch

    corpus = train.load_corpus("zen", 16)

    def short(seed):
        s = train.Settings(steps=30, d_model=8, context=16, seed=seed, sample_every=10**6).resolved(corpus)
        return train.train_model(ch, corpus, s)

    a, b, c = short(3), short(3), short(4)
    assert a["losses"] == b["losses"] and np.array_equal(a["params"].vector, b["params"].vector)
    assert a["samples"] == b["samples"]
    assert a["losses"] != c["losses"]


def test_a_wrong_layer_norm_backward_is_stopped_before_training(tmp_path):
    """dgamma without x̂: the run stops after the gradient check, naming a gamma's gradient and layer_norm_backward"""
    broken = copy_solutions(tmp_path / "broken", {"chapter10_transformer": (
        "_right = layer_norm_backward\n\n\n"
        "def layer_norm_backward(x, gamma, d_out, eps=1e-5):\n"
        "    dx, d_gamma, d_beta = _right(x, gamma, d_out, eps)\n"
        "    return dx, np.sum(d_out, axis=tuple(range(np.ndim(d_out) - 1))), d_beta  # forgot x_hat\n")})
    proc = tool("train", "--impl", str(broken), "--runs", str(tmp_path / "runs"), timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    said = proc.stderr
    assert "gradient check failed, before training" in said, said
    assert re.search(r"grads\['lnf_gamma'\] is wrong: look at layer_norm_backward: its dgamma disagrees", said), said
    assert "grads['blocks'][0]['ln1_gamma']" in said, "the other wrong gradients are listed"
    assert "step " not in proc.stdout and not (tmp_path / "runs").exists(), "nothing is trained or written"


def test_a_wrong_dx_is_blamed_on_its_function_not_on_the_first_gradient_it_spoils(tmp_path):
    """layer_norm_backward with only the direct path in dx spoils the FFN's gradients first; the message names LN"""
    copy_solutions(tmp_path / "broken", {"chapter10_transformer": (
        "_right = layer_norm_backward\n\n\n"
        "def layer_norm_backward(x, gamma, d_out, eps=1e-5):\n"
        "    dx, d_gamma, d_beta = _right(x, gamma, d_out, eps)\n"
        "    return d_out * gamma / np.sqrt(np.var(x, axis=-1, keepdims=True) + eps), d_gamma, d_beta\n")})
    import importlib
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module("broken.chapter10_transformer")
        with pytest.raises(train.TrainError) as err:
            train.check_gradients(SimpleNamespace(c10=module), train.CHAPTER10)
    finally:
        sys.path.remove(str(tmp_path))
        for name in [n for n in sys.modules if n == "broken" or n.startswith("broken.")]:
            del sys.modules[name]
    said = str(err.value)
    assert re.search(r"grads\['blocks'\]\[1\]\['ln2_gamma'\] is wrong: look at layer_norm_backward: its dx", said), said
    assert "grads['blocks'][1]['W1']" in said  # also wrong, but not blamed


def test_an_endless_loop_is_stopped_and_named(tmp_path):
    """a layer_norm that never returns: the run stops after --timeout s of CPU, naming the function, file and line"""
    hanging = copy_solutions(tmp_path / "hanging", {"chapter10_transformer": (
        "def layer_norm(x, gamma, beta, eps=1e-5):\n    while True:\n        pass\n")})
    proc = tool("train", "--impl", str(hanging), "--runs", str(tmp_path / "runs"), "--timeout", "2", timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert re.search(r"a call into your code used [\d.]+ s of CPU without returning \(--timeout: 2 s of CPU\): an "
                     r"endless loop, or far more work than needed\? It was running \S+chapter10_transformer\.py:\d+ "
                     r"in layer_norm \(called as transformer_loss_and_grads\)", proc.stderr), proc.stderr


# -- the watchdog: CPU time, not the clock (issue 31: a correct train_bpe stopped at a load of 23) --------------
SPIN_IN_THE_NOTEBOOK = "def train_bpe(text, vocab_size):\n    n = 0\n    while True:\n        n += 1\n"


def _notebook(cells: list[tuple[str, str]]) -> dict:
    return {"cells": [{"cell_type": kind, "metadata": {}, "source": text, **(
        {"outputs": [], "execution_count": None} if kind == "code" else {})} for kind, text in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _watched(script: str, log: Path, path: Path) -> subprocess.CompletedProcess:
    """Run ``script`` in a fresh Python after ``watchdog = Watchdog(LIMIT, log)`` (``path`` first on sys.path)."""
    head = (f"import sys, time\nsys.path.insert(0, {str(path)!r})\n"
            "from kata.learner.train.child import Guarded, Watchdog\n"
            f"log = open({str(log)!r}, 'a', encoding='utf-8')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-c", head + script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_a_call_past_its_cpu_limit_is_stopped_and_named_in_the_notebook_it_came_from(tmp_path, monkeypatch):
    """chapter 14 answered in its notebook, train_bpe spinning: stopped past 0.5 s of CPU, named by notebook and cell

    The staged copy (exercises/ with the notebook's answers appended) has other line numbers than anything the
    learner wrote: the message names the notebook, the function and the line of its cell, and the CPU it used.
    """
    learner = tmp_path / "learner"
    shutil.copytree(ROOT / "exercises", learner / "exercises", ignore=shutil.ignore_patterns("__pycache__"))
    (learner / "notebooks").mkdir()
    (learner / "notebooks" / "chapter14_bpe.ipynb").write_text(json.dumps(_notebook([
        ("markdown", "# Byte-pair encoding"), ("code", "import numpy as np"), ("code", SPIN_IN_THE_NOTEBOOK)])),
        encoding="utf-8")
    staged = learners_code.write_package(tmp_path / "staged" / "exercises", learner=learner)
    text = (staged / "chapter14_bpe.py").read_text(encoding="utf-8").splitlines()
    line = max(i for i, t in enumerate(text, 1) if t.strip() == "n += 1")
    assert learners_code.notebook_place(staged / "chapter14_bpe.py", line, learner) == (
        "notebooks/chapter14_bpe.ipynb, in train_bpe (line 4 of the code cell that defines it, cell 3)")
    assert learners_code.notebook_place(staged / "chapter14_bpe.py", 3, learner) is None  # the file's own line

    log = tmp_path / "child.log"
    proc = _watched("import importlib\nwatchdog = Watchdog(0.5, log)\n"
                    "bpe = Guarded(importlib.import_module('exercises.chapter14_bpe'), watchdog, lambda: None)\n"
                    "bpe.train_bpe('abab', 258)\nprint('returned')\n", log, staged.parent)
    assert proc.returncode == 1 and "returned" not in proc.stdout, proc.stdout + proc.stderr
    said = log.read_text(encoding="utf-8")
    assert re.search(r"Timeout \(used 0\.[5-9]\d* s of CPU|Timeout \(used [1-9]", said), said
    monkeypatch.setattr(child.project, "ROOT", learner)
    stand_in = SimpleNamespace(log=log.open("a", encoding="utf-8"), log_path=log, timeout=0.5, proc=None,
                               job={"folder": str(staged), "shown_folder": "exercises"})
    try:
        message = child.Child.hung(stand_in, silent=False)
    finally:
        stand_in.log.close()
    assert re.fullmatch(r"a call into your code used [\d.]+ s of CPU without returning \(--timeout: 0\.5 s of CPU\): "
                        r"an endless loop, or far more work than needed\? It was running notebooks/chapter14_bpe\.ipynb, "
                        r"in train_bpe \(line [34] of the code cell that defines it, cell 3\)\. The run was stopped\.",
                        message), message  # the loop's line 3 or its body's line 4, wherever it was stopped


def test_a_call_that_waits_is_not_stopped_by_the_cpu_limit_only_by_the_clocks_backstop(tmp_path):
    """a call that waits is let be past its CPU limit; one that waits past BACKSTOP times the limit is stopped

    A call sleeping 1.5 s (as one waiting for a core on a busy machine would) under a 0.3 s CPU limit returns; one
    sleeping past the wall-clock backstop is stopped there, and the message says it used little CPU.
    """
    log = tmp_path / "child.log"
    waits = _watched("watchdog = Watchdog(0.3, log)\nwatchdog.arm()\ntime.sleep(1.5)\nwatchdog.cancel()\n"
                     "print('returned')\n", log, tmp_path)
    assert waits.returncode == 0 and waits.stdout.strip() == "returned", waits.stdout + waits.stderr
    assert "Timeout" not in log.read_text(encoding="utf-8")
    limit = 1 / child.BACKSTOP  # a backstop of 1 s on the clock
    blocks = _watched(f"watchdog = Watchdog({limit!r}, log)\nwatchdog.arm()\ntime.sleep(60)\nprint('returned')\n",
                      log, tmp_path)
    assert blocks.returncode == 1 and "returned" not in blocks.stdout, blocks.stdout + blocks.stderr
    said = log.read_text(encoding="utf-8")
    assert "Timeout (0:00:01)!" in said and "s of CPU" not in said, said
    stand_in = SimpleNamespace(log=log.open("a", encoding="utf-8"), log_path=log, timeout=limit, proc=None,
                               job={"folder": str(tmp_path / "none"), "shown_folder": "exercises"})
    try:
        message = child.Child.hung(stand_in, silent=False)
    finally:
        stand_in.log.close()
    assert message.startswith("a call into your code did not return within 1 s on the clock, using little CPU"), message


def test_the_untouched_stubs_are_told_to_finish_chapter_10_first(tmp_path):
    """`nox -s train` on the stubs: chapter 10 is not finished, with the stub's message and where it is"""
    proc = tool("train", "--impl", "exercises", "--runs", str(tmp_path / "runs"), timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert re.search(r"chapter 10 is not finished: transformer_loss_and_grads stops at "
                     r"exercises/chapter10_transformer\.py:\d+", proc.stderr), proc.stderr
    assert "NotImplementedError: 10.16" in proc.stderr and "nox -s chapter10" in proc.stderr
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("content, words", [
    (None, "there is no file"),
    (b"", "is empty"),
    (b"  \n\n ", "is empty (only white space)"),
    (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "is not text (it has NUL bytes"),
    ("Café au lait, s'il vous plaît. " * 4, "is not UTF-8 text (byte 0xe9 at position 3"),
    (b"Too short to learn from.", "24 characters is too short"),
    ("folder", "is a folder"),
    ("1 GB", "is 1,024 MB; a corpus may be at most 64 MB"),
], ids=["missing", "empty", "white space", "binary", "latin-1", "too short", "folder", "1 GB"])
def test_a_corpus_file_that_cannot_be_trained_on_says_why(tmp_path, capsys, content, words):
    """--corpus FILE: a missing, empty, binary, non-UTF-8, too short or 1 GB file, or a folder: exit 2 and a reason"""
    path = tmp_path / "corpus.txt"
    if content == "folder":
        path.mkdir()
    elif content == "1 GB":  # sparse: no disk used, and never read
        with path.open("wb") as f:
            f.truncate(2**30)
    elif isinstance(content, str):
        path.write_bytes(content.encode("latin-1"))
    elif content is not None:
        path.write_bytes(content)
    assert train.main(["--corpus", str(path), "--runs", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --corpus ") and words in err, err
    assert not (tmp_path / "runs").exists()


def test_the_book_and_any_text_file_are_corpora(tmp_path):
    """--corpus book is a few pages of Coriolanus; a UTF-8 file with Windows line ends is read as plain lines"""
    book = train.load_corpus("book")
    assert book.text.startswith("First Citizen:\nBefore we proceed any further") and 10_000 < len(book.text) < 20_000
    path = tmp_path / "poem.txt"
    path.write_bytes("Ünïcode, line one.\r\nLine two.\r\n".encode() * 3)
    corpus = train.load_corpus(str(path))
    assert corpus.name == "poem" and "\r" not in corpus.text and corpus.text.startswith("Ünïcode")
    assert train.Settings().resolved(corpus).prompt == "Ünïcode,"


def test_generate_says_what_is_wrong_with_a_run(tmp_path, capsys):
    """generate: a missing folder, a file that is not an .npz, pickled arrays, missing arrays, unknown characters"""
    np.savez(tmp_path / "pickled.npz", tok_emb=np.array([{"a": 1}], dtype=object))
    np.savez(tmp_path / "partial.npz", tok_emb=np.zeros((3, 4)), pos_emb=np.zeros((5, 4)),
             vocab=np.array([97, 98, 99]), kata_format=np.array(train.FORMAT))
    (tmp_path / "text.npz").write_text("not a model", encoding="utf-8")
    cases = [([str(tmp_path / "nothing")], "there is no model at"),
             ([str(tmp_path / "text.npz")], "not a NumPy .npz file"),
             ([str(tmp_path / "pickled.npz")], "Object arrays cannot be loaded when allow_pickle=False"),
             ([str(tmp_path / "partial.npz")], "does not fit this tool: it has no lnf_gamma"),
             ([str(tmp_path / "partial.npz"), "--n", "-1"], "--n must be 0 or more")]
    for args, words in cases:
        assert generate.main(args) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("error: ") and words in err, (args, err)
