"""The result vocabulary's unvalidated fast path builds exactly what validation builds."""

from __future__ import annotations

import dataclasses
import json
import pickle

import pytest
from pydantic import ValidationError

from openjudge.results import GraderScore, ScoreRange, TokenUsage


@pytest.mark.parametrize(
    ("score_range", "usage", "latency_s", "queue_s", "metadata"),
    [
        (ScoreRange(low=1, high=5), TokenUsage(10, 2, 1), 0.25, None, {}),
        (None, None, None, 0.5, {"verdict_extra": [1, "two", None], "nested": {"a": 1.5}}),
    ],
)
def test_a_checked_score_is_the_validated_score(
    score_range: ScoreRange | None,
    usage: TokenUsage | None,
    latency_s: float | None,
    queue_s: float | None,
    metadata: dict[str, object],
) -> None:
    fields = {
        "name": "judge",
        "score": 4.0,
        "reason": "fine",
        "metadata": metadata,
        "score_range": score_range,
        "usage": usage,
        "latency_s": latency_s,
        "queue_s": queue_s,
    }
    validated = GraderScore(**fields)
    checked = GraderScore._checked(**fields)  # type: ignore[arg-type]
    assert checked == validated
    assert checked.model_dump() == validated.model_dump()
    assert checked.model_dump_json() == validated.model_dump_json()
    assert checked.model_fields_set == validated.model_fields_set
    assert repr(checked) == repr(validated)
    assert pickle.loads(pickle.dumps(checked)) == validated
    copied = checked.model_copy(update={"score": 2.0})
    assert copied.score == 2.0 and copied.model_fields_set == validated.model_fields_set
    # Checked scores share one fields set: a copy must never change it under the others.
    other = GraderScore._checked(**fields)  # type: ignore[arg-type]
    assert copied.model_fields_set is not other.model_fields_set
    assert other.model_fields_set == validated.model_fields_set
    assert GraderScore.model_validate(checked.model_dump()) == validated
    with pytest.raises(ValidationError):
        checked.score = 1.0  # type: ignore[misc]  # frozen, as a validated score is


def test_token_usage_is_a_frozen_value_that_adds_and_round_trips_through_a_result() -> None:
    usage = TokenUsage(10, 2, 1) + TokenUsage(prompt_tokens=5, completion_tokens=3, requests=2)
    assert (usage.prompt_tokens, usage.completion_tokens, usage.requests, usage.total_tokens) == (
        15,
        5,
        3,
        20,
    )
    assert TokenUsage() == TokenUsage(0, 0, 0) and not hasattr(usage, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        usage.requests = 4  # type: ignore[misc]  # frozen on purpose
    score = GraderScore(name="judge", score=1.0, usage=usage)
    assert json.loads(score.model_dump_json())["usage"] == {
        "prompt_tokens": 15,
        "completion_tokens": 5,
        "requests": 3,
    }
    assert GraderScore.model_validate_json(score.model_dump_json()).usage == usage
    with pytest.raises(ValidationError, match="prompt_tokens"):
        GraderScore.model_validate({"name": "judge", "score": 1.0, "usage": {"prompt_tokens": "many"}})
