"""Inline SVG bar charts for the HTML report (no scripts, no external resources)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from html import escape

from openjudge.jobs._moments import half_span
from openjudge.jobs._summary import format_number

__all__ = ["bin_counts", "histogram_svg", "nice_top", "svg_open"]

_LEFT = 44
_RIGHT = 12
_TOP = 12
_BOTTOM = 40


def svg_open(width: int, height: int, label: str) -> str:
    """The opening ``<svg>`` tag of a chart: drawn at most ``width`` CSS pixels wide, labelled for screen readers."""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" style="max-width: {width}px" '
        f'role="img" aria-label="{escape(label)}">'
    )


def bin_counts(values: Iterable[float], low: float, high: float, bins: int) -> list[int]:
    """Count finite ``values`` into ``bins`` equal bins over [low, high]; outliers go to the end bins.

    Works on halves, so the span of any finite ``low`` and ``high`` (``-1.7e308`` to
    ``1.7e308``) is finite; non-finite values are not counted.
    """
    counts = [0] * bins
    half = half_span(low, high)
    for value in values:
        if not math.isfinite(value):
            continue
        index = int((value / 2 - low / 2) / half * bins) if half > 0 else 0
        counts[min(bins - 1, max(0, index))] += 1
    return counts


_STEPS = (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0)


def nice_top(peak: int) -> int:
    """The top of a y axis fitted to ``peak``: the smallest whole 1, 1.2, 1.5, 2, 2.5, 3, 4,
    5, 6 or 8 x 10^k at or above it (at least 1), so the tallest bar fills three quarters
    or more of the chart (267 -> 300, not 500)."""
    scale = 1
    while True:
        for factor in _STEPS:
            top = scale * factor
            if top == int(top) and top >= peak:
                return int(top)
        scale *= 10


def histogram_svg(
    counts: Sequence[int],
    low: float,
    high: float,
    *,
    x_label: str,
    overflow: bool = False,
    width: int = 360,
    height: int = 180,
) -> str:
    """An SVG histogram of pre-binned ``counts`` over [low, high].

    Args:
        counts: Count per bin, left to right.
        low: Left edge of the first bin.
        high: Right edge of the last bin.
        x_label: Caption under the x axis.
        overflow: The last bin also holds everything above ``high``: it is drawn in another
            colour, its tooltip says "≥", and the axis ends in "high+".
        width: Width in SVG units; the chart is drawn at most this many CSS pixels wide.
        height: Height in SVG units.
    """
    plot_w = width - _LEFT - _RIGHT
    plot_h = height - _TOP - _BOTTOM
    top = nice_top(max(counts, default=0))
    bin_w = plot_w / max(1, len(counts))
    step = half_span(low, high) / max(1, len(counts)) * 2  # finite for any finite ends and 2+ bins
    parts = [svg_open(width, height, x_label)]
    for fraction in (0.0, 0.5, 1.0):
        y = _TOP + plot_h * (1 - fraction)
        tick = top * fraction
        tick_text = format_number(tick) if tick == int(tick) else f"{tick:g}"
        parts.append(f'<line class="gridline" x1="{_LEFT}" x2="{width - _RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>')
        parts.append(
            f'<text class="tick" x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{tick_text}</text>'
        )

    def edge(i: int) -> float:
        value = low + i * step
        return value if math.isfinite(value) else (low / 2 + i * (step / 2)) * 2  # huge ends

    for i, count in enumerate(counts):
        x = _LEFT + i * bin_w
        last = overflow and i == len(counts) - 1
        label = (
            f"≥ {format_number(edge(i))}: {count}"
            if last
            else f"{format_number(edge(i))} – {format_number(edge(i + 1))}: {count}"
        )
        if count:
            h = max(1.0, plot_h * count / top)
            parts.append(
                f'<rect class="{"bar overflow" if last else "bar"}" x="{x + 0.5:.1f}" y="{_TOP + plot_h - h:.1f}" '
                f'width="{max(1.0, bin_w - 1):.1f}" height="{h:.1f}"><title>{escape(label)}</title></rect>'
            )
    base = _TOP + plot_h
    parts.append(f'<line class="axis" x1="{_LEFT}" x2="{width - _RIGHT}" y1="{base}" y2="{base}"/>')
    ends = (
        (_LEFT, "start", format_number(low)),
        (_LEFT + plot_w / 2, "middle", format_number(low / 2 + high / 2)),
        (width - _RIGHT, "end", format_number(high) + ("+" if overflow else "")),
    )
    for x, anchor, text in ends:
        parts.append(
            f'<text class="tick" x="{x:.1f}" y="{base + 16}" text-anchor="{anchor}">{escape(text)}</text>'
        )
    parts.append(
        f'<text class="caption" x="{_LEFT + plot_w / 2:.1f}" y="{height - 4}" '
        f'text-anchor="middle">{escape(x_label)}</text>'
    )
    parts.append("</svg>")
    return "".join(parts)
