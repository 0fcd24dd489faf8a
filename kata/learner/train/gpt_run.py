"""``nox -s train -- --model gpt``, this process's side: settings, the child's progress, run.json and the figures.

Part of ``nox -s train`` (``kata/learner/train/__init__.py`` tells the whole story; ``docs/train-gpt.md`` the
learner's).
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

from ... import answers, project
from .child import Child, StepBar
from .corpus import TrainError
from .gpt_loop import CHECKPOINT, PROGRESS, read_progress
from .gpt_model import GptSettings
from .loop import smoothed_tail

TRAIN_CHAPTERS = {"c11": 11, "c12": 12, "c13": 13, "c14": 14, "c15": 15}  # what training calls


GENERATE_CHAPTERS = {"c13": 13, "c14": 14, "c16": 16}  # what generating calls: 13 for the check of the KV cache


OPTIONS = {"steps": "steps", "lr": "lr", "d_model": "d_model", "d_ff": "d_ff", "layers": "layers",
           "context": "context", "seed": "seed", "prompt": "prompt", "vocab_size": "vocab_size", "heads": "n_heads",
           "batch": "batch", "warmup": "warmup", "min_lr": "min_lr", "eval_every": "eval_every",
           "corpus": "corpus"}  # command-line option -> GptSettings field


def chapters_of(impl: str | None, wanted: dict[str, int]) -> tuple[Path, dict[str, str], str]:
    """(folder, {key: module name}, folder as shown) of an implementation's chapters; TrainError if one is missing.

    ``impl`` None is the learner's work by the rule every tool follows (``answers.default_impl``): exercises/, with
    the saved notebooks' finished functions put in.
    """
    try:
        folder = project.impl_folder(impl if impl is not None else answers.default_impl())
    except SystemExit as err:
        raise TrainError(str(err)) from None
    files = project.chapter_files(folder)
    missing = [n for n in wanted.values() if n not in files]
    if missing:
        raise TrainError(f"{folder} has no chapter{missing[0]:02d}_*.py: the GPT needs chapters "
                         f"{', '.join(str(n) for n in wanted.values())}")
    shown = answers.shown(folder)  # exercises/, also for its staged copy with the notebooks' answers
    return folder, {key: files[n].stem for key, n in wanted.items()}, shown


def settings_from(args) -> GptSettings:
    """The run's settings: GptSettings' defaults, then every option given on the command line."""
    given = {field: getattr(args, option) for option, field in OPTIONS.items() if getattr(args, option) is not None}
    return GptSettings(**given).check()


def _given(args) -> list[str]:
    return [f"--{option.replace('_', '-')}" for option in OPTIONS if getattr(args, option) is not None]


def main_gpt(args) -> int:
    """Check, tokenize, train (or resume), write runs/<name>/; 0 when done or stopped as asked, 1, 2 or 130."""
    started = time.perf_counter()
    out = Path(args.runs) / (args.name or "gpt")
    try:
        if args.sample_every:
            raise TrainError("--sample-every is an option of --model chapter10 (a GPT samples at every evaluation: "
                             "--eval-every)")
        if args.resume:
            if _given(args):
                raise TrainError(f"--resume continues with the stopped run's settings; leave out {_given(args)[0]}")
            stopped = read_progress(out)
            s = stopped["settings"]
            if stopped["step"] >= s.steps:
                print(f"{out}/ is a finished run (step {stopped['step']} of {s.steps}): nothing to resume, nothing "
                      f"changed. Train again without --resume for a new run.")
                return 0
        else:
            s = settings_from(args)
            if s.corpus != "pydoc":
                raise TrainError(f"--model gpt trains on --corpus pydoc (Python's own documentation), got "
                                 f"{s.corpus!r}")
        if args.stop_at is not None and not 1 <= args.stop_at < s.steps:
            raise TrainError(f"--stop-at must be a step from 1 to {s.steps - 1}, got {args.stop_at}")
        folder, modules, shown = chapters_of(args.impl, TRAIN_CHAPTERS)
    except TrainError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if not args.resume:
        for name in (CHECKPOINT, PROGRESS):
            (out / name).unlink(missing_ok=True)  # a new run: an old checkpoint must not be resumed into it
    print(f"training a GPT made of {shown}/ chapters 11–15 on Python's own documentation (pydoc_data.topics)"
          + (" — resuming" if args.resume else ""))
    print(f"  BPE vocabulary {s.vocab_size}, d_model {s.d_model}, {s.n_heads} heads, {s.layers} layers, d_ff {s.d_ff}, "
          f"context {s.context}, batch {s.batch}; {s.steps} steps of AdamW, lr {s.lr:g} (warm-up {s.warmup}, cosine "
          f"to {s.min_lr:g}), seed {s.seed}  ->  {out}/", flush=True)
    job = {"mode": "train-gpt", "folder": str(folder), "modules": modules, "shown_folder": shown,
           "timeout": args.timeout, "settings": s.as_dict(), "out": str(out.resolve()), "resume": args.resume,
           "stop_at": args.stop_at}
    child = Child(job, args.timeout)
    state = {"checkpoint": None}
    try:
        result = _follow(child, state)
    except TrainError as err:
        printed = child.printed().strip()
        if printed and "Timeout (" not in printed:
            print(f"(your code printed, last lines:)\n{chr(10).join(printed.splitlines()[-10:])}", file=sys.stderr)
        print(f"\n{err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        where = (f"the checkpoint of step {state['checkpoint']} is in {out}/: `{_resume_command(args)}` continues "
                 "from it" if state["checkpoint"] else "no checkpoint was written yet")
        print(f"\nstopped (Ctrl-C): {where}", file=sys.stderr)
        return 130
    finally:
        child.close()
    info = result["tokenized"]
    done = result["done"]
    rate = done["session_tokens"] / max(done["session_seconds"], 1e-9)
    if done["stopped"]:
        print(f"\nstopped after step {done['stopped']} as --stop-at asked; the checkpoint is in {out}/: "
              f"`{_resume_command(args)}` continues it")
        return 0
    out.mkdir(parents=True, exist_ok=True)
    _write_run(out, s, args, info, done, rate, started)
    last = done["evals"][-1]
    floor = info["unigram_entropy"]
    gap = floor - last["val_loss"]
    print(f"\ndone: {done['train_seconds']:.1f} s of training steps ({rate:,.0f} tokens/s); validation loss "
          f"{last['val_loss']:.3f} nats, {abs(gap):.3f} {'below' if gap >= 0 else 'above'} the unigram entropy "
          f"{floor:.3f}")
    print(f"wrote {out}/: run.json, loss.png, schedule.png, attention.png, model.npz, {CHECKPOINT}, {PROGRESS}")
    print("next: " + command("nox", "-s", "generate", "--", str(out), "--prompt", s.prompt, "--temperature", "0.8",
                             "--top-p", "0.9"))
    return 0


def command(*words: str) -> str:
    """A command line to copy into a shell, every word quoted that needs it.

    A run's name or a prompt with $, =, <, a space or a quote stays one word, as the learner typed it.
    """
    return shlex.join(words)


def _resume_command(args) -> str:
    """The command that resumes this run: its --name and --runs too, when they are not the defaults."""
    words = ["nox", "-s", "train", "--", "--model", "gpt", "--resume"]
    if args.name:
        words += ["--name", args.name]
    if args.runs != "runs":
        words += ["--runs", str(args.runs)]
    if args.impl is not None:
        words += ["--impl", args.impl]
    return command(*words)


def _follow(child: Child, state: dict) -> dict:
    """Show the child's progress until it is done; return its tokenizer figures and its last event."""
    tokenized, losses = {}, []
    with StepBar() as bar:

        def on_event(event: dict) -> dict | None:
            kind = event.get("event")
            if kind == "tokenized":
                tokenized.update(event)
                print(f"  ✓ {event['vocab_size']} tokens, {event['bytes_per_token']:.2f} bytes per token "
                      f"(BPE {event['bpe_seconds']:.1f} s, encoding {event['encode_seconds']:.1f} s); "
                      f"{event['train_tokens']:,} training and {event['val_tokens']:,} validation tokens; "
                      f"unigram entropy {event['unigram_entropy']:.3f} nats", flush=True)
                bar.open(event["settings"]["steps"], event["start_step"])
            elif kind == "step":
                losses.append(event["loss"])
                bar.step(event["step"], smoothed_tail(losses, 20),
                         event["session_tokens"] / max(event["session_seconds"], 1e-9))
            elif kind == "eval":
                bar.say(f"  step {event['step']:>5}  train {event['train_loss']:.3f}  validation "
                        f"{event['val_loss']:.3f}  {event['sample']!r}"[:150])
            elif kind == "checkpoint":
                state["checkpoint"] = event["step"]
            elif kind == "done":
                return {"tokenized": tokenized or None, "done": event}
            return None

        return child.follow("GPT", on_event)


