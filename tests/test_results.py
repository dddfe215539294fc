"""The result vocabulary's unvalidated fast path builds exactly what validation builds."""

from __future__ import annotations

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
