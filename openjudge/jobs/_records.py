"""Typed models of the lines of a results file (format: :mod:`openjudge.jobs._results`).

These models are the single definition of the public output format: the writer serialises
them and the summary and the report read them back. Reading ignores unknown fields, so
files written by a later version with extra fields still load.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias, cast, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from openjudge.jobs._fingerprint import JobFingerprint
from openjudge.results import (
    ErrorKind,
    GraderError,
    GraderRank,
    GraderScore,
    NotApplicable,
    RowResult,
    ScoreRange,
    TokenUsage,
)

__all__ = [
    "ErrorEntry",
    "HeaderLine",
    "NotApplicableEntry",
    "OutcomeLine",
    "RankEntry",
    "ResultEntry",
    "ResultsHeader",
    "ScoreEntry",
    "entry_from_result",
    "result_from_entry",
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
        latency_s: Time the judge spent answering (LLM graders; every attempt and re-ask,
            waits excluded), else ``None``.
        queue_s: Time spent waiting for the provider's concurrency or rate limits (LLM
            graders), else ``None``.
        usage: Tokens spent (LLM graders), else ``None``.
    """

    type: Literal["score"] = "score"
    score: float
    normalized_score: float
    reason: str = ""
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    score_range: ScoreRange | None = None
    latency_s: float | None = None
    queue_s: float | None = None
    usage: TokenUsage | None = None


class RankEntry(_Entry):
    """A listwise result: ``rank[i]`` is the 1-based rank of candidate ``i``."""

    type: Literal["rank"] = "rank"
    rank: list[int]
    reason: str = ""
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    latency_s: float | None = None
    queue_s: float | None = None
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
    queue_s: float | None = None
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    usage: TokenUsage | None = None


class NotApplicableEntry(_Entry):
    """The grader does not apply to the sample (the config's routing): neither a score nor
    an error; it counts toward no mean and no error rate.

    Attributes:
        reason: Why, e.g. ``"task is 'facts', not 'math'"``.
    """

    type: Literal["not_applicable"] = "not_applicable"
    reason: str = ""

    # Read like the other entries; not fields, so not written: the grader was not called.
    @property
    def latency_s(self) -> None:
        return None

    @property
    def queue_s(self) -> None:
        return None

    @property
    def usage(self) -> None:
        return None

    @property
    def metadata(self) -> dict[str, JsonValue]:
        return {}


ResultEntry: TypeAlias = Annotated[
    ScoreEntry | RankEntry | ErrorEntry | NotApplicableEntry, Field(discriminator="type")
]


class OutcomeLine(_Entry):
    """One line of a results file: every grader's result for one sample.

    Attributes:
        id: The sample id (see :func:`openjudge.jobs._datasets.iter_samples`).
        line: Where the sample is in the dataset, if known.
        results: Grader name to result.
        aggregates: Aggregator name to value; ``None`` when it could not be computed. An
            aggregate that does not apply to the sample (none of its inputs does, or its
            ``when`` does not hold) is absent.
        usage: Tokens and requests summed over ``results``.
    """

    id: str
    line: int | None = None
    results: dict[str, ResultEntry] = Field(default_factory=dict)
    aggregates: dict[str, float | None] = Field(default_factory=dict)
    usage: TokenUsage = Field(default_factory=TokenUsage)


class ResultsHeader(_Entry):
    """What the first line of a results file says about the job that wrote it.

    Attributes:
        format: The results-file format version (1).
        writer: The distribution and version that wrote the file.
        job: Everything that decides a score (see :mod:`openjudge.jobs._fingerprint`).
    """

    format: int = 1
    writer: str = ""
    job: JobFingerprint


class HeaderLine(_Entry):
    """The first line of a results file: ``{"openjudge": {...}}`` (it has no ``id``)."""

    openjudge: ResultsHeader


def entry_from_result(result: RowResult) -> ScoreEntry | RankEntry | ErrorEntry | NotApplicableEntry:
    """Convert a grader's result model to its results-file entry."""
    if isinstance(result, NotApplicable):
        return NotApplicableEntry(reason=result.reason)
    if isinstance(result, GraderScore):
        return ScoreEntry(
            score=result.score,
            normalized_score=result.normalized_score,
            reason=result.reason,
            metadata=dict(result.metadata),
            score_range=result.score_range,
            latency_s=result.latency_s,
            queue_s=result.queue_s,
            usage=result.usage,
        )
    if isinstance(result, GraderRank):
        return RankEntry(
            rank=list(result.rank),
            reason=result.reason,
            metadata=dict(result.metadata),
            latency_s=result.latency_s,
            queue_s=result.queue_s,
            usage=result.usage,
        )
    if isinstance(result, GraderError):
        return ErrorEntry(
            kind=result.kind,
            message=result.message,
            error_type=result.error_type,
            latency_s=result.latency_s,
            queue_s=result.queue_s,
            metadata=dict(result.metadata),
            usage=result.usage,
        )
    raise TypeError(
        f"expected GraderScore, GraderRank, GraderError or NotApplicable, got {type(result).__name__}"
    )


_ERROR_KINDS: frozenset[str] = frozenset(get_args(ErrorKind))


def result_from_entry(
    name: str, entry: ScoreEntry | RankEntry | ErrorEntry | NotApplicableEntry
) -> RowResult:
    """The grader result a results-file entry was written from (what resuming re-uses)."""
    if isinstance(entry, NotApplicableEntry):
        return NotApplicable(name=name, reason=entry.reason)
    if isinstance(entry, ScoreEntry):
        return GraderScore(
            name=name,
            score=entry.score,
            reason=entry.reason,
            metadata=entry.metadata,
            score_range=entry.score_range,
            latency_s=entry.latency_s,
            queue_s=entry.queue_s,
            usage=entry.usage,
        )
    if isinstance(entry, RankEntry):
        return GraderRank(
            name=name,
            rank=entry.rank,
            reason=entry.reason,
            metadata=entry.metadata,
            latency_s=entry.latency_s,
            queue_s=entry.queue_s,
            usage=entry.usage,
        )
    kind = cast(ErrorKind, entry.kind) if entry.kind in _ERROR_KINDS else "internal"
    return GraderError(
        name=name,
        kind=kind,
        message=entry.message,
        error_type=entry.error_type,
        metadata=entry.metadata,
        latency_s=entry.latency_s,
        queue_s=entry.queue_s,
        usage=entry.usage,
    )
