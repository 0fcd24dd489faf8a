"""``nox -s align -- moe runs/gpt``: a mixture-of-experts GPT trained like the dense run, and the two compared.

The mixture is trained by the one trainer, ``nox -s train -- --model gpt --experts N --top-k K`` with every other
setting the dense run's (``kata/learner/train/moe.py`` says how your chapter 22 runs in it), into
``<run>/align/moe/``; a folder already trained with the same settings and code is not trained again. Then
``<run>/align/moe.json`` holds both runs' validation losses at every evaluation, the difference at the end, the
feed-forward parameters (active: the dense model's and the routers'; in all: N / K times the dense), and each
expert's final load per layer; ``<run>/align/moe.png`` draws both curves and the loads.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from ..train import TrainError, command
from ..train.gpt import GptSettings

DEFAULT_EXPERTS, DEFAULT_TOP_K = 4, 2
OTHER = ("steps", "lr", "rank", "alpha", "targets", "batch", "beta", "eval_every", "seed")  # other stages' options


def settings(run: dict, args) -> GptSettings:
    """The dense run's settings with ``--experts`` and ``--top-k``; TrainError naming an option moe cannot take."""
    given = [o for o in OTHER if getattr(args, o, None) is not None]
    if given:
        raise TrainError(f"--{given[0].replace('_', '-')}: the moe stage trains with the dense run's settings, so that "
                         "the two compare; it takes --experts and --top-k")
    try:
        dense = GptSettings(**run["settings"])
    except TypeError as err:
        raise TrainError(f"the run's run.json has settings this tool does not know ({err})") from None
    experts = DEFAULT_EXPERTS if args.experts is None else args.experts
    top_k = DEFAULT_TOP_K if args.top_k is None else args.top_k
    return GptSettings(**{**dense.as_dict(), "experts": experts, "top_k": top_k}).check()


def trained(out: Path, s: GptSettings, impl: str | None, timeout: float) -> Path:
    """``out``, trained with settings ``s`` by ``nox -s train`` unless its run.json says it was; TrainError if not."""
    from .. import train
    from ..serve import _train_argv

    wanted = {"settings": s.as_dict(), "impl": impl or "exercises"}
    try:
        done = json.loads((out / "run.json").read_text(encoding="utf-8"))
        if {"settings": done["settings"], "impl": done["impl"]} == wanted and (out / "model.npz").is_file():
            print(f"  ✓ {out}/ was trained before with these settings", flush=True)
            return out
    except (OSError, ValueError, KeyError, TypeError):
        pass
    argv = [*_train_argv(s), "--runs", str(out.parent), "--name", out.name, "--timeout", f"{timeout:g}"]
    if impl is not None:
        argv += ["--impl", impl]
    print(f"\n$ {command('nox', '-s', 'train', '--', *argv)}", flush=True)
    (out / "run.json").unlink(missing_ok=True)
    code = train.main(argv)
    if code != 0:
        raise TrainError(f"training {out}/ stopped (exit code {code}): see above")
    return out


def compare(dense: dict, mixture: dict, seconds: float) -> dict:
    """What moe.json holds: both runs' validation losses, the gap at the end, the parameters, the final loads."""
    ms = mixture["settings"]
    return {
        "experts": ms["experts"], "top_k": ms["top_k"], "balance": ms["balance"],
        "parameters": mixture["moe"],
        "dense": {"final_val_loss": dense["final_val_loss"], "train_seconds": dense["train_seconds"],
                  "val_loss": [[e["step"], e["val_loss"]] for e in dense["evals"]]},
        "moe": {"final_val_loss": mixture["final_val_loss"], "train_seconds": mixture["train_seconds"],
                "val_loss": [[e["step"], e["val_loss"]] for e in mixture["evals"]],
                "loads": mixture["evals"][-1]["loads"], "balance_loss": mixture["evals"][-1]["balance"]},
        "difference": mixture["final_val_loss"] - dense["final_val_loss"],
        "difference_means": "the mixture's final validation loss minus the dense model's, in nats (below 0: better)",
        "seconds": round(seconds, 1),
    }


