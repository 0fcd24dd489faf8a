"""``nox -s align -- moe runs/gpt``: a mixture-of-experts GPT trained like the dense run, and the two compared.

The mixture is trained by the one trainer, ``nox -s train -- --model gpt --experts N --top-k K`` with every other
setting the dense run's (``kata/learner/train/moe.py`` says how your chapter 22 runs in it), into
``<run>/align/moe/``; a folder already trained with the same settings and code is not trained again. Then
``<run>/align/moe.json`` holds both runs' validation losses at every evaluation, the difference at the end, the
feed-forward parameters (active: the dense model's and the routers'; in all: N / K times the dense), and each
expert's final load per layer; ``<run>/align/moe.png`` draws both curves and the loads.

**Samples** (``moe_samples.txt``, and in moe.json): greedy continuations of a few prompts (the run's own prompt
first), by the dense run ("before") and by the mixture ("after"), each through ``nox -s generate``'s path
(``gpt.generate_gpt``: your chapter 16's KV cache, checked against the full forward; the mixture's feed-forward
your chapter 22). "Before" is the dense model rather than the untrained mixture: the two models differ in the
feed-forward alone (the same settings, data, steps and seed), so greedy text from the same prompts shows what the
mixture changed, next to the losses that measure it; an untrained model's text is noise whose only message, that
training helps, the loss curves already give. The dense samples are made first, before the mixture is trained,
so an unfinished chapter 16 is named at once rather than after the training.
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
PROMPTS = ("The return statement", "Changed in version")  # after the run's own prompt: a heading, a common phrase
SAMPLE_TOKENS = 32  # tokens of each continuation
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


def prompts(run: dict) -> list[str]:
    """The samples' prompts: the run's own (its samples during training), then ``PROMPTS``."""
    own = run.get("settings", {}).get("prompt") or ""
    return list(dict.fromkeys([own, *PROMPTS] if own else PROMPTS))


def continuations(model: Path, prompts: list[str], impl: str | None, timeout: float) -> list[str]:
    """Greedy continuations of ``prompts`` by a GPT model file (dense or a mixture), in a child process.

    The child runs ``continue_prompts`` on your chapters (``train.chapters_of``: ``impl``, else your work);
    TrainError with the trainer's message when your code stops it (an unfinished chapter named).
    """
    from ..train import Child, chapters_of, read_model_file
    from ..train.gpt import model_from_arrays
    from ..train.moe import GENERATE_CHAPTERS

    _, arrays = read_model_file(model)
    mixture = "moe" in model_from_arrays(arrays, mixture_ok=True)[0]
    wanted = {"c13": 13, "c14": 14, "c16": 16, **(GENERATE_CHAPTERS if mixture else {})}
    folder, modules, shown = chapters_of(impl, wanted)
    job = {"mode": "align", "kind": "align", "stage": "moe", "folder": str(folder), "modules": modules,
           "shown_folder": shown, "timeout": timeout, "model": str(model.resolve()), "prompts": prompts,
           "n": SAMPLE_TOKENS, "numbers": sorted(wanted.values())}
    child = Child(job, timeout, entry="kata.learner.align")
    try:
        return child.follow("GPT", lambda event: event.get("texts"))
    finally:
        child.close()


def continue_prompts(ch, job: dict, send, status: dict) -> None:
    """In the child: each prompt continued greedily by ``gpt.generate_gpt`` (``nox -s generate``'s path)."""
    from ..train.gpt import generate_gpt

    texts: list[str] = []
    status["doing"] = "generating"
    for prompt in job["prompts"]:
        new = bytearray()  # the new tokens' bytes, after the whole prompt as typed (generate prints the same)

        def keep(event: dict, new: bytearray = new) -> None:
            if event.get("event") == "token":
                new.extend(event["bytes"])

        generate_gpt(ch, {"model": job["model"], "prompt": prompt, "n": job["n"], "temperature": 0.0, "top_k": None,
                          "top_p": None, "seed": 0}, keep)
        texts.append(prompt + new.decode("utf-8", errors="replace"))
    send({"event": "done", "texts": texts})


def samples_text(samples: list[dict]) -> str:
    """Each prompt, then the dense run's and the mixture's greedy continuations (repr: line breaks shown)."""
    lines = []
    for item in samples:
        lines += [item["prompt"], f"  dense (before):  {item['dense']!r}", f"  mixture (after): {item['mixture']!r}",
                  ""]
    return "\n".join(lines)


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
    asked = prompts(dense)
    try:
        print(f"  the dense run's greedy continuations of {len(asked)} prompts (your chapter 16) …", flush=True)
        before = continuations(run_folder / "model.npz", asked, args.impl, args.timeout)
        folder = trained(out / "moe", s, args.impl, args.timeout)
        mixture = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        print("  the mixture's greedy continuations (your chapters 16 and 22) …", flush=True)
        after = continuations(folder / "model.npz", asked, args.impl, args.timeout)
    except TrainError as err:
        print(f"\n{err}", file=sys.stderr)
        return 1
    result = compare(dense, mixture, time.perf_counter() - started)
    result["samples"] = [{"prompt": p, "dense": b, "mixture": a} for p, b, a in zip(asked, before, after, strict=True)]
    (out / "moe.json").write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "moe_samples.txt").write_text(samples_text(result["samples"]), encoding="utf-8")
    write_figures(out, lambda: [("moe.png", figure(result))])
    p, gap = result["parameters"], result["difference"]
    loads = "; ".join(f"layer {i + 1}: " + " ".join(f"{x:.2f}" for x in row) for i, row in
                      enumerate(result["moe"]["loads"]))
    dense_loss, moe_loss = result["dense"]["final_val_loss"], result["moe"]["final_val_loss"]
    print(f"\nvalidation loss: dense {dense_loss:.3f}, mixture {moe_loss:.3f}"
          f" ({abs(gap):.3f} nats {'lower' if gap <= 0 else 'higher'}); a token uses {p['dense']:,} feed-forward "
          f"parameters in both (and the mixture's routers, {p['router']:,}); the mixture holds {p['total']:,}\n"
          f"each expert's share of the assignments: {loads} (even: {1 / s.experts:.2f})\n"
          f"greedy continuations, {SAMPLE_TOKENS} tokens, the dense run (before) and the mixture (after):\n"
          + "".join(f"  {item['prompt']!r}\n    dense:   {item['dense']!r}\n    mixture: {item['mixture']!r}\n"
                    for item in result["samples"])
          + f"wrote {out}/: moe.json, moe.png, moe_samples.txt; the mixture's run: {folder}/ "
          f"({command('nox', '-s', 'generate', '--', str(folder))} continues a prompt with it)")
    return 0
