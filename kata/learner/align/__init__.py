"""``nox -s align -- STAGE runs/gpt``: teach your Part II GPT to answer with your Part IV chapters.

``docs/align-gpt.md`` is the learner's page.

The run folder is a finished ``nox -s train -- --model gpt`` run. Each stage reads it, runs your chapters in a child
process with a watchdog (the trainer's, ``kata/learner/train/child.py``), and writes into ``<run>/align/`` its
numbers (``<stage>.json``), a figure (``<stage>.png``), answers before and after (``<stage>_samples.txt``) and
the model it made (a GPT model file ``nox -s generate`` reads):

1. ``lora`` (chapters 21 and 23, with 13–15): LoRA fine-tuning on question → answer pairs built from the corpus
   (``data.py``), the prompt masked; the held-out answer loss before and after, the share of parameters trained,
   the merged model against the adapted one (1e-12). Writes ``sft.npz`` (merged) and ``adapter.npz``.
2. ``dpo`` (chapters 21 and 23): DPO with a new adapter on ``sft.npz`` (also the frozen reference), chosen the
   true answer, rejected its words shuffled or another question's answer; held-out preference accuracy and the
   reward margin at every evaluation. Writes ``dpo.npz``.
3. ``grpo`` (chapters 16 and 24, with 21 and 23): GRPO on a reward the course can check, a Python keyword after
   ``keyword: ``, with an adapter on the run's GPT (the frozen reference); the reward and the KL at every step.
   Writes ``grpo.npz``. ``grpo.py`` tells how.
4. ``moe`` (chapter 22, with 16 for the samples): a mixture-of-experts GPT trained by ``nox -s train -- --model gpt
   --experts 4 --top-k 2`` with the run's settings into ``<run>/align/moe/``, its validation loss beside the dense
   run's at equal active parameters, each expert's load, and both models' greedy continuations of the same prompts
   (``moe.json``, ``moe.png``, ``moe_samples.txt``): ``moe.py``.

Which code runs is decided by the one rule every tool follows (``train.chapters_of``: ``--impl``, else your
``exercises/`` with your saved notebooks' finished functions); an unfinished chapter stops the stage with the
trainer's message naming the function and its line. How the stages use your functions: ``stages.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from ... import project
from ..train import Child, TrainError, chapters_of, read_model_file
from ..train.child import child_main
from ..train.gpt import model_from_arrays

STAGES = {"lora": (13, 14, 15, 21, 23), "dpo": (13, 14, 15, 21, 23), "grpo": (13, 14, 15, 16, 21, 23, 24),
          "moe": (7, 11, 12, 13, 14, 15, 16, 22)}  # the chapters each stage calls




DEFAULTS = {
    "lora": {"targets": "W_up,W_down", "rank": 5, "alpha": 10.0, "lr": 0.02, "warmup": 20, "steps": 2700, "batch": 8,
             "eval_every": 300, "seed": 0},
    "dpo": {"targets": "WQ,WK,WV,WO", "rank": 4, "alpha": 8.0, "lr": 0.005, "warmup": 10, "steps": 200, "batch": 8,
            "eval_every": 50, "seed": 0, "beta": 0.1},
    "grpo": {"targets": "WQ,WK,WV,WO,W_gate,W_up,W_down", "rank": 4, "alpha": 8.0, "lr": 0.002, "warmup": 5,
             "steps": 60, "batch": 4, "group": 8, "updates": 2, "clip": 0.2, "eval_every": 10, "seed": 0,
             "beta": 0.04},
}


TARGETS = ("WQ", "WK", "WV", "WO", "W_gate", "W_up", "W_down")  # the block weights an adapter may sit beside


def parser() -> argparse.ArgumentParser:
    """The command line of ``nox -s align -- ...``."""
    p = argparse.ArgumentParser(prog="nox -s align --", description="Teach a GPT trained by nox -s train -- --model "
                                "gpt to answer, with your chapters 21-24 (docs/align-gpt.md).")
    p.add_argument("stage", choices=tuple(STAGES), help="lora (fine-tune on questions and answers), dpo (then "
                   "preferences), grpo (a checkable reward), moe (a mixture-of-experts GPT)")
    p.add_argument("run", nargs="?", default="runs/gpt", help="a finished run of nox -s train -- --model gpt "
                   "(default runs/gpt)")
    p.add_argument("--impl", default=None, help="package name or folder whose code runs (default: your work as "
                   "nox -s chapterN checks it)")
    p.add_argument("--steps", type=int, default=None, help="optimiser steps (lora 2700, dpo 200, grpo 60)")
    p.add_argument("--lr", type=float, default=None, help="AdamW's peak learning rate (lora 0.02, dpo 0.005, "
                   "grpo 0.002)")
    p.add_argument("--rank", type=int, default=None, help="the adapters' rank r (lora 5, dpo 4, grpo 4)")
    p.add_argument("--alpha", type=float, default=None, help="the adapters' α (lora 10, dpo 8, grpo 8: α / r = 2)")
    p.add_argument("--targets", default=None, help=f"the block weights to adapt, comma-separated, from "
                   f"{','.join(TARGETS)} (lora W_up,W_down, dpo WQ,WK,WV,WO)")
    p.add_argument("--batch", type=int, default=None, help="pairs per step (default 8)")
    p.add_argument("--beta", type=float, default=None, help="dpo: β (default 0.1)")
    p.add_argument("--eval-every", type=int, default=None, help="steps between evaluations (lora 250, dpo 50)")
    p.add_argument("--seed", type=int, default=None, help="seed of the adapters and the batches (default 0)")
    p.add_argument("--group", type=int, default=None, help="grpo: completions per group G (default 8)")
    p.add_argument("--updates", type=int, default=None, help="grpo: optimiser steps on each batch of completions "
                   "(default 2)")
    p.add_argument("--clip", type=float, default=None, help="grpo: ε of the clipped surrogate (default 0.2)")
    p.add_argument("--experts", type=int, default=None, help="moe: experts per block")
    p.add_argument("--top-k", type=int, default=None, help="moe: experts each token uses")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds of CPU one call into your code may use")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return p


def settings(args) -> dict:
    """The stage's settings: its defaults with the options given; TrainError naming an option no run can use."""
    s = dict(DEFAULTS[args.stage])
    for key in s:
        if getattr(args, key, None) is not None:
            s[key] = getattr(args, key)
    for key in ("rank", "steps", "batch", "eval_every", "warmup"):
        least = 0 if key == "warmup" else 1
        if not isinstance(s[key], int) or s[key] < least:
            raise TrainError(f"--{key.replace('_', '-')} must be a whole number of at least {least}, got {s[key]!r}")
    if s["seed"] < 0:
        raise TrainError(f"--seed must be 0 or more, got {s['seed']}")
    for key in ("lr", "alpha", "beta"):
        if key in s and not (np.isfinite(s[key]) and s[key] > 0):
            raise TrainError(f"--{key} must be a positive number, got {s[key]}")
    if s["warmup"] > s["steps"]:
        s["warmup"] = s["steps"]
    targets = [t for t in str(s["targets"]).split(",") if t]
    unknown = [t for t in targets if t not in TARGETS]
    if unknown or not targets:
        raise TrainError(f"--targets {s['targets']!r}: each must be one of {', '.join(TARGETS)}")
    s["targets"] = targets
    if args.stage == "grpo":
        from .grpo import check_settings

        check_settings(s)
    return s


