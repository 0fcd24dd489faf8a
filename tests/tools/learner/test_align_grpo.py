"""`nox -s align -- grpo` (kata/learner/align/grpo.py): GRPO on "keyword: " with the learner's chapters 16, 23 and 24.

The run folder is written here, not trained: ``run.json`` and a ``model.npz`` of a toy GPT (d_model 8, one block)
whose vocabulary holds the tokens ``if `` (a keyword and its blank, one token) and ``of `` and whose unembedding
favours both, so that its starting reward is neither 0 nor 1 and a few steps can move it. That costs no BPE
training (the tiny trained run of test_align.py takes half a minute of wall time); the stage cannot tell the
difference, the files are the ones ``nox -s train`` writes. Checked: how a completion is cut and rewarded, the
files and numbers the stage writes, the GRPO gradient carried into the weights (central differences), the rows
in groups, the refusals (chapter 24 unfinished, answers of the wrong shape, options that cannot work). The
learning itself (the reward rising on the toy model) is a proof test; the real figures on the default GPT are
measured by running the stage, in docs/align-gpt.md. Timings are never asserted.
"""

from __future__ import annotations

import importlib
import json
from types import SimpleNamespace

import numpy as np
import pytest

from kata.learner import align
from kata.learner.align import data, grpo, stages
from kata.learner.train.gpt import flat, init_model, model_arrays

from ..conftest import assert_drawn_png, copy_solutions, tool

pytestmark = pytest.mark.slow  # tool runs (training, seconds each): handed out first under pytest-xdist

CHAPTERS = {13: "chapter13_modern_block", 14: "chapter14_bpe", 15: "chapter15_adamw", 16: "chapter16_sampling",
            21: "chapter21_lora", 23: "chapter23_sft_dpo", 24: "chapter24_grpo"}
MERGES = [((105, 102), 256), ((256, 32), 257), ((111, 102), 258), ((258, 32), 259)]  # "if", "if ", "of", "of "
SHORT = ["--impl", "solutions", "--steps", "2", "--eval-every", "1", "--batch", "2", "--group", "4"]


def _solutions() -> SimpleNamespace:
    """The reference chapters as the stage calls them (``ch.c13`` …)."""
    return SimpleNamespace(**{f"c{n}": importlib.import_module(f"solutions.{m}") for n, m in CHAPTERS.items()})


def _toy_model(seed: int = 0) -> dict:
    """A GPT (vocabulary 260, d_model 8) whose stream carries a constant direction that W_out maps to 'if ', 'of '."""
    model = init_model(260, 8, 8, 1, seed=seed)
    model["tok_emb"] *= 0.1
    model["tok_emb"][:, 0] += 3.0  # every position's stream points along axis 0 ...
    for name in ("WQ", "WK", "WV", "WO", "W_gate", "W_up", "W_down"):
        model["blocks"][0][name] *= 0.3  # ... and the block hardly turns it ...
    model["W_out"][0, [257, 259]] = 2.0  # ... into what the unembedding makes a preference for "if " and "of "
    model["W_out"][0, [10, 32]] = 1.0  # a line break, a blank
    model["W_out"][1, [257, 259]] = 3.0, -3.0  # the stream's axis 1, empty at the start, would tell them apart
    return model


