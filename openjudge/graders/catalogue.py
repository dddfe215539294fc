"""The catalogue of built-in graders as a Markdown table, generated from the registry.

``docs/graders.md`` holds the table between two markers; a test checks that it equals
:func:`render_catalogue`, so the docs cannot drift from the code. After adding or
changing a grader, rewrite the table in place::

    python -m openjudge.graders.catalogue            # updates docs/graders.md
    python -m openjudge.graders.catalogue --check    # exit 1 if it is out of date
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from openjudge.graders._registry import BUILTIN_GRADERS, GraderType

__all__ = ["END_MARKER", "START_MARKER", "main", "render_catalogue", "replace_section", "section"]

START_MARKER = "<!-- catalogue:start -->"
END_MARKER = "<!-- catalogue:end -->"
DEFAULT_PAGE = Path("docs") / "graders.md"

_HEADER = (
    "| name | kind | inputs | score range | higher is better | summary |",
    "| --- | --- | --- | --- | --- | --- |",
)
_KIND_ORDER = {"rule": 0, "llm": 1}


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else f"{value:g}"


def _cell(text: str) -> str:
    """Free text made safe for a table cell (no column breaks, no HTML tags)."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _inputs(info: GraderType) -> str:
    if not info.required_inputs and not info.optional_inputs:
        return "the template's placeholders" if info.kind == "llm" else "none"
    required = ", ".join(f"`{name}`" for name in info.required_inputs)
    optional = ", ".join(f"`{name}`" for name in info.optional_inputs)
    if not optional:
        return required
    return f"{required}; optional {optional}" if required else f"optional {optional}"


def _row(info: GraderType) -> str:
    if info.score_range is None:
        score_range, better = "-", "-"
    else:
        score_range = f"[{_number(info.score_range.low)}, {_number(info.score_range.high)}]"
        better = "yes" if info.score_range.higher_is_better else "no"
    cells = (f"`{info.name}`", info.kind, _inputs(info), score_range, better, _cell(info.summary))
    return "| " + " | ".join(cells) + " |"


def render_catalogue() -> str:
    """Every built-in grader as one Markdown table row (rule graders first, then LLM, by name).

    A ``-`` range means the grader declares none (an LLM grader whose range you set, or
    one that returns a rank).
    """
    infos = sorted(
        BUILTIN_GRADERS.values(),
        key=lambda info: (_KIND_ORDER[info.kind], info.name),
    )
    return "\n".join([*_HEADER, *(_row(info) for info in infos)]) + "\n"


def _bounds(text: str) -> tuple[int, int]:
    start, end = text.find(START_MARKER), text.find(END_MARKER)
    if start == -1 or end == -1 or end < start:
        raise ValueError(f"the page needs {START_MARKER} and then {END_MARKER} around the catalogue table")
    return start + len(START_MARKER), end


def section(text: str) -> str:
    """The text between the catalogue markers, without the blank lines that frame it.

    Raises:
        ValueError: The markers are missing or out of order.
    """
    start, end = _bounds(text)
    return text[start:end].strip("\n") + "\n"


def replace_section(text: str, table: str) -> str:
    """``text`` with the part between the markers replaced by ``table`` (framed by blank lines)."""
    start, end = _bounds(text)
    return f"{text[:start]}\n\n{table.strip(chr(10))}\n\n{text[end:]}"


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite (or with ``--check``, verify) the catalogue table of a Markdown page."""
    parser = argparse.ArgumentParser(
        prog="python -m openjudge.graders.catalogue",
        description="Regenerate the built-in grader table between the catalogue markers.",
    )
    parser.add_argument("page", nargs="?", type=Path, default=DEFAULT_PAGE, help="default: docs/graders.md")
    parser.add_argument("--check", action="store_true", help="exit 1 if the table is out of date")
    args = parser.parse_args(argv)
    page: Path = args.page
    try:
        text = page.read_text(encoding="utf-8")
        table = render_catalogue()
        current = section(text)
    except (OSError, ValueError) as exc:
        print(f"{page}: {exc}")
        return 2
    if current == table:
        print(f"{page}: the catalogue is up to date")
        return 0
    if args.check:
        print(f"{page}: the catalogue is out of date; run: python -m openjudge.graders.catalogue {page}")
        return 1
    page.write_text(replace_section(text, table), encoding="utf-8")
    print(f"{page}: catalogue rewritten ({len(BUILTIN_GRADERS)} graders)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
