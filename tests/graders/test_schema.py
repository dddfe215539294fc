from __future__ import annotations

import math
import pickle

import pytest
from pydantic import ValidationError

from openjudge.models._errors import ChatModelError
from openjudge.results import GraderError, GraderRank, GraderScore, ScoreRange, TokenUsage


def test_score_must_be_finite() -> None:
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValidationError, match="finite"):
            GraderScore(name="g", score=bad)


def test_score_must_sit_in_declared_range() -> None:
    with pytest.raises(ValidationError, match="outside the declared range"):
        GraderScore(name="g", score=42, score_range=ScoreRange(low=1, high=5))
    ok = GraderScore(name="g", score=4, score_range=ScoreRange(low=1, high=5))
    assert ok.normalized_score == pytest.approx(0.75)


def test_normalized_score_respects_direction() -> None:
    lower_better = ScoreRange(low=0, high=10, higher_is_better=False)
    assert GraderScore(name="g", score=2, score_range=lower_better).normalized_score == pytest.approx(0.8)
    assert GraderScore(name="g", score=0.3).normalized_score == 0.3


def test_score_range_rejects_empty_interval() -> None:
    with pytest.raises(ValidationError, match="low < high"):
        ScoreRange(low=1, high=1)


def test_rank_must_be_permutation() -> None:
    assert GraderRank(name="r", rank=[2, 1, 3]).rank == [2, 1, 3]
    with pytest.raises(ValidationError, match="permutation"):
        GraderRank(name="r", rank=[1, 1, 2])


def test_error_has_no_score_and_openjudge_aliases() -> None:
    err = GraderError(name="g", kind="timeout", message="too slow", error_type="TimeoutError")
    assert not hasattr(err, "score")
    assert err.error == "too slow"
    assert err.reason == "too slow"
    with pytest.raises(ValidationError):
        GraderError(name="g", kind="not-a-kind", message="x")


def test_results_are_frozen_and_forbid_extra_fields() -> None:
    score = GraderScore(name="g", score=1.0)
    with pytest.raises(ValidationError):
        score.score = 2.0  # type: ignore[misc]
    with pytest.raises(ValidationError, match="extra"):
        GraderScore(name="g", score=1.0, surprise=True)  # type: ignore[call-arg]


def test_results_and_errors_pickle() -> None:
    score = GraderScore(name="g", score=0.5, usage=TokenUsage(3, 4, 1), metadata={"k": [1, "a"]})
    assert pickle.loads(pickle.dumps(score)) == score
    exc = ChatModelError("boom", kind="timeout", retryable=True, status_code=408, retry_after_s=1.5)
    back = pickle.loads(pickle.dumps(exc))
    assert (back.message, back.kind, back.retryable, back.status_code, back.retry_after_s) == (
        "boom",
        "timeout",
        True,
        408,
        1.5,
    )


def test_usage_adds_and_totals() -> None:
    total = TokenUsage(10, 2, 1) + TokenUsage(5, 3, 2)
    assert total == TokenUsage(15, 5, 3)
    assert total.total_tokens == 20
