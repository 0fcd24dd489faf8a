"""Small, dependency-free SVG charts for the docs: a heatmap, a line chart and a 2-D arrow plot.

Written by hand rather than with a plotting library so the docs build needs nothing beyond MkDocs,
draws the same bytes on every machine, and stays legible in both light and dark themes (each chart
has its own white background). Text uses the reader's sans-serif font.
"""

from __future__ import annotations

import math
import re
from html import escape

FONT = 'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif"'
INK = "#1f2328"
GRID = "#d0d7de"
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")
# Light to dark blue, for weights in [0, 1].
BLUES = ((0.0, (247, 251, 255)), (0.25, (198, 219, 239)), (0.5, (107, 174, 214)),
         (0.75, (33, 113, 181)), (1.0, (8, 48, 107)))


def _num(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _text(x: float, y: float, text: str, size: int = 14, anchor: str = "middle", weight: str = "normal",
          fill: str = INK, extra: str = "") -> str:
    return (f'<text x="{_num(x)}" y="{_num(y)}" font-size="{size}" text-anchor="{anchor}" '
            f'font-weight="{weight}" fill="{fill}" {extra}>{escape(text)}</text>')


def _document(width: int, height: int, title: str, body: list[str]) -> str:
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" {FONT}>',
        f"<title>{escape(title)}</title>",
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        *body,
        "</svg>",
        "",
    ])


def blue(value: float) -> str:
    """The colour of a weight in [0, 1] on a white-to-dark-blue scale, as ``#rrggbb``."""
    v = min(max(float(value), 0.0), 1.0)
    for (v0, c0), (v1, c1) in zip(BLUES, BLUES[1:], strict=False):
        if v <= v1:
            t = (v - v0) / (v1 - v0)
            return "#" + "".join(f"{round(a + (b - a) * t):02x}" for a, b in zip(c0, c1, strict=True))
    return "#08306b"


