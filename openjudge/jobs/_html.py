"""The frame of a self-contained HTML report: the page, its tables, writing it out.

Shared by the results report (:mod:`openjudge.jobs._report`) and the meta-eval report
(:mod:`openjudge.metaeval._html`): inline CSS only (each report brings its own), no
scripts, every text taken from the data escaped here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from html import escape
from pathlib import Path

__all__ = ["page", "table", "table_row", "write_page"]


def table(header: Sequence[str], kinds: Sequence[str], rows: Iterable[str], *, cls: str) -> str:
    """A table of rendered ``rows``; ``kinds[i]`` is the CSS class of column ``i`` ("num" right-aligns it)."""
    head = "".join(f'<th class="{k}">{escape(h)}</th>' for h, k in zip(header, kinds, strict=True))
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def table_row(cells: Sequence[str], kinds: Sequence[str], *, attrs: str = "") -> str:
    """A row of escaped cells; ``attrs`` is inserted into the ``<tr>`` tag as is."""
    tds = "".join(f'<td class="{k}">{escape(c)}</td>' for c, k in zip(cells, kinds, strict=True))
    return f"<tr{attrs}>{tds}</tr>"


def page(title: str, meta: str, body: str, *, css: str) -> str:
    """A whole HTML page: ``title`` as its title and heading, ``meta`` under it, then ``body`` (HTML)."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<style>{css}</style>
</head>
<body>
<main>
<header><h1>{escape(title)}</h1><p class="meta">{escape(meta)}</p></header>
{body}
</main>
</body>
</html>
"""


def write_page(path: Path, html: str) -> None:
    """Write ``html`` to ``path`` (its folder made if needed), replacing it atomically.

    A lone surrogate (from a record or a response) is written as the six characters
    ``\\udXXX``, the rule of :mod:`openjudge._text`.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(html, encoding="utf-8", errors="backslashreplace")
    os.replace(tmp, path)
