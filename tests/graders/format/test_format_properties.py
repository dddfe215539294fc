"""Property tests: format graders stay in their declared range and never raise."""

from __future__ import annotations

import json
from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from openjudge.graders.base_grader import BaseGrader, GraderError, GraderScore
from openjudge.graders.format import (
    JsonMatchGrader,
    JsonSchemaGrader,
    JsonValidatorGrader,
    LengthPenaltyGrader,
    NgramRepetitionPenaltyGrader,
    ReasoningFormatGrader,
)
from openjudge.results import GraderResult

RESPONSE_ONLY: list[BaseGrader] = [
    JsonValidatorGrader(),
    JsonValidatorGrader(allowed_types=["object"]),
    JsonSchemaGrader({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}),
    LengthPenaltyGrader(min_length=5, max_length=20, penalty_rate=0.3),
    LengthPenaltyGrader(unit="tokens", min_length=2, max_length=4),
    NgramRepetitionPenaltyGrader(n=1),
    NgramRepetitionPenaltyGrader(n=2, scope="think", threshold=0.2, penalty_rate=3),
    ReasoningFormatGrader(),
    ReasoningFormatGrader(strict=False, require_content=False),
]
MATCHERS: list[JsonMatchGrader] = [
    JsonMatchGrader(),
    JsonMatchGrader(strict_order=False),
    JsonMatchGrader(strict_order=False, ignore_extra_keys=True),
]

JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=15,
)
TAG_SOUP = st.lists(
    st.sampled_from(["<think>", "</think>", "<answer>", "</answer>", "a", " ", "中", "```", "\n"]),
    max_size=12,
).map("".join)
TEXT = st.one_of(st.text(max_size=80), TAG_SOUP, JSON_VALUES.map(json.dumps))
NOT_STR = st.one_of(st.none(), st.integers(), st.binary(), st.lists(st.text(), max_size=2))


def run(grader: BaseGrader, **inputs: object) -> GraderResult:
    return run_all([grader], **inputs)[0]


def run_all(graders: list[BaseGrader], **inputs: object) -> list[GraderResult]:
    """Evaluate every grader on the same inputs inside one event loop."""

    async def evaluate() -> list[GraderResult]:
        return [await grader.aevaluate(**inputs) for grader in graders]

    return anyio.run(evaluate)


def in_range(grader: BaseGrader, result: GraderResult) -> bool:
    assert isinstance(result, GraderScore), (grader, result)
    assert grader.score_range is not None
    return grader.score_range.contains(result.score)


@settings(max_examples=100, deadline=None)
@given(response=TEXT)
def test_response_graders_stay_in_range(response: str) -> None:
    for grader, result in zip(RESPONSE_ONLY, run_all(RESPONSE_ONLY, response=response), strict=True):
        assert in_range(grader, result)


@settings(max_examples=75, deadline=None)
@given(response=JSON_VALUES, reference=JSON_VALUES)
def test_json_match_on_arbitrary_json(response: Any, reference: Any) -> None:
    # A str reference is JSON text; any other value is used as is.
    reference_arg = json.dumps(reference) if isinstance(reference, str) else reference
    matchers: list[BaseGrader] = list(MATCHERS)
    results = run_all(matchers, response=json.dumps(response), reference=reference_arg)
    for grader, result in zip(matchers, results, strict=True):
        assert in_range(grader, result)
    # A document always matches itself, in every mode.
    for result in run_all(matchers, response=json.dumps(reference), reference=json.dumps(reference)):
        assert isinstance(result, GraderScore)
        assert result.score == 1.0


@settings(max_examples=40, deadline=None)
@given(bad=NOT_STR)
def test_bad_response_types_are_invalid_input(bad: object) -> None:
    for grader in [*RESPONSE_ONLY, *MATCHERS]:
        inputs: dict[str, object] = {"response": bad}
        if isinstance(grader, JsonMatchGrader):
            inputs["reference"] = "{}"
        result = run(grader, **inputs)
        assert isinstance(result, GraderError), (grader, result)
        assert result.kind == "invalid_input"
        assert "'response'" in result.message
