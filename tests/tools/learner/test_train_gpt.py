"""`nox -s train -- --model gpt` and `nox -s generate` of a GPT (kata/learner/train/gpt.py), run as a learner runs them.

One tiny run of the reference (a 260-token vocabulary, d_model 8, 20 steps) is shared by the tests of what a run
writes; a stopped and resumed run must end with exactly its parameters. The checks before training run on copies
of solutions/ with one planted mistake. The full default run is `python benchmarks/bench_gpt.py` for its speed,
and `nox -s train -- --model gpt --impl solutions` itself for its loss (docs/train-gpt.md).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from kata.learner import train
from kata.project import chapter_files as project_files

from ..conftest import ROOT, assert_drawn_png, copy_solutions, tool

pytestmark = pytest.mark.slow  # tool runs (training, seconds each): handed out first under pytest-xdist

TINY = ["--model", "gpt", "--impl", "solutions", "--vocab-size", "260", "--d-model", "8", "--heads", "2",
        "--layers", "1", "--d-ff", "8", "--context", "8", "--batch", "2", "--steps", "20", "--warmup", "2",
        "--eval-every", "10"]

# Python started as from a terminal: SIGINT back at its default, whatever this suite inherited, then the command
AS_IN_A_TERMINAL = [sys.executable, "-c", "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny reference run: (its folder, the tool's output)."""
    runs = tmp_path_factory.mktemp("runs")
    proc = tool("train", *TINY, "--runs", str(runs), "--name", "tiny", timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return runs / "tiny", proc.stdout


def test_a_run_writes_run_json_with_the_evaluations_the_tokenizer_and_the_unigram_floor(run):
    """run.json: settings, evals (step, train_loss, val_loss), tokens_per_s, tokenizer, unigram_entropy"""
    folder, out = run
    assert {"run.json", "loss.png", "schedule.png", "attention.png", "model.npz", "checkpoint.npz",
            "checkpoint.json"} <= {p.name for p in folder.iterdir()}
    info = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert info["settings"]["steps"] == 20 and info["settings"]["vocab_size"] == 260
    assert info["impl"] == "solutions" and info["chapters"] == {  # where each chapter's code came from
        str(n): f"solutions/{path.name}" for n, path in project_files(ROOT / "solutions").items() if 11 <= n <= 15}
    assert [e["step"] for e in info["evals"]] == [0, 10, 20]
    assert info["evals"][0]["val_loss"] > info["evals"][-1]["val_loss"], "20 steps lower the validation loss"
    for e in info["evals"]:
        assert {"step", "train_loss", "val_loss"} <= set(e) and 0 < e["val_loss"] < 10
    assert info["tokens_per_s"] > 0
    assert info["tokenizer"]["vocab_size"] == 260 and 1.0 < info["tokenizer"]["bytes_per_token"] < 1.2
    assert 2.0 < info["unigram_entropy"] < np.log(260), info["unigram_entropy"]
    assert re.search(r"✓ all \d+ gradient numbers of a tiny GPT match central differences", out), out
    assert "step    10  train" in out and "validation" in out
    said = re.search(r"validation loss \d+\.\d{3} nats, (\d+\.\d{3}) (below|above) the unigram entropy", out)
    assert said, out  # the distance unsigned, with the word that says which side: never "-0.069 below"
    gap = info["below_unigram"]
    assert said.group(2) == ("below" if gap >= 0 else "above") and float(said.group(1)) == round(abs(gap), 3), out


@pytest.mark.parametrize("name", ["loss.png", "schedule.png", "attention.png"])
def test_the_figures_are_pngs_with_something_drawn(run, name):
    """loss.png, schedule.png and attention.png are PNG files whose pixels are not all one colour"""
    assert_drawn_png(run[0] / name, 150)


def test_a_stopped_and_resumed_run_ends_with_the_same_parameters(run, tmp_path):
    """--stop-at 10, then the command it prints: the unbroken run's parameters bit for bit; a finished run is left"""
    name = "t$x=<字"  # a shell would expand $x and redirect at < if the printed command did not quote the name
    stopped = tool("train", *TINY, "--runs", str(tmp_path), "--name", name, "--stop-at", "10", timeout=240)
    assert stopped.returncode == 0, stopped.stdout[-3000:] + stopped.stderr[-3000:]
    assert "stopped after step 10" in stopped.stdout and not (tmp_path / name / "run.json").exists()
    printed = re.search(r"`(nox -s train -- [^`]*)` continues it", stopped.stdout)
    assert printed, stopped.stdout
    words = shlex.split(printed.group(1))
    assert words[:7] == ["nox", "-s", "train", "--", "--model", "gpt", "--resume"] and name in words, words
    resumed = tool("train", *words[4:], timeout=240)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    with np.load(run[0] / "model.npz", allow_pickle=False) as a, \
            np.load(tmp_path / name / "model.npz", allow_pickle=False) as b:
        assert set(a.files) == set(b.files)
        for key in a.files:
            assert np.array_equal(a[key], b[key]), f"{key} differs after resuming"
    first = json.loads((run[0] / "run.json").read_text(encoding="utf-8"))["evals"]
    written = (tmp_path / name / "run.json").read_text(encoding="utf-8")
    assert [(e["step"], e["train_loss"], e["val_loss"]) for e in first] == \
           [(e["step"], e["train_loss"], e["val_loss"]) for e in json.loads(written)["evals"]]
    generate = re.search(r"next: (nox -s generate -- .*)", resumed.stdout)
    assert generate and shlex.split(generate.group(1))[4] == str(tmp_path / name), resumed.stdout
    again = tool("train", *words[4:], timeout=240)
    assert again.returncode == 0 and "is a finished run (step 20 of 20): nothing to resume" in again.stdout, \
        again.stdout[-3000:] + again.stderr[-3000:]
    assert (tmp_path / name / "run.json").read_text(encoding="utf-8") == written, "a finished run is left as it was"


def test_ctrl_c_names_the_command_that_resumes_this_run(tmp_path):
    """Ctrl-C (SIGINT to the process group) after an evaluation: exit 130 and the command that resumes this run.

    The trainer starts as a terminal's foreground command does, with SIGINT at its default (``AS_IN_A_TERMINAL``):
    a suite started as a background job of a non-interactive shell (``cmd &`` in a script) hands its processes
    SIGINT *ignored*, as POSIX says background jobs get it, and a trainer that inherits that rightly keeps on
    (it failed so in 3 of 3 runs started from a background job at load 9: SigIgn 0x…1006, SIGINT and SIGQUIT).
    """
    name = "c$y=<字"
    args = [*TINY[:TINY.index("--steps")], "--steps", "100000", "--warmup", "2", "--eval-every", "10"]
    proc = subprocess.Popen([*AS_IN_A_TERMINAL, "-m", "kata", "train", *args, "--runs", str(tmp_path), "--name", name],
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        for line in proc.stdout:
            if line.lstrip().startswith("step    10"):
                break
        deadline = time.monotonic() + 60
        while not (tmp_path / name / "checkpoint.json").exists():
            assert time.monotonic() < deadline, "no checkpoint after the evaluation of step 10"
            time.sleep(0.05)
        time.sleep(0.3)
        os.killpg(proc.pid, signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:  # say what the process had: SIGINT is signal 2, bit 1 of each mask
            status = Path(f"/proc/{proc.pid}/status")  # (Linux)
            lines = status.read_text().splitlines() if status.exists() else []
            masks = [line for line in lines if line.startswith(("SigBlk", "SigIgn", "SigCgt"))]
            pytest.fail(f"the trainer was still running 60 s after Ctrl-C; its signal masks: {masks}")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.stdout.close()  # on a failure too: left open, they would warn in the next test of this worker
        proc.stderr.close()
    assert proc.returncode == 130, err[-3000:]
    said = re.search(r"stopped \(Ctrl-C\): the checkpoint of step \d+ is in .*: `(nox -s train -- [^`]*)` continues",
                     err)
    assert said, err[-3000:]
    assert shlex.split(said.group(1))[4:] == ["--model", "gpt", "--resume", "--name", name, "--runs", str(tmp_path),
                                              "--impl", "solutions"], said.group(1)


def test_the_model_feeds_chapter_16_and_generate_streams_text(run):
    """model.npz is plain arrays in chapter 16's layout; generate writes the prompt and more, from the cache"""
    with np.load(run[0] / "model.npz", allow_pickle=False) as npz:
        assert {"tok_emb", "blocks.0.WQ", "blocks.0.W_down", "g_final", "W_out", "merges"} <= set(npz.files)
        assert npz["tok_emb"].shape == (260, 8) and npz["W_out"].shape == (8, 260)
    proc = tool("generate", str(run[0]), "--prompt", "A list is", "--temperature", "0.8", "--top-p", "0.9",
                "--n", "30", timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("A list is") and len(proc.stdout) > len("A list is") + 10, proc.stdout
    assert "KV cache" in proc.stderr and "top-p 0.9" in proc.stderr, proc.stderr
    assert "; solutions/ chapters 13, 14 and 16; " in proc.stderr, proc.stderr  # whose code: the run's --impl


def test_generate_stops_when_the_kv_cache_disagrees_with_the_full_forward(run, tmp_path):
    """a chapter 16 whose cache is not read: exit 1 and a message naming the cache, before the text goes on"""
    folder = copy_solutions(tmp_path / "forgets", {"chapter16_sampling": (
        "_right = attention_with_cache\n\n\n"
        "def attention_with_cache(x_new, params, n_heads, cache):\n"
        "    out, new = _right(x_new, params, n_heads, None)  # the cache never read\n"
        "    return out, new\n")})
    proc = tool("generate", str(run[0]), "--impl", str(folder), "--n", "30", timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "your KV cache disagrees with the full forward" in proc.stderr, proc.stderr
    assert "the first token decoded from the caches" in proc.stderr and "nox -s chapter16" in proc.stderr, proc.stderr
    assert len(proc.stdout) < len("A list is") + 20, f"the text stops at the first token: {proc.stdout!r}"


def test_generate_with_chapter_16_unfinished_says_so_and_what_to_run(run, tmp_path):
    """a stub of chapter 16 left: exit 1, the function and its line named, and 'Generate once' (not 'Train once')"""
    folder = copy_solutions(tmp_path / "unfinished", {"chapter16_sampling": (
        "def gpt_forward(ids, model, n_heads, caches=None):\n"
        "    raise NotImplementedError('16.8 gpt_forward: embed the ids, every block with its own cache')\n")})
    proc = tool("generate", str(run[0]), "--impl", str(folder), "--n", "5", timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "chapter 16 is not finished: gpt_forward stops at" in proc.stderr, proc.stderr
    assert "Generate once `nox -s chapter16` passes every step." in proc.stderr, proc.stderr


@pytest.mark.parametrize("args, words", [
    (["--seed", "-1", "--temperature", "1"], "--seed must be 0 or more"),
    (["--temperature", "inf"], "--temperature must be a finite number, 0 or more, got inf"),
    (["--temperature", "-1"], "--temperature must be a finite number, 0 or more, got -1"),
], ids=["seed", "temperature inf", "temperature negative"])
def test_generate_refuses_a_bad_option_before_it_runs(run, args, words):
    """exit 2 and the option named, not 'the training tool failed'"""
    proc = tool("generate", str(run[0]), *args, "--n", "5", timeout=120)
    assert proc.returncode == 2 and words in proc.stderr and "tool failed" not in proc.stderr, proc.stderr


def test_the_same_seed_draws_the_same_text(run):
    """generate with one --seed twice writes the same text; a temperature-0 run is greedy"""
    a, b = (tool("generate", str(run[0]), "--temperature", "1", "--seed", "3", "--n", "20") for _ in range(2))
    assert a.returncode == b.returncode == 0 and a.stdout == b.stdout


def _chapters(folder, name):
    sys.path.insert(0, str(folder.parent))
    return SimpleNamespace(c11=importlib.import_module(f"{name}.chapter11_multi_head_attention"),
                           c12=importlib.import_module(f"{name}.chapter12_rope"),
                           c13=importlib.import_module(f"{name}.chapter13_modern_block"))


def _forget(folder, name):
    sys.path.remove(str(folder.parent))
    for module in [n for n in sys.modules if n == name or n.startswith(f"{name}.")]:
        del sys.modules[module]


@pytest.mark.parametrize("name, code, said", [
    ("dg_without_x_hat",
     "_right = rms_norm_backward\n\n\n"
     "def rms_norm_backward(x, g, d_out, eps=1e-6):\n"
     "    dx, dg = _right(x, g, d_out, eps)\n"
     "    return dx, np.sum(d_out, axis=tuple(range(np.ndim(d_out) - 1)))  # forgot x_hat\n",
     r"the gradient of g_final is wrong: look at rms_norm_backward: its dg disagrees"),
    ("swiglu_dx_without_up",
     "_right = swiglu_backward\n\n\n"
     "def swiglu_backward(d_out, cache):\n"
     "    grads = _right(d_out, cache)\n"
     "    return {**grads, 'x': 2 * grads['x']}\n",
     r"the gradient of \S+ is wrong: look at swiglu_backward: its x disagrees"),
    ("residual_dropped",
     "_right = prenorm_block_backward\n\n\n"
     "def prenorm_block_backward(d_y, cache):\n"
     "    grads = _right(d_y, cache)\n"
     "    return {**grads, 'x': grads['x'] - d_y}  # the residual path of the input dropped\n",
     r"look at prenorm_block_backward: its x disagrees with central differences of prenorm_block, on its own "
     r"\(the layer functions inside it are right"),
], ids=["rms_norm_backward", "swiglu_backward", "prenorm_block_backward"])
def test_a_wrong_layer_is_named_before_training(tmp_path, name, code, said):
    """a planted mistake in one chapter 13 function: the check names that function, not the first gradient it spoils"""
    folder = copy_solutions(tmp_path / name, {"chapter13_modern_block": code})
    try:
        with pytest.raises(train.TrainError) as err:
            train.check_gradients(_chapters(folder, name), train.GPT)
    finally:
        _forget(folder, name)
    assert "gradient check failed, before training" in str(err.value)
    assert re.search(said, str(err.value)), str(err.value)


def test_the_tool_stops_a_run_with_a_wrong_gradient_and_writes_nothing(tmp_path):
    """through the command: exit 1, the message names rms_norm_backward, no run folder is filled"""
    folder = copy_solutions(tmp_path / "broken", {"chapter13_modern_block": (
        "_right = rms_norm_backward\n\n\n"
        "def rms_norm_backward(x, g, d_out, eps=1e-6):\n"
        "    dx, dg = _right(x, g, d_out, eps)\n"
        "    return dx, 2 * dg\n")})
    proc = tool("train", *TINY[:2], "--impl", str(folder), "--runs", str(tmp_path / "runs"), timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "look at rms_norm_backward" in proc.stderr, proc.stderr
    assert "step " not in proc.stdout and not (tmp_path / "runs").exists(), "nothing is trained or written"


def test_the_learners_edition_trains_the_learners_code(tmp_path):
    """with no --impl the capstone runs exercises/ (the untouched stubs: chapter 13 is not finished), never solutions/"""
    proc = tool("train", "--model", "gpt", "--runs", str(tmp_path / "runs"), timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "made of exercises/ chapters 11–15" in proc.stdout, proc.stdout
    assert re.search(r"chapter 13 is not finished: \w+ stops at exercises/chapter13_modern_block\.py:\d+",
                     proc.stderr), proc.stderr
    assert "solutions" not in proc.stdout + proc.stderr


@pytest.mark.parametrize("args, words", [
    (["--model", "gpt", "--corpus", "zen"], "--model gpt trains on --corpus pydoc"),
    (["--model", "gpt", "--heads", "3"], "must split into --heads 3 heads"),
    (["--model", "gpt", "--resume"], "--resume: there is no checkpoint in"),
    (["--model", "gpt", "--resume", "--steps", "5"], "leave out --steps"),
    (["--model", "gpt", "--steps", "10", "--warmup", "2", "--stop-at", "10"], "--stop-at must be a step from 1 to 9"),
    (["--vocab-size", "300"], "--vocab-size is an option of --model gpt"),
    (["--model", "gpt", "--sample-every", "5"], "--sample-every is an option of --model chapter10"),
    (["--model", "gpt", "--seed", "-1"], "--seed must be a whole number of at least 0, got -1"),
    (["--seed", "-1"], "--seed must be at least 0, got -1"),
], ids=["corpus", "heads", "no checkpoint", "resume with settings", "stop-at", "chapter10", "sample-every", "seed",
        "chapter10 seed"])
def test_options_that_cannot_work_are_refused_with_a_reason(tmp_path, capsys, args, words):
    """bad options stop with exit 2 and say what is wrong, before anything runs"""
    assert train.main([*args, "--runs", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and words in err, err



def test_a_chapter_answered_in_its_notebook_counts_for_train_and_generate_as_for_chapter_n(tmp_path):
    """One answer everywhere: a chapter answered in its notebook counts for train and generate.

    Chapter 14 answered only in its saved notebook (its file still the stub) is the chapter 14 that `train --model gpt` and `generate` run with no --impl, as `nox -s chapter14` runs it;
    train's banner, run.json's `chapters` and generate's line name the notebook (learner trial: run.json said only
    "impl": "exercises", generate said "exercises/ chapter 16's …")
    """
    nbformat = pytest.importorskip("nbformat", reason="the notebook dependency group (pyproject.toml) is not installed")
    from .notebook_tools import course_copy, solved

    copy = course_copy(tmp_path / "course")
    for number, path in project_files(copy / "solutions").items():
        if number in (11, 12, 13, 15, 16):
            shutil.copy2(path, copy / "exercises" / path.name)
    notebook_file = copy / "notebooks" / "chapter14_bpe.ipynb"
    nbformat.write(solved(nbformat.read(notebook_file, as_version=4), "chapter14_bpe"), notebook_file)
    probe = (
        "import importlib, sys\n"
        "from pathlib import Path\n"
        "from types import SimpleNamespace\n"
        "from kata import learners_code\n"
        "from kata.learner import generate, train\n"
        "for impl in (train.parser().parse_args(['--model', 'gpt']).impl, generate.trained_with({'impl': 'exercises'})):\n"
        "    folder, modules, shown = train.chapters_of(impl, train.GPT.chapters)\n"
        "    sys.path.insert(0, str(folder.parent))\n"
        "    bpe = importlib.import_module(f'{folder.name}.{modules[\"c14\"]}')\n"
        "    print(len(bpe.train_bpe('abababab', 258)), shown)\n"
        "    made = {n: learners_code.made_of(folder / f'{n}.py') for n in modules.values()}\n"
        "    head = train.GPT.header(train.GptSettings(), shown, Path('runs'), SimpleNamespace(resume=False), modules, made)\n"
        "    print(head.splitlines()[0], file=sys.stderr)\n"
        "    print(learners_code.chapters_made_of(folder, modules.values())[14], file=sys.stderr)\n"
        "    used = generate.chapters('', {'impl': 'exercises'}, train.GPT.generate_chapters)\n"
        "    print(generate.made_of(*used), file=sys.stderr)\n"
        "    sys.path.pop(0); [sys.modules.pop(m) for m in list(sys.modules) if m.split('.')[0] == folder.name]\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env["PYTHONPATH"] = str(copy)
    proc = subprocess.run([sys.executable, "-c", probe], cwd=copy, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["2", "exercises"] * 2, proc.stdout  # the stub file, yet 2 merges: the notebook's
    banner = ("training a GPT made of exercises/ chapters 11–13 and 15, chapter 14 from notebooks/chapter14_bpe.ipynb "
              "on Python's own documentation (pydoc_data.topics)")
    run_json = "notebooks/chapter14_bpe.ipynb"  # run.json's chapters["14"]: train writes chapters_made_of's answer
    generating = "exercises/ chapters 13 and 16, chapter 14 from notebooks/chapter14_bpe.ipynb"
    assert proc.stderr.splitlines()[:6] == [banner, run_json, generating] * 2, proc.stderr  # where each came from


OLD_PROGRESS = {  # checkpoint.json as the two-trainer code (before the one loop) wrote it: --stop-at 10 of TINY
    "settings": {"corpus": "pydoc", "vocab_size": 260, "d_model": 8, "n_heads": 2, "layers": 1, "d_ff": 8,
                 "context": 8, "batch": 2, "steps": 20, "lr": 0.003, "min_lr": 0.0003, "warmup": 2,
                 "weight_decay": 0.01, "clip": 1.0, "eval_every": 10, "seed": 0, "prompt": "A list is",
                 "validation": 0.1},
    "step": 10, "train_seconds": 0.05,
    "evals": [{"step": 0, "train_loss": 5.99, "val_loss": 6.02, "seconds": 0.0}],
    "merges": [[32, 32, 256], [45, 45, 257], [101, 32, 258], [116, 104, 259]], "bpe_seconds": 0.2,
}


def test_a_checkpoint_written_before_the_one_trainer_is_read_and_a_damaged_one_refused(tmp_path):
    """checkpoint.json of the earlier code resumes as it is; one without its merges says what to do instead"""
    from kata.learner.train.loop import read_progress

    (tmp_path / "checkpoint.npz").write_bytes(b"")
    (tmp_path / "checkpoint.json").write_text(json.dumps(OLD_PROGRESS), encoding="utf-8")
    info = read_progress(train.GPT, tmp_path)
    assert info["settings"] == train.GptSettings(**OLD_PROGRESS["settings"]) and info["step"] == 10
    assert info["merges"][:2] == [((32, 32), 256), ((45, 45), 257)] and info["evals"] == OLD_PROGRESS["evals"]
    (tmp_path / "checkpoint.json").write_text(json.dumps({**OLD_PROGRESS, "merges": None}), encoding="utf-8")
    with pytest.raises(train.TrainError, match=r"checkpoint.json cannot be read .*; train again without --resume"):
        read_progress(train.GPT, tmp_path)


def test_encode_is_called_a_piece_at_a_time_and_gives_the_whole_texts_ids():
    """the corpus reaches encode in pieces of about 16,000 characters, and the ids are those of the whole text

    A learner's plain replay of every merge took 24 s of the 30 s a call may take on the whole corpus (learner
    trial): a piece a call leaves room on a busy machine. The cuts fall where no learned token can lie across,
    so the ids are exactly those of one call on the whole text.
    """
    from kata.learner.train import gpt
    from solutions import chapter14_bpe as c14

    text = gpt.pydoc_text()[:70_000]
    merges = c14.train_bpe(text, 400)
    calls = []

    def encode(piece, merges):
        calls.append(len(piece))
        return c14.encode(piece, merges)

    tokens = gpt.tokenize(SimpleNamespace(c14=SimpleNamespace(encode=encode)), text, gpt.GptSettings(), merges)
    assert len(calls) > 1 and max(calls) <= gpt.PIECE + 100, calls
    assert sum(calls) == len(text)
    whole = c14.encode(text, merges)
    assert np.concatenate([tokens.train, tokens.val]).tolist() == whole
