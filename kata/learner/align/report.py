"""What ``nox -s align`` shows and writes in this process.

The lines during a stage, ``<stage>.json``, the figure (``<stage>.png``, in the course's style, ``kata/style.py``)
and ``<stage>_samples.txt``.

Part of ``nox -s align`` (``kata/learner/align/__init__.py`` tells the whole story).
"""

from __future__ import annotations

import json
from pathlib import Path

from ...style import INK, MUTED, PALETTE
from ..train.figures import write_figures


def shown_ready(stage: str, event: dict) -> str:
    """The line that says what is trained, and the starting numbers."""
    share = event["trained"] / event["parameters"]
    head = (f"  {event['pairs']} training, {event['held_out_pairs']} held-out (taught sections, a phrasing never "
            f"trained on) and {event['unseen_pairs']} unseen-section questions; rank-r adapters on "
            f"{len(event['targets'])} weights: {event['trained']:,} of {event['parameters']:,} parameters trained "
            f"({share:.1%})")
    return head + "\n" + shown_eval(stage, event)


def shown_eval(stage: str, event: dict) -> str:
    """One evaluation as a line."""
    if stage == "lora":
        return (f"  step {event['step']:>4}  held-out answer loss {event['held_out']:.3f}  unseen sections "
                f"{event['unseen']:.3f}  training answers {event['train']:.3f}")
    return (f"  step {event['step']:>4}  held-out preference accuracy {event['accuracy']:.0%} (shuffled "
            f"{event['accuracy_shuffled']:.0%}, another answer {event['accuracy_other']:.0%}; unseen sections "
            f"{event['accuracy_unseen']:.0%}; a tie counts as wrong)  rewards chosen {event['chosen_reward']:+.3f} "
            f"rejected {event['rejected_reward']:+.3f}  margin {event['margin']:+.3f}  DPO loss {event['loss']:.3f}")


def write(stage: str, run: Path, out: Path, s: dict, result: dict, seconds: float) -> str:
    """Write the stage's files into ``out``; return what is said at the end."""
    evals, ready = result["evals"], result["ready"]
    info = {"stage": stage, "run": str(run), "settings": s, "trained_parameters": ready["trained"],
            "parameters": ready["parameters"], "trained_share": ready["trained"] / ready["parameters"],
            "targets": ready["targets"], "pairs": ready["pairs"], "held_out_pairs": ready["held_out_pairs"],
            "unseen_pairs": ready["unseen_pairs"],
            "evals": evals, "train_seconds": round(result["train_seconds"], 3),
            "train_cpu_seconds": round(result["train_cpu_seconds"], 3), "seconds": round(seconds, 3),
            "samples": result["samples"]}
    first, last = evals[0], evals[-1]
    if stage == "lora":
        info.update({"held_out_before": first["held_out"], "held_out_after": last["held_out"],
                     "held_out_fall": first["held_out"] - last["held_out"], "unseen_before": first["unseen"],
                     "unseen_after": last["unseen"], "merge_gap": result["merge_gap"]})
        said = (f"held-out answer loss {first['held_out']:.3f} -> {last['held_out']:.3f} nats per token (fell "
                f"{first['held_out'] - last['held_out']:.3f}); unseen sections {first['unseen']:.3f} -> "
                f"{last['unseen']:.3f}; training answers {first['train']:.3f} -> "
                f"{last['train']:.3f}; merged model against the adapted one: largest logit difference "
                f"{result['merge_gap']:.1e}")
        made = "sft.npz (the merged model), adapter.npz"
    else:
        info.update({"accuracy_before": first["accuracy"], "accuracy_after": last["accuracy"],
                     "margin_before": first["margin"], "margin_after": last["margin"]})
        said = (f"held-out preference accuracy {first['accuracy']:.0%} -> {last['accuracy']:.0%}; implicit rewards "
                f"chosen {first['chosen_reward']:+.3f} -> {last['chosen_reward']:+.3f}, rejected "
                f"{first['rejected_reward']:+.3f} -> {last['rejected_reward']:+.3f}; reward margin "
                f"{first['margin']:+.3f} -> {last['margin']:+.3f}")
        made = "dpo.npz"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stage}.json").write_text(json.dumps(info, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / f"{stage}_samples.txt").write_text(samples_text(stage, result["samples"]), encoding="utf-8")
    write_figures(out, lambda: [(f"{stage}.png", figure(stage, evals))])
    return (f"\ndone: {result['train_seconds']:.1f} s of training steps ({result['train_cpu_seconds']:.1f} s of CPU); "
            f"{said}\n"
            f"wrote {out}/: {stage}.json, {stage}.png, {stage}_samples.txt, {made}")


