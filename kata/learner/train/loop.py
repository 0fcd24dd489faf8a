"""The one training loop, for either model; its checkpoint, and resuming from it exactly.

- **A step.** What the model's ``batch`` draws for step s (the same however the run got there), the model's loss
  and gradients (the learner's code), the model's optimiser update; a loss that is not a number stops the run.
- **Observations** (chapter 10: a greedy sample; the GPT: an evaluation of both splits and a sample) when the
  model says they are due, and the model's ``finish`` at the end (the final sample, the attention maps).
- **Checkpoints** (a resumable model, at every ``checkpoint_every`` steps, at the end and at ``--stop-at``):
  ``checkpoint.npz`` holds the weights and the optimiser's state (the model's ``save``: the GPT's is the learner's
  ``save_checkpoint``), ``checkpoint.json`` beside it the settings, the step, the training time, the observations
  so far and the model's own (the GPT: its merges). A step depends only on the weights, the state and the step
  number, so ``--resume`` continues a stopped run exactly: it ends with the same parameters as a run that never
  stopped (NumPy is held to one thread, so every sum is added in the same order).

Part of ``nox -s train`` (``kata/learner/train/__init__.py`` tells the whole story).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

from .corpus import TrainError

CHECKPOINT, PROGRESS = "checkpoint.npz", "checkpoint.json"


def _atomic(path: Path, write) -> None:
    """``write(tmp)`` then rename over ``path``, so a run stopped half-way never leaves half a file."""
    tmp = path.with_name(path.stem + ".partial" + path.suffix)
    write(tmp)
    os.replace(tmp, path)


def save_progress(model, ch, folder: Path, s, data, params, state, step: int, history: list, seconds: float) -> None:
    """The checkpoint (the model's ``save``) and checkpoint.json (settings, step, time, history, the model's own)."""
    folder.mkdir(parents=True, exist_ok=True)
    _atomic(folder / CHECKPOINT, lambda tmp: model.save(ch, tmp, params, state))
    info = {"settings": s.as_dict(), "step": step, "train_seconds": seconds, "evals": history,
            **model.progress_extra(data)}
    _atomic(folder / PROGRESS, lambda tmp: tmp.write_text(json.dumps(info) + "\n", encoding="utf-8"))


def read_progress(model, folder: Path) -> dict:
    """A stopped run's checkpoint.json, its settings read; TrainError when there is none to resume."""
    path = folder / PROGRESS
    if not path.exists() or not (folder / CHECKPOINT).exists():
        raise TrainError(f"--resume: there is no checkpoint in {folder}/ (a run writes one at every evaluation)")
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
        info["settings"] = model.settings(info["settings"])
        model.read_progress_extra(info)
        int(info["step"]), float(info["train_seconds"]), list(info["evals"])
    except (ValueError, KeyError, TypeError) as err:
        raise TrainError(f"--resume: {path} cannot be read ({err}); train again without --resume") from None
    return info


def train(model, ch, s, data, report=lambda event: None, folder: Path | None = None, resume: dict | None = None,
          stop_at: int | None = None) -> dict:
    """Train (or continue) ``model`` with the learner's chapters ``ch``; ``report`` receives every event.

    ``folder`` receives the checkpoints of a resumable model. ``resume`` is ``read_progress``'s answer for a
    stopped run; ``stop_at`` stops after that step (from 1) as if the run were interrupted there, with a checkpoint.
    Returns the run: ``params``, ``losses`` (of this session's steps), ``history`` (the observations),
    ``train_seconds``, ``stopped`` (the step, or None), ``session_seconds``, ``session_tokens`` and ``finish``'s.
    """
    if resume is None:
        params, state = model.start(ch, s, data)
        history, seconds, first = [], 0.0, 0
    else:
        params, state, first = model.restore(ch, folder / CHECKPOINT, s, data)
        history, seconds = list(resume["evals"]), float(resume["train_seconds"])
        if first != resume["step"]:
            raise TrainError(f"--resume: the checkpoint is at step {first}, checkpoint.json says "
                             f"{resume['step']}: the files do not belong together")
    losses, tokens, began_session = [], 0, seconds
    every = model.checkpoint_every(s) if model.resumable else 0

    def observe(step: int) -> None:
        kept, shown = model.observe(ch, params, data, s, step, losses, seconds)
        history.append(kept)
        report({"event": "observe", **kept, **shown})

    def run(stopped: int | None, **more) -> dict:
        return {"params": params, "losses": losses, "history": history, "train_seconds": seconds,
                "stopped": stopped, "session_seconds": seconds - began_session, "session_tokens": tokens, **more}

    if resume is None and model.observe_at_start:
        observe(0)  # where the random start stands
    for step in range(first, s.steps):
        began = time.perf_counter()
        loss, grads = model.loss_and_grads(ch, params, model.batch(data, s, step), s)
        loss = float(loss)
        if not np.isfinite(loss):
            raise TrainError(f"the loss became {loss} at step {step + 1}: the steps are too large; try a smaller --lr "
                             f"(now {s.lr:g})")
        params, state, extra = model.update(ch, params, state, grads, step, s)
        seconds += time.perf_counter() - began
        tokens += model.tokens_per_step(s)
        losses.append(loss)
        done, last = step + 1, step + 1 == s.steps
        report({"event": "step", "step": done, "loss": loss, **extra, "train_seconds": seconds,
                "session_seconds": seconds - began_session, "session_tokens": tokens})
        if model.observe_due(s, done):
            observe(done)
        if every and (done % every == 0 or last or done == stop_at):
            save_progress(model, ch, folder, s, data, params, state, done, history, seconds)
            report({"event": "checkpoint", "step": done})
        if done == stop_at and not last:
            return run(done)
    return run(None, **model.finish(ch, params, data, s, history, losses, report))
