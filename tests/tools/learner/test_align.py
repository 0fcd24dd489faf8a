"""`nox -s align` (kata/learner/align/): LoRA fine-tuning and DPO on a GPT run, with the learner's chapters 21 and 23.

One tiny reference GPT run (a 260-token vocabulary, d_model 8, a context of 128 so that every question fits, 4
steps) is shared; each stage runs on it for two steps. What does not need minutes is checked here: the files and
numbers a stage writes, the prompt's mask, the adapter's gradients, the merged model against the adapted one, the
share of parameters trained at the default settings, and the refusals (chapters not in the course or not
finished, run folders that are not finished GPT runs). The real figures (minutes on the default GPT) are measured
by running the stages, in docs/align-gpt.md; timings are never asserted.
"""

from __future__ import annotations

import importlib
import json
import shutil
from types import SimpleNamespace

import numpy as np
import pytest

from kata.learner.align import data, stages
from kata.learner.train.gpt import flat, init_model, shapes

from ..conftest import assert_drawn_png, copy_solutions, tool

pytestmark = pytest.mark.slow  # tool runs (training, seconds each): handed out first under pytest-xdist

TINY = ["--model", "gpt", "--impl", "solutions", "--vocab-size", "260", "--d-model", "8", "--heads", "2",
        "--layers", "1", "--d-ff", "8", "--context", "128", "--batch", "2", "--steps", "4", "--warmup", "1",
        "--eval-every", "4"]