def finished_run(folder: Path) -> tuple[Path, dict]:
    """(model.npz, run.json) of a finished ``nox -s train -- --model gpt`` run; TrainError saying what is wrong."""
    folder = Path(folder)
    if not folder.is_dir():
        raise TrainError(f"{folder} is not a run folder (nox -s train -- --model gpt writes runs/gpt/)")
    info_path = folder / "run.json"
    progress = folder / "checkpoint.json"
    if not info_path.is_file():
        said = ""
        if progress.is_file():
            try:
                said = f" (stopped at step {int(json.loads(progress.read_text(encoding='utf-8'))['step'])})"
            except (ValueError, KeyError, TypeError):
                said = ""
        raise TrainError(f"{folder} is not a finished run{said}: it has no run.json. Finish it with nox -s train -- "
                         "--model gpt --resume (with its --name and --runs)")
    try:
        info = json.loads(info_path.read_text(encoding="utf-8"))
        steps, last = int(info["settings"]["steps"]), int(info["evals"][-1]["step"])
    except (ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError) as err:
        raise TrainError(f"{info_path} is not a run.json written by nox -s train ({type(err).__name__}: {err})") \
            from None
    if info.get("model") != "gpt":
        raise TrainError(f"{folder} is a run of --model {info.get('model')!r}: nox -s align teaches a GPT (nox -s "
                         "train -- --model gpt)")
    if last != steps:
        raise TrainError(f"{folder} is not a finished run: its last evaluation is at step {last} of {steps}")
    path, arrays = read_model_file(folder)
    try:
        model, _, _, _ = model_from_arrays(arrays)
    except TrainError as err:
        raise TrainError(f"{path} does not fit this tool: {err}") from None
    if not all(np.all(np.isfinite(a)) for a in model_parameters(model)):
        raise TrainError(f"{path} has parameters that are not finite numbers")
    return path, info


def model_parameters(model: dict):
    """Every array of a GPT in chapter 16's layout."""
    yield model["tok_emb"]
    for block in model["blocks"]:
        yield from block.values()
    yield model["g_final"]
    yield model["W_out"]


