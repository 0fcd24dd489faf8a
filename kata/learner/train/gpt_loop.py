r"""Training a GPT: the corpus through your BPE, AdamW steps with your chapter 15, evaluations, checkpoints, resuming.

- **Tokens.** Your ``train_bpe`` learns ``vocab_size - 256`` merges from the whole corpus, your ``encode`` turns it
  into token ids; the last tenth is held out for validation. A resumed run reads the merges from its checkpoint
  and only encodes.
- **A step.** ``batch`` windows of ``context + 1`` tokens from the training split (their starts drawn from a
  generator seeded with ``(seed, step)``, so step s draws the same windows however the run got there), the loss
  and gradients of ``gpt_model.loss_and_grads``, then your ``clip_by_global_norm``, ``lr_at`` and
  ``adamw_step``.
- **Evaluations** before the first step, every ``eval_every`` steps and at the end: the mean loss on fixed
  windows of each split (the same windows every time, so the curves are comparable), and a greedy sample from
  the prompt.
- **Checkpoints** at every evaluation: your ``save_checkpoint`` writes ``checkpoint.npz`` (the weights and
  AdamW's state), and ``checkpoint.json`` beside it holds the settings, the merges and the evaluations so far.
  A step depends only on the weights, the state and the step number, so ``--resume`` continues a stopped run
  exactly: it ends with the same parameters as a run that never stopped (NumPy is held to one thread, so every
  sum is added in the same order).

Part of ``nox -s train`` (``kata/learner/train/__init__.py`` tells the whole story).
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .corpus import TrainError
from .gpt_model import GptSettings, flat, init_model, logits_of, loss_and_grads, mean_loss, nested, shapes

EVAL_WINDOWS = 96  # windows of each split per evaluation


SAMPLE_TOKENS = 24  # tokens of the greedy sample at each evaluation


ATTENTION_TOKENS = 16  # tokens of the attention figure


CHECKPOINT, PROGRESS = "checkpoint.npz", "checkpoint.json"


def pydoc_text() -> str:
    """Python's own documentation: every help topic of ``pydoc_data.topics`` (``help("if")``), joined in order."""
    from pydoc_data.topics import topics

    return "".join(topics.values())


@dataclass
class Tokens:
    """The corpus as token ids, split, with what the tokenizer measured."""

    merges: list
    train: np.ndarray
    val: np.ndarray
    bytes_per_token: float
    bpe_seconds: float
    encode_seconds: float

    @property
    def vocab_size(self) -> int:
        """256 bytes plus one id per merge."""
        return 256 + len(self.merges)

    def unigram_entropy(self) -> float:
        r"""The validation tokens' unigram entropy in nats, from their own frequencies: $-\sum_i p_i \ln p_i$.

        The loss of the best model that ignores context, had it known the validation split's frequencies: a
        model that beats it has learnt something about order.
        """
        p = np.bincount(self.val, minlength=self.vocab_size) / len(self.val)
        p = p[p > 0]
        return float(-np.sum(p * np.log(p)))


def tokenize(ch, text: str, s: GptSettings, merges: list | None = None) -> Tokens:
    """Your BPE on the corpus (the given merges when resuming), split into training and validation ids."""
    began = time.perf_counter()
    if merges is None:
        merges = ch.c14.train_bpe(text, s.vocab_size)
        try:
            merges = [((int(a), int(b)), int(t)) for (a, b), t in merges]
        except (TypeError, ValueError):
            raise TrainError("train_bpe must return a list of ((a, b), new_id); it returned "
                             f"{type(merges).__name__}") from None
    bpe_seconds = time.perf_counter() - began
    if [t for _, t in merges] != list(range(256, 256 + len(merges))):
        raise TrainError("train_bpe's new ids must be 256, 257, … in turn")
    began = time.perf_counter()
    ids = np.asarray(ch.c14.encode(text, merges), dtype=np.int64)
    encode_seconds = time.perf_counter() - began
    vocab = 256 + len(merges)
    if ids.ndim != 1 or len(ids) == 0 or ids.min() < 0 or ids.max() >= vocab:
        raise TrainError(f"encode must return a list of ids from 0 to {vocab - 1}")
    cut = int(round(len(ids) * (1 - s.validation)))
    need = 2 * (s.context + 1)
    if cut < need or len(ids) - cut < need:
        raise TrainError(f"the corpus is {len(ids):,} tokens: too short for windows of --context {s.context} in "
                         "both the training and the validation split")
    return Tokens(merges, ids[:cut], ids[cut:], len(text.encode("utf-8")) / len(ids), bpe_seconds, encode_seconds)


