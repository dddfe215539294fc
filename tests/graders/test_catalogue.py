"""docs/graders.md's table is the registry's catalogue, so the docs cannot drift from the code."""

from __future__ import annotations

from pathlib import Path

import pytest

from openjudge.graders._registry import BUILTIN_GRADERS
from openjudge.graders.catalogue import (
    END_MARKER,
    START_MARKER,
    main,
    render_catalogue,
    replace_section,
    section,
)

PAGE = Path(__file__).resolve().parents[2] / "docs" / "graders.md"


def test_docs_table_is_the_generated_catalogue() -> None:
    assert section(PAGE.read_text(encoding="utf-8")) == render_catalogue(), (
        "docs/graders.md is out of date; run: python -m openjudge.graders.catalogue"
    )


def test_one_row_per_builtin_grader_with_its_facts() -> None:
    rows = render_catalogue().splitlines()[2:]
    assert sorted(row.split(" | ")[0].strip("| `") for row in rows) == sorted(BUILTIN_GRADERS)
    assert (
        "| `pairwise_preference` | llm | `query`, `response_a`, `response_b`; optional `reference` "
        "| [0, 1] | yes |" in render_catalogue()
    )
    assert (
        "| `group_tournament` | llm | `query`, `responses`; optional `reference` | - | - |"
        in render_catalogue()
    )
    assert "| `length_penalty` | rule | `response` | [-1, 0] | yes |" in render_catalogue()
    assert "| `llm` | llm | the template's placeholders | - | - |" in render_catalogue()
    assert "&lt;think&gt;" in render_catalogue()  # tags in summaries are escaped, not rendered as HTML


def test_replace_section_keeps_the_rest_of_the_page() -> None:
    page = f"# Title\n\nintro\n\n{START_MARKER}\nold table\n{END_MARKER}\n\nafter\n"
    updated = replace_section(page, "| new |\n")
    assert updated == f"# Title\n\nintro\n\n{START_MARKER}\n\n| new |\n\n{END_MARKER}\n\nafter\n"
    assert section(updated) == "| new |\n"
    with pytest.raises(ValueError, match="catalogue:start"):
        section("no markers here")


def test_main_rewrites_a_stale_page_and_check_reports_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "graders.md"
    page.write_text(f"intro\n{START_MARKER}\nstale\n{END_MARKER}\noutro\n", encoding="utf-8")
    assert main([str(page), "--check"]) == 1
    assert "out of date" in capsys.readouterr().out
    assert main([str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert section(text) == render_catalogue() and text.startswith("intro\n") and text.endswith("outro\n")
    assert main([str(page), "--check"]) == 0
    assert main([str(tmp_path / "missing.md")]) == 2
