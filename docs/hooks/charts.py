"""The docs' charts, drawn with matplotlib by ``scripts/figures.py``: attention heatmaps, loss curves, 2-D plots.

Every chart shares one style (``STYLE``), has a white background (legible in the light and the dark
theme), carries its title as the SVG ``<title>`` (its accessible name), and is rendered to SVG in
memory with text as paths, so it looks the same whatever fonts the reader has. The output is
deterministic: a fixed ``svg.hashsalt`` and no date in the metadata, so two builds write the same bytes.
"""

from __future__ import annotations

import io

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from kata.style import GRID, INK, MASKED, MUTED, PALETTE, STYLE  # the one style of every chart

matplotlib.use("Agg")  # never a window, whatever the environment asks for
WIDTH = 7.3  # inches: the widest chart, which the page shows at full size (540 pt, 720 px, is its text column)


def _svg(fig: Figure, title: str) -> str:
    """The figure as an SVG document titled ``title``, with no date, creator or other varying metadata."""
    out = io.BytesIO()
    fig.savefig(out, format="svg", bbox_inches="tight", pad_inches=0.12,
                metadata={"Title": title, "Date": None, "Creator": None, "Format": None, "Type": None})
    return out.getvalue().decode("utf-8")


def heatmaps(panels: dict[str, object], rows: list[str], cols: list[str], title: str, masked=None,
             digits: int = 3, row_label: str = "query (attending)", col_label: str = "key (attended to)") -> str:
    """Attention weights as grids shaded 0 (white) … 1 (dark blue), side by side, each cell labelled.

    Args:
        panels: panel heading (may be "") -> values of shape (len(rows), len(cols)), entries in [0, 1].
        rows: one label per row (the attending positions).
        cols: one label per column (the positions attended to).
        title: the chart's heading, also its accessible name.
        masked: optional booleans shaped like each panel's values; True cells are grey ("masked").
        digits: decimals shown in each cell.
        row_label: axis name for the rows.
        col_label: axis name for the columns.

    Returns:
        The SVG document as text.
    """
    n = max(len(rows), len(cols))
    # inches a cell: small grids large; side-by-side panels shrink to keep the chart within the text column
    cell = 1.1 if n <= 4 else min(0.5, (WIDTH - 1.6) / (len(panels) * len(cols)))
    hidden = np.zeros((len(rows), len(cols)), bool) if masked is None else np.asarray(masked, bool)
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(len(panels) * len(cols) * cell + 1.6, len(rows) * cell + 1.3), layout="constrained")
        axes = fig.subplots(1, len(panels), squeeze=False)[0]
        for ax, (heading, values) in zip(axes, panels.items(), strict=True):
            values = np.asarray(values, float)
            cmap = matplotlib.colormaps["Blues"].with_extremes(bad=MASKED)
            image = ax.pcolormesh(np.ma.masked_array(values, hidden), cmap=cmap, vmin=0.0, vmax=1.0,
                                  edgecolors="white", linewidth=2)
            for (i, j), v in np.ndenumerate(values):
                if not hidden[i, j]:
                    ax.text(j + 0.5, i + 0.5, f"{v:.{digits}f}", ha="center", va="center",
                            fontsize=10 if n <= 4 else 8, color="white" if v > 0.55 else INK)
                elif n <= 4:
                    ax.text(j + 0.5, i + 0.5, "masked", ha="center", va="center", color="#8c959f")
            ax.set_xticks(np.arange(len(cols)) + 0.5, cols, fontweight="bold")
            ax.set_yticks(np.arange(len(rows)) + 0.5, rows, fontweight="bold")
            ax.set_aspect("equal")
            ax.invert_yaxis()
            ax.tick_params(length=0, top=True, bottom=False, labeltop=True, labelbottom=False)
            ax.xaxis.set_label_position("top")
            ax.set(xlabel=col_label, ylabel=row_label, title=heading)
            ax.spines[:].set_visible(False)
        bar = fig.colorbar(image, ax=list(axes), shrink=0.75, aspect=18, pad=0.04)
        bar.set_label("weight")
        bar.outline.set_visible(False)
        fig.suptitle(title)
        return _svg(fig, title)


def heatmap(values, rows: list[str], cols: list[str], title: str, masked=None, digits: int = 3) -> str:
    """One grid of attention weights: ``heatmaps`` with a single, unnamed panel (same arguments)."""
    return heatmaps({"": values}, rows, cols, title, masked=masked, digits=digits)


def line_chart(series: dict[str, list[float]], title: str, x_label: str, y_label: str, x_start: int = 0,
               note: str = "", guide: tuple[float, str] | None = None) -> str:
    """Lines of y against their index (e.g. loss per epoch), one colour per series, with a legend.

    Args:
        series: name -> values; value k is plotted at x = x_start + k.
        title: heading and accessible name.
        x_label: horizontal axis name.
        y_label: vertical axis name.
        x_start: x of each series' first value.
        note: optional line under the heading.
        guide: optional (y, label): a dashed horizontal reference line, labelled at its right end.

    Returns:
        The SVG document as text.
    """
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(7.0, 3.9), layout="constrained")
        ax = fig.subplots()
        n = max(len(values) for values in series.values())
        for name, values in series.items():
            ax.plot(np.arange(len(values)) + x_start, values, label=name)
        if guide is not None:
            ax.axhline(guide[0], color="#8c959f", linewidth=1, linestyle=(0, (4, 3)), zorder=1)
            ax.annotate(guide[1], (1, guide[0]), xycoords=("axes fraction", "data"), xytext=(-2, 3),
                        textcoords="offset points", ha="right", va="bottom", color=MUTED, fontsize=9)
        last = x_start + max(n - 1, 1)  # the x axis ends on the first round tick at or after the last value
        ax.set_xlim(x_start, min(t for t in ax.xaxis.get_major_locator().tick_values(x_start, last) if t >= last))
        ax.set_ylim(bottom=min(0.0, *(min(v) for v in series.values())))
        ax.grid(axis="y")
        ax.set(xlabel=x_label, ylabel=y_label)
        if note:
            ax.set_title(note, fontsize=9, fontweight="normal", color=MUTED)
        ax.legend(loc="best")
        fig.suptitle(title)
        return _svg(fig, title)


