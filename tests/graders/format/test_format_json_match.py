"""JsonMatchGrader: JSON equality, order and extra-key options, mismatch paths."""

from __future__ import annotations

from typing import Any

import pytest

from openjudge.graders.base_grader import GraderError, GraderScore
from openjudge.graders.format import JsonMatchGrader

pytestmark = pytest.mark.anyio


async def grade(grader: JsonMatchGrader, response: str, reference: Any) -> GraderScore:
    result = await grader.aevaluate(response=response, reference=reference)
    assert isinstance(result, GraderScore), result
    return result


@pytest.mark.parametrize(
    ("response", "reference", "expected"),
    [
        ('{"name": "Alice", "age": 30}', '{"age": 30, "name": "Alice"}', 1.0),
        ('{"a": 1}', '{"a": 1.0}', 1.0),
        ('{"a": true}', '{"a": 1}', 0.0),
        ('{"a": 0}', '{"a": false}', 0.0),
        ('{"a": null}', "{}", 0.0),
        ("[1, 2]", "[2, 1]", 0.0),
        ('{"城市": "北京"}', '{"城市": "北京"}', 1.0),
        ('"👍"', '"👍"', 1.0),
        ("not json", "{}", 0.0),
        ('```json\n{"a": [1]}\n```', '{"a": [1]}', 1.0),
    ],
)
async def test_strict_equality(response: str, reference: str, expected: float) -> None:
    assert (await grade(JsonMatchGrader(), response, reference)).score == expected


async def test_reference_as_value() -> None:
    grader = JsonMatchGrader()
    assert (await grade(grader, '{"a": [1, {"b": null}]}', {"a": [1, {"b": None}]})).score == 1.0
    assert (await grade(grader, "3", 3)).score == 1.0
    assert (await grade(grader, "null", None)).score == 1.0
    assert (await grade(grader, '"abc"', '"abc"')).score == 1.0


async def test_mismatch_paths() -> None:
    grader = JsonMatchGrader()
    cases = {
        '{"items": [{"id": 1}, {"id": "2"}]}': "$.items[1].id: expected number, got string",
        '{"items": [{"id": 1}]}': "$.items: expected 2 items, got 1",
        '{"items": [{"id": 1}, {"id": 2}], "x": 0}': "$: unexpected key 'x'",
        '{"other": 1}': "$: missing key 'items'",
        '{"items": [{"id": 1}, {"id": 3}]}': "$.items[1].id: expected 2, got 3",
    }
    for response, mismatch in cases.items():
        result = await grade(grader, response, {"items": [{"id": 1}, {"id": 2}]})
        assert result.score == 0.0
        assert result.metadata["mismatch"] == mismatch


async def test_unordered_arrays() -> None:
    grader = JsonMatchGrader(strict_order=False)
    assert (await grade(grader, "[3, 1, 2, 1]", "[1, 1, 2, 3]")).score == 1.0
    assert (await grade(grader, "[3, 1, 2, 2]", "[1, 1, 2, 3]")).score == 0.0
    assert (await grade(grader, '[{"a": [2, 1]}, 1]', '[1, {"a": [1, 2]}]')).score == 1.0
    assert (await grade(grader, "[1.0, true]", "[true, 1]")).score == 1.0


async def test_ignore_extra_keys() -> None:
    grader = JsonMatchGrader(ignore_extra_keys=True)
    assert (await grade(grader, '{"a": 1, "b": 2}', '{"a": 1}')).score == 1.0
    assert (await grade(grader, '{"a": {"x": 1, "y": 2}}', '{"a": {"x": 1}}')).score == 1.0
    assert (await grade(grader, '{"b": 2}', '{"a": 1}')).score == 0.0


async def test_unordered_with_extra_keys_needs_a_real_matching() -> None:
    # Greedy pairing would give the first response item to the first reference item and fail.
    grader = JsonMatchGrader(strict_order=False, ignore_extra_keys=True)
    response = '[{"a": 1, "b": 2}, {"a": 1}]'
    assert (await grade(grader, response, '[{"a": 1}, {"a": 1, "b": 2}]')).score == 1.0
    assert (await grade(grader, response, '[{"b": 2}, {"b": 2}]')).score == 0.0


async def test_invalid_reference_is_invalid_input() -> None:
    for reference, fragment in [
        ("{not json", "not valid JSON"),
        ({1: "a"}, "non-string key"),
        ({"a": float("nan")}, "non-finite"),
        ({"a": {1, 2}}, "not a JSON value"),
    ]:
        result = await JsonMatchGrader().aevaluate(response="{}", reference=reference)  # type: ignore[arg-type]  # deliberately wrong
        assert isinstance(result, GraderError)
        assert result.kind == "invalid_input"
        assert "'reference'" in result.message
        assert fragment in result.message


async def test_invalid_response_type() -> None:
    result = await JsonMatchGrader().aevaluate(response=None, reference="{}")  # type: ignore[arg-type]  # deliberately wrong
    assert isinstance(result, GraderError)
    assert result.kind == "invalid_input"
    assert "'response'" in result.message
