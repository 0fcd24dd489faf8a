"""The one look of every chart the course draws: the docs' figures, ``nox -s train``'s PNGs, the class report.

``STYLE`` is a matplotlib rc dict (use it with ``matplotlib.rc_context(STYLE)``): a white background, legible in
the light and the dark theme; text drawn as paths and a fixed hash salt, so an SVG is the same bytes on every
build whatever fonts the reader has.
"""

from __future__ import annotations

from cycler import cycler

INK, MUTED, GRID, MASKED = "#1f2328", "#57606a", "#d0d7de", "#eeeeee"
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")
STYLE = {
    "font.family": "DejaVu Sans", "font.size": 10, "text.color": INK,
    "axes.titlesize": 11, "axes.titleweight": "bold", "axes.labelsize": 10, "axes.labelcolor": INK,
    "axes.edgecolor": INK, "axes.linewidth": 0.8, "axes.spines.top": False, "axes.spines.right": False,
    "axes.prop_cycle": cycler(color=PALETTE), "axes.axisbelow": True, "grid.color": GRID, "grid.linewidth": 0.8,
    "xtick.color": INK, "ytick.color": INK, "xtick.labelsize": 9, "ytick.labelsize": 9,
    "figure.titlesize": 13, "figure.titleweight": "bold", "figure.facecolor": "white",
    "legend.fontsize": 9, "legend.frameon": False, "lines.linewidth": 2.2,
    "savefig.facecolor": "white", "svg.fonttype": "path", "svg.hashsalt": "transformer-katas",
}
