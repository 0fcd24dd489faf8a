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
   second and the time left (where the output is not a terminal, the same as a line every 5 % of the steps:
   ``progress.py``); every ``--sample-every`` steps a greedy sample from ``--prompt`` is printed.
3. **The run's folder** ``runs/<name>/``: ``loss.png``, ``attention.png`` (each layer's attention weights on the
   corpus's first 24 characters from the prompt on), ``samples.txt``, ``model.npz`` (the parameters and the vocabulary,
   plain arrays: ``np.load(..., allow_pickle=False)``) and ``run.json`` (the settings, ``impl`` and ``chapters``:
   where each chapter's code came from, ``learners_code.chapters_made_of``; ``first_loss``, ``final_loss``,
   ``seconds``, ``tokens_per_second``, the loss of every step). ``nox -s generate`` continues a prompt with a
   saved model. The same ``--seed`` gives the same run on the same machine (NumPy is held to
   one thread, so sums are always added up in the same order).

**``--model gpt``** (``docs/train-gpt.md``) is the other model the same trainer trains, on your chapters 11–15
instead of chapter 10: your BPE (chapter 14) tokenizes Python's own documentation, your pre-norm blocks (chapter
13, with 11 and 12 inside) make a GPT in chapter 16's layout, and your AdamW, schedule, clipping and checkpoints
(chapter 15) train it; ``--resume`` continues a stopped run exactly; ``nox -s generate`` streams its text with
your chapter 16 and the KV cache.

