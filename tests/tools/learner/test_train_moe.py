"""``nox -s train -- --model gpt --experts N --top-k K``: the GPT with a mixture of experts (kata/learner/train/moe.py).

The gradient check on the tiny mixture-of-experts GPT, a planted mistake named, the options refused, an unfinished
chapter 22 named; marked proof (a few tool runs): a tiny run's files, loads and figure, and --resume bit for bit.
"""

from __future__ import annotations

import importlib
import json
import re
import shlex
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from kata.learner import train
from kata.learner.train import gpt, moe

from ..conftest import ROOT, assert_drawn_png, copy_solutions, tool

pytestmark = pytest.mark.slow  # tool runs (training, seconds each): handed out first under pytest-xdist

TINY = ["--model", "gpt", "--impl", "solutions", "--vocab-size", "260", "--d-model", "8", "--heads", "2",
        "--layers", "2", "--d-ff", "8", "--context", "8", "--batch", "2", "--steps", "20", "--warmup", "2",
        "--eval-every", "10", "--experts", "4", "--top-k", "2"]

MODULES = {"c7": "chapter07_backprop", "c11": "chapter11_multi_head_attention", "c12": "chapter12_rope",
           "c13": "chapter13_modern_block", "c22": "chapter22_mixture_of_experts"}


def _chapters(folder, name):
    sys.path.insert(0, str(folder.parent))
    return SimpleNamespace(**{k: importlib.import_module(f"{name}.{m}") for k, m in MODULES.items()})


def _forget(folder, name):
    sys.path.remove(str(folder.parent))
    for module in [n for n in sys.modules if n == name or n.startswith(f"{name}.")]:
        del sys.modules[module]


def test_the_check_covers_the_router_the_experts_and_the_balancing_loss(tmp_path):
    """the tiny model has a router and stacked experts in every block; every gradient matches central differences"""
    folder = copy_solutions(tmp_path / "right")
    try:
        ch = _chapters(folder, "right")
        checked = train.check_gradients(ch, train.GPT)
        probe = train.GPT.probe(ch, np.random.default_rng(0))
    finally:
        _forget(folder, "right")
    shapes = {k: a.shape for k, a in probe.params.items()}
    assert shapes["blocks.1.W_router"] == (8, 4) and shapes["blocks.1.W_gate"] == (4, 8, 3), shapes
    assert shapes["blocks.1.W_down"] == (4, 3, 8) and checked["parameters"] == sum(a.size for a in
                                                                                     probe.params.values())
    assert [n for n, _ in train.GPT.backward_order(probe)].count("blocks.0.W_router") == 1


def test_the_balancing_loss_is_in_the_loss_and_its_gradient(tmp_path):
    """loss = cross-entropy + balance · Σ_layers L_bal (the windows' mean): the coefficient moves the loss by L_bal

    ``gpt.loss`` (the forward alone, which the gradient check differentiates) gives loss_and_grads' loss exactly.
    """
    folder = copy_solutions(tmp_path / "bal")
    try:
        ch = _chapters(folder, "bal")
        model = gpt.tiny_gpt(np.random.default_rng(3), moe=True)
        windows = np.array([[1, 3, 1, 0, 6, 2, 5], [4, 4, 2, 6, 0, 1, 3]])
        plain = {**model, "moe": moe.Moe(2, 0.0)}
        weighted = {**model, "moe": moe.Moe(2, 1.0)}
        loss0, grads0 = gpt.loss_and_grads(ch, plain, 2, windows)
        loss1, grads1 = gpt.loss_and_grads(ch, weighted, 2, windows)
        seen: list = []
        ce = gpt.mean_loss(ch, plain, 2, windows, seen.append)
        forward_only = [gpt.loss(ch, m, 2, windows) for m in (plain, weighted, gpt.tiny_gpt(np.random.default_rng(3)))]
        dense = gpt.loss_and_grads(ch, gpt.tiny_gpt(np.random.default_rng(3)), 2, windows)[0]
    finally:
        _forget(folder, "bal")
    # the gradient check's central differences read the loss without its backward: the very same number
    assert forward_only == [loss0, loss1, dense]
    entry = moe.loads_entry(seen)
    assert loss0 == pytest.approx(ce, abs=1e-12)
    assert loss1 - loss0 == pytest.approx(entry["balance"], abs=1e-12) and entry["balance"] >= 2 - 1e-12
    assert np.allclose(np.sum(entry["loads"], axis=1), 1.0)
    assert not np.allclose(grads0["blocks.0.W_router"], grads1["blocks.0.W_router"]), "it reaches the router"
    assert np.array_equal(grads0["W_out"], grads1["W_out"]), "and nothing above the blocks"


