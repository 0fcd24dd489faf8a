"""``nox -s train``: train a transformer built from your chapter 10 functions on real text, and watch it learn.

``nox -s train`` (your ``exercises/``; ``-- --impl solutions`` in the authors' edition) trains a character-level
model on the Zen of Python (``--corpus zen``, from the standard library's ``this`` module), a few pages of
Shakespeare shipped in ``data/`` (``--corpus book``) or any UTF-8 text file (``--corpus FILE``):

1. **Checks first.** Your ``transformer_loss_and_grads`` on a tiny model (its own random parameters), every
   gradient entry against central differences of your loss, in the order the backward pass computes them; and
   your ``transformer_forward`` must not let a position see a later one. A wrong gradient stops the run before
   training, naming the parameter and the function to look at (each layer function is then checked on its own
   the same way, so the message blames the function that is wrong, not the first one its error reaches).
2. **Training.** ``init_params`` gives the starting parameters; every step takes a random window of
   ``--context`` characters, calls your ``transformer_loss_and_grads`` once, and updates every parameter with
   Adam (the optimiser lives here: no chapter teaches it). The learning rate stays at ``--lr`` for the first
   half and falls linearly to a tenth of it by the end. A progress bar shows the step, the loss, tokens per
   second and the time left; every ``--sample-every`` steps a greedy sample from ``--prompt`` is printed.
3. **The run's folder** ``runs/<name>/``: ``loss.png``, ``attention.png`` (each layer's attention weights on the
   corpus's first 24 characters from the prompt on), ``samples.txt``, ``model.npz`` (the parameters and the vocabulary,
   plain arrays: ``np.load(..., allow_pickle=False)``) and ``run.json`` (the settings, ``first_loss``,
   ``final_loss``, ``seconds``, ``tokens_per_second``, the loss of every step). ``nox -s generate`` continues
   a prompt with a saved model. The same ``--seed`` gives the same run on the same machine (NumPy is held to
   one thread, so sums are always added up in the same order).

**``--model gpt``** (``docs/train-gpt.md``) runs the same way, one child process under the same watchdog, on your
chapters 11–15 instead of chapter 10: your BPE (chapter 14) tokenizes Python's own documentation, your pre-norm
blocks (chapter 13, with 11 and 12 inside) make a GPT in chapter 16's layout (``gpt_model.py`` joins them: the
embedding, the final norm, the unembedding and the loss), its gradients are checked first (``gpt_check.py``), and
your AdamW, schedule, clipping and checkpoints (chapter 15) train it (``gpt_loop.py``); this process shows the
progress and writes ``runs/gpt/`` (``gpt_run.py``). ``--resume`` continues a stopped run exactly;
``nox -s generate`` streams its text with your chapter 16 and the KV cache (``gpt_child.py``).

How your code is called. It is not graded here, so the tool may import it directly, but an endless loop in it
must not hang the tool silently. So your chapter 10 runs in a *child process* that imports it directly and
does the whole training; this process shows the progress and draws the figures. The child re-arms
``faulthandler``'s watchdog at least once a second around calls into your code: a call that runs longer than
``--timeout`` seconds (30 by default) makes it print where it was and exit, and the message names your
function and its file and line. If the child falls silent anyway, it is ended from here.

Why not ``kata.judge.proxy.Worker``, which the judge uses? Every call there sends all ~30 parameter arrays to
the worker as plain data, checks them for in-place edits and sends the gradients back: measured on the
course's two shared cores, one training step (d_model 32, 2 layers, 32 characters) took about 20 ms through
the Worker against 5 ms called directly, so the default run would take four times as long. In the child a
step costs what your NumPy costs (about 2 ms of CPU with the reference solution) plus the Adam update.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from ... import answers, project
from .child import GRACE, STARTUP, THREADS, Child, Guarded, StepBar, child_main, describe, learner_frames
from .corpus import BOOK, MAX_VOCAB, Corpus, TrainError, load_corpus, zen
from .figures import attention_figure, loss_figure, save_png, shown_char
from .gpt_model import GptSettings
from .gpt_run import command, main_gpt
from .gradcheck import ATOL, RTOL, H, backward_order, check_gradients, numerical, tiny_model
from .loop import ATTENTION_CHARS, FINAL_CHARS, attention_maps, check_init, sample, smooth, smoothed_tail, train_model
from .model import (
    BLOCK_KEYS,
    FORMAT,
    Adam,
    Flat,
    Settings,
    get,
    learning_rate,
    load_model,
    model_arrays,
    model_from_arrays,
    npz_key,
    paths,
    read_model_file,
    shapes,
    shown_path,
)

__all__ = [
    'ATOL', 'ATTENTION_CHARS', 'Adam', 'BLOCK_KEYS', 'BOOK', 'Child', 'Corpus', 'FINAL_CHARS', 'FORMAT', 'Flat',
    'GRACE', 'Guarded', 'H', 'MAX_VOCAB', 'RTOL', 'STARTUP', 'Settings', 'THREADS', 'TrainError',
    'attention_figure', 'attention_maps', 'backward_order', 'chapter10', 'check_gradients', 'check_init',
    'child_main', 'describe', 'get', 'learner_frames', 'learning_rate', 'load_corpus', 'load_model',
    'loss_figure', 'main', 'model_arrays', 'model_from_arrays', 'npz_key', 'numerical', 'parser', 'paths',
    'read_model_file', 'sample', 'save_png', 'shapes', 'shown_char', 'shown_path', 'smooth', 'smoothed_tail',
    'tiny_model', 'train_model', 'zen',
]


def chapter10(impl: str | None) -> tuple[Path, str, str]:
    """(folder, module name, folder as shown) of an implementation's chapter 10; TrainError if it has none.

    ``impl`` None is the learner's work by the rule every tool follows (``answers.default_impl``): exercises/, with
    the saved notebooks' finished functions put in.
    """
    try:
        folder = project.impl_folder(impl if impl is not None else answers.default_impl())
    except SystemExit as err:
        raise TrainError(str(err)) from None
    found = project.chapter_files(folder).get(10)
    if found is None:
        raise TrainError(f"{folder} has no chapter10_*.py")
    shown = answers.shown(folder)  # exercises/, also for its staged copy with the notebooks' answers
    return folder, found.stem, shown


def parser() -> argparse.ArgumentParser:
    """The command line of ``nox -s train -- ...`` (``--model gpt``: ``gpt_run.py``)."""
    d, g = Settings(), GptSettings()
    p = argparse.ArgumentParser(
        prog="nox -s train --", description="Train a transformer made of your chapter 10 functions on real text "
        "(--model gpt: a GPT made of your chapters 11-15, on Python's own documentation).",
        epilog="Then: nox -s generate -- runs/<name> --prompt TEXT --n 200.")
    p.add_argument("--model", choices=("chapter10", "gpt"), default="chapter10", help="chapter10 (default: "
                   "chapter 10's transformer, one character per token) or gpt (chapters 11-15: BPE, pre-norm RoPE "
                   "SwiGLU blocks, AdamW; docs/train-gpt.md)")
    p.add_argument("--corpus", default=None, help="zen (default: the Zen of Python), book (a few pages of "
                   "Shakespeare in data/), or the path of a UTF-8 text file; --model gpt: pydoc, Python's own "
                   "documentation")
    p.add_argument("--impl", default=None, help="package name or folder to train (default: your work as nox -s "
                   "chapterN checks it: exercises/ with your saved notebooks' finished functions)")
    p.add_argument("--steps", type=int, default=None, help=f"training steps (default {d.steps}; gpt {g.steps})")
    p.add_argument("--lr", type=float, default=None, help=f"the learning rate (default {d.lr:g}, Adam's, falling to "
                   f"a tenth over the second half; gpt {g.lr:g}, AdamW's peak)")
    p.add_argument("--d-model", type=int, default=None, help=f"width of the stream (default {d.d_model}; gpt "
                   f"{g.d_model})")
    p.add_argument("--d-ff", type=int, default=None, help=f"width of the feed-forward layer (default 4 × d_model; "
                   f"gpt {g.d_ff})")
    p.add_argument("--layers", type=int, default=None, help=f"number of blocks (default {d.layers}; gpt {g.layers})")
    p.add_argument("--context", type=int, default=None, help=f"tokens per window (default {d.context}; gpt "
                   f"{g.context})")
    p.add_argument("--seed", type=int, default=None, help=f"seed: same seed, same run (default {d.seed})")
    p.add_argument("--prompt", default=None, help="prompt of the samples (default: Beautiful for zen, else the "
                   f"corpus's first word; gpt {g.prompt!r})")
    p.add_argument("--sample-every", type=int, default=0, help="steps between samples (default: an eighth of "
                   "the steps)")
    gpt = p.add_argument_group("--model gpt only")
    gpt.add_argument("--vocab-size", type=int, default=None, help=f"BPE vocabulary (default {g.vocab_size})")
    gpt.add_argument("--heads", type=int, default=None, help=f"attention heads (default {g.n_heads})")
    gpt.add_argument("--batch", type=int, default=None, help=f"windows per step (default {g.batch})")
    gpt.add_argument("--warmup", type=int, default=None, help=f"warm-up steps (default {g.warmup})")
    gpt.add_argument("--min-lr", type=float, default=None, help=f"the floor of the cosine (default {g.min_lr:g})")
    gpt.add_argument("--eval-every", type=int, default=None, help=f"steps between evaluations and checkpoints "
                     f"(default {g.eval_every})")
    gpt.add_argument("--resume", action="store_true", help="continue the stopped run in runs/<name>/ from its "
                     "checkpoint, exactly")
    gpt.add_argument("--stop-at", type=int, default=None, help="stop after this step with a checkpoint, as if "
                     "interrupted (--resume continues)")
    p.add_argument("--name", default="", help="the run's folder name under --runs (default: the corpus's name; "
                   "gpt: gpt)")
    p.add_argument("--runs", default="runs", help="where run folders go (default: runs)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds one call into your code may take "
                   "(default 30)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return p


GPT_ONLY = ("vocab_size", "heads", "batch", "warmup", "min_lr", "eval_every", "stop_at")


def _chapter10_defaults(args) -> None:
    """Fill the options left out with chapter 10's defaults; refuse the options only --model gpt has."""
    for name in GPT_ONLY:
        if getattr(args, name) is not None:
            raise TrainError(f"--{name.replace('_', '-')} is an option of --model gpt")
    if args.resume:
        raise TrainError("--resume is an option of --model gpt")
    d = Settings()
    for name in ("corpus", "steps", "lr", "d_model", "d_ff", "layers", "context", "seed", "prompt"):
        if getattr(args, name) is None:
            setattr(args, name, getattr(d, name))