def heatmap(values, rows: list[str], cols: list[str], title: str, row_label: str = "query",
            col_label: str = "key", masked=None, digits: int = 3) -> str:
    """A grid of cells shaded by value (0 white … 1 dark blue), each cell labelled with its value.

    Args:
        values: shape (len(rows), len(cols)), entries in [0, 1] (attention weights).
        rows: one label per row (the attending positions).
        cols: one label per column (the positions attended to).
        title: the chart's heading, also its accessible name.
        row_label: axis name for the rows.
        col_label: axis name for the columns.
        masked: optional booleans like ``values``; True cells are drawn as "masked".
        digits: decimals shown in each cell.

    Returns:
        The SVG document as text.
    """
    n_rows, n_cols = len(rows), len(cols)
    cell = 86 if max(n_rows, n_cols) <= 4 else 52 if max(n_rows, n_cols) <= 8 else max(24, 416 // max(n_rows, n_cols))
    left, top = 90, 78
    width = max(left + n_cols * cell + 30, 10 * len(title) + 40)  # room for the whole title
    height = top + n_rows * cell + 56
    body = [_text(width / 2, 26, title, 16, weight="bold"),
            _text(left + n_cols * cell / 2, 56, f"{col_label} (attended to) →", 13),
            _text(22, top + n_rows * cell / 2, f"{row_label} (attending) →", 13,
                  extra=f'transform="rotate(-90 22 {_num(top + n_rows * cell / 2)})"')]
    for j, name in enumerate(cols):
        body.append(_text(left + (j + 0.5) * cell, top - 6, name, 13, weight="bold"))
    for i, name in enumerate(rows):
        body.append(_text(left - 10, top + (i + 0.5) * cell + 5, name, 13, anchor="end", weight="bold"))
        for j in range(n_cols):
            x, y = left + j * cell, top + i * cell
            hidden = masked is not None and bool(masked[i][j])
            v = float(values[i][j])
            fill = "#eeeeee" if hidden else blue(v)
            body.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{fill}" '
                        f'stroke="#ffffff" stroke-width="2"/>')
            if cell >= 44 and not (hidden and cell < 70):
                label = "masked" if hidden else f"{v:.{digits}f}"
                colour = "#8c959f" if hidden else ("#ffffff" if v > 0.55 else INK)
                body.append(_text(x + cell / 2, y + cell / 2 + 5, label, 13 if cell >= 70 else 10, fill=colour))
    legend_y = top + n_rows * cell + 22
    body.append(_text(left, legend_y + 12, "0", 11, anchor="end"))
    for k in range(20):
        body.append(f'<rect x="{left + 6 + k * 6}" y="{legend_y}" width="6" height="14" fill="{blue(k / 19)}"/>')
    body.append(_text(left + 132, legend_y + 12, "1   weight", 11, anchor="start"))
    return _document(width, height, title, body)


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick positions covering [low, high]."""
    if high <= low:
        high = low + 1.0
    raw = (high - low) / count
    step = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * step:
            step *= factor
            break
    start = math.floor(low / step) * step
    ticks = []
    t = start
    while True:  # up to the first tick at or above `high`, so the data never leaves the plot
        ticks.append(round(t, 10))
        if t >= high - step * 1e-9:
            break
        t += step
    return ticks


def _tick_label(t: float) -> str:
    return f"{t:g}"


def line_chart(series: dict[str, list[float]], title: str, x_label: str, y_label: str,
               x_start: int = 0, note: str = "") -> str:
    """Lines of y against their index (e.g. loss per epoch), one colour per series, with a legend.

    Args:
        series: name -> values; value k is plotted at x = x_start + k.
        title: heading and accessible name.
        x_label: horizontal axis name.
        y_label: vertical axis name.
        x_start: x of each series' first value.
        note: optional small text under the chart.

    Returns:
        The SVG document as text.
    """
    width, height = 680, 360
    left, right, top, bottom = 70, 24, 48, 62
    all_y = [float(v) for values in series.values() for v in values]
    n = max(len(values) for values in series.values())
    y_ticks = _ticks(min(0.0, min(all_y)), max(all_y))
    x_ticks = _ticks(x_start, x_start + max(n - 1, 1))
    y_lo, y_hi = y_ticks[0], y_ticks[-1]
    x_lo, x_hi = x_ticks[0], x_ticks[-1]
    plot_w, plot_h = width - left - right, height - top - bottom

    def px(x: float) -> float:
        return left + (x - x_lo) / (x_hi - x_lo) * plot_w

    def py(y: float) -> float:
        return top + (y_hi - y) / (y_hi - y_lo) * plot_h

    body = [_text(width / 2, 26, title, 16, weight="bold")]
    for t in y_ticks:
        body.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{_num(py(t))}" y2="{_num(py(t))}" '
                    f'stroke="{GRID}" stroke-width="1"/>')
        body.append(_text(left - 8, py(t) + 4, _tick_label(t), 11, anchor="end"))
    for t in x_ticks:
        body.append(f'<line x1="{_num(px(t))}" x2="{_num(px(t))}" y1="{top + plot_h}" y2="{top + plot_h + 5}" '
                    f'stroke="{INK}" stroke-width="1"/>')
        body.append(_text(px(t), top + plot_h + 19, _tick_label(t), 11))
    body.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" '
                f'stroke="{INK}" stroke-width="1"/>')
    body.append(_text(left + plot_w / 2, height - 22, x_label, 13))
    body.append(_text(18, top + plot_h / 2, y_label, 13,
                      extra=f'transform="rotate(-90 18 {_num(top + plot_h / 2)})"'))
    for k, values in enumerate(series.values()):
        points = " ".join(f"{_num(px(x_start + i))},{_num(py(float(v)))}" for i, v in enumerate(values))
        body.append(f'<polyline points="{points}" fill="none" stroke="{PALETTE[k % len(PALETTE)]}" '
                    f'stroke-width="2.5" stroke-linejoin="round"/>')
    # The legend goes in the corner of the plot that the lines cross least.
    box_w, box_h = 192, 20 * len(series) + 4
    corners = [(left + plot_w - box_w - 6, top + 4), (left + plot_w - box_w - 6, top + plot_h - box_h - 4),
               (left + 6, top + plot_h - box_h - 4), (left + 6, top + 4)]
    points = [(px(x_start + i), py(float(v))) for values in series.values() for i, v in enumerate(values)]
    bx, by = min(corners, key=lambda c: sum(c[0] <= x <= c[0] + box_w and c[1] <= y <= c[1] + box_h
                                           for x, y in points))
    body.append(f'<rect x="{_num(bx)}" y="{_num(by)}" width="{box_w}" height="{box_h}" fill="#ffffff" '
                f'fill-opacity="0.85"/>')
    for k, name in enumerate(series):
        ly = by + 12 + 20 * k
        body.append(f'<line x1="{_num(bx + 8)}" x2="{_num(bx + 32)}" y1="{_num(ly)}" y2="{_num(ly)}" '
                    f'stroke="{PALETTE[k % len(PALETTE)]}" stroke-width="3"/>')
        body.append(_text(bx + 38, ly + 4, name, 12, anchor="start"))
    if note:
        body.append(_text(width / 2, height - 4, note, 11, fill="#57606a"))
    return _document(width, height, title, body)


def arrows_2d(starts, ends, title: str, x_label: str, y_label: str, limit: float = 3.0,
              start_label: str = "input row", end_label: str = "after layer norm", note: str = "") -> str:
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
        note: optional small text under the chart.

    Returns:
        The SVG document as text.
    """
    size, left, top = 380, 64, 48
    width, height = left + size + 210, top + size + 60

    def px(x: float) -> float:
        return left + (x + limit) / (2 * limit) * size

    def py(y: float) -> float:
        return top + (limit - y) / (2 * limit) * size

    body = [_text(width / 2, 26, title, 16, weight="bold"),
            '<defs><marker id="tip" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="5" markerHeight="5" '
            'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#8c959f"/></marker></defs>']
    for t in _ticks(-limit, limit, 6):
        body.append(f'<line x1="{_num(px(t))}" x2="{_num(px(t))}" y1="{top}" y2="{top + size}" stroke="{GRID}"/>')
        body.append(f'<line x1="{left}" x2="{left + size}" y1="{_num(py(t))}" y2="{_num(py(t))}" stroke="{GRID}"/>')
        body.append(_text(px(t), top + size + 16, _tick_label(t), 11))
        body.append(_text(left - 6, py(t) + 4, _tick_label(t), 11, anchor="end"))
    body.append(f'<line x1="{_num(px(-limit))}" x2="{_num(px(limit))}" y1="{_num(py(limit))}" '
                f'y2="{_num(py(-limit))}" stroke="#8c959f" stroke-dasharray="4 4"/>')
    body.append(f'<rect x="{left}" y="{top}" width="{size}" height="{size}" fill="none" stroke="{INK}"/>')
    body.append(_text(left + size / 2, top + size + 36, x_label, 13))
    body.append(_text(20, top + size / 2, y_label, 13, extra=f'transform="rotate(-90 20 {_num(top + size / 2)})"'))
    for (x0, y0), (x1, y1) in zip(starts, ends, strict=True):
        body.append(f'<line x1="{_num(px(x0))}" y1="{_num(py(y0))}" x2="{_num(px(x1))}" y2="{_num(py(y1))}" '
                    f'stroke="#8c959f" stroke-width="1" opacity="0.6" marker-end="url(#tip)"/>')
    for x0, y0 in starts:
        body.append(f'<circle cx="{_num(px(x0))}" cy="{_num(py(y0))}" r="3.5" fill="{PALETTE[0]}"/>')
    for x1, y1 in ends:
        body.append(f'<circle cx="{_num(px(x1))}" cy="{_num(py(y1))}" r="7" fill="{PALETTE[1]}" '
                    f'fill-opacity="0.25" stroke="{PALETTE[1]}" stroke-width="2"/>')
    lx = left + size + 24
    body.append(f'<circle cx="{lx}" cy="{top + 20}" r="4" fill="{PALETTE[0]}"/>')
    body.append(_text(lx + 12, top + 24, start_label, 12, anchor="start"))
    body.append(f'<circle cx="{lx}" cy="{top + 44}" r="7" fill="{PALETTE[1]}" fill-opacity="0.25" '
                f'stroke="{PALETTE[1]}" stroke-width="2"/>')
    body.append(_text(lx + 12, top + 48, end_label, 12, anchor="start"))
    body.append(f'<line x1="{lx - 8}" x2="{lx + 8}" y1="{top + 68}" y2="{top + 68}" stroke="#8c959f" '
                f'stroke-dasharray="4 4"/>')
    body.append(_text(lx + 12, top + 72, "x₁ = x₂ (the mean)", 12, anchor="start"))
    if note:
        for k, line in enumerate(note.split("\n")):
            body.append(_text(lx - 8, top + 110 + 18 * k, line, 12, anchor="start", fill="#57606a"))
    return _document(width, height, title, body)


def side_by_side(charts_svg: list[str], title: str, gap: int = 16) -> str:
    """Several charts in one picture, left to right, under a common title.

    Args:
        charts_svg: SVG documents made by this module.
        title: the common heading, also the accessible name.
        gap: space between the charts, in pixels.

    Returns:
        The SVG document as text.
    """
    sizes = [tuple(int(v) for v in re.search(r'width="(\d+)" height="(\d+)"', svg).groups()) for svg in charts_svg]
    width = sum(w for w, _ in sizes) + gap * (len(sizes) - 1)
    height = max(h for _, h in sizes) + 36
    body = [_text(width / 2, 24, title, 17, weight="bold")]
    x = 0
    for svg, (w, _) in zip(charts_svg, sizes, strict=True):
        inner = svg.replace("<svg ", f'<svg x="{x}" y="36" ', 1)
        body.append(inner)
        x += w + gap
    return _document(width, height, title, body)
