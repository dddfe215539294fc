"""JsonValidatorGrader: strict JSON, code fences, allowed top-level types."""

from __future__ import annotations

from typing import Any

import pytest

from openjudge.graders.base_grader import GraderError, GraderScore
from openjudge.graders.format import JsonValidatorGrader
from openjudge.graders.format._json_text import parse_json, strip_code_fence

pytestmark = pytest.mark.anyio


async def grade(grader: JsonValidatorGrader, response: Any) -> GraderScore:
    result = await grader.aevaluate(response=response)
    assert isinstance(result, GraderScore), result
    return result


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ('{"a": 1}', 1.0),
        ("  [1, 2, 3]\n", 1.0),
        ('"just a string"', 1.0),
        ("42", 1.0),
        ("null", 1.0),
        ('{"城市": "北京", "emoji": "👍"}', 1.0),
        ("", 0.0),
        ("{'a': 1}", 0.0),
        ('{"a": 1,}', 0.0),
        ("NaN", 0.0),
        ('{"x": Infinity}', 0.0),
        ('{"a": 1} trailing', 0.0),
        ("[" * 100_000, 0.0),
        ('```json\n{"a": 1}\n```', 1.0),
        ("\n```\n[1]\n```  ", 1.0),
        ('Here you go: ```json\n{"a": 1}\n```', 0.0),
    ],
)
async def test_validity(response: str, expected: float) -> None:
    assert (await grade(JsonValidatorGrader(), response)).score == expected


async def test_error_metadata() -> None:
    result = await grade(JsonValidatorGrader(), '{"a": }')
    assert result.metadata["valid"] is False
    assert result.metadata["error"] == "Expecting value at line 1 column 7"
    assert result.reason == "response is not valid JSON: Expecting value at line 1 column 7"


async def test_without_fence_stripping() -> None:
    result = await grade(JsonValidatorGrader(strip_code_fence=False), '```json\n{"a": 1}\n```')
    assert result.score == 0.0


async def test_allowed_types() -> None:
    objects_only = JsonValidatorGrader(allowed_types=["object"])
    assert (await grade(objects_only, '{"a": 1}')).score == 1.0
    listed = await grade(objects_only, "[1]")
    assert listed.score == 0.0
    assert listed.metadata["type"] == "array"
    numbers = JsonValidatorGrader(allowed_types=["number"])
    assert (await grade(numbers, "3")).score == 1.0
    assert (await grade(numbers, "3.5")).score == 1.0
    assert (await grade(numbers, "true")).score == 0.0


def test_bad_allowed_types() -> None:
    with pytest.raises(ValueError, match="allowed_types"):
        JsonValidatorGrader(allowed_types=["dict"])
    with pytest.raises(ValueError, match="allowed_types"):
        JsonValidatorGrader(allowed_types=[])


async def test_invalid_input_type() -> None:
    result = await JsonValidatorGrader().aevaluate(response={"a": 1})  # type: ignore[arg-type]  # deliberately wrong
    assert isinstance(result, GraderError)
    assert result.kind == "invalid_input"
    assert "'response'" in result.message


def test_strip_code_fence_helper() -> None:
    assert strip_code_fence('```json\n{"a": 1}\n```') == ('{"a": 1}', True)
    assert strip_code_fence("~~~\nx\n~~~") == ("x", True)
    assert strip_code_fence("````\n```\ninner\n```\n````") == ("```\ninner\n```", True)
    assert strip_code_fence("no fence") == ("no fence", False)
    assert strip_code_fence("```json\nunterminated") == ("```json\nunterminated", False)


def test_parse_json_rejects_huge_integers_gracefully() -> None:
    parsed = parse_json("1" * 5000, strip_fence=False)
    assert parsed.ok is False
    assert parsed.error