def batch_at(tokens: np.ndarray, s: GptSettings, step: int) -> np.ndarray:
    """The windows of step ``step`` (from 0): (batch, context + 1) ids, drawn with a generator seeded (seed, step)."""
    starts = np.random.default_rng([s.seed, step]).integers(0, len(tokens) - s.context, size=s.batch)
    return np.stack([tokens[a:a + s.context + 1] for a in starts])


def eval_windows(tokens: np.ndarray, context: int) -> np.ndarray:
    """Up to ``EVAL_WINDOWS`` windows of ``context + 1`` ids spread evenly over a split (the same every time)."""
    n = max(1, min(EVAL_WINDOWS, (len(tokens) - 1) // context))
    starts = np.linspace(0, len(tokens) - context - 1, n).astype(np.int64)
    return np.stack([tokens[a:a + context + 1] for a in starts])


def greedy(ch, model: dict, n_heads: int, prompt: list[int], n: int, context: int) -> list[int]:
    """The prompt and ``n`` more ids, each the most likely after the last ``context`` (the whole forward each time)."""
    ids = list(prompt)
    for _ in range(n):
        ids.append(int(np.argmax(logits_of(ch, np.array(ids[-context:]), model, n_heads)[-1])))
    return ids


def attention_maps(ch, model: dict, n_heads: int, ids) -> list[np.ndarray]:
    """Every layer's attention weights on ``ids``: (n_heads, seq, seq) per layer.

    The stream comes from your ``prenorm_block``; the weights are recomputed from their documented formula with
    your ``rms_norm``, ``split_heads`` and ``apply_rope`` (a cache is yours to shape, so it is not read).
    """
    x = model["tok_emb"][np.asarray(ids)]
    n = len(ids)
    mask = np.tril(np.ones((n, n), dtype=bool))
    maps = []
    for block in model["blocks"]:
        h = np.asarray(ch.c13.rms_norm(x, block["g1"]), dtype=np.float64)
        q = np.asarray(ch.c12.apply_rope(ch.c11.split_heads(h @ block["WQ"], n_heads)), dtype=np.float64)
        k = np.asarray(ch.c12.apply_rope(ch.c11.split_heads(h @ block["WK"], n_heads)), dtype=np.float64)
        scores = np.where(mask, q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1]), -np.inf)
        w = np.exp(scores - scores.max(axis=-1, keepdims=True))
        maps.append(w / w.sum(axis=-1, keepdims=True))
        x = np.asarray(ch.c13.prenorm_block(x, block, n_heads)[0], dtype=np.float64)
    return maps


def _atomic(path: Path, write) -> None:
    """``write(tmp)`` then rename over ``path``, so a run stopped half-way never leaves half a file."""
    tmp = path.with_name(path.stem + ".partial" + path.suffix)
    write(tmp)
    os.replace(tmp, path)


def save_progress(ch, folder: Path, s: GptSettings, tokens: Tokens, params: dict, state: dict, evals: list,
                  seconds: float) -> None:
    """The checkpoint (your ``save_checkpoint``) and checkpoint.json (settings, merges, evaluations so far)."""
    folder.mkdir(parents=True, exist_ok=True)
    _atomic(folder / CHECKPOINT, lambda tmp: ch.c15.save_checkpoint(str(tmp), params, state))
    info = {"settings": s.as_dict(), "step": int(state["step"]), "train_seconds": seconds, "evals": evals,
            "merges": [[a, b, t] for (a, b), t in tokens.merges], "bpe_seconds": tokens.bpe_seconds}
    _atomic(folder / PROGRESS, lambda tmp: tmp.write_text(json.dumps(info) + "\n", encoding="utf-8"))


def read_progress(folder: Path) -> dict:
    """A stopped run's checkpoint.json; TrainError when there is none to resume."""
    path = folder / PROGRESS
    if not path.exists() or not (folder / CHECKPOINT).exists():
        raise TrainError(f"--resume: there is no checkpoint in {folder}/ (a run writes one at every evaluation)")
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
        info["settings"] = GptSettings(**info["settings"])
        info["merges"] = [((int(a), int(b)), int(t)) for a, b, t in info["merges"]]
    except (ValueError, KeyError, TypeError) as err:
        raise TrainError(f"--resume: {path} cannot be read ({err}); train again without --resume") from None
    return info


def _checked_step(params: dict, new_params, new_state) -> None:
    """adamw_step's answer has the parameters' names and shapes (else TrainError)."""
    if not isinstance(new_params, dict) or set(new_params) != set(params):
        raise TrainError("adamw_step must return (new_params, new_state) with the keys of params")
    for k, a in params.items():
        if np.shape(new_params[k]) != a.shape:
            raise TrainError(f"adamw_step returned {k} of shape {np.shape(new_params[k])}; it has shape {a.shape}")
    if not isinstance(new_state, dict) or "step" not in new_state:
        raise TrainError("adamw_step's new state must be a dict with 'step', 'm' and 'v'")