def _write_run(out: Path, s: GptSettings, args, info: dict, done: dict, rate: float, started: float) -> None:
    import matplotlib

    from ...style import STYLE
    from .figures import gpt_loss_figure, head_attention_figure, save_png, schedule_figure

    floor = info["unigram_entropy"]
    with matplotlib.rc_context(STYLE):
        save_png(gpt_loss_figure(done["evals"], floor, "A GPT on Python's own documentation"), out / "loss.png")
        save_png(schedule_figure(done["schedule"], s.warmup), out / "schedule.png")
        save_png(head_attention_figure(done["attention_tokens"], done["attention"],
                                       "Every head's attention on the first validation tokens"), out / "attention.png")
    run = {
        "model": "gpt", "settings": s.as_dict(), "impl": args.impl or "exercises",
        "corpus": {"name": "pydoc", "source": "pydoc_data.topics (Python's own documentation)",
                   "train_tokens": info["train_tokens"], "val_tokens": info["val_tokens"]},
        "tokenizer": {"vocab_size": info["vocab_size"], "bytes_per_token": info["bytes_per_token"],
                      "bpe_seconds": info["bpe_seconds"], "encode_seconds": info["encode_seconds"]},
        "unigram_entropy": floor,
        "unigram_entropy_means": "the validation tokens' unigram entropy in nats, from their own frequencies",
        "evals": done["evals"], "final_val_loss": done["evals"][-1]["val_loss"],
        "below_unigram": floor - done["evals"][-1]["val_loss"],
        "train_seconds": round(done["train_seconds"], 3), "tokens_per_s": round(rate, 1),
        "seconds": round(time.perf_counter() - started, 3),
    }
    (out / "run.json").write_text(json.dumps(run, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