def figure(result: dict):
    """Both validation curves (left) and each expert's final load in every layer (right)."""
    from matplotlib.figure import Figure

    from ...style import PALETTE

    fig = Figure(figsize=(10.0, 3.8), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=(1.3, 1))
    n, k = result["experts"], result["top_k"]
    for (name, label), color in zip((("dense", "dense SwiGLU"), ("moe", f"{n} experts, top-{k}")), PALETTE,
                                    strict=False):
        steps, losses = np.array(result[name]["val_loss"]).T
        left.plot(steps, losses, color=color, marker="o", markersize=3,
                  label=f"{label}: {result[name]['final_val_loss']:.3f}")
    left.set(xlabel="step", ylabel="validation loss (nats per token)",
             title="Equal active parameters: validation loss")
    left.grid(axis="y")
    left.legend(loc="upper right")
    loads = np.array(result["moe"]["loads"])  # (layers, experts)
    layers = len(loads)
    width = 0.8 / n
    for e in range(n):
        right.bar(np.arange(layers) + (e - (n - 1) / 2) * width, loads[:, e], width, color=PALETTE[e % len(PALETTE)],
                  label=f"expert {e + 1}")
    right.axhline(1 / n, color="#8c959f", linewidth=1, linestyle=(0, (4, 3)), label=f"even: 1/{n}")
    right.set(xticks=range(layers), xticklabels=[f"layer {i + 1}" for i in range(layers)],
              ylabel="share of the assignments", title="Each expert's load at the end")
    right.grid(axis="y")
    right.set_ylim(0, max(float(loads.max()), 1 / n) * 1.45)  # room above the bars for the legend
    right.legend(loc="upper center", fontsize=8, ncol=3)
    return fig


def main(args, run_folder: Path, finished_run) -> int:
    """The moe stage: train (or find) the mixture, compare, write moe.json and moe.png: 0, 1 or 2 as the others."""
    from ..train.figures import write_figures

    started = time.perf_counter()
    out = run_folder / "align"
    try:
        if not args.timeout > 0:
            raise TrainError(f"--timeout must be positive, got {args.timeout}")
        _, dense = finished_run(run_folder)
        s = settings(dense, args)
        if out.is_symlink() or (out.exists() and not out.is_dir()):
            raise TrainError(f"{out} is not a folder: nox -s align writes its files there")
    except TrainError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    out.mkdir(exist_ok=True)
    print(f"moe: {run_folder}/'s settings with {s.experts} experts of d_ff / {s.top_k}, {s.top_k} per token  ->  "
          f"{out}/moe/", flush=True)
    try:
        folder = trained(out / "moe", s, args.impl, args.timeout)
        mixture = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    except TrainError as err:
        print(f"\n{err}", file=sys.stderr)
        return 1
    result = compare(dense, mixture, time.perf_counter() - started)
    (out / "moe.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    write_figures(out, lambda: [("moe.png", figure(result))])
    p, gap = result["parameters"], result["difference"]
    loads = "; ".join(f"layer {i + 1}: " + " ".join(f"{x:.2f}" for x in row) for i, row in
                      enumerate(result["moe"]["loads"]))
    dense_loss, moe_loss = result["dense"]["final_val_loss"], result["moe"]["final_val_loss"]
    print(f"\nvalidation loss: dense {dense_loss:.3f}, mixture {moe_loss:.3f}"
          f" ({abs(gap):.3f} nats {'lower' if gap <= 0 else 'higher'}); a token uses {p['dense']:,} feed-forward "
          f"parameters in both (and the mixture's routers, {p['router']:,}); the mixture holds {p['total']:,}\n"
          f"each expert's share of the assignments: {loads} (even: {1 / s.experts:.2f})\n"
          f"wrote {out}/: moe.json, moe.png; the mixture's run: {folder}/")
    return 0
