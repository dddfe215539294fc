"""StringMatchGrader: every mode on exact, unicode and invalid inputs."""

from __future__ import annotations

import time
from typing import Any

import pytest

from openjudge.graders.base_grader import GraderError, GraderScore
from openjudge.graders.text import StringMatchGrader
from openjudge.graders.text.string_match import MatchMode

pytestmark = pytest.mark.anyio


async def score(grader: StringMatchGrader, response: str, reference: str) -> float:
    result = await grader.aevaluate(response=response, reference=reference)
    assert isinstance(result, GraderScore), result
    assert result.score_range is not None
    assert result.score_range.contains(result.score)
    return result.score


@pytest.mark.parametrize(
    ("mode", "response", "reference", "expected"),
    [
        ("exact", "Paris", "Paris", 1.0),
        ("exact", "  Paris\n", "Paris", 1.0),
        ("exact", "paris", "Paris", 0.0),
        ("exact", "", "", 1.0),
        ("exact", "北京", "北京", 1.0),
        ("exact", "cafe\u0301", "café", 0.0),
        ("normalized", "Paris!", "paris", 1.0),
        ("normalized", "  The   Eiffel\tTower. ", "the eiffel tower", 1.0),
        ("normalized", "北京。", "北京", 1.0),
        ("normalized", "ＡＢＣ", "abc", 1.0),
        ("normalized", "Paris", "London", 0.0),
        ("normalized", "!!!", "", 1.0),
        ("contains", "The capital is Paris.", "Paris", 1.0),
        ("contains", "The capital is Paris.", "London", 0.0),
        ("contains", "anything", "", 1.0),
        ("contains", "我爱北京天安门", "北京", 1.0),
        ("contains", "👍🏽 great", "👍🏽", 1.0),
        ("regex", "Call 555-1234 now", r"\d{3}-\d{4}", 1.0),
        ("regex", "Call me", r"\d{3}-\d{4}", 0.0),
        ("regex", "答案是42", r"答案是\d+", 1.0),
    ],
)
async def test_modes(mode: MatchMode, response: str, reference: str, expected: float) -> None:
    assert await score(StringMatchGrader(mode), response, reference) == expected


async def test_case_insensitive_options() -> None:
    assert await score(StringMatchGrader("exact", case_sensitive=False), "PARIS", "paris") == 1.0
    assert await score(StringMatchGrader("contains", case_sensitive=False), "IN PARIS", "paris") == 1.0
    assert await score(StringMatchGrader("regex", case_sensitive=False), "PARIS", "^paris$") == 1.0
    assert await score(StringMatchGrader("exact", strip=False), " Paris", "Paris") == 0.0


async def test_regex_full_match() -> None:
    grader = StringMatchGrader("regex", full_match=True)
    assert await score(grader, "12345", r"\d+") == 1.0
    assert await score(grader, "12345x", r"\d+") == 0.0


async def test_result_fields() -> None:
    result = await StringMatchGrader("contains").aevaluate(response="abc", reference="b")
    assert isinstance(result, GraderScore)
    assert result.name == "string_match"
    assert result.metadata == {"match_mode": "contains", "matched": True}
    assert result.reason == "response contains the reference"


async def test_invalid_regex_is_invalid_input() -> None:
    result = await StringMatchGrader("regex").aevaluate(response="x", reference="(unclosed")
    assert isinstance(result, GraderError)
    assert result.kind == "invalid_input"
    assert "'reference'" in result.message


@pytest.mark.parametrize("field", ["response", "reference"])
@pytest.mark.parametrize("bad", [None, 3, ["a"], b"bytes"])
async def test_non_string_inputs_are_invalid(field: str, bad: object) -> None:
    inputs: dict[str, Any] = {"response": "a", "reference": "a", field: bad}
    result = await StringMatchGrader().aevaluate(**inputs)
    assert isinstance(result, GraderError)
    assert result.kind == "invalid_input"
    assert f"'{field}'" in result.message


async def test_missing_input_is_invalid() -> None:
    result = await StringMatchGrader().aevaluate(response="a")  # type: ignore[call-arg]  # deliberately missing
    assert isinstance(result, GraderError)
    assert result.kind == "invalid_input"
    assert "reference" in result.message


def test_unknown_mode_is_rejected_at_construction() -> None:
    with pytest.raises(ValueError, match="match_mode"):
        StringMatchGrader("fuzzy")  # type: ignore[arg-type]  # deliberately wrong


def test_declared_inputs() -> None:
    spec = StringMatchGrader().input_spec()
    assert spec.required == {"response", "reference"}
    assert not spec.optional
    assert not spec.accepts_any


async def test_long_input() -> None:
    text = "ab" * 50_000 + "needle" + "cd" * 50_000
    assert await score(StringMatchGrader("contains"), text, "needle") == 1.0
    assert await score(StringMatchGrader("normalized"), text, text.upper()) == 1.0


async def test_regex_on_hostile_patterns_is_bounded() -> None:
    grader = StringMatchGrader("regex", regex_timeout_s=1.0)
    start = time.monotonic()
    linear = await grader.aevaluate(response="a" * 34 + "!", reference=r"^(a+)+$")
    assert isinstance(linear, GraderScore) and linear.score == 0.0
    assert time.monotonic() - start < 2.0
    await grader.workers.call(
        "openjudge.graders._safe_regex:backtracking_match", ["a", False, "a", "search"], timeout_s=60
    )
    start = time.monotonic()
    backtracking = await grader.aevaluate(response="a" * 40 + "!", reference=r"^(a+)+(?<=a)$")
    assert time.monotonic() - start < 1.0 + 2.0
    # The response made the check run away: its failure, scored at the bottom, not an error.
    assert isinstance(backtracking, GraderScore) and backtracking.score == 0.0
    assert backtracking.metadata["blame"] == "response" and backtracking.metadata["cause"] == "timeout"
    assert "needs backtracking" in backtracking.reason
    lookbehind = await grader.aevaluate(response="ab", reference=r"(?<=a)b")
    assert isinstance(lookbehind, GraderScore) and lookbehind.score == 1.0
    grader.workers.close()