def stage_model(stage: str, folder: Path, out: Path) -> Path:
    """The model a stage starts from: the run's for lora (and grpo, moe), stage 1's fine-tuned one for dpo."""
    path, _ = finished_run(folder)
    if stage != "dpo":
        return path
    sft = out / "sft.npz"
    if not sft.is_file():
        raise TrainError(f"{sft} is not there: DPO starts from the fine-tuned model; run nox -s align -- lora "
                         f"{folder} first")
    _, arrays = read_model_file(sft)
    try:
        model_from_arrays(arrays)
    except TrainError as err:
        raise TrainError(f"{sft} does not fit this tool: {err}; run nox -s align -- lora {folder} again") from None
    return sft


def stage_chapters(stage: str, impl: str | None) -> tuple[Path, dict, str]:
    """The implementation's chapters a stage calls (``chapters_of``); TrainError for a bad ``--impl``."""
    from ... import learners_code

    try:
        project.impl_folder(impl if impl is not None else learners_code.default_impl())  # a bad --impl named now
    except SystemExit as err:
        raise TrainError(str(err)) from None
    return chapters_of(impl, {f"c{n}": n for n in STAGES[stage]})


def main(argv: list[str] | None = None) -> int:
    """Run one stage and write its files: 0 when done, 1 when your code or a check stopped it, 2 for bad input."""
    if list(argv or [])[:1] == ["--child"]:  # the child process (``Child(entry=...)``): the job comes on stdin
        return child_main(work)
    args = parser().parse_args(argv)
    started = time.perf_counter()
    run = Path(args.run)
    out = run / "align"
    try:
        if not args.timeout > 0:
            raise TrainError(f"--timeout must be positive, got {args.timeout}")
        if args.stage == "moe":
            stage_chapters(args.stage, args.impl)  # an implementation without chapter 22 is named at once
            from .moe import main as moe_main

            return moe_main(args, run, finished_run)
        s = settings(args)
        model = stage_model(args.stage, run, out)
        if out.is_symlink() or (out.exists() and not out.is_dir()):
            raise TrainError(f"{out} is not a folder: nox -s align writes its files there")
        folder, modules, shown = stage_chapters(args.stage, args.impl)
    except TrainError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{args.stage}: {run}/ with {shown}/ chapters {', '.join(str(n) for n in STAGES[args.stage])}; "
          + ", ".join(f"{k} {','.join(v) if isinstance(v, list) else v}" for k, v in s.items()) + f"  ->  {out}/",
          flush=True)
    job = {"mode": "align", "kind": "align", "stage": args.stage, "folder": str(folder), "modules": modules,
           "shown_folder": shown, "timeout": args.timeout, "settings": s, "model": str(model.resolve()),
           "out": str(out.resolve()), "numbers": list(STAGES[args.stage])}
    child = Child(job, args.timeout, entry="kata.learner.align")
    try:
        result = follow(child, args.stage, s)
    except TrainError as err:
        print(f"\n{err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nstopped (Ctrl-C): nothing written", file=sys.stderr)
        return 130
    finally:
        child.close()
    if args.stage == "grpo":
        from .grpo import write as write_grpo

        print(write_grpo(run, out, s, result, time.perf_counter() - started))
        return 0
    from .report import write

    print(write(args.stage, run, out, s, result, time.perf_counter() - started))
    return 0


def work(ch, job: dict, send, status: dict) -> None:
    """The child's work (``child_main``'s ``work``): grpo (``grpo.py``), moe's samples (``moe.py``), or the others."""
    if job["stage"] == "moe":
        from .moe import continue_prompts

        return continue_prompts(ch, job, send, status)
    if job["stage"] == "grpo":
        from .grpo import stage_grpo

        return stage_grpo(ch, job, send, status)
    from .stages import work as stage_work

    return stage_work(ch, job, send, status)


def follow(child: Child, stage: str, s: dict) -> dict:
    """Show the stage's progress (the trainer's ``Progress``, and a line per evaluation); its ``done`` event."""
    from ..train.progress import Progress
    from .report import shown_eval, shown_ready

    if stage == "grpo":
        from . import grpo

        shown_ready, shown_eval = (lambda _, e: grpo.shown_ready(e)), (lambda _, e: grpo.shown_eval(e))
    state = {"bar": None, "ready": {}}

    def on_event(event: dict):
        kind = event.get("event")
        if kind == "lora_checked":
            print(f"  ✓ your lora_backward: all {event['numbers']} gradient numbers of a small case match central "
                  f"differences of your lora_forward (largest difference {event['largest_difference']:.0e})",
                  flush=True)
        elif kind == "ready":
            state["ready"] = event
            print(shown_ready(stage, event), flush=True)
            state["bar"] = Progress(s["steps"])
        elif kind == "step":
            state["bar"].step(lambda: f"loss {event['loss']:.3f}")
        elif kind == "eval":
            text = shown_eval(stage, event)
            if state["bar"] is not None:
                state["bar"].write(text)
            else:
                print(text, flush=True)
        elif kind == "done":
            return {**event, "ready": state["ready"]}
        return None

    try:
        return child.follow("GPT", on_event)
    finally:
        if state["bar"] is not None:
            state["bar"].close()