def train_gpt(ch, s: GptSettings, tokens: Tokens, folder: Path, report=lambda event: None, resume: dict | None = None,
              stop_at: int | None = None) -> dict:
    """Train (or continue) a GPT with your chapters; ``report`` receives every event. Returns the run.

    ``folder`` receives the checkpoints. ``resume`` is ``read_progress``'s answer for a stopped run; ``stop_at``
    stops after that step (from 1) as if the run were interrupted there, with a checkpoint.
    """
    like = {k: np.zeros(shape) for k, shape in shapes(tokens.vocab_size, s.d_model, s.d_ff, s.layers).items()}
    if resume is None:
        params = {k: np.array(a) for k, a in flat(init_model(tokens.vocab_size, s.d_model, s.d_ff, s.layers,
                                                             s.seed)).items()}
        state = ch.c15.adamw_init(params)
        evals, seconds = [], 0.0
    else:
        params, state = ch.c15.load_checkpoint(str(folder / CHECKPOINT), like)
        evals, seconds = list(resume["evals"]), float(resume["train_seconds"])
        if int(state["step"]) != resume["step"]:
            raise TrainError(f"--resume: the checkpoint is at step {state['step']}, checkpoint.json says "
                             f"{resume['step']}: the files do not belong together")
    val_windows, train_windows = eval_windows(tokens.val, s.context), eval_windows(tokens.train, s.context)
    prompt = list(ch.c14.encode(s.prompt, tokens.merges)) if s.prompt else [int(tokens.val[0])]
    vocab = ch.c14.build_vocab(tokens.merges)
    first, done_tokens = int(state["step"]), 0
    began_session = seconds

    def evaluate(step: int) -> None:
        model = nested(params)
        entry = {"step": step, "train_loss": mean_loss(ch, model, s.n_heads, train_windows),
                 "val_loss": mean_loss(ch, model, s.n_heads, val_windows), "seconds": round(seconds, 3)}
        evals.append(entry)
        text = ch.c14.decode(greedy(ch, model, s.n_heads, prompt, SAMPLE_TOKENS, s.context), vocab)
        report({"event": "eval", **entry, "sample": text})

    if resume is None:
        evaluate(0)  # where the random start stands: about ln(vocab), above the unigram line
    for step in range(first, s.steps):
        began = time.perf_counter()
        lr = float(ch.c15.lr_at(step, max_lr=s.lr, warmup_steps=s.warmup, total_steps=s.steps, min_lr=s.min_lr))
        loss, grads = loss_and_grads(ch, nested(params), s.n_heads, batch_at(tokens.train, s, step))
        if not np.isfinite(loss):
            raise TrainError(f"the loss became {loss} at step {step + 1}: try a smaller --lr (now {s.lr:g})")
        grads, norm = ch.c15.clip_by_global_norm(grads, s.clip)
        new_params, new_state = ch.c15.adamw_step(params, grads, state, lr, beta1=0.9, beta2=0.95,
                                                  weight_decay=s.weight_decay)
        _checked_step(params, new_params, new_state)
        params, state = new_params, new_state
        seconds += time.perf_counter() - began
        done_tokens += s.batch * s.context
        report({"event": "step", "step": step + 1, "loss": float(loss), "lr": lr, "grad_norm": float(norm),
                "train_seconds": seconds, "session_seconds": seconds - began_session, "session_tokens": done_tokens})
        last = step + 1 == s.steps
        if (step + 1) % s.eval_every == 0 or last:
            evaluate(step + 1)
        if (step + 1) % s.eval_every == 0 or last or step + 1 == stop_at:
            save_progress(ch, folder, s, tokens, params, state, evals, seconds)
            report({"event": "checkpoint", "step": step + 1})
        if step + 1 == stop_at and not last:
            return {"params": params, "evals": evals, "train_seconds": seconds, "stopped": step + 1,
                    "session_seconds": seconds - began_session, "session_tokens": done_tokens}
    model = nested(params)
    shown = [int(i) for i in tokens.val[:ATTENTION_TOKENS]]
    schedule = [float(ch.c15.lr_at(t, max_lr=s.lr, warmup_steps=s.warmup, total_steps=s.steps, min_lr=s.min_lr))
                for t in range(s.steps)]
    return {"params": params, "evals": evals, "train_seconds": seconds, "stopped": None,
            "session_seconds": seconds - began_session, "session_tokens": done_tokens, "schedule": schedule,
            "attention_tokens": [vocab[i].decode("utf-8", errors="replace") for i in shown],
            "attention": attention_maps(ch, model, s.n_heads, shown)}
