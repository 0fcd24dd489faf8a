"""``nox -s generate -- runs/<name> --prompt "Beautiful" --n 200``: continue a prompt with a trained model.

The model is one saved by ``nox -s train``.

The model file (``model.npz``, read with ``allow_pickle=False``) holds the parameters and the vocabulary; the
text comes from *your* ``transformer_forward``, called on the last ``context`` characters for every new one, in
a child process with a time limit (as in ``nox -s train``). Temperature 0 (the default) takes the most likely
character each time, like chapter 10's ``generate``; a temperature T > 0 draws from softmax(logits / T), more
varied as T grows (``--seed`` makes the draw repeatable). The text goes to standard output, everything else
to standard error.

A GPT's run (``nox -s train -- --model gpt``) is continued by *your* chapter 16 instead: the prompt through your
BPE ``encode``, one prefill with ``gpt_forward``, then one token at a time from the KV cache, each chosen by your
``choose_next`` (``--temperature``, ``--top-k``, ``--top-p``; its uniform draws from a generator seeded with
``--seed``), and printed as it comes (``kata/learner/train/gpt.py``). A mixture-of-experts GPT (``--experts``) runs
each block's attention through your chapter 16's ``attention_with_cache`` and its feed-forward through your chapter
22's router and your ``swiglu`` experts, joined as the trainer joins them (``kata/learner/train/moe.py``,
``cached_forward``), with the same check of the cache against the full forward.
"""

from __future__ import annotations

import argparse
import codecs
import json
import math
import sys
from pathlib import Path

from .. import learners_code
from . import train
from .train.gpt import is_gpt, model_from_arrays
from .train.moe import GENERATE_CHAPTERS as MOE_CHAPTERS


def parser() -> argparse.ArgumentParser:
    """The command line of ``nox -s generate -- ...``."""
    p = argparse.ArgumentParser(prog="nox -s generate --", description="Continue a prompt with a trained model.")
    p.add_argument("run", help="a run folder written by nox -s train (runs/<name>), or its model.npz")
    p.add_argument("--prompt", default="", help="the text to continue (default: the run's prompt)")
    p.add_argument("--n", type=int, default=200, help="characters to add (a GPT: tokens; default 200)")
    p.add_argument("--temperature", type=float, default=0.0,
                   help="0 (default): the most likely character each time; T > 0: draw from softmax(logits / T)")
    p.add_argument("--seed", type=int, default=0, help="seed of the draws when the temperature is above 0")
    p.add_argument("--top-k", type=int, default=None, help="a GPT (--model gpt) only: draw among the k likeliest")
    p.add_argument("--top-p", type=float, default=None, help="a GPT (--model gpt) only: draw among the likeliest "
                   "tokens whose probabilities add up to p (nucleus sampling)")
    p.add_argument("--impl", default="", help="package name or folder whose code runs (default: the one the run "
                   "was trained with, if it is there, else your work: exercises/ with your saved notebooks' answers)")
    p.add_argument("--timeout", type=float, default=train.TIMEOUT,
                   help="seconds of CPU one call into your code may use")
    return p


def trained_with(run: dict) -> str | None:
    """The implementation a run was trained with, from its run.json; None (the learner's work) for exercises/.

    The learner's work is exercises/ with the saved notebooks' finished functions, as ``nox -s chapterN`` runs it:
    a run trained on ``exercises`` generates with the notebooks' answers of now, like every other tool.
    """
    impl = run.get("impl")
    return None if impl in (None, "", "exercises") else str(impl)


def chapters(impl: str, run: dict, wanted: dict[str, int]) -> tuple[Path, dict[str, str], str]:
    """The chapters to generate with (``train.chapters_of``): ``--impl``'s, else the run's, else the learner's work.

    The run's (``trained_with``) may be gone: then the learner's work; a ``TrainError`` when ``--impl`` names none.
    """
    try:
        return train.chapters_of(impl or trained_with(run), wanted)
    except train.TrainError:
        if impl:
            raise
        return train.chapters_of(None, wanted)


def made_of(folder: Path, modules: dict[str, str], shown: str) -> str:
    """Where each chapter generating runs comes from, as ``nox -s train`` says it (``learners_code.made_of_words``).

    ``exercises/ chapters 13 and 16, chapter 14 from notebooks/chapter14_bpe.ipynb``: a chapter answered in its
    saved notebook is named with the notebook, by the rule every tool follows.
    """
    return learners_code.made_of_words(learners_code.chapters_made_of(folder, modules.values()), shown)