SHORT = ["--impl", "solutions", "--steps", "2", "--eval-every", "1", "--batch", "2"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny finished GPT run, then its lora and dpo stages: (run folder, lora's output, dpo's output)."""
    runs = tmp_path_factory.mktemp("runs")
    trained = tool("train", *TINY, "--runs", str(runs), "--name", "tiny", timeout=240)
    assert trained.returncode == 0, trained.stdout[-3000:] + trained.stderr[-3000:]
    folder = runs / "tiny"
    lora = tool("align", "lora", str(folder), *SHORT, timeout=240)
    assert lora.returncode == 0, lora.stdout[-3000:] + lora.stderr[-3000:]
    dpo = tool("align", "dpo", str(folder), *SHORT, timeout=240)
    assert dpo.returncode == 0, dpo.stdout[-3000:] + dpo.stderr[-3000:]
    return folder, lora.stdout, dpo.stdout


def _solutions(*numbers: int) -> SimpleNamespace:
    """The reference chapters as a stage calls them (``ch.c13`` …)."""
    names = {13: "chapter13_modern_block", 14: "chapter14_bpe", 15: "chapter15_adamw", 21: "chapter21_lora",
             23: "chapter23_sft_dpo"}
    return SimpleNamespace(**{f"c{n}": importlib.import_module(f"solutions.{names[n]}") for n in numbers})


def test_lora_writes_its_numbers_figure_samples_and_a_merged_model_equal_to_the_adapted_one(run):
    """lora.json: the held-out answer loss at every evaluation, the share trained, merge_gap ≤ 1e-12; sft.npz a GPT"""
    folder, out, _ = run
    align = folder / "align"
    assert {"lora.json", "lora.png", "lora_samples.txt", "sft.npz", "adapter.npz"} <= {p.name for p in align.iterdir()}
    info = json.loads((align / "lora.json").read_text(encoding="utf-8"))
    assert [e["step"] for e in info["evals"]] == [0, 1, 2]
    assert info["held_out_before"] == info["evals"][0]["held_out"] and info["merge_gap"] <= 1e-12
    assert info["trained_parameters"] == 2 * 5 * (8 + 8), "rank 5 beside W_up and W_down of the one block"
    sets = data.qa_sets()  # from this Python's own documentation: how many sections it has depends on its version
    assert 0 < info["held_out_pairs"] <= len(sets["held_out"]) and 0 < info["unseen_pairs"] <= len(sets["unseen"])
    assert info["pairs"] == 3 * info["held_out_pairs"], "each taught section trained in three phrasings"
    assert {"held_out", "unseen", "train"} <= set(info["evals"][-1]) and "unseen_after" in info
    text = (align / "lora_samples.txt").read_text(encoding="utf-8")
    assert text.startswith("Q: explain ") and "  before: " in text and "  after:  " in text
    assert "(a section never trained on)" in text
    assert "held-out answer loss" in out and "merged model against the adapted one" in out
    assert_drawn_png(align / "lora.png", 150)
    gen = tool("generate", str(align / "sft.npz"), "--impl", "solutions", "--prompt", "Q: what is ", "--n", "3")
    assert gen.returncode == 0, gen.stderr


def test_dpo_writes_the_preference_accuracy_and_the_reward_margin_at_every_evaluation(run):
    """dpo.json: accuracy (and by kind of rejection), margin, rewards; it starts at the reference: margin 0"""
    folder, _, out = run
    info = json.loads((folder / "align" / "dpo.json").read_text(encoding="utf-8"))
    first = info["evals"][0]
    assert first["margin"] == 0.0 and first["accuracy"] == 0.0 and abs(first["loss"] - np.log(2)) < 1e-12
    for e in info["evals"]:
        assert {"accuracy", "accuracy_shuffled", "accuracy_other", "accuracy_unseen", "margin", "chosen_reward",
                "rejected_reward"} <= set(e)
        assert abs(e["margin"] - (e["chosen_reward"] - e["rejected_reward"])) < 1e-9
    assert "worse:" in (folder / "align" / "dpo_samples.txt").read_text(encoding="utf-8")
    assert "held-out preference accuracy" in out
    assert_drawn_png(folder / "align" / "dpo.png", 150)


def test_the_default_adapters_train_under_three_percent_of_the_default_gpt():
    """lora: rank 5 beside W_up, W_down (4,800, 2.9 % of 166,208); dpo: rank 4 beside WQ, WK, WV, WO (4,096)"""
    from kata.learner.align import DEFAULTS

    ch = _solutions(13, 21)
    model = init_model(512, 64, 176, 2, seed=0)
    total = sum(int(np.prod(s)) for s in shapes(512, 64, 176, 2).values())
    for stage, want in (("lora", 2 * 2 * 5 * (64 + 176)), ("dpo", 8 * 4 * (64 + 64))):
        s = DEFAULTS[stage]
        adapted = stages.Adapted(ch, model, s["targets"].split(","), s["rank"], s["alpha"], 0)
        assert adapted.total == total == 166_208 and adapted.count == want and adapted.count / total <= 0.03


def test_the_adapters_gradients_are_s_dw_bt_and_s_at_dw_and_the_merge_is_the_adapted_weight():
    """adapted weight W + s A B; dA = s dW' Bᵀ, dB = s Aᵀ dW' from the full gradient; merged == adapted (1e-12)"""
    ch = _solutions(13, 21)
    model = init_model(7, 8, 6, 1, seed=1)
    adapted = stages.Adapted(ch, model, ["WQ", "W_down"], 2, 3.0, 0)
    rng = np.random.default_rng(2)
    params = {k: rng.normal(0, 1, v.shape) for k, v in adapted.params.items()}
    s = 3.0 / 2
    for name in adapted.targets:
        W, A, B = flat(model)[name], params[f"{name}.A"], params[f"{name}.B"]
        got = flat(adapted.adapted(params))[name]
        assert np.allclose(got, W + s * A @ B, rtol=0, atol=1e-12)
        assert np.max(np.abs(flat(adapted.merged(params))[name] - got)) <= 1e-12
    full = {name: rng.normal(0, 1, a.shape) for name, a in flat(model).items()}
    grads = adapted.grads(full, params)
    for name in adapted.targets:
        A, B = params[f"{name}.A"], params[f"{name}.B"]
        assert np.allclose(grads[f"{name}.A"], s * full[name] @ B.T, rtol=0, atol=1e-12)
        assert np.allclose(grads[f"{name}.B"], s * A.T @ full[name], rtol=0, atol=1e-12)
    untouched = flat(adapted.adapted(params))["blocks.0.WK"]
    assert np.array_equal(untouched, flat(model)["blocks.0.WK"]), "a weight with no adapter stays as it was"


def _tiny(seed: int = 3) -> tuple[SimpleNamespace, dict, SimpleNamespace]:
    model = init_model(9, 8, 6, 1, seed=seed)
    rng = np.random.default_rng(seed)
    for a in flat(model).values():
        a += rng.normal(0, 0.3, a.shape)
    return _solutions(13, 23), model, SimpleNamespace(n_heads=2)


def _log_probs(logits: np.ndarray, ids: np.ndarray) -> np.ndarray:
    z = logits[:-1] - logits[:-1].max(axis=1, keepdims=True)
    return (z - np.log(np.exp(z).sum(axis=1, keepdims=True)))[np.arange(len(ids) - 1), ids[1:]]


def test_the_fine_tuning_loss_counts_the_answers_tokens_only_and_its_gradient_matches_central_differences():
    """the loss is the mean −log p over response tokens only; W_out's gradient matches central differences"""
    ch, model, base = _tiny()
    items = [(np.array([1, 4, 2, 7, 3]), 2), (np.array([5, 0, 8, 2, 6, 1, 4]), 4)]
    want, count = 0.0, 0
    for ids, plen in items:
        logits, _ = stages.forward(ch, model, 2, ids)
        lp = _log_probs(logits, ids)
        want -= lp[plen - 1:].sum()
        count += len(ids) - plen
    grads = stages.zero_grads(model)
    got = stages.sft_loss(ch, model, base, items, grads)
    assert abs(got - want / count) < 1e-12
    W = model["W_out"]
    for index in [(0, 0), (3, 5), (7, 8)]:
        keep = W[index]
        W[index] = keep + 1e-6
        up = stages.sft_loss(ch, model, base, items)
        W[index] = keep - 1e-6
        down = stages.sft_loss(ch, model, base, items)
        W[index] = keep
        assert abs((up - down) / 2e-6 - grads["W_out"][index]) < 1e-7
    logits, saved = stages.forward(ch, model, 2, items[0][0])
    prompt_only = stages.zero_grads(model)
    stages.add_grad(ch, model, items[0][0], saved, logits, stages.response_mask(ch, 2, 5) * 0, prompt_only)
    assert all(not np.any(g) for g in prompt_only.values()), "masked rows send no gradient"


def test_the_questions_answers_and_rejections():
    """129 sections, a sentence each; held out: a phrasing never trained on; unseen: sections never trained on"""
    pairs = data.qa_pairs()
    assert len(pairs) > 100 and len({q for q, _ in pairs}) == len(pairs)
    assert ('Q: what is the "for" statement? A: ', 'The "for" statement is used to iterate over the elements of a '
            'sequence (such as a string, tuple or list) or other iterable object:\n') in pairs
    sets = data.qa_sets()
    train, held, unseen = sets["train"], sets["held_out"], sets["unseen"]
    assert len(held) + len(unseen) == len(pairs) and len(unseen) == round(len(pairs) / 5)
    assert len(train) == 3 * len(held) and not (set(train) & set(held) or set(train) & set(unseen))
    assert all(q.startswith("Q: explain ") for q, _ in held + unseen) and not any(
        q.startswith("Q: explain ") for q, _ in train)
    assert {a for _, a in held} <= {a for _, a in train} and not {a for _, a in unseen} & {a for _, a in train}
    rng = np.random.default_rng(0)
    for i in range(len(train)):
        worse = stages.rejection(train, i, rng)
        assert worse != train[i][1] and worse.endswith("\n")
        assert sorted(worse.split()) == sorted(train[i][1].split()) or worse in {a for _, a in train}
    assert data.keyword_reward("if x\n") == 1.0 and data.keyword_reward("iff") == 0.0 and data.keyword_reward("") == 0


def test_an_unfinished_chapter_21_stops_the_stage_with_the_trainers_message(run, tmp_path):
    """a stub left in chapter 21: exit 1, 'chapter 21 is not finished', the function named"""
    folder = copy_solutions(tmp_path / "unfinished", {"chapter21_lora": (
        "def lora_init(d_in, d_out, r, seed=0):\n"
        "    raise NotImplementedError('21.3 lora_init: A small and random, B zero')\n")})
    proc = tool("align", "lora", str(run[0]), "--impl", str(folder), "--steps", "1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "chapter 21 is not finished: lora_init stops at" in proc.stderr, proc.stderr


def test_a_wrong_lora_backward_stops_the_stage_before_training_naming_it(run, tmp_path):
    """dB without α / r: exit 1 before any step, 'gradient check failed' naming lora_backward and its B"""
    folder = copy_solutions(tmp_path / "wrong", {"chapter21_lora": (
        "_right = lora_backward\n\n\n"
        "def lora_backward(d_y, x, W, A, B, alpha):\n"
        "    g = _right(d_y, x, W, A, B, alpha)\n"
        "    return {**g, 'B': g['B'] * A.shape[1] / alpha}\n")})
    proc = tool("align", "lora", str(run[0]), "--impl", str(folder), "--steps", "1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "gradient check failed, before training: lora_backward: its B disagrees with central differences of " \
           "lora_forward" in proc.stderr, proc.stderr
    assert "step    0" not in proc.stdout


def test_the_check_of_lora_backward_passes_the_reference_and_names_each_wrong_gradient():
    """central differences of lora_forward: the reference passes; dx without the adapter's path is named"""
    ch = _solutions(21)
    checked = stages.check_lora_backward(ch)
    assert checked["numbers"] == 3 * 4 + 4 * 2 + 2 * 5 and checked["largest_difference"] < 1e-8
    right = ch.c21.lora_backward
    wrong = SimpleNamespace(lora_forward=ch.c21.lora_forward,
                            lora_backward=lambda d_y, x, W, A, B, alpha: {**right(d_y, x, W, A, B, alpha),
                                                                          "x": d_y @ W.T})
    with pytest.raises(stages.TrainError, match=r"lora_backward: its x disagrees with central differences"):
        stages.check_lora_backward(SimpleNamespace(c21=wrong))


def _copy_run(run, tmp_path):
    target = tmp_path / "copy"
    shutil.copytree(run[0], target, ignore=shutil.ignore_patterns("align"))
    return target


@pytest.mark.parametrize("damage, said", [
    ("missing", "is not a run folder"),
    ("no run.json", "is not a finished run (stopped at step 4): it has no run.json"),
    ("bad run.json", "is not a run.json written by nox -s train"),
    ("chapter10", "is a run of --model 'chapter10'"),
    ("unfinished", "is not a finished run: its last evaluation is at step 2 of 4"),
    ("pickled", "is not a model written by nox -s train"),
    ("wrong shape", "does not fit this tool: its W_out has shape"),
    ("not finite", "has parameters that are not finite numbers"),
    ("align a file", "is not a folder: nox -s align writes its files there"),
    ("dpo first", "DPO starts from the fine-tuned model; run nox -s align -- lora"),
])
def test_a_run_folder_that_is_not_a_finished_gpt_run_is_refused(run, tmp_path, damage, said):
    """exit 2 with what is wrong, before any code of the learner runs"""
    folder = _copy_run(run, tmp_path)
    info = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    stage = "dpo" if damage == "dpo first" else "lora"
    if damage == "missing":
        folder = tmp_path / "nowhere"
    elif damage == "no run.json":
        (folder / "run.json").unlink()
    elif damage == "bad run.json":
        (folder / "run.json").write_text("{\"settings\": 3}", encoding="utf-8")
    elif damage in ("chapter10", "unfinished"):
        info = {**info, "model": "chapter10"} if damage == "chapter10" else {**info, "evals": info["evals"][:1]}
        info["evals"][-1:] = [{**info["evals"][-1], "step": 2}] if damage == "unfinished" else info["evals"][-1:]
        (folder / "run.json").write_text(json.dumps(info), encoding="utf-8")
    elif damage == "pickled":
        np.savez(folder / "model.npz", x=np.array([object()], dtype=object))
    elif damage in ("wrong shape", "not finite"):
        with np.load(folder / "model.npz", allow_pickle=False) as npz:
            arrays = dict(npz)
        if damage == "wrong shape":
            arrays["W_out"] = arrays["W_out"][:, :5]
        else:
            arrays["tok_emb"] = arrays["tok_emb"].copy()
            arrays["tok_emb"][0, 0] = np.nan
        np.savez(folder / "model.npz", **arrays)
    elif damage == "align a file":
        (folder / "align").write_text("not a folder", encoding="utf-8")
    proc = tool("align", stage, str(folder), *SHORT)
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr


@pytest.mark.parametrize("args, said", [
    (["--rank", "0"], "--rank must be a whole number of at least 1"),
    (["--lr", "nan"], "--lr must be a positive number"),
    (["--targets", "WQ,W_out"], "--targets 'WQ,W_out': each must be one of"),
])
def test_options_that_cannot_work_are_refused(run, args, said):
    """exit 2 naming the option"""
    proc = tool("align", "lora", str(run[0]), "--impl", "solutions", *args)
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr
