r"""The ``grpo`` stage of ``nox -s align``: rewards the course can check, turned into learning by your chapter 24.

**The task.** After the prompt ``keyword: `` (``data.KEYWORD_PROMPT``) the model writes a word, and the reward is
1 when that word is a Python keyword (``keyword.iskeyword``), else 0. How a completion is cut, precisely:

- it is at most ``WORD_TOKENS`` (4) tokens, sampled by your chapter 16's ``generate`` at temperature 1 with no
  top-k or top-p, so that the policy that sampled a token is exactly the model whose log-probability
  (π_old) chapter 24 divides by;
- it ends after the first token at which its text holds a line break, or a blank that follows a non-blank
  character (the word is then complete); the tokens drawn after that are dropped, as if sampling had stopped;
- its **word** is the first run of non-blank characters on its first line (``data.keyword_word``): ``" for x"``
  gives ``for``, ``"\nif"`` gives nothing (reward 0), ``"format"`` gives ``format`` (reward 0); a word cut short
  by the four tokens counts as it stands.

**A step.** ``batch`` groups of ``group`` (G) completions of the prompt, sampled from the policy with uniform
draws from a generator seeded ``(seed, step)``; the G completions of a group are consecutive rows, as chapter 24
fixes. Each completion is the sequence prompt + response; your chapter 23's ``token_log_probs`` and
``response_mask`` give its tokens' log-probabilities under the policy (log π_old, the policy that sampled them),
under the frozen reference (the run's model: log π_ref) and which of them are the response's. Your
``group_advantages`` turns the rewards into advantages within each group, then ``updates`` (μ) optimiser steps
reuse the same samples: each one scores them again under the policy as it now is (log π), and your ``grpo_loss``
and ``grpo_loss_grad`` give the loss and its gradient with respect to every log π; the first of the μ steps has
ρ = 1, the later ones are where the clip can act. The tool carries that gradient into the logits and the weights
exactly as for DPO (``stages.add_grad``, your chapter 13's backward), and your chapter 15 moves the adapter. The
KL of a step is the batch mean of ``masked_mean(k3_kl(log π, log π_ref), mask)`` (your functions) at its first
update.

**Why LoRA, not full weights.** The policy is the run's GPT with your chapter 21's adapters beside every weight of
its blocks (``stages.Adapted``, the lora and dpo stages' mechanism): the reference model is then the frozen weights
themselves, so it costs no copy and cannot drift; 5.9 % of the parameters (rank 4 beside all seven weights) are
plenty to move the distribution of one word, and far fewer than the whole model to push away from everything else
it learnt; and the result folds into one ordinary model file with your ``lora_merge``, as the other stages' do.

**What is measured.** Every ``eval_every`` steps the policy writes ``EVAL_SAMPLES`` (64) completions with the same
draws every time (a generator seeded ``seed + 1``), and the share of keywords among them is the stage's
**reward** (the batch's own mean reward, noisier, is drawn beside it); before and after, the samples file lists
them, the share of distinct words, and the greedy completion. The model file is ``<run>/align/grpo.npz``.

Part of ``nox -s align`` (``kata/learner/align/__init__.py`` tells the whole story).
"""

from __future__ import annotations

import keyword
import time
from collections import Counter
from pathlib import Path

import numpy as np

from ..train.corpus import TrainError
from . import data
from .stages import Adapted, add_grad, forward, load, optimise, response_mask, save, token_log_probs, zero_grads

WORD_TOKENS = 4  # tokens of a completion at most


EVAL_SAMPLES = 64  # completions per evaluation, with the same draws every time


SHOWN_SAMPLES = 24  # completions listed before and after in grpo_samples.txt


GOAL = 0.8  # the mean reward the stage is meant to reach (drawn on the figure)


def check_settings(s: dict) -> None:
    """Refuse grpo's own options that cannot work (TrainError naming the option)."""
    for key, least in (("group", 2), ("updates", 1)):
        if not isinstance(s[key], int) or isinstance(s[key], bool) or s[key] < least:
            why = " (a group of one has no other completion to be compared with)" if key == "group" else ""
            raise TrainError(f"--{key} must be a whole number of at least {least}{why}, got {s[key]!r}")
    if not (np.isfinite(s["clip"]) and 0 < s["clip"] < 1):
        raise TrainError(f"--clip must be a number between 0 and 1 (ε of the clipped surrogate), got {s['clip']}")


# --- the task -----------------------------------------------------------------------------------------------------
def cut(pieces: list[bytes]) -> int:
    """How many of the sampled tokens (their bytes, in order) the completion keeps: up to the one that ends the word.

    The completion ends after the first token at which the text so far holds a line break, or a blank after a
    non-blank character; with neither, it keeps every token.
    """
    text = b""
    for k, piece in enumerate(pieces, start=1):
        text += piece
        word = text.lstrip(b" \t")
        if b"\n" in text or any(c in word for c in (b" ", b"\t")):
            return k
    return len(pieces)


def reward(text: str) -> float:
    """1.0 when the completion's word is a Python keyword (``data.keyword_reward``), else 0.0."""
    return data.keyword_reward(text)


def sample(ch, model: dict, base, prompt: list[int], vocab: dict, us: np.ndarray) -> tuple[list[int], str]:
    """(the response's ids, its text) of one completion: your chapter 16's ``generate`` with the draws ``us``, cut."""
    got = ch.c16.generate(np.array(prompt), model, base.n_heads, [float(u) for u in us], temperature=1.0)
    try:
        ids = [int(i) for i in got]
    except (TypeError, ValueError):
        raise TrainError(f"generate returned {type(got).__name__}, not a list of token ids") from None
    if len(ids) != len(us) or not all(0 <= i < len(vocab) for i in ids):
        raise TrainError(f"generate returned {ids} for {len(us)} draws: expected {len(us)} ids from 0 to "
                         f"{len(vocab) - 1}, one per draw")
    ids = ids[:cut([vocab[i] for i in ids])]
    return ids, ch.c14.decode(ids, vocab)


def draws(seed, count: int) -> np.ndarray:
    """(count, WORD_TOKENS) uniform draws from a generator seeded ``seed``."""
    return np.random.default_rng(seed).random((count, WORD_TOKENS))


def complete(ch, model: dict, base, prompt: list[int], vocab: dict, us: np.ndarray) -> list[tuple[list[int], str]]:
    """One completion per row of draws."""
    return [sample(ch, model, base, prompt, vocab, row) for row in us]


def greedy(ch, model: dict, base, prompt: list[int], vocab: dict) -> str:
    """The completion at temperature 0 (your ``generate``), cut as a sampled one."""
    got = [int(i) for i in ch.c16.generate(np.array(prompt), model, base.n_heads, [0.0] * WORD_TOKENS,
                                           temperature=0.0)]
    return ch.c14.decode(got[:cut([vocab[i] for i in got])], vocab)


def score(texts: list[str]) -> dict:
    """The share of keywords, the share of distinct words, and the commonest words of some completions."""
    words = [data.keyword_word(t) for t in texts]
    return {"reward": float(np.mean([reward(t) for t in texts])), "distinct": len(set(words)) / len(words),
            "words": Counter(words).most_common(8)}


# --- the batch ----------------------------------------------------------------------------------------------------
def padded(rows: list[np.ndarray], width: int) -> np.ndarray:
    """Rows of different lengths as one (B, width) array, zeros after each row's end."""
    out = np.zeros((len(rows), width))
    for b, r in enumerate(rows):
        out[b, :len(r)] = r
    return out


def log_probs(ch, model: dict, base, seqs: list[np.ndarray]) -> tuple[np.ndarray, list]:
    """(B, T) log-probabilities of the sequences' next tokens under ``model``, padded; what ``add_grad`` needs.

    Your ``token_log_probs`` on each sequence's logits; ``add_grad`` needs each row's logits and forward caches.
    """
    rows, saved = [], []
    for ids in seqs:
        logits, keep = forward(ch, model, base.n_heads, ids)
        rows.append(token_log_probs(ch, logits, ids))
        saved.append((logits, keep))
    return padded(rows, max(len(s) for s in seqs) - 1), saved


def advantages(ch, rewards: np.ndarray, group: int) -> np.ndarray:
    """Your ``group_advantages``, its answer checked: (B,) finite numbers."""
    got = np.asarray(ch.c24.group_advantages(rewards, group), dtype=np.float64)
    if got.shape != rewards.shape or not np.all(np.isfinite(got)):
        raise TrainError(f"group_advantages returned shape {got.shape} for {len(rewards)} rewards: expected "
                         f"({len(rewards)},) finite numbers, one per completion")
    return got


def kl(ch, logp: np.ndarray, logp_ref: np.ndarray, mask: np.ndarray) -> float:
    """The batch mean of each completion's mean k3 over its response tokens (your ``k3_kl`` and ``masked_mean``)."""
    per = np.asarray(ch.c24.masked_mean(ch.c24.k3_kl(logp, logp_ref), mask), dtype=np.float64)
    if per.shape != (len(mask),) or not np.all(np.isfinite(per)):
        raise TrainError(f"masked_mean(k3_kl(...)) returned shape {per.shape}: expected ({len(mask)},) finite "
                         "numbers, one per completion")
    return float(np.mean(per))


def loss_and_grad(ch, logp, logp_old, logp_ref, adv, mask, s: dict) -> tuple[float, np.ndarray]:
    """Your ``grpo_loss`` and ``grpo_loss_grad``, their answers checked."""
    args = (logp, logp_old, logp_ref, adv, mask)
    loss = float(ch.c24.grpo_loss(*args, clip_eps=s["clip"], beta=s["beta"]))
    grad = np.asarray(ch.c24.grpo_loss_grad(*args, clip_eps=s["clip"], beta=s["beta"]), dtype=np.float64)
    if not np.isfinite(loss):
        raise TrainError(f"grpo_loss returned {loss}")
    if grad.shape != logp.shape or not np.all(np.isfinite(grad)):
        raise TrainError(f"grpo_loss_grad returned shape {grad.shape}: expected {logp.shape} finite numbers, one "
                         "per token")
    return loss, grad


# --- the stage ----------------------------------------------------------------------------------------------------
def stage_grpo(ch, job: dict, send, status: dict) -> None:
    """GRPO on the keyword task: the reward at every evaluation, the KL at every step, samples, the merged model."""
    s, out = job["settings"], Path(job["out"])
    base = load(job["model"])  # the run's GPT: the policy's start and the frozen reference
    vocab = ch.c14.build_vocab(base.merges)
    prompt = [int(i) for i in ch.c14.encode(data.KEYWORD_PROMPT, base.merges)]
    if not prompt or len(prompt) + WORD_TOKENS > base.context:
        raise TrainError(f"the prompt {data.KEYWORD_PROMPT!r} and {WORD_TOKENS} tokens do not fit this model's "
                         f"context of {base.context} tokens")
    adapted = Adapted(ch, base.model, s["targets"], s["rank"], s["alpha"], s["seed"])
    params = adapted.params
    state = ch.c15.adamw_init(params)
    group, size = s["group"], s["batch"] * s["group"]
    optimiser = {**s, "steps": s["steps"] * s["updates"], "warmup": s["warmup"] * s["updates"]}  # lr_at's steps
    eval_us = draws(s["seed"] + 1, EVAL_SAMPLES)

    def measure(model: dict, step: int, seconds: float) -> tuple[dict, list[str]]:
        texts = [t for _, t in complete(ch, model, base, prompt, vocab, eval_us)]
        got = score(texts)
        return {"step": step, "reward": got["reward"], "distinct": got["distinct"], "seconds": round(seconds, 3)}, texts

    status["doing"] = "sampling before GRPO"
    first, before = measure(base.model, 0, 0.0)
    evals, history = [first], []
    send({"event": "ready", "trained": adapted.count, "parameters": adapted.total, "targets": adapted.targets,
          "prompt_tokens": len(prompt), "samples": size, **first})
    seconds = 0.0
    for step in range(s["steps"]):
        began = time.perf_counter()
        status["doing"] = f"GRPO step {step + 1}: sampling"
        model = adapted.adapted(params)  # the policy that samples this batch: π_old
        drawn = complete(ch, model, base, prompt, vocab, draws([s["seed"], step], size))
        rewards = np.array([reward(t) for _, t in drawn])
        seqs = [np.array(prompt + ids, dtype=np.int64) for ids, _ in drawn]
        kept = [ids for ids, _ in drawn]
        if not all(kept):
            raise TrainError("generate returned no token for a completion")
        status["doing"] = f"GRPO step {step + 1}: scoring"
        width = max(len(q) for q in seqs) - 1
        mask = padded([response_mask(ch, len(prompt), len(q)) for q in seqs], width)
        logp_ref, _ = log_probs(ch, base.model, base, seqs)
        adv = advantages(ch, rewards, group)
        logp_old = None
        for update in range(s["updates"]):
            if update:
                model = adapted.adapted(params)
            logp, saved = log_probs(ch, model, base, seqs)
            if logp_old is None:
                logp_old, step_kl = logp, kl(ch, logp, logp_ref, mask)
            loss, grad = loss_and_grad(ch, logp, logp_old, logp_ref, adv, mask, s)
            full = zero_grads(model)
            for b, ids in enumerate(seqs):
                logits, keep = saved[b]
                add_grad(ch, model, ids, keep, logits, grad[b, :len(ids) - 1], full)
            params, state, norm = optimise(ch, adapted, params, state, full, step * s["updates"] + update, optimiser)
            if update == 0:
                first_loss = loss
        seconds += time.perf_counter() - began
        history.append({"step": step + 1, "reward": float(rewards.mean()), "kl": step_kl, "loss": first_loss,
                        "groups_learning": int(np.sum(rewards.reshape(-1, group).std(axis=1) > 0))})
        send({"event": "step", "step": step, "loss": first_loss, "reward": float(rewards.mean()), "kl": step_kl,
              "grad_norm": norm})
        if (step + 1) % s["eval_every"] == 0 or step + 1 == s["steps"]:
            status["doing"] = f"GRPO step {step + 1}: measuring"
            evals.append(measure(adapted.adapted(params), step + 1, seconds)[0])
            send({"event": "eval", **evals[-1], "kl": step_kl})
    merged = adapted.merged(params)
    status["doing"] = "sampling after GRPO"
    after_eval, after = measure(merged, s["steps"], seconds)
    out.mkdir(parents=True, exist_ok=True)
    save(out / "grpo.npz", merged, base)
    send({"event": "done", "evals": evals, "history": history, "train_seconds": seconds,
          "samples": {"before": before, "after": after, "greedy_before": greedy(ch, base.model, base, prompt, vocab),
                      "greedy_after": greedy(ch, merged, base, prompt, vocab),
                      "merged_reward": after_eval["reward"]}})


# --- this process: what is shown and written ----------------------------------------------------------------------
def shown_ready(event: dict) -> str:
    """The line that says what is trained, and the starting reward."""
    share = event["trained"] / event["parameters"]
    return (f"  prompt {data.KEYWORD_PROMPT!r} ({event['prompt_tokens']} tokens), {event['samples']} completions a "
            f"step; rank-r adapters on {len(event['targets'])} weights: {event['trained']:,} of "
            f"{event['parameters']:,} parameters trained ({share:.1%})\n" + shown_eval(event))


def shown_eval(event: dict) -> str:
    """One evaluation as a line."""
    kl_said = f"  KL to the reference {event['kl']:.4f}" if "kl" in event else ""
    return (f"  step {event['step']:>4}  reward {event['reward']:.2f} ({EVAL_SAMPLES} completions; distinct words "
            f"{event['distinct']:.0%}){kl_said}")


def write(run: Path, out: Path, s: dict, result: dict, seconds: float) -> str:
    """Write grpo.json, grpo.png and grpo_samples.txt into ``out``; return what is said at the end."""
    import json

    from ..train.figures import write_figures

    evals, ready, samples = result["evals"], result["ready"], result["samples"]
    first, last = evals[0], evals[-1]
    reached = next((e for e in evals if e["reward"] >= GOAL), None)
    info = {"stage": "grpo", "run": str(run), "settings": s, "prompt": data.KEYWORD_PROMPT,
            "word_tokens": WORD_TOKENS, "eval_samples": EVAL_SAMPLES, "trained_parameters": ready["trained"],
            "parameters": ready["parameters"], "trained_share": ready["trained"] / ready["parameters"],
            "targets": ready["targets"], "reward_before": first["reward"], "reward_after": last["reward"],
            "merged_reward": samples["merged_reward"], "goal": GOAL,
            "goal_reached_at": None if reached is None else {"step": reached["step"], "seconds": reached["seconds"]},
            "kl_last": result["history"][-1]["kl"], "evals": evals, "history": result["history"],
            "train_seconds": round(result["train_seconds"], 3), "seconds": round(seconds, 3),
            "greedy_before": samples["greedy_before"], "greedy_after": samples["greedy_after"]}
    out.mkdir(parents=True, exist_ok=True)
    (out / "grpo.json").write_text(json.dumps(info, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "grpo_samples.txt").write_text(samples_text(samples), encoding="utf-8")
    write_figures(out, lambda: [("grpo.png", figure(evals, result["history"]))])
    when = ("not reached" if reached is None else
            f"reached at step {reached['step']}, after {reached['seconds']:.0f} s of steps")
    return (f"\ndone: {result['train_seconds']:.1f} s of training steps; reward {first['reward']:.2f} -> "
            f"{last['reward']:.2f} ({GOAL} {when}); KL to the reference {info['kl_last']:.4f}; greedy "
            f"{samples['greedy_before']!r} -> {samples['greedy_after']!r}\n"
            f"wrote {out}/: grpo.json, grpo.png, grpo_samples.txt, grpo.npz")


def samples_text(samples: dict) -> str:
    """The completions of the prompt before and after, each word marked when it is a keyword."""
    lines = [f"After {data.KEYWORD_PROMPT!r}: {EVAL_SAMPLES} completions at temperature 1 with the same draws before "
             f"and after (the first {SHOWN_SAMPLES} shown; + marks a keyword)", ""]
    for when in ("before", "after"):
        texts = samples[when]
        got = score(texts)
        lines.append(f"{when}: reward {got['reward']:.2f}, distinct words {got['distinct']:.0%}, greedy "
                     f"{samples['greedy_' + when]!r}; commonest: "
                     + ", ".join(f"{w!r} {n}" for w, n in got["words"]))
        for t in texts[:SHOWN_SAMPLES]:
            lines.append(f"  {'+' if keyword.iskeyword(data.keyword_word(t)) else ' '} {t!r}")
        lines.append("")
    return "\n".join(lines)


def figure(evals: list[dict], history: list[dict]):
    """The reward (every evaluation, and each step's own batch) and the KL to the reference at every step."""
    from matplotlib.figure import Figure

    from ...style import INK, MUTED, PALETTE

    fig = Figure(figsize=(7.0, 3.9), layout="constrained")
    left, right = fig.subplots(1, 2)
    left.plot([h["step"] for h in history], [h["reward"] for h in history], color=PALETTE[0], linewidth=1,
              alpha=0.6, label="each step's batch")
    left.plot([e["step"] for e in evals], [e["reward"] for e in evals], color=INK, marker="o", markersize=3,
              label=f"{EVAL_SAMPLES} fixed draws")
    left.axhline(GOAL, color=MUTED, linewidth=1, linestyle=(0, (1, 2)))
    left.set(xlabel="step", ylabel="mean reward (share of keywords)", ylim=(-0.02, 1.02),
             title="Reward after 'keyword: '")
    left.legend(loc="lower right")
    right.plot([h["step"] for h in history], [h["kl"] for h in history], color=PALETTE[1])
    right.set(xlabel="step", ylabel="mean k3 per response token", title="KL to the reference")
    for ax in (left, right):
        ax.grid(axis="y")
    return fig