One trainer, two models. A model (``model.py``'s interface; ``chapter10.py`` and ``gpt.py`` implement it) is
what differs: its settings, parameters and optimiser, its corpus and tokenizer, its forward and backward (your
chapters), what it shows and what its run folder holds. Written once for both: the child process and its
watchdog (``child.py``), the gradient check (``gradcheck.py``), the loop and its checkpoint (``loop.py``), the
run folder (here), the progress (``progress.py``), the figures (``figures.py``).

How your code is called. It is not graded here, so the tool may import it directly, but an endless loop in it
must not hang the tool silently. So your chapters run in a *child process* that imports them directly and
does the whole training; this process shows the progress and draws the figures. The child's watchdog
(``child.Watchdog``) is armed at every call into your code: a call that uses more than ``--timeout`` seconds of
CPU (30 by default; waiting for a core on a busy machine does not count, and a call that sleeps or blocks is
stopped after ``BACKSTOP`` times as long on the clock) makes it print where it was and exit, and the message
names your function and its file and line, or its notebook and cell when a saved notebook answered it. If
the child falls silent anyway, it is ended from here.

Why not ``kata.judge.proxy.Worker``, which the judge uses? Every call there sends all ~30 parameter arrays to
the worker as plain data, checks them for in-place edits and sends the gradients back: measured on the
course's two shared cores, one training step (d_model 32, 2 layers, 32 characters) took about 20 ms through
the Worker against 5 ms called directly, so the default run would take four times as long. In the child a
step costs what your NumPy costs (about 2 ms of CPU with the reference solution) plus the Adam update.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from ... import learners_code, project
from .chapter10 import FORMAT, Chapter10, Settings, load_model
from .child import TIMEOUT, Child, child_main
from .corpus import Corpus, TrainError, load_corpus
from .figures import attention_figure, loss_figure, write_figures
from .gpt import Gpt, GptSettings
from .gradcheck import check_gradients
from .loop import CHECKPOINT, PROGRESS, train
from .model import Model, command, read_model_file, smoothed_tail
from .progress import Progress

CHAPTER10, GPT = Chapter10(), Gpt()
MODELS: dict[str, Model] = {m.name: m for m in (CHAPTER10, GPT)}  # child.py names the same two

__all__ = ['CHAPTER10', 'FORMAT', 'GPT', 'GptSettings', 'MODELS', 'Child', 'Settings', 'TIMEOUT', 'TrainError',
           'attention_figure', 'chapters_of', 'check_gradients', 'command', 'load_corpus', 'load_model', 'loss_figure',
           'main', 'parser', 'read_model_file', 'train_model']


def chapters_of(impl: str | None, wanted: dict[str, int]) -> tuple[Path, dict[str, str], str]:
    """(folder, {key: module name}, folder as shown) of an implementation's chapters; TrainError if one is missing.

    ``impl`` None is the learner's work by the rule every tool follows (``learners_code.default_impl``): exercises/,
    with the saved notebooks' finished functions put in.
    """
    try:
        folder = project.impl_folder(impl if impl is not None else learners_code.default_impl())
    except SystemExit as err:
        raise TrainError(str(err)) from None
    files = project.chapter_files(folder)
    missing = [n for n in wanted.values() if n not in files]
    if missing:
        raise TrainError(f"{folder} has no chapter{missing[0]:02d}_*.py" + (
            f": the GPT needs chapters {', '.join(str(n) for n in wanted.values())}" if len(wanted) > 1 else ""))
    shown = learners_code.shown(folder)  # exercises/, also for its staged copy with the notebooks' answers
    return folder, {key: files[n].stem for key, n in wanted.items()}, shown


def train_model(ch, corpus: Corpus, s: Settings, report=lambda event: None) -> dict:
    """Chapter 10's model trained in this process with the chapter module ``ch`` (the docs' figures, the tests).

    ``s`` must be resolved (``Settings.resolved``). Returns the loop's run with ``samples`` (the history).
    """
    chapters = SimpleNamespace(c10=ch)
    data, _ = CHAPTER10.prepare(chapters, {"corpus": vars(corpus)}, s, None, lambda doing: None)
    run = train(CHAPTER10, chapters, s, data, report)
    return {**run, "samples": run["history"]}


def parser() -> argparse.ArgumentParser:
    """The command line of ``nox -s train -- ...``."""
    d, g = Settings(), GptSettings()
    p = argparse.ArgumentParser(
        prog="nox -s train --", description="Train a transformer made of your chapter 10 functions on real text "
        "(--model gpt: a GPT made of your chapters 11-15, on Python's own documentation).",
        epilog="Then: nox -s generate -- runs/<name> --prompt TEXT --n 200.")
    p.add_argument("--model", choices=tuple(MODELS), default="chapter10", help="chapter10 (default: "
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
    gpt.add_argument("--kv-heads", type=int, default=None, help="key/value heads, fewer than --heads: grouped-query "
                     "attention, your chapter 18 (default: one per head)")
    gpt.add_argument("--experts", type=int, default=None, help="experts per block: a mixture of experts, your "
                     "chapter 22, each of width d_ff / top-k (default: none, the dense SwiGLU)")
    gpt.add_argument("--top-k", type=int, default=None, help="experts each token runs through (with --experts)")
    gpt.add_argument("--balance", type=float, default=None, help=f"the load-balancing loss's coefficient (with "
                     f"--experts; default {g.balance:g})")
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
    p.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds of CPU one call into your code may use "
                   f"(default {TIMEOUT:g})")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return p


def _resume_command(args) -> str:
    """The command that resumes this run: its --name and --runs too, when they are not the defaults."""
    words = ["nox", "-s", "train", "--", "--model", args.model, "--resume"]
    if args.name:
        words += ["--name", args.name]
    if args.runs != "runs":
        words += ["--runs", str(args.runs)]
    if args.impl is not None:
        words += ["--impl", args.impl]
    return command(*words)


def main(argv: list[str] | None = None) -> int:
    """Check, train (or resume), write runs/<name>/: 0 when done or stopped as asked, 1, 2 or 130.

    1 when a check or your code stopped it, 2 for bad input, 130 for Ctrl-C.
    """
    args = parser().parse_args(argv)
    if args.child:
        return child_main()
    model = MODELS[args.model]
    started = time.perf_counter()
    try:
        if not args.timeout > 0:
            raise TrainError(f"--timeout must be positive, got {args.timeout}")
        planned = model.plan(args)
        if planned is None:
            return 0
        s, extra = planned
        folder, modules, shown = chapters_of(args.impl, model.chapters_for(s))
    except TrainError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    out = Path(args.runs) / (args.name or model.default_name(args))
    if model.resumable and not args.resume:
        for name in (CHECKPOINT, PROGRESS):
            (out / name).unlink(missing_ok=True)  # a new run: an old checkpoint must not be resumed into it
    chapters = learners_code.chapters_made_of(folder, modules.values())  # {chapter: where its functions come from}
    made_of = {name: chapters[project.chapter_number(name)] for name in modules.values()}
    print(model.header(s, shown, out, args, modules, made_of), flush=True)
    job = {"mode": "train", "kind": model.name, "folder": str(folder), "modules": modules, "shown_folder": shown,
           "timeout": args.timeout, "settings": s.as_dict(), "out": str(out.resolve()), "resume": args.resume,
           "stop_at": args.stop_at, **extra}
    child = Child(job, args.timeout)
    state = {"checkpoint": None}
    try:
        result = _follow(child, model, s, state)
    except TrainError as err:
        printed = child.printed().strip()
        if printed and "Timeout (" not in printed:
            print(f"(your code printed, last lines:)\n{chr(10).join(printed.splitlines()[-10:])}", file=sys.stderr)
        print(f"\n{err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        where = ("nothing written" if not model.resumable else
                 f"the checkpoint of step {state['checkpoint']} is in {out}/: `{_resume_command(args)}` continues "
                 "from it" if state["checkpoint"] else "no checkpoint was written yet")
        print(f"\nstopped (Ctrl-C): {where}", file=sys.stderr)
        return 130
    finally:
        child.close()
    if result["stopped"]:
        print(f"\nstopped after step {result['stopped']} as --stop-at asked; the checkpoint is in {out}/: "
              f"`{_resume_command(args)}` continues it")
        return 0
    write_figures(out, lambda: model.write_run(out, s, args, result, started, chapters))
    print(model.summary(out, s, args, result, started))
    return 0


def _follow(child: Child, model: Model, s, state: dict) -> dict:
    """Show the child's progress until it is done (``Progress``: a bar, or lines where the output is no terminal).

    Returns its ``done`` event, with ``ready`` (the data's figures), ``losses`` (this session's) and ``rate``
    (tokens per second) added.
    """
    ready, losses = {}, []
    progress = None
    try:

        def say(text: str) -> None:
            if progress is not None:
                progress.write(text)
            else:
                print(text, flush=True)

        def on_event(event: dict) -> dict | None:
            nonlocal progress
            kind = event.get("event")
            if kind == "ready":
                ready.update(event)
                line = model.ready(event)
                if line:
                    print(line, flush=True)
                progress = Progress(s.steps, event["start_step"])
            elif kind == "step":
                losses.append(event["loss"])
                rate = event["session_tokens"] / max(event["session_seconds"], 1e-9)
                progress.step(lambda: f"loss {smoothed_tail(losses, model.bar_window):.3f}, {rate:,.0f} tok/s")
            elif kind == "observe":
                say(model.shown_observation(event, s))
            elif kind == "checkpoint":
                state["checkpoint"] = event["step"]
            elif kind == "done":
                return {**event, "ready": ready, "losses": losses,
                        "rate": event["session_tokens"] / max(event["session_seconds"], 1e-9)}
            return None

        return child.follow(model.label, on_event)
    finally:
        if progress is not None:
            progress.close()