def samples_text(stage: str, samples: list[dict]) -> str:
    """The held-out questions (for lora, and unseen sections'): the true answer, greedy answers before and after."""
    lines = []
    for item in samples:
        said = "  (a section never trained on)" if item.get("set") == "unseen" else ""
        lines += [item["question"] + said, f"  true:   {(item.get('answer') or item['chosen']).strip()}"]
        if stage == "dpo":
            lines.append(f"  worse:  {item['rejected'].strip()}")
        lines += [f"  before: {item['before']}", f"  after:  {item['after']}", ""]
    return "\n".join(lines)


def figure(stage: str, evals: list[dict]):
    """lora: the held-out and the training answers' loss by step; dpo: accuracy and the reward margin by step."""
    from matplotlib.figure import Figure

    steps = [e["step"] for e in evals]
    fig = Figure(figsize=(7.0, 3.9), layout="constrained")
    if stage == "lora":
        ax = fig.subplots()
        ax.plot(steps, [e["held_out"] for e in evals], color=PALETTE[1], marker="o", markersize=3,
                label="held-out questions (a new phrasing)")
        ax.plot(steps, [e["unseen"] for e in evals], color=PALETTE[2], marker="o", markersize=3, linestyle="--",
                label="unseen sections")
        ax.plot(steps, [e["train"] for e in evals], color=PALETTE[0], marker="o", markersize=3,
                label="training answers")
        goal = evals[0]["held_out"] - 1.0
        ax.axhline(goal, color=MUTED, linewidth=1, linestyle=(0, (1, 2)))
        ax.annotate("one nat below the held-out start", (1, goal), xycoords=("axes fraction", "data"),
                    xytext=(-2, 3), textcoords="offset points", ha="right", va="bottom", color=MUTED, fontsize=9)
        ax.set(xlabel="step", ylabel="answer loss (nats per response token)",
               title="LoRA fine-tuning: the answers' loss, prompt masked")
        ax.legend(loc="upper right")  # the goal line and its label run along the bottom
        ax.grid(axis="y")
        return fig
    left, right = fig.subplots(1, 2)
    left.plot(steps, [e["accuracy"] for e in evals], color=INK, marker="o", markersize=3, label="all")
    left.plot(steps, [e["accuracy_shuffled"] for e in evals], color=PALETTE[0], linestyle="--", label="shuffled")
    left.plot(steps, [e["accuracy_other"] for e in evals], color=PALETTE[2], linestyle="--", label="another answer")
    left.plot(steps, [e["accuracy_unseen"] for e in evals], color=MUTED, linestyle=":", label="unseen sections")
    left.axhline(0.8, color=MUTED, linewidth=1, linestyle=(0, (1, 2)))
    left.annotate("goal 80 %", (0, 0.8), xycoords=("axes fraction", "data"), xytext=(3, 3),
                  textcoords="offset points", ha="left", va="bottom", color=MUTED, fontsize=9)
    left.set(xlabel="step", ylabel="held-out pairs ranked right", ylim=(-0.02, 1.02), title="Preference accuracy")
    left.legend(loc="lower right")
    right.plot(steps, [e["chosen_reward"] for e in evals], color=PALETTE[0], label="chosen")
    right.plot(steps, [e["rejected_reward"] for e in evals], color=PALETTE[1], label="rejected")
    right.plot(steps, [e["margin"] for e in evals], color=INK, marker="o", markersize=3, label="margin")
    right.axhline(0.0, color=MUTED, linewidth=0.8)
    right.set(xlabel="step", ylabel="implicit reward β (log π − log π_ref)", title="Rewards on held-out pairs")
    right.legend(loc="lower left")
    for ax in (left, right):
        ax.grid(axis="y")
    return fig
