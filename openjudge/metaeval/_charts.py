"""Inline SVG charts for the meta-eval report: intervals as bars, and a scatter plot.

Same conventions as :mod:`openjudge.jobs._svg`: no scripts, every text escaped, sizes in
SVG units with ``max-width`` in CSS pixels, classes styled by the page.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from openjudge.jobs._summary import format_number
from openjudge.jobs._svg import svg_open

__all__ = ["IntervalRow", "interval_chart_svg", "scatter_svg"]

_LABEL_W = 190
_RIGHT = 24
_TOP = 10
_ROW_H = 24
_AXIS_H = 34


@dataclass(frozen=True, slots=True)
class IntervalRow:
    """One bar: a label, a value and its interval (any may be missing)."""

    label: str
    value: float | None
    low: float | None
    high: float | None


def _x(value: float, low: float, high: float, left: float, width: float) -> float:
    return left + (min(high, max(low, value)) - low) / (high - low) * width


def interval_chart_svg(
    rows: Sequence[IntervalRow],
    *,
    low: float,
    high: float,
    x_label: str,
    reference: float | None = None,
    width: int = 640,
) -> str:
    """Horizontal interval bars: a line from ``low`` to ``high`` of each row and a dot at its value.

    Args:
        rows: One row per bar, top to bottom.
        low: Left end of the axis.
        high: Right end of the axis.
        x_label: Caption under the axis.
        reference: Draw a dashed line here (e.g. 0.5, or 0 for differences).
        width: Width in SVG units.
    """
    plot_w = width - _LABEL_W - _RIGHT
    height = _TOP + _ROW_H * max(1, len(rows)) + _AXIS_H
    base = _TOP + _ROW_H * max(1, len(rows))
    parts = [svg_open(width, height, x_label)]
    for fraction in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = _LABEL_W + plot_w * fraction
        parts.append(f'<line class="gridline" x1="{x:.1f}" x2="{x:.1f}" y1="{_TOP}" y2="{base}"/>')
        tick = low + (high - low) * fraction
        parts.append(
            f'<text class="tick" x="{x:.1f}" y="{base + 14}" text-anchor="middle">{escape(format_number(tick))}</text>'
        )
    if reference is not None and low <= reference <= high:
        x = _x(reference, low, high, _LABEL_W, plot_w)
        parts.append(f'<line class="reference" x1="{x:.1f}" x2="{x:.1f}" y1="{_TOP}" y2="{base}"/>')
    for i, row in enumerate(rows):
        y = _TOP + _ROW_H * i + _ROW_H / 2
        parts.append(
            f'<text class="label" x="{_LABEL_W - 8}" y="{y + 4:.1f}" text-anchor="end">{escape(row.label)}</text>'
        )
        if row.value is None:
            parts.append(f'<text class="tick" x="{_LABEL_W + 4}" y="{y + 4:.1f}">undefined</text>')
            continue
        bounds = (
            f"[{format_number(row.low)}, {format_number(row.high)}]"
            if row.low is not None and row.high is not None
            else "no interval"
        )
        title = f"<title>{escape(f'{row.label}: {format_number(row.value)} {bounds}')}</title>"
        if row.low is not None and row.high is not None:
            x1, x2 = _x(row.low, low, high, _LABEL_W, plot_w), _x(row.high, low, high, _LABEL_W, plot_w)
            parts.append(
                f'<rect class="interval" x="{x1:.1f}" y="{y - 5:.1f}" width="{max(1.0, x2 - x1):.1f}" height="10">'
                f"{title}</rect>"
            )
        cx = _x(row.value, low, high, _LABEL_W, plot_w)
        parts.append(f'<circle class="value" cx="{cx:.1f}" cy="{y:.1f}" r="4">{title}</circle>')
    parts.append(
        f'<text class="caption" x="{_LABEL_W + plot_w / 2:.1f}" y="{height - 4}" text-anchor="middle">'
        f"{escape(x_label)}</text></svg>"
    )
    return "".join(parts)


def _span(values: Sequence[float]) -> tuple[float, float, float, float]:
    """The data's range, and the plotted range around it (a little wider, never empty)."""
    low, high = min(values), max(values)
    if low == high:
        return low, high, low - 0.5, high + 0.5
    pad = (high - low) * 0.04
    return low, high, low - pad, high + pad


def scatter_svg(
    points: Sequence[tuple[float, float]],
    *,
    x_label: str,
    y_label: str,
    width: int = 360,
    height: int = 220,
) -> str:
    """A scatter plot of ``(x, y)`` points (axes from the data's range)."""
    left, bottom = 44, 40
    plot_w, plot_h = width - left - 12, height - _TOP - bottom
    parts = [svg_open(width, height, f"{y_label} against {x_label}")]
    finite = [(x, y) for x, y in points if math.isfinite(x) and math.isfinite(y)]
    if finite:
        x_min, x_max, x_low, x_high = _span([x for x, _ in finite])
        y_min, y_max, y_low, y_high = _span([y for _, y in finite])
        for value, anchor in ((x_min, "start"), ((x_min + x_max) / 2, "middle"), (x_max, "end")):
            x = left + (value - x_low) / (x_high - x_low) * plot_w
            parts.append(
                f'<text class="tick" x="{x:.1f}" y="{_TOP + plot_h + 16}" text-anchor="{anchor}">'
                f"{escape(format_number(value))}</text>"
            )
        for value in (y_min, (y_min + y_max) / 2, y_max):
            y = _TOP + plot_h * (1 - (value - y_low) / (y_high - y_low))
            parts.append(
                f'<line class="gridline" x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}"/>'
            )
            parts.append(
                f'<text class="tick" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">'
                f"{escape(format_number(value))}</text>"
            )
        for x, y in finite:
            cx = left + (x - x_low) / (x_high - x_low) * plot_w
            cy = _TOP + plot_h * (1 - (y - y_low) / (y_high - y_low))
            parts.append(f'<circle class="point" cx="{cx:.1f}" cy="{cy:.1f}" r="2.5"/>')
    parts.append(
        f'<line class="axis" x1="{left}" x2="{left + plot_w}" y1="{_TOP + plot_h}" y2="{_TOP + plot_h}"/>'
        f'<text class="caption" x="{left + plot_w / 2:.1f}" y="{height - 4}" text-anchor="middle">'
        f"{escape(x_label)}</text>"
        f'<text class="caption" transform="translate(11 {_TOP + plot_h / 2:.1f}) rotate(-90)" '
        f'text-anchor="middle">{escape(y_label)}</text></svg>'
    )
    return "".join(parts)
