"""docs/grader-reference.md is generated from the graders' constructors, and matches them."""

from __future__ import annotations

import functools
import inspect
import typing
from pathlib import Path
from typing import Any, cast

import pytest
from pydantic import JsonValue

from openjudge.graders._parameters import PROVIDED_PARAMS, grader_parameters, params_schema
from openjudge.graders._registry import BUILTIN_GRADERS
from openjudge.graders.reference import main, render_reference
from openjudge.graders.text.string_match import MatchMode

PAGE = Path(__file__).resolve().parents[2] / "docs" / "grader-reference.md"


@functools.cache
def reference() -> str:
    return render_reference()


def test_the_page_is_the_generated_reference() -> None:
    assert PAGE.read_text(encoding="utf-8") == reference(), (
        "docs/grader-reference.md is out of date; run: python -m openjudge.graders.reference"
    )
    assert main([str(PAGE), "--check"]) == 0


def test_check_reports_a_stale_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stale = tmp_path / "reference.md"
    stale.write_text("# old\n")
    assert main([str(stale), "--check"]) == 1 and "out of date" in capsys.readouterr().out
    assert main([str(stale)]) == 0 and stale.read_text() == render_reference()


@pytest.mark.parametrize("name", sorted(BUILTIN_GRADERS))
def test_every_constructor_parameter_is_described_with_its_default(name: str) -> None:
    info = BUILTIN_GRADERS[name]
    signature = inspect.signature(info.load())
    expected = [
        p
        for p in signature.parameters.values()
        if p.name not in PROVIDED_PARAMS and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    found = grader_parameters(info)
    assert [p.name for p in found] == [p.name for p in expected]
    for documented, actual in zip(found, expected, strict=True):
        assert documented.required == (actual.default is inspect.Parameter.empty)
        assert documented.description, f"{name}.{documented.name} has no Args: entry in its docstring"
    section = reference().split(f"## `{name}`\n", 1)[1].split("\n## ", 1)[0]
    for p in found:
        assert f"| `{p.name}` |" in section


def test_allowed_values_and_defaults_come_from_the_signature() -> None:
    string_match = {p.name: p for p in grader_parameters(BUILTIN_GRADERS["string_match"])}
    mode = string_match["match_mode"]
    assert mode.choices == typing.get_args(MatchMode) and mode.default == "exact"
    assert mode.schema == {"enum": list(typing.get_args(MatchMode)), "type": "string"}
    row = '| `match_mode` | `MatchMode` | `"exact"` | `"exact"`, `"normalized"`, `"contains"`, `"regex"` |'
    assert row in reference()
    openai = {p.name: p for p in grader_parameters(BUILTIN_GRADERS["openai_grader"])}
    assert openai["grader"].required and openai["python_score_range"].default == [0.0, 1.0]
    assert openai["score_model_non_numeric"].choices == ("zero", "error")
    assert openai["sandbox"].choices == ("auto", "bwrap", "unshare", "process", "sandbox_fusion")
    assert openai["embedder"].schema is None  # a function: Python only
    assert "| `embedder` | `Embedder \\| None` | `null` |  | *Python only.*" in reference()
    assert "model" not in openai  # the provider's, never a param


def test_params_schema_lists_what_a_config_can_write() -> None:
    defs: dict[str, JsonValue] = {}
    schema = params_schema(BUILTIN_GRADERS["length_penalty"], defs)
    assert schema["additionalProperties"] is False and "required" not in schema
    properties = schema["properties"]
    assert isinstance(properties, dict)
    assert properties["unit"] == {
        "enum": ["chars", "tokens"],
        "type": "string",
        "description": "``chars`` or ``tokens``.",
        "default": "chars",
    }
    llm = params_schema(BUILTIN_GRADERS["llm"], defs)
    llm_properties = cast(dict[str, Any], llm["properties"])
    assert "structured_model" not in llm_properties  # a class: Python only
    assert llm_properties["sampling"]["anyOf"][0] == {"$ref": "#/$defs/Sampling"}
    assert "Sampling" in defs and "ScoreRange" in defs