def arrows_2d(starts, ends, title: str, x_label: str, y_label: str, limit: float = 3.0,
              start_label: str = "input row", end_label: str = "after layer norm",
              boundary_label: str = "x₁ = x₂: no spread", note: str = "") -> str:
    """Points in the plane with an arrow from each start to its end (where a map sends each point).

    Args:
        starts: shape (n, 2), the points before.
        ends: shape (n, 2), the points after.
        title: heading and accessible name.
        x_label: name of the first coordinate.
        y_label: name of the second coordinate.
        limit: both axes run from -limit to +limit.
        start_label: legend text for the starts.
        end_label: legend text for the ends.
        boundary_label: legend text for the dashed diagonal x₁ = x₂.
        note: optional text beside the chart, under the legend (lines separated by newlines).

    Returns:
        The SVG document as text.
    """
    grey = "#8c959f"
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(7.1, 4.5), layout="constrained")
        ax, side = fig.subplots(1, 2, width_ratios=[1, 0.62])
        ax.plot([-limit, limit], [-limit, limit], color=grey, linewidth=1, linestyle=(0, (4, 3)))
        for start, end in zip(np.asarray(starts, float), np.asarray(ends, float), strict=True):
            ax.annotate("", xy=end, xytext=start, arrowprops={
                "arrowstyle": "-|>", "color": grey, "alpha": 0.7, "linewidth": 0.8, "shrinkA": 3, "shrinkB": 7})
        start_style = {"color": PALETTE[0], "marker": "o", "markersize": 5, "linestyle": "none"}
        end_style = {"color": PALETTE[1], "marker": "o", "markersize": 11, "linestyle": "none",
                     "markerfacecolor": (0.84, 0.15, 0.16, 0.25), "markeredgewidth": 2}
        ax.plot(*np.asarray(starts, float).T, **start_style)
        ax.plot(*np.asarray(ends, float).T, **end_style)
        ax.set(xlim=(-limit, limit), ylim=(-limit, limit), xlabel=x_label, ylabel=y_label, aspect="equal")
        ax.grid(True)
        side.axis("off")
        side.legend([Line2D([], [], **start_style), Line2D([], [], **end_style),
                     Line2D([], [], color=grey, linewidth=1, linestyle=(0, (4, 3)))],
                    [start_label, end_label, boundary_label], loc="upper left", borderaxespad=0)
        if note:
            side.text(0.0, 0.76, note, transform=side.transAxes, va="top", color=MUTED, linespacing=1.5)
        fig.suptitle(title)
        return _svg(fig, title)


def circle_points(series: dict[str, object], title: str, x_label: str, y_label: str, note: str = "") -> str:
    """Points in the plane around the unit circle, each labelled with its index (where a rotation sends a pair).

    Args:
        series: legend label -> points of shape (n, 2); point k of the first series is labelled "k" (the others
            are drawn under it, unlabelled).
        title: heading and accessible name.
        x_label: name of the first coordinate.
        y_label: name of the second coordinate.
        note: optional text beside the chart, under the legend (lines separated by newlines).

    Returns:
        The SVG document as text.
    """
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(7.1, 4.5), layout="constrained")
        ax, side = fig.subplots(1, 2, width_ratios=[1, 0.62])
        t = np.linspace(0.0, 2 * np.pi, 361)
        ax.plot(np.cos(t), np.sin(t), color=GRID, linewidth=1.2)
        handles = []
        for number, (colour, (label, points)) in enumerate(zip(PALETTE, series.items(), strict=False)):
            points = np.asarray(points, float)
            style = {"color": colour, "marker": "o", "markersize": 7, "linestyle": "none"}
            ax.plot(*points.T, **style, zorder=3 - number / 10)
            for k, (x, y) in enumerate(points):
                ax.annotate("", xy=(x, y), xytext=(0, 0), arrowprops={
                    "arrowstyle": "-|>", "color": colour, "alpha": 0.45, "linewidth": 0.8, "shrinkA": 0, "shrinkB": 4})
                if number == 0:
                    ax.annotate(str(k), (x, y), xytext=(1.18 * x, 1.18 * y), ha="center", va="center",
                                color=colour, fontsize=9)
            handles.append((Line2D([], [], **style), label))
        ax.set(xlim=(-1.4, 1.4), ylim=(-1.4, 1.4), xlabel=x_label, ylabel=y_label, aspect="equal")
        ax.grid(True)
        side.axis("off")
        side.legend(*zip(*handles, strict=True), loc="upper left", borderaxespad=0)
        if note:
            side.text(0.0, 0.76, note, transform=side.transAxes, va="top", color=MUTED, linespacing=1.5)
        fig.suptitle(title)
        return _svg(fig, title)
