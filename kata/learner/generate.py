"""``nox -s generate -- runs/<name> --prompt "Beautiful" --n 200``: continue a prompt with a trained model.

The model is one saved by ``nox -s train``.

The model file (``model.npz``, read with ``allow_pickle=False``) holds the parameters and the vocabulary; the
text comes from *your* ``transformer_forward``, called on the last ``context`` characters for every new one, in
a child process with a time limit (as in ``nox -s train``). Temperature 0 (the default) takes the most likely
character each time, like chapter 10's ``generate``; a temperature T > 0 draws from softmax(logits / T), more
varied as T grows (``--seed`` makes the draw repeatable). The text goes to standard output, everything else
to standard error.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from . import train


def parser() -> argparse.ArgumentParser:
    """The command line of ``nox -s generate -- ...``."""
    p = argparse.ArgumentParser(prog="nox -s generate --", description="Continue a prompt with a trained model.")
    p.add_argument("run", help="a run folder written by nox -s train (runs/<name>), or its model.npz")
    p.add_argument("--prompt", default="", help="the text to continue (default: the run's prompt)")
    p.add_argument("--n", type=int, default=200, help="characters to add (default 200)")
    p.add_argument("--temperature", type=float, default=0.0,
                   help="0 (default): the most likely character each time; T > 0: draw from softmax(logits / T)")
    p.add_argument("--seed", type=int, default=0, help="seed of the draws when the temperature is above 0")
    p.add_argument("--impl", default="", help="package name or folder whose transformer_forward runs "
                   "(default: the one the run was trained with, if it is there, else exercises)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds one call into your code may take")
    return p


def main(argv: list[str] | None = None) -> int:
    """Print the continued prompt; 0 when done, 1 when your code failed, 2 for a bad run folder or option."""
    args = parser().parse_args(argv)
    try:
        if args.n < 0:
            raise train.TrainError(f"--n must be 0 or more, got {args.n}")
        if not (math.isfinite(args.temperature) and args.temperature >= 0):
            raise train.TrainError(f"--temperature must be 0 or more, got {args.temperature}")
        path, run, vocab, context = train.load_model(Path(args.run))
        prompt = args.prompt or run.get("settings", {}).get("prompt", "") or vocab[0]
        unknown = sorted({c for c in prompt if c not in vocab})
        if unknown:
            raise train.TrainError(f"--prompt {prompt!r} has characters this model never saw: {unknown} (its "
                                   f"{len(vocab)} characters: {''.join(vocab)!r})")
        impl = args.impl or run.get("impl", "exercises")
        try:
            folder, module, shown = train.chapter10(impl)
        except train.TrainError:
            if args.impl:
                raise
            folder, module, shown = train.chapter10("exercises")
    except train.TrainError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    how = "greedy" if args.temperature == 0 else f"temperature {args.temperature:g}, seed {args.seed}"
    print(f"{path} ({len(vocab)} characters, context {context}) with {shown}/{module}.py, {how}:", file=sys.stderr)
    job = {"mode": "generate", "folder": str(folder), "module": module, "shown_folder": shown,
           "timeout": args.timeout, "model": str(path), "prompt": prompt, "n": args.n,
           "temperature": args.temperature, "seed": args.seed}
    child = train.Child(job, args.timeout)
    try:
        while True:
            event = child.next(started=False)
            if event.get("event") == "failed":
                raise train.TrainError(event["message"])
            if event.get("event") == "done":
                break
    except train.TrainError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    finally:
        child.close()
    print(event["text"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
