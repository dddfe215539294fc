"""Aligned plain-text tables that fit a terminal's width (80 columns unless told otherwise).

A table is too wide only because of its text: the numbers of a summary are at most a few
characters each. So the two text columns give way, in this order: a free-text last column
(a first message, a reason) is cut to the room left, then the first column (grader names)
is, never below a readable minimum. A table whose numbers alone do not fit is left wider.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["WIDTH", "cut", "text_table"]

WIDTH = 80
"""The width a table is fitted to: a terminal's default, and what a pasted log wraps at."""

_GAP = "  "
_MIN_NAME = 12
"""The first column is never cut below this (``quality_judge`` stays whole)."""
_MIN_TEXT = 20


def cut(text: str, limit: int) -> str:
    """``text`` on one line (whitespace runs made one space), cut to ``limit`` characters with ``…``."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def _widths(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    return [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]


def text_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    left: int = 1,
    text_last: bool = False,
    width: int = WIDTH,
) -> list[str]:
    """The lines of an aligned table, at most ``width`` characters wide where the text allows.

    The first ``left`` columns (and the last, if ``text_last``) are left-aligned, the rest
    right-aligned. Too wide, the last column (if ``text_last``) and then the first are cut.
    """
    widths = _widths(header, rows)
    total = sum(widths) + len(_GAP) * (len(widths) - 1)
    last = len(widths) - 1 if text_last else -1
    if total > width and text_last:
        room = max(_MIN_TEXT, widths[last] - (total - width))
        rows = [(*row[:-1], cut(row[-1], room)) for row in rows]
        widths = _widths(header, rows)
        total = sum(widths) + len(_GAP) * (len(widths) - 1)
    if total > width and widths[0] > _MIN_NAME:
        room = max(_MIN_NAME, widths[0] - (total - width))
        rows = [(cut(row[0], room), *row[1:]) for row in rows]
        widths = _widths(header, rows)

    def fmt(cells: Sequence[str]) -> str:
        aligned = (
            cell.ljust(w) if i < left or i == last else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
        )
        return _GAP.join(aligned).rstrip()

    return [fmt(header), _GAP.join("-" * w for w in widths), *(fmt(row) for row in rows)]