def _toy_run(folder, seed: int = 0):
    """A finished run folder as ``nox -s train -- --model gpt`` leaves it: run.json and model.npz."""
    folder.mkdir(parents=True)
    settings = SimpleNamespace(n_heads=2, context=16, kv_heads=0, grouped=False)
    np.savez(folder / "model.npz", **model_arrays(_toy_model(seed), settings, MERGES))
    (folder / "run.json").write_text(json.dumps({"model": "gpt", "settings": {"steps": 4},
                                                 "evals": [{"step": 4}]}), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The toy run and two steps of the grpo stage on it: (run folder, what the stage printed)."""
    folder = _toy_run(tmp_path_factory.mktemp("runs") / "toy")
    proc = tool("align", "grpo", str(folder), *SHORT, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return folder, proc.stdout


def test_a_completion_ends_with_its_word_and_is_rewarded_when_the_word_is_a_keyword():
    """cut after the token that holds a line break or a blank after the word; the word is the first line's first"""
    assert grpo.cut([b" for", b" x", b"y"]) == 2, "' x' holds the blank that ends 'for'"
    assert grpo.cut([b" ", b"if", b"\n", b"z"]) == 3, "leading blanks do not end a word that has not begun"
    assert grpo.cut([b"wh", b"ile"]) == 2 and grpo.cut([b"\n", b"if"]) == 1 and grpo.cut([b"if ", b"x"]) == 1
    assert [grpo.reward(t) for t in (" for x", "if\n", "while", "\nif", "format", "", "For ", "None ")] == \
        [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    assert data.KEYWORD_PROMPT == "keyword: " and grpo.WORD_TOKENS == 4


def test_the_stage_writes_its_numbers_figure_samples_and_a_model_generate_reads(run):
    """grpo.json: the reward at steps 0, 1, 2, the KL at each step (0 at the first: the adapter starts at B = 0)"""
    folder, out = run
    align_dir = folder / "align"
    assert {"grpo.json", "grpo.png", "grpo_samples.txt", "grpo.npz"} <= {p.name for p in align_dir.iterdir()}
    info = json.loads((align_dir / "grpo.json").read_text(encoding="utf-8"))
    assert [e["step"] for e in info["evals"]] == [0, 1, 2] and [h["step"] for h in info["history"]] == [1, 2]
    assert info["history"][0]["kl"] == 0.0 and info["history"][1]["kl"] >= 0.0
    assert info["reward_before"] == info["evals"][0]["reward"] and 0 < info["reward_before"] < 1
    assert all(0 <= e["reward"] <= 1 for e in info["evals"]) and info["settings"]["group"] == 4
    assert info["trained_parameters"] == 4 * 7 * (8 + 8), "rank 4 beside the seven 8 × 8 weights of the one block"
    text = (align_dir / "grpo_samples.txt").read_text(encoding="utf-8")
    assert "before: reward" in text and "after: reward" in text and "  + 'if '" in text
    assert "reward" in out and "KL to the reference" in out
    assert_drawn_png(align_dir / "grpo.png", 150)
    gen = tool("generate", str(align_dir / "grpo.npz"), "--impl", "solutions", "--prompt", "keyword: ", "--n", "3")
    assert gen.returncode == 0, gen.stderr


def test_the_grpo_gradient_carried_into_the_weights_matches_central_differences():
    """rows of different lengths, the prompt masked: d grpo_loss / d W_out and d WO through add_grad"""
    ch = _solutions()
    model = _toy_model(seed=3)
    rng = np.random.default_rng(3)
    for a in flat(model).values():
        a += rng.normal(0, 0.3, a.shape)
    base = SimpleNamespace(n_heads=2)
    plen = 3
    seqs = [np.array(s) for s in ([5, 9, 2, 257, 32], [5, 9, 2, 259], [5, 9, 2, 7, 8, 10], [5, 9, 2, 32, 257])]
    width = max(len(s) for s in seqs) - 1
    mask = grpo.padded([stages.response_mask(ch, plen, len(s)) for s in seqs], width)
    logp_old = grpo.log_probs(ch, model, base, seqs)[0] + rng.normal(0, 0.2, (4, width)) * mask
    logp_ref = grpo.log_probs(ch, model, base, seqs)[0] + rng.normal(0, 0.2, (4, width)) * mask
    adv = grpo.advantages(ch, np.array([1.0, 0.0, 0.0, 1.0]), 2)
    s = {"clip": 0.2, "beta": 0.3}

    def loss() -> float:
        logp = grpo.log_probs(ch, model, base, seqs)[0]
        return grpo.loss_and_grad(ch, logp, logp_old, logp_ref, adv, mask, s)[0]

    logp, saved = grpo.log_probs(ch, model, base, seqs)
    _, grad = grpo.loss_and_grad(ch, logp, logp_old, logp_ref, adv, mask, s)
    assert np.all(grad[mask == 0] == 0), "the prompt's and the padding's positions send no gradient"
    full = stages.zero_grads(model)
    for b, ids in enumerate(seqs):
        stages.add_grad(ch, model, ids, saved[b][1], saved[b][0], grad[b, :len(ids) - 1], full)
    for name, index in [("W_out", (0, 257)), ("W_out", (3, 32)), ("blocks.0.WO", (1, 6))]:
        W = flat(model)[name]
        keep = W[index]
        W[index] = keep + 1e-6
        up = loss()
        W[index] = keep - 1e-6
        down = loss()
        W[index] = keep
        assert abs((up - down) / 2e-6 - full[name][index]) < 1e-7, name


def test_the_advantages_are_taken_within_each_group_of_consecutive_completions():
    """[1, 0, 0, 0 | 1, 1, 1, 1]: the first group's advantages, the second group's all 0; not across the batch"""
    ch = _solutions()
    got = grpo.advantages(ch, np.array([1.0, 0, 0, 0, 1, 1, 1, 1]), 4)
    std = np.sqrt(3) / 4
    assert np.allclose(got, [0.75 / (std + 1e-4), *[-0.25 / (std + 1e-4)] * 3, 0, 0, 0, 0], rtol=0, atol=1e-12)


@pytest.mark.parametrize("fake, said", [
    ({"group_advantages": lambda r, g: np.zeros(len(r) + 1)}, "group_advantages returned shape (9,) for 8 rewards"),
    ({"group_advantages": lambda r, g: np.full(len(r), np.nan)}, "group_advantages returned shape (8,)"),
    ({"grpo_loss_grad": lambda *a, **k: np.zeros((1, 1))}, "grpo_loss_grad returned shape (1, 1)"),
    ({"grpo_loss": lambda *a, **k: float("inf")}, "grpo_loss returned inf"),
    ({"masked_mean": lambda v, m: np.zeros(3)}, "masked_mean(k3_kl(...)) returned shape (3,)"),
])
def test_answers_of_the_wrong_shape_or_not_finite_stop_the_stage_naming_the_function(fake, said):
    """the learner's chapter 24 answers are checked before the tool uses them"""
    ch = _solutions()
    ch.c24 = SimpleNamespace(**{k: getattr(ch.c24, k) for k in ("group_advantages", "grpo_loss", "grpo_loss_grad",
                                                                 "k3_kl", "masked_mean")})
    for k, f in fake.items():
        setattr(ch.c24, k, f)
    rewards, logp, mask = np.array([1.0, 0, 0, 0, 1, 0, 1, 1]), np.zeros((8, 3)), np.ones((8, 3))
    with pytest.raises(align.TrainError, match=said.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        adv = grpo.advantages(ch, rewards, 4)
        grpo.kl(ch, logp, logp, mask)
        grpo.loss_and_grad(ch, logp, logp, logp, adv, mask, {"clip": 0.2, "beta": 0.04})


@pytest.mark.parametrize("returned, said", [
    ([3, 999, 1, 2], "generate returned [3, 999, 1, 2] for 4 draws"),
    ([3, 4], "generate returned [3, 4] for 4 draws"),
    (None, "generate returned NoneType, not a list of token ids"),
])
def test_a_generate_that_returns_ids_outside_the_vocabulary_or_too_few_is_refused(returned, said):
    """chapter 16's generate must give one id in 0 … vocab − 1 per draw"""
    ch = _solutions()
    ch.c16 = SimpleNamespace(generate=lambda *a, **k: returned)
    vocab = ch.c14.build_vocab(MERGES)
    with pytest.raises(align.TrainError, match=said.replace("[", r"\[").replace("]", r"\]")):
        grpo.sample(ch, _toy_model(), SimpleNamespace(n_heads=2), [1, 2], vocab, np.zeros(4))


def test_an_unfinished_chapter_24_stops_the_stage_with_the_trainers_message(run, tmp_path):
    """a stub left in chapter 24: exit 1, 'chapter 24 is not finished', the function named"""
    folder = copy_solutions(tmp_path / "unfinished", {"chapter24_grpo": (
        "def group_advantages(rewards, group_size, eps=1e-4):\n"
        "    raise NotImplementedError('24.1 group_advantages: (r - mean) / (std + eps) within each group')\n")})
    proc = tool("align", "grpo", str(run[0]), "--impl", str(folder), "--steps", "1", "--batch", "1", "--group", "2")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "chapter 24 is not finished: group_advantages stops at" in proc.stderr, proc.stderr


@pytest.mark.parametrize("args, said", [
    (["--group", "1"], "--group must be a whole number of at least 2"),
    (["--updates", "0"], "--updates must be a whole number of at least 1"),
    (["--clip", "1.5"], "--clip must be a number between 0 and 1"),
    (["--clip", "nan"], "--clip must be a number between 0 and 1"),
    (["--beta", "-1"], "--beta must be a positive number"),
    (["--targets", "W_out"], "--targets 'W_out': each must be one of"),
])
def test_options_that_cannot_work_are_refused(tmp_path, capsys, args, said):
    """exit 2 naming the option, before any code of the learner runs"""
    folder = _toy_run(tmp_path / "toy")
    assert align.main(["grpo", str(folder), "--impl", "solutions", *args]) == 2
    assert said in capsys.readouterr().err


@pytest.mark.proof
def test_the_reward_rises_on_the_toy_model(tmp_path):
    """30 steps of the stage's loop with the reference chapters: the reward from about 0.4 to at least 0.8"""
    folder = _toy_run(tmp_path / "toy")
    s = {**align.DEFAULTS["grpo"], "targets": list(align.TARGETS), "lr": 0.05, "steps": 30, "eval_every": 10}
    events = []
    job = {"settings": s, "out": str(folder / "align"), "model": str(folder / "model.npz")}
    grpo.stage_grpo(_solutions(), job, events.append, {})
    evals = events[-1]["evals"]
    assert 0.1 < evals[0]["reward"] < 0.7 and evals[-1]["reward"] >= 0.8, [e["reward"] for e in evals]
    assert all(h["kl"] >= 0 for h in events[-1]["history"])