def _validate(args) -> None:
    for name, least in (("steps", 1), ("d_model", 1), ("layers", 0), ("context", 2), ("d_ff", 0),
                        ("sample_every", 0), ("seed", 0)):
        if getattr(args, name) < least:
            raise TrainError(f"--{name.replace('_', '-')} must be at least {least}, got {getattr(args, name)}")
    if not (math.isfinite(args.lr) and args.lr > 0):
        raise TrainError(f"--lr must be a positive number, got {args.lr}")
    if not args.timeout > 0:
        raise TrainError(f"--timeout must be positive, got {args.timeout}")


def _one_line(text: str, width: int = 100) -> str:
    flat = text.replace("\n", "↵")
    return flat if len(flat) <= width else flat[:width - 1] + "…"


def main(argv: list[str] | None = None) -> int:
    """Check, train, write the run folder; 0 when done, 1 when a check or your code stopped it, 2 for bad input."""
    args = parser().parse_args(argv)
    if args.child:
        return child_main()
    if args.model == "gpt":
        return main_gpt(args)
    started = time.perf_counter()
    try:
        _chapter10_defaults(args)
        _validate(args)
        corpus = load_corpus(args.corpus, args.context)
        folder, module, shown_folder = chapter10(args.impl)
        s = Settings(corpus=args.corpus, steps=args.steps, lr=args.lr, d_model=args.d_model, d_ff=args.d_ff,
                     layers=args.layers, context=args.context, seed=args.seed, prompt=args.prompt,
                     sample_every=args.sample_every).resolved(corpus)
        if any(c not in corpus.vocab for c in s.prompt):
            raise TrainError(f"--prompt {s.prompt!r} has characters that are not in the corpus: "
                             f"{sorted({c for c in s.prompt if c not in corpus.vocab})}")
    except TrainError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    out = Path(args.runs) / (args.name or corpus.name)
    print(f"training {shown_folder}/{module}.py on {corpus.source}: {len(corpus.text):,} characters, "
          f"{len(corpus.vocab)} distinct")
    print(f"  d_model {s.d_model}, d_ff {s.d_ff}, {s.layers} layer{'s' * (s.layers != 1)}, context {s.context}, "
          f"{s.steps} steps of Adam at lr {s.lr:g}, seed {s.seed}  ->  {out}/", flush=True)
    with tempfile.TemporaryDirectory(prefix="kata-run-") as tmp:
        job = {"mode": "train", "folder": str(folder), "module": module, "shown_folder": shown_folder,
               "timeout": args.timeout, "corpus": asdict(corpus), "settings": asdict(s),
               "model": str(Path(tmp) / "model.npz")}
        child = Child(job, args.timeout)
        try:
            result = _follow(child, s)
        except TrainError as err:
            printed = child.printed().strip()
            if printed and "Timeout (" not in printed:
                print(f"(your code printed, last lines:)\n{chr(10).join(printed.splitlines()[-10:])}",
                      file=sys.stderr)
            print(f"\n{err}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("\nstopped (Ctrl-C): nothing written", file=sys.stderr)
            return 130
        finally:
            child.close()
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(job["model"], out / "model.npz")
    _write_run(out, corpus, s, args, result, started)
    seconds = time.perf_counter() - started
    first, final = result["losses"][0], smoothed_tail(result["losses"])
    print(f"\ndone in {seconds:.1f} s ({result['train_seconds']:.1f} s training, "
          f"{s.steps * s.context / result['train_seconds']:,.0f} tokens/s): loss {first:.3f} at step 1 -> "
          f"{final:.3f} (mean of the last {min(100, s.steps)} steps)")
    print(f"final sample, greedy from {s.prompt!r}:\n\n{result['samples'][-1]['text']}\n")
    print(f"wrote {out}/: loss.png, attention.png, samples.txt, model.npz, run.json")
    print("next: " + command("nox", "-s", "generate", "--", str(out), "--prompt", s.prompt, "--n", "200"))
    return 0


def _follow(child: Child, s: Settings) -> dict:
    """Show the child's progress until it is done; return the losses, samples and attention maps."""
    losses, samples = [], []
    with StepBar() as bar:

        def on_event(event: dict) -> dict | None:
            kind = event.get("event")
            if kind == "checked":
                bar.open(s.steps)
            elif kind == "step":
                losses.append(event["loss"])
                bar.step(event["step"], smoothed_tail(losses, 50),
                         event["step"] * s.context / max(event["train_seconds"], 1e-9))
            elif kind == "sample":
                samples.append({k: event[k] for k in ("step", "loss", "text")})
                label = "final" if event.get("final") else f"step {event['step']:>{len(str(s.steps))}}"
                bar.say(f"  {label}  loss {event['loss']:.3f}  {_one_line(event['text'])}")
            elif kind == "done":
                return {"losses": losses, "samples": samples, "train_seconds": event["train_seconds"],
                        "attention_text": event["attention_text"], "attention": event["attention"],
                        "child_cpu_seconds": event["cpu_seconds"]}
            return None

        return child.follow("model", on_event)


def _write_run(out: Path, corpus: Corpus, s: Settings, args, result: dict, started: float) -> None:
    losses = result["losses"]
    name = {"zen": "the Zen of Python", "book": "Coriolanus, act I"}.get(corpus.name, corpus.name)
    import matplotlib

    from ...style import STYLE

    with matplotlib.rc_context(STYLE):
        save_png(loss_figure(losses, len(corpus.vocab), f"Training loss on {name}"), out / "loss.png")
        save_png(attention_figure(result["attention_text"], result["attention"],
                                  f"Attention weights on {result['attention_text']!r}"), out / "attention.png")
    (out / "samples.txt").write_text(
        "".join(f"step {x['step']} (loss {x['loss']:.3f}, greedy from {s.prompt!r}):\n{x['text']}\n\n"
                for x in result["samples"]), encoding="utf-8")
    seconds = time.perf_counter() - started
    run = {
        "settings": asdict(s), "impl": args.impl or "exercises",
        "corpus": {"name": corpus.name, "source": corpus.source, "characters": len(corpus.text),
                   "vocab_size": len(corpus.vocab)},
        "first_loss": losses[0], "final_loss": smoothed_tail(losses),
        "final_loss_means": f"mean of the last {min(100, len(losses))} steps", "seconds": round(seconds, 3),
        "train_seconds": round(result["train_seconds"], 3),
        "cpu_seconds": round(result["child_cpu_seconds"] + time.process_time(), 3),
        "tokens_per_second": round(s.steps * s.context / result["train_seconds"], 1),
        "final_sample": result["samples"][-1]["text"], "losses": losses,
    }
    (out / "run.json").write_text(json.dumps(run, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
