"""Shared builders for the job I/O tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from openjudge.jobs._results import SampleOutcome
from openjudge.results import GraderError, GraderResult, GraderScore, ScoreRange, TokenUsage

OutcomeFactory = Callable[[int], SampleOutcome]


def make_outcome(i: int) -> SampleOutcome:
    """A deterministic outcome for sample ``i``: one LLM grader, one rule grader, some errors."""
    usage = TokenUsage(prompt_tokens=100 + i, completion_tokens=10, requests=1)
    quality: GraderResult
    if i % 7 == 3:
        quality = GraderError(
            name="quality", kind="timeout", message="judge timed out", latency_s=30.0, usage=usage
        )
    else:
        quality = GraderScore(
            name="quality",
            score=float(1 + i % 5),
            reason=f"reason {i}",
            score_range=ScoreRange(low=1, high=5),
            latency_s=0.5 + (i % 10) / 10,
            usage=usage,
        )
    exact = GraderScore(name="exact", score=float(i % 2), reason="")
    return SampleOutcome(
        id=f"s{i:04d}", line=i + 1, results={"quality": quality, "exact": exact}, aggregates={"mean": 0.5}
    )


@pytest.fixture
def outcome_factory() -> OutcomeFactory:
    return make_outcome
