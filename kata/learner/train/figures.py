"""The run's figures, for either model, and the one writer of them all (``write_figures``).

Chapter 10's ``loss.png`` and ``attention.png`` (the docs draw the same ones as SVG); the GPT's ``loss.png``,
``schedule.png`` and ``attention.png`` (one map per head).

Part of ``nox -s train`` (``kata/learner/train/__init__.py`` tells the whole story).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .model import smooth


def shown_char(c: str) -> str:
    """A character as an axis label: a space is ␣, a newline ↵, a tab →."""
    return {" ": "␣", "\n": "↵", "\t": "→"}.get(c, c)


def loss_figure(losses, vocab_size: int, title: str):
    """Loss by step (thin), its running mean (thick) and the loss of a uniform guess, ln(vocab)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 3.9), layout="constrained")
    ax = fig.subplots()
    steps = np.arange(1, len(losses) + 1)
    window = min(100, max(10, len(losses) // 10))
    ax.plot(steps, losses, color="#1f77b4", alpha=0.3, linewidth=0.7, label="one window's loss")
    ax.plot(steps, smooth(losses, window), color="#1f77b4", linewidth=2.2, label=f"mean of the last {window} steps")
    uniform = math.log(vocab_size)
    ax.axhline(uniform, color="#8c959f", linewidth=1, linestyle=(0, (4, 3)))
    ax.annotate(f"uniform guess: ln {vocab_size} ≈ {uniform:.2f}", (1, uniform), xycoords=("axes fraction", "data"),
                xytext=(-2, 3), textcoords="offset points", ha="right", va="bottom", color="#57606a", fontsize=9)
    ax.set(xlim=(0, len(losses)), ylim=(0, max(uniform, float(np.max(losses))) * 1.05), xlabel="step",
           ylabel="cross-entropy (nats per character)", title=title)
    ax.grid(axis="y", color="#d0d7de", linewidth=0.8)
    ax.legend(loc="lower left")
    return fig


def attention_figure(text: str, maps: list, title: str):
    """One heat map per layer: row i is how character i spreads its attention over characters 0 … i."""
    import matplotlib
    from matplotlib.figure import Figure

    labels = [shown_char(c) for c in text]
    n, layers = len(text), max(1, len(maps))
    cols = min(layers, 2)
    rows = math.ceil(layers / cols)
    fig = Figure(figsize=(3.3 * cols + 0.6, 3.5 * rows + 0.5), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    cmap = matplotlib.colormaps["Blues"].with_extremes(bad="#eeeeee")
    image = None
    for number, ax in enumerate(axes):
        if number >= len(maps):
            ax.axis("off")
            if not maps:
                ax.text(0.5, 0.5, "no attention layers (--layers 0)", ha="center", va="center")
            continue
        weights = np.ma.masked_array(maps[number], ~np.tril(np.ones((n, n), dtype=bool)))
        image = ax.imshow(weights, cmap=cmap, vmin=0.0, vmax=1.0, interpolation="nearest")
        ax.set_xticks(range(n), labels, fontsize=7)
        ax.set_yticks(range(n), labels, fontsize=7)
        ax.tick_params(length=0, top=True, bottom=False, labeltop=True, labelbottom=False)
        ax.set_title(f"layer {number + 1}", fontsize=10)
        ax.set_xlabel("attended to (key)", fontsize=8)
        ax.set_ylabel("attending (query)", fontsize=8)
        ax.xaxis.set_label_position("top")
        ax.spines[:].set_visible(False)
    if image is not None:
        bar = fig.colorbar(image, ax=list(axes), shrink=0.6, aspect=20)
        bar.set_label("attention weight")
        bar.outline.set_visible(False)
    fig.suptitle(title, fontsize=11, fontweight="bold")
    return fig


def save_png(fig, path: Path) -> None:
    """Write a figure as a PNG."""
    import matplotlib

    from ...style import STYLE

    with matplotlib.rc_context(STYLE):
        fig.savefig(path, format="png", dpi=120, metadata={"Software": None})


def write_figures(out: Path, draw) -> None:
    """Write every (file name, figure) that ``draw()`` returns into ``out`` as a PNG, drawn in the course's style."""
    import matplotlib

    from ...style import STYLE

    with matplotlib.rc_context(STYLE):
        for name, fig in draw():
            save_png(fig, out / name)


def gpt_loss_figure(evals: list[dict], unigram: float, title: str):
    """A GPT's training and validation loss at every evaluation, the unigram entropy and one nat below it."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 3.9), layout="constrained")
    ax = fig.subplots()
    steps = [e["step"] for e in evals]
    ax.plot(steps, [e["train_loss"] for e in evals], color="#1f77b4", marker="o", markersize=3, label="training")
    ax.plot(steps, [e["val_loss"] for e in evals], color="#d62728", marker="o", markersize=3, label="validation")
    for level, text, style in ((unigram, f"unigram entropy ≈ {unigram:.2f}", (0, (4, 3))),
                               (unigram - 1, "one nat below it", (0, (1, 2)))):
        ax.axhline(level, color="#8c959f", linewidth=1, linestyle=style)
        ax.annotate(text, (1, level), xycoords=("axes fraction", "data"), xytext=(-2, 3), textcoords="offset points",
                    ha="right", va="bottom", color="#57606a", fontsize=9)
    top = max(unigram, *(e["train_loss"] for e in evals), *(e["val_loss"] for e in evals))
    ax.set(xlim=(0, max(steps)), ylim=(0, top * 1.05), xlabel="step",
           ylabel="cross-entropy (nats per token)", title=title)
    ax.grid(axis="y", color="#d0d7de", linewidth=0.8)
    ax.legend(loc="lower left")
    return fig


def schedule_figure(rates: list[float], warmup: int):
    """The learning rate of every step: the linear warm-up, then the cosine down to the floor."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 2.8), layout="constrained")
    ax = fig.subplots()
    ax.plot(np.arange(len(rates)), rates, color="#2ca02c")
    if 0 < warmup < len(rates):
        ax.axvline(warmup, color="#8c959f", linewidth=1, linestyle=(0, (4, 3)))
        ax.annotate(f"warm-up ends (step {warmup})", (warmup, 0), xytext=(4, 4), textcoords="offset points",
                    va="bottom", color="#57606a", fontsize=9)
    ax.set(xlim=(0, len(rates)), ylim=(0, max(rates) * 1.1), xlabel="step", ylabel="learning rate",
           title="The schedule: lr_at for every step")
    ax.grid(axis="y", color="#d0d7de", linewidth=0.8)
    return fig


def head_attention_figure(tokens: list[str], maps: list, title: str):
    """One heat map per head of every layer (a row per layer): row i is how token i spreads its attention."""
    import matplotlib
    from matplotlib.figure import Figure

    labels = [shown_char(t) if len(t) == 1 else t.replace(" ", "␣").replace("\n", "↵") for t in tokens]
    n = len(tokens)
    layers, heads = len(maps), len(maps[0]) if maps else 1
    fig = Figure(figsize=(2.6 * heads + 0.8, 2.8 * layers + 0.7), layout="constrained")
    axes = fig.subplots(layers, heads, squeeze=False)
    cmap = matplotlib.colormaps["Blues"].with_extremes(bad="#eeeeee")
    image = None
    for layer, row in enumerate(axes):
        for head, ax in enumerate(row):
            weights = np.ma.masked_array(np.asarray(maps[layer][head]), ~np.tril(np.ones((n, n), dtype=bool)))
            image = ax.imshow(weights, cmap=cmap, vmin=0.0, vmax=1.0, interpolation="nearest")
            ax.set_xticks(range(n), labels, fontsize=6, rotation=90)
            ax.set_yticks(range(n), labels, fontsize=6)
            ax.tick_params(length=0, top=True, bottom=False, labeltop=True, labelbottom=False)
            ax.set_title(f"layer {layer + 1}, head {head + 1}", fontsize=9)
            ax.spines[:].set_visible(False)
    if image is not None:
        bar = fig.colorbar(image, ax=list(axes.ravel()), shrink=0.6, aspect=20)
        bar.set_label("attention weight")
        bar.outline.set_visible(False)
    fig.suptitle(title, fontsize=11, fontweight="bold")
    return fig


def loads_figure(evals: list[dict], experts: int, top_k: int):
    """A mixture of experts' loads: each expert's share of the assignments at every evaluation, one panel a layer.

    The shares are on the validation windows (``loads`` of each evaluation); the dashed line, 1 / N, is an even
    router's. An expert's line near 0 is one the router has stopped using.
    """
    from matplotlib.figure import Figure

    from ...style import PALETTE

    steps = [e["step"] for e in evals]
    loads = np.array([e["loads"] for e in evals])  # (evaluations, layers, experts)
    layers = loads.shape[1]
    fig = Figure(figsize=(3.6 * layers + 0.6, 3.4), layout="constrained")
    axes = fig.subplots(1, layers, squeeze=False, sharey=True).ravel()
    for layer, ax in enumerate(axes):
        for e in range(experts):
            ax.plot(steps, loads[:, layer, e], color=PALETTE[e % len(PALETTE)], marker="o", markersize=3,
                    linestyle="-" if e < len(PALETTE) else "--", label=f"expert {e + 1}")
        ax.axhline(1 / experts, color="#8c959f", linewidth=1, linestyle=(0, (4, 3)))
        ax.annotate(f"even: 1/{experts}", (1, 1 / experts), xycoords=("axes fraction", "data"), xytext=(-2, 3),
                    textcoords="offset points", ha="right", va="bottom", color="#57606a", fontsize=9)
        ax.set(xlim=(0, max(steps)), ylim=(0, max(0.6, float(loads.max()) * 1.1)), xlabel="step",
               title=f"layer {layer + 1}")
        ax.grid(axis="y", color="#d0d7de", linewidth=0.8)
    axes[0].set_ylabel("share of the assignments")
    axes[-1].legend(loc="upper right", fontsize=8)
    fig.suptitle(f"Each expert's load: {experts} experts, top-{top_k}, on the validation windows", fontsize=11,
                 fontweight="bold")
    return fig