@pytest.mark.parametrize("code, said", [
    pytest.param("_right = gates_backward\n\n\n"
                 "def gates_backward(d_gates, gates, experts, n_experts):\n"
                 "    return 2 * _right(d_gates, gates, experts, n_experts)\n",
                 r"the gradient of blocks\.\d\.W_router is wrong: look at gates_backward: its result disagrees",
                 marks=pytest.mark.proof),  # the whole check, then each function: ~10 s of CPU
    ("_right_dispatch = dispatch\n\n\n"
     "def dispatch(experts, n_experts, capacity):\n"
     "    return _right_dispatch(experts, n_experts, capacity - 1)  # capacity off by one\n",
     r"dispatch dropped an assignment with capacity \d+ for \d+ tokens"),
], ids=["gates_backward", "dispatch"])
def test_a_wrong_chapter_22_function_is_named_before_training(tmp_path, code, said):
    """a planted mistake in chapter 22: the check names that function, before a step is trained"""
    folder = copy_solutions(tmp_path / "wrong", {"chapter22_mixture_of_experts": code})
    try:
        with pytest.raises(train.TrainError) as err:
            train.check_gradients(_chapters(folder, "wrong"), train.GPT)
    finally:
        _forget(folder, "wrong")
    assert re.search(said, str(err.value)), str(err.value)