def main(argv: list[str] | None = None) -> int:
    """Print the continued prompt; 0 when done, 1 when your code failed, 2 for a bad run folder or option."""
    args = parser().parse_args(argv)
    try:
        if args.n < 0:
            raise train.TrainError(f"--n must be 0 or more, got {args.n}")
        if not (math.isfinite(args.temperature) and args.temperature >= 0):
            raise train.TrainError(f"--temperature must be a finite number, 0 or more, got {args.temperature}")
        if args.seed < 0:
            raise train.TrainError(f"--seed must be 0 or more (a seed of NumPy's generator), got {args.seed}")
        path, arrays = train.read_model_file(Path(args.run))
        if is_gpt(arrays):
            return _gpt(args, path, arrays)
        if args.top_k is not None or args.top_p is not None:
            raise train.TrainError("--top-k and --top-p are for a GPT (nox -s train -- --model gpt)")
        path, run, vocab, context = train.load_model(Path(args.run))
        prompt = args.prompt or run.get("settings", {}).get("prompt", "") or vocab[0]
        unknown = sorted({c for c in prompt if c not in vocab})
        if unknown:
            raise train.TrainError(f"--prompt {prompt!r} has characters this model never saw: {unknown} (its "
                                   f"{len(vocab)} characters: {''.join(vocab)!r})")
        folder, modules, shown = chapters(args.impl, run, train.CHAPTER10.generate_chapters)
    except train.TrainError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    how = "greedy" if args.temperature == 0 else f"temperature {args.temperature:g}, seed {args.seed}"
    print(f"{path} ({len(vocab)} characters, context {context}) with {made_of(folder, modules, shown)}, {how}:",
          file=sys.stderr)
    job = {"mode": "generate", "kind": "chapter10", "folder": str(folder), "modules": modules, "shown_folder": shown,
           "timeout": args.timeout, "model": str(path), "prompt": prompt, "n": args.n,
           "temperature": args.temperature, "seed": args.seed}
    child = train.Child(job, args.timeout)
    try:
        text = child.follow("model", lambda event: event.get("text"))
    except train.TrainError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    finally:
        child.close()
    print(text)
    return 0


def _gpt(args, path: Path, arrays: dict) -> int:
    """Stream a GPT's continuation of the prompt, token by token, from your chapter 16 (``gpt.generate_gpt``)."""
    try:
        model = model_from_arrays(arrays, mixture_ok=True)[0]  # refuse a damaged file here, before the child starts
    except train.TrainError as err:
        print(f"error: {path} does not fit this tool: {err}", file=sys.stderr)
        return 2
    try:
        if args.top_k is not None and args.top_k < 1:
            raise train.TrainError(f"--top-k must be 1 or more, got {args.top_k}")
        if args.top_p is not None and not 0 < args.top_p <= 1:
            raise train.TrainError(f"--top-p must be above 0 and at most 1, got {args.top_p}")
        run_json = path.parent / "run.json"
        run = json.loads(run_json.read_text(encoding="utf-8")) if run_json.exists() else {}
        prompt = args.prompt or run.get("settings", {}).get("prompt", "") or "A"
        wanted = {**train.GPT.generate_chapters, **(MOE_CHAPTERS if "moe" in model else {})}
        folder, modules, shown = chapters(args.impl, run, wanted)
    except (train.TrainError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    how = "greedy" if args.temperature == 0 else (
        f"temperature {args.temperature:g}" + (f", top-k {args.top_k}" if args.top_k else "")
        + (f", top-p {args.top_p:g}" if args.top_p else "") + f", seed {args.seed}")
    if "moe" in model:
        experts = model["blocks"][0]["W_router"].shape[1]
        what = (f"a mixture-of-experts GPT, {experts} experts, {model['moe'].top_k} per token) with chapter 16's "
                "attention_with_cache and KV cache, chapter 22's router")
    else:
        what = "a GPT) with chapter 16's gpt_forward and KV cache"
    print(f"{path} ({what}; {made_of(folder, modules, shown)}; {how}:", file=sys.stderr)
    job = {"mode": "generate", "kind": "gpt", "folder": str(folder), "modules": modules, "shown_folder": shown,
           "timeout": args.timeout, "model": str(path), "prompt": prompt, "n": args.n,
           "temperature": args.temperature, "top_k": args.top_k, "top_p": args.top_p, "seed": args.seed}
    child = train.Child(job, args.timeout)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    sys.stdout.write(prompt)
    sys.stdout.flush()
    try:
        def on_event(event: dict) -> None:
            if event.get("event") == "token":
                sys.stdout.write(decoder.decode(bytes(event["bytes"])))
                sys.stdout.flush()

        child.follow("model", on_event)
    except train.TrainError as err:
        print(f"\nerror: {err}", file=sys.stderr)
        return 1
    finally:
        child.close()
    sys.stdout.write(decoder.decode(b"", final=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
