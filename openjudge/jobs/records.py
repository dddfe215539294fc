"""Typed models of one line of a results file (the format is described in :mod:`.results`).

These models are the single definition of the public output format: the writer serialises
them and the summary and the report read them back. Reading ignores unknown fields, so
files written by a later version with extra fields still load.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from openjudge.graders.schema import GraderError, GraderRank, GraderResult, GraderScore, ScoreRange
from openjudge.models.usage import TokenUsage

__all__ = [
    "ErrorEntry",
    "OutcomeLine",
    "RankEntry",
    "ResultEntry",
    "ScoreEntry",
    "entry_from_result",
]


class _Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class ScoreEntry(_Entry):
    """A numeric result.

    Attributes:
        score: The raw score.
        normalized_score: The score mapped to [0, 1] (1 is best) by ``score_range``; the raw
            score when no range is declared.
        reason: The grader's explanation.
        metadata: Grader-specific details.
        score_range: The declared range of ``score``, if any.
        latency_s: Wall time of the judge calls (LLM graders), else ``None``.
        usage: Tokens spent (LLM graders), else ``None``.
    """

    type: Literal["score"] = "score"
    score: float
    normalized_score: float
    reason: str = ""
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    score_range: ScoreRange | None = None
    latency_s: float | None = None
    usage: TokenUsage | None = None


class RankEntry(_Entry):
    """A listwise result: ``rank[i]`` is the 1-based rank of candidate ``i``."""

    type: Literal["rank"] = "rank"
    rank: list[int]
    reason: str = ""
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    latency_s: float | None = None
    usage: TokenUsage | None = None


class ErrorEntry(_Entry):
    """A failure: there is no score.

    Attributes:
        kind: The failure class (``parse_error``, ``timeout``, ...; see ``ErrorKind``).
        message: What went wrong.
        error_type: The exception type behind it, or ``""``.
    """

    type: Literal["error"] = "error"
    kind: str
    message: str
    error_type: str = ""
    latency_s: float | None = None
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    usage: TokenUsage | None = None


ResultEntry: TypeAlias = Annotated[ScoreEntry | RankEntry | ErrorEntry, Field(discriminator="type")]


class OutcomeLine(_Entry):
    """One line of a results file: every grader's result for one sample.

    Attributes:
        id: The sample id (see :func:`openjudge.jobs.datasets.iter_samples`).
        line: Where the sample is in the dataset, if known.
        results: Grader name to result.
        aggregates: Aggregator name to value; ``None`` when it could not be computed.
        usage: Tokens and requests summed over ``results``.
    """

    id: str
    line: int | None = None
    results: dict[str, ResultEntry] = Field(default_factory=dict)
    aggregates: dict[str, float | None] = Field(default_factory=dict)
    usage: TokenUsage = Field(default_factory=TokenUsage)


def entry_from_result(result: GraderResult) -> ScoreEntry | RankEntry | ErrorEntry:
    """Convert a grader's result model to its results-file entry."""
    if isinstance(result, GraderScore):
        return ScoreEntry(
            score=result.score,
            normalized_score=result.normalized_score,
            reason=result.reason,
            metadata=dict(result.metadata),
            score_range=result.score_range,
            latency_s=result.latency_s,
            usage=result.usage,
        )
    if isinstance(result, GraderRank):
        return RankEntry(
            rank=list(result.rank),
            reason=result.reason,
            metadata=dict(result.metadata),
            latency_s=result.latency_s,
            usage=result.usage,
        )
    if isinstance(result, GraderError):
        return ErrorEntry(
            kind=result.kind,
            message=result.message,
            error_type=result.error_type,
            latency_s=result.latency_s,
            metadata=dict(result.metadata),
            usage=result.usage,
        )
    raise TypeError(f"expected GraderScore, GraderRank or GraderError, got {type(result).__name__}")