def test_an_unfinished_chapter_22_stops_the_run_naming_it(tmp_path):
    """chapter 22 left as its stub: exit 1, 'chapter 22 is not finished' with the function and line; nothing written"""
    folder = copy_solutions(tmp_path / "stub")
    (folder / "chapter22_mixture_of_experts.py").write_text(
        (ROOT / "exercises" / "chapter22_mixture_of_experts.py").read_text(encoding="utf-8"), encoding="utf-8")
    proc = tool("train", *TINY[:2], "--experts", "4", "--top-k", "2", "--impl", str(folder), "--runs",
                str(tmp_path / "runs"), timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert re.search(r"chapter 22 is not finished: \w+ stops at .*chapter22_mixture_of_experts\.py:\d+", proc.stderr), \
        proc.stderr
    assert "chapters 7, 11–15 and 22" in proc.stdout and not (tmp_path / "runs" / "gpt" / "run.json").exists()


@pytest.mark.parametrize("args, words", [
    (["--experts", "1", "--top-k", "1"], "--experts must be at least 2 (one expert is the dense model), got 1"),
    (["--experts", "4"], "--top-k must be from 1 to --experts 4"),
    (["--experts", "2", "--top-k", "3"], "--top-k must be from 1 to --experts 2"),
    (["--experts", "-4", "--top-k", "2"], "--experts must be a whole number, got -4"),
    (["--top-k", "2"], "--top-k 2 chooses among experts: give --experts too"),
    (["--experts", "4", "--top-k", "2", "--d-ff", "9"], "--d-ff 9 must split into --top-k 2 experts' widths"),
    (["--experts", "4", "--top-k", "2", "--balance", "-1"], "--balance must be 0 or more, got -1.0"),
], ids=["one expert", "no top-k", "top-k above experts", "negative", "top-k alone", "d_ff", "balance"])
def test_bad_experts_and_top_k_are_refused_with_a_reason(tmp_path, capsys, args, words):
    """exit 2 before anything runs, naming the option and what it must be"""
    assert train.main(["--model", "gpt", *args, "--runs", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and words in err, err


def test_experts_is_an_option_of_the_gpt_and_a_dense_runs_settings_are_as_before(tmp_path, capsys):
    """--experts with chapter 10 is refused; a dense GPT's settings hold no mixture keys (its run.json unchanged)"""
    assert train.main(["--experts", "4", "--runs", str(tmp_path / "runs")]) == 2
    assert "--experts is an option of --model gpt" in capsys.readouterr().err
    assert not {"experts", "top_k", "balance"} & set(gpt.GptSettings().as_dict())
    s = gpt.GptSettings(experts=4, top_k=2).check()
    assert gpt.GptSettings(**s.as_dict()) == s and s.as_dict()["experts"] == 4


def test_the_active_parameters_equal_the_dense_models_but_for_the_router():
    """4 experts of d_ff / 2, two per token: 3 · d · d_ff per layer active, as the dense SwiGLU, plus d · N"""
    p = moe.active_parameters(64, 176, 2, 4, 2)
    assert p["active"] - p["router"] == p["dense"] == 2 * 3 * 64 * 176 and p["total"] - p["router"] == 2 * p["dense"]


def test_a_mixture_model_file_is_refused_by_the_tools_that_take_a_dense_gpt():
    """model_from_arrays (generate, serve, align) says it is a mixture of experts, not that a shape is wrong"""
    s = gpt.GptSettings(vocab_size=257, d_model=4, n_heads=1, layers=1, d_ff=4, experts=2, top_k=1).check()
    model = gpt.init_model(257, 4, 4, 1, 0, experts=2, top_k=1)
    with pytest.raises(train.TrainError, match=r"a mixture-of-experts GPT \(--experts 2 --top-k 1\)"):
        gpt.model_from_arrays(gpt.model_arrays(model, s, [((1, 2), 256)]))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny mixture-of-experts run: (its folder, the tool's output)."""
    runs = tmp_path_factory.mktemp("runs")
    proc = tool("train", *TINY, "--runs", str(runs), "--name", "moe", timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return runs / "moe", proc.stdout


@pytest.mark.proof
def test_a_run_writes_the_loads_and_the_active_parameters(run):
    """run.json's moe (active = dense + router) and every evaluation's loads (layers × experts, rows summing to 1)"""
    folder, out = run
    info = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert info["settings"]["experts"] == 4 and info["settings"]["top_k"] == 2 and info["moe"]["expert_width"] == 4
    assert info["moe"]["active"] == info["moe"]["dense"] + info["moe"]["router"]
    for e in info["evals"]:
        loads = np.array(e["loads"])
        assert loads.shape == (2, 4) and np.allclose(loads.sum(axis=1), 1.0) and e["balance"] >= 2 - 1e-9
    assert "4 experts of d_ff / 2 = 4, 2 per token" in out and "loads.png" in out
    with np.load(folder / "model.npz", allow_pickle=False) as npz:
        assert npz["blocks.1.W_up"].shape == (4, 8, 4) and int(npz["experts"]) == 4 and int(npz["top_k"]) == 2
    assert_drawn_png(folder / "loads.png", 150)


@pytest.mark.proof
def test_a_stopped_and_resumed_mixture_run_ends_with_the_same_parameters(run, tmp_path):
    """--stop-at 10, then the --resume it prints: the unbroken run's parameters and evaluations bit for bit"""
    stopped = tool("train", *TINY, "--runs", str(tmp_path), "--name", "moe", "--stop-at", "10", timeout=300)
    assert stopped.returncode == 0, stopped.stdout[-3000:] + stopped.stderr[-3000:]
    words = shlex.split(re.search(r"`(nox -s train -- [^`]*)` continues it", stopped.stdout).group(1))
    resumed = tool("train", *words[4:], timeout=300)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    with np.load(run[0] / "model.npz", allow_pickle=False) as a, \
            np.load(tmp_path / "moe" / "model.npz", allow_pickle=False) as b:
        assert set(a.files) == set(b.files)
        for key in a.files:
            assert np.array_equal(a[key], b[key]), f"{key} differs after resuming"
    first, again = (json.loads((f / "run.json").read_text(encoding="utf-8"))["evals"] for f in (run[0], tmp_path / "moe"))
    assert first == [{**e, "seconds": f["seconds"]} for e, f in zip(again, first, strict=True)]


def test_the_align_stage_trains_with_the_dense_runs_settings_and_refuses_the_others():
    """nox -s align -- moe: the dense run's settings with --experts and --top-k (4 and 2); --steps etc. refused"""
    from kata.learner.align import moe as stage

    dense = {"settings": gpt.GptSettings(steps=300, d_model=32).as_dict()}
    args = SimpleNamespace(experts=None, top_k=None, **dict.fromkeys(stage.OTHER))
    s = stage.settings(dense, args)
    assert (s.steps, s.d_model, s.experts, s.top_k, s.balance) == (300, 32, 4, 2, moe.BALANCE)
    with pytest.raises(train.TrainError, match="--steps: the moe stage trains with the dense run's settings"):
        stage.settings(dense, SimpleNamespace(**{**vars(args), "steps": 5}))
    with pytest.raises(train.TrainError, match="--top-k must be from 1 to --experts 4"):
        stage.settings(dense, SimpleNamespace(**{**vars(args), "top_k": 5}))


@pytest.mark.proof
def test_align_moe_compares_a_mixture_trained_like_the_dense_run(tmp_path):
    """a tiny dense run, then nox -s align -- moe: the mixture trained once into align/moe/, moe.json and moe.png

    and both models' greedy continuations of the same prompts (printed, in moe_samples.txt and in moe.json).
    """
    from kata.learner.align import moe as stage

    dense = TINY[:-4]  # TINY ends with --experts 4 --top-k 2
    made = tool("train", *dense, "--runs", str(tmp_path), "--name", "gpt", timeout=300)
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    proc = tool("align", "moe", str(tmp_path / "gpt"), "--impl", "solutions", timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "nox -s train -- --model gpt" in proc.stdout and "--experts 4 --top-k 2" in proc.stdout, proc.stdout
    result = json.loads((tmp_path / "gpt" / "align" / "moe.json").read_text(encoding="utf-8"))
    mixture = json.loads((tmp_path / "gpt" / "align" / "moe" / "run.json").read_text(encoding="utf-8"))
    assert {k: v for k, v in mixture["settings"].items() if k not in gpt.GptSettings.MOE} == \
        json.loads((tmp_path / "gpt" / "run.json").read_text(encoding="utf-8"))["settings"]
    assert result["difference"] == result["moe"]["final_val_loss"] - result["dense"]["final_val_loss"]
    assert np.array(result["moe"]["loads"]).shape == (2, 4)
    assert_drawn_png(tmp_path / "gpt" / "align" / "moe.png", 150)
    prompts = [item["prompt"] for item in result["samples"]]
    assert prompts == [gpt.GptSettings().prompt, *stage.PROMPTS], prompts  # the run's own prompt first
    for item in result["samples"]:  # greedy, through generate's path: the prompt, then more
        assert item["dense"].startswith(item["prompt"]) and item["mixture"].startswith(item["prompt"]), item
        assert len(item["mixture"]) > len(item["prompt"]), item
        assert f"{item['prompt']!r}\n    dense:   {item['dense']!r}\n    mixture: {item['mixture']!r}" in proc.stdout
    written = (tmp_path / "gpt" / "align" / "moe_samples.txt").read_text(encoding="utf-8")
    assert written == stage.samples_text(result["samples"]) and "mixture (after): " in written, written
    again = tool("align", "moe", str(tmp_path / "gpt"), "--impl", "solutions", timeout=300)
    assert again.returncode == 0 and "was trained before with these settings" in again.stdout, again.stdout
    assert json.loads((tmp_path / "gpt" / "align" / "moe.json").read_text(encoding="utf-8"))["samples"] == \
        result["samples"], "greedy: the same text again"


# --- generating from a mixture: nox -s generate -- runs/<moe run> -------------------------------------------------
GENERATE_MODULES = {"c13": "chapter13_modern_block", "c14": "chapter14_bpe", "c16": "chapter16_sampling",
                    "c22": "chapter22_mixture_of_experts"}


def _model_file(folder, context: int = 8):
    """A tiny mixture-of-experts GPT's model.npz (258 tokens: two merges), as nox -s train writes it."""
    s = gpt.GptSettings(vocab_size=258, d_model=8, n_heads=2, layers=2, d_ff=8, context=context, experts=4,
                        top_k=2).check()
    model = gpt.init_model(258, 8, 8, 2, seed=0, experts=4, top_k=2)
    for name, a in gpt.flat(model).items():  # every weight random and large enough that routing varies by token
        a[...] = np.random.default_rng(len(name)).normal(0.0, 0.5, a.shape) + (name.split(".")[-1] in ("g1", "g2"))
    folder.mkdir(parents=True, exist_ok=True)
    np.savez(folder / "model.npz", **gpt.model_arrays(model, s, [((97, 98), 256), ((256, 32), 257)]))
    return folder / "model.npz"


def _generated(tmp_path, name: str, prompt: str, n: int, edits: dict | None = None) -> tuple[list[int], dict, object]:
    """(the ids generate_gpt streamed, its last event, the chapters) for a tiny mixture, in this process."""
    folder = copy_solutions(tmp_path / name, edits)
    sys.path.insert(0, str(folder.parent))
    try:
        ch = SimpleNamespace(**{k: importlib.import_module(f"{name}.{m}") for k, m in GENERATE_MODULES.items()})
        events: list[dict] = []
        gpt.generate_gpt(ch, {"model": str(_model_file(tmp_path / "run")), "prompt": prompt, "n": n,
                              "temperature": 0.0, "top_k": None, "top_p": None, "seed": 0}, events.append)
    finally:
        _forget(folder, name)
    return [e["id"] for e in events if e["event"] == "token"], events[-1], ch


def test_a_mixture_generates_from_its_cache_what_the_full_forward_chooses(tmp_path):
    """greedy from the KV cache (chapter 16's attention_with_cache, chapter 22's router) = greedy by the full forward

    Prompt 'ab c' is 2 tokens, the context 8: 6 tokens from the caches, then the cache is full and half the window is
    fed again (positions from 0), as generate does; generate_gpt checks the first cached token itself.
    """
    ids, done, ch = _generated(tmp_path, "gen", "ab c", 10)
    with np.load(tmp_path / "run" / "model.npz", allow_pickle=False) as npz:
        model, merges, heads, context = gpt.model_from_arrays(dict(npz), mixture_ok=True)
    prompt = [int(i) for i in ch.c14.encode("ab c", merges)]
    assert prompt == [257, 99] and model["moe"].top_k == 2 and context == 8
    want = gpt.greedy(ch, model, heads, prompt, context - len(prompt), context)[len(prompt):]
    assert ids[:len(want)] == want, (ids, want)
    assert len(ids) == 10 and done["event"] == "done" and done["prompt_tokens"] == 2
    assert len(set(ids)) > 1, f"the tiny model repeats one token: the test would not see a wrong position ({ids})"


def test_a_router_that_reads_the_other_tokens_stops_generating_naming_chapter_22(tmp_path):
    """a router that centres x over the window: the cached row differs from the full forward's; chapter 22 named

    Each row of its probabilities is still a distribution (chapter 22's given checks pass), but a token's experts
    depend on the other tokens, which the full forward sees and a cached row does not.
    """
    centred = ("_right_router = router_probabilities\n\n\n"
               "def router_probabilities(x, W_router):\n"
               "    x = np.asarray(x, dtype=np.float64)\n"
               "    return _right_router(x - x.mean(axis=0), W_router)  # reads every token of the window\n")
    with pytest.raises(train.TrainError) as err:
        _generated(tmp_path, "centred", "ab c ab", 4, {"chapter22_mixture_of_experts": centred})
    said = str(err.value)
    assert "your KV cache disagrees with the full forward" in said and "attention_with_cache" in said, said
    assert "depends on the other tokens" in said and "`nox -s chapter22`" in said, said


def test_generate_takes_a_mixture_run_and_names_an_unfinished_chapter_22(tmp_path):
    """nox -s generate -- <a mixture's run>: text after the prompt; chapter 22 a stub: exit 1, named, what to run"""
    run = _model_file(tmp_path / "moe").parent
    proc = tool("generate", str(run), "--impl", "solutions", "--prompt", "ab", "--n", "5", timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("ab") and len(proc.stdout.encode()) > 4, proc.stderr
    assert "a mixture-of-experts GPT, 4 experts, 2 per token" in proc.stderr, proc.stderr
    assert "chapter 22's router" in proc.stderr, proc.stderr
    folder = copy_solutions(tmp_path / "stub")
    (folder / "chapter22_mixture_of_experts.py").write_text(
        (ROOT / "exercises" / "chapter22_mixture_of_experts.py").read_text(encoding="utf-8"), encoding="utf-8")
    proc = tool("generate", str(run), "--impl", str(folder), "--prompt", "ab", "--n", "5", timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    err = proc.stderr
    assert re.search(r"chapter 22 is not finished: router_probabilities stops at .*chapter22_mixture_of_experts\.py:"
                     r"\d+", err), err
    assert "Generate once `nox -s chapter22` passes every step." in err, err
