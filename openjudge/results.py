"""The result vocabulary: what a grader returns and the words every layer shares.

This module is the floor of the package, over :mod:`openjudge.errors` (the only openjudge
module it imports; the exceptions named below are defined there): every layer (models,
graders, runner, providers, the application, integrations) may import it.

A grader returns exactly one of:

* :class:`GraderScore`: a finite number, optionally with its declared range;
* :class:`GraderRank`: a ranking (a permutation of ``1..n``) for listwise graders;
* :class:`GraderError`: a typed *system* failure. It has no ``score``: a failure of the
  system (a judge or sandbox unavailable, our own timeout, a bug, a bad dataset field) is
  never a number. Callers pick the policy (fallback value, mask) explicitly.

A pair the config's routing leaves out (the grader's ``when:`` does not hold for the
sample, or the sample does not name it) is neither graded nor failed: the runner gives
:class:`NotApplicable` for it, and an aggregate none of whose inputs applies is
:class:`NotApplicable` too. :data:`RowResult` is what a runner returns per pair and per
aggregate: a grader's result, or ``NotApplicable``. Graders never return it: whether a
grader applies is decided from the sample's routing fields before it is called, never
from the response.

A failure the *response* caused (malformed, hostile, unbounded, unparseable as an answer)
is the response's: a grader raises :class:`ResponseFailure`, and the grader boundary turns
it into a :class:`GraderScore` at the bottom of the grader's range with
``metadata["blame"] == "response"`` and the cause kept. In RL an error is not a penalty,
so a policy must never gain by breaking a grader.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeAlias

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

from openjudge.errors import ErrorKind as ErrorKind
from openjudge.errors import InvalidInputError as InvalidInputError
from openjudge.errors import ResponseFailure as ResponseFailure

__all__ = [
    "RESPONSE_BLAME",
    "ErrorKind",
    "GraderError",
    "GraderMode",
    "GraderRank",
    "GraderResult",
    "GraderScore",
    "InvalidInputError",
    "NotApplicable",
    "ResponseFailure",
    "RowResult",
    "ScoreRange",
    "TokenUsage",
    "is_response_failure",
]


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens spent by one or more chat calls.

    A plain frozen dataclass (not a pydantic model): it is built several times per
    judge call, and pydantic construction costs were measurable there. Pydantic models
    that hold one (a result's ``usage``) validate it from JSON like any dataclass.
    Gate: ``python -m bench.runner ratios`` (framework CPU per judge call <= 0.10x raw aiohttp's).

    Attributes:
        prompt_tokens: Tokens sent to the model.
        completion_tokens: Tokens the model produced.
        requests: HTTP requests made (retries and re-asks included).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.requests + other.requests,
        )


class GraderMode(StrEnum):
    """How a grader looks at its inputs: one response at a time, or a list of them."""

    POINTWISE = "pointwise"
    LISTWISE = "listwise"


_RANGE_KEYS = frozenset({"low", "high", "higher_is_better"})


class ScoreRange(BaseModel):
    """The closed interval a grader's raw score lives in.

    Attributes:
        low: Lowest possible raw score.
        high: Highest possible raw score.
        higher_is_better: Whether a larger score means a better response.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    low: float
    high: float
    higher_is_better: bool = True

    @model_validator(mode="after")
    def _check_order(self) -> ScoreRange:
        if not (math.isfinite(self.low) and math.isfinite(self.high)) or self.low >= self.high:
            raise ValueError(f"score range needs finite low < high, got [{self.low}, {self.high}]")
        return self

    @classmethod
    def coerce(cls, value: object) -> ScoreRange | None:
        """A range from ``ScoreRange``, ``(low, high)`` or ``[low, high]``, a ``{low, high}``
        mapping, or ``None``.

        Raises:
            ValueError: Anything else, or low >= high (the message shows the accepted forms).
        """
        if value is None or isinstance(value, ScoreRange):
            return value
        bounds: tuple[object, object] | None = None
        if isinstance(value, Mapping) and {"low", "high"} <= value.keys() <= _RANGE_KEYS:
            bounds = (value["low"], value["high"])
        elif isinstance(value, tuple | list) and len(value) == 2:
            bounds = (value[0], value[1])
        numbers = [float(v) for v in bounds or () if isinstance(v, int | float) and not isinstance(v, bool)]
        if len(numbers) == 2:
            low, high = numbers
            if not (math.isfinite(low) and math.isfinite(high) and low < high):
                raise ValueError(f"score_range needs finite low < high, e.g. (1, 5); got {value!r}")
            better = value.get("higher_is_better", True) if isinstance(value, Mapping) else True
            if not isinstance(better, bool):
                raise ValueError(f"score_range: higher_is_better must be true or false; got {better!r}")
            return cls(low=low, high=high, higher_is_better=better)
        raise ValueError(
            f"score_range must be two numbers (low, high) with low < high, e.g. (1, 5) "
            f"(in YAML: [1, 5]), or a ScoreRange; got {value!r}"
        )

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def normalize(self, value: float) -> float:
        """Map a raw score to [0, 1] where 1 is best."""
        unit = (value - self.low) / (self.high - self.low)
        unit = min(1.0, max(0.0, unit))
        return unit if self.higher_is_better else 1.0 - unit


class _ResultBase(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str
    metadata: Mapping[str, JsonValue] = Field(default_factory=dict)
    usage: TokenUsage | None = None
    """Tokens spent producing this result (LLM graders only)."""
    latency_s: float | None = None
    """Time the judge spent on the calls behind this result: every attempt and re-ask, waits
    for limits and retry backoff excluded (LLM graders only)."""
    queue_s: float | None = None
    """Time the calls behind this result waited for the provider's limits (LLM graders only)."""


class GraderScore(_ResultBase):
    """A numeric grade. ``score`` is always finite."""

    score: float
    reason: str = ""
    score_range: ScoreRange | None = None

    @field_validator("score")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError(f"score must be a finite number, got {value!r}")
        return value

    @model_validator(mode="after")
    def _in_range(self) -> GraderScore:
        if self.score_range is not None and not self.score_range.contains(self.score):
            raise ValueError(
                f"score {self.score} is outside the declared range "
                f"[{self.score_range.low}, {self.score_range.high}]"
            )
        return self

    @classmethod
    def _checked(
        cls,
        name: str,
        score: float,
        reason: str,
        metadata: dict[str, JsonValue],
        score_range: ScoreRange | None,
        usage: TokenUsage | None,
        latency_s: float | None,
        queue_s: float | None,
    ) -> GraderScore:
        """A score built from values its caller has checked, without validating them again.

        For the LLM grader's hot path. The caller guarantees what validation would: a finite
        float inside ``score_range`` and JSON metadata. The object is what ``GraderScore(...)``
        with every field builds (pinned by tests/test_results.py). ``model_construct`` costs
        about what validation does here; it is used for its ``_fields_set``: one set shared
        by every checked score (pydantic copies it before any change, in ``model_copy``), where
        a set of 8 names per kept result costs ~0.7 kB and one more object for the garbage
        collector to count and scan.

        Gate: ``python -m bench.runner ratios`` (framework CPU per judge call <= 0.10x raw aiohttp's).
        """
        return cls.model_construct(
            _ALL_SCORE_FIELDS,
            name=name,
            metadata=metadata,
            usage=usage,
            latency_s=latency_s,
            queue_s=queue_s,
            score=score,
            reason=reason,
            score_range=score_range,
        )

    @property
    def normalized_score(self) -> float:
        """The score mapped to [0, 1] (1 is best) using the declared range; raw if none is declared."""
        if self.score_range is None:
            return self.score
        return self.score_range.normalize(self.score)


_ALL_SCORE_FIELDS = set(GraderScore.model_fields)


class GraderRank(_ResultBase):
    """A listwise grade: ``rank[i]`` is the 1-based rank of the i-th candidate (1 is best)."""

    rank: list[int]
    reason: str = ""

    @field_validator("rank")
    @classmethod
    def _permutation(cls, value: list[int]) -> list[int]:
        if sorted(value) != list(range(1, len(value) + 1)):
            raise ValueError(f"rank must be a permutation of 1..{len(value)}, got {value}")
        return value


class GraderError(_ResultBase):
    """A failure, as data. There is deliberately no ``score`` attribute.

    Attributes:
        kind: What class of failure this is (see :data:`ErrorKind`).
        message: Human-readable explanation, naming the field or the fix where possible.
        error_type: The exception type behind the failure, if any (e.g. ``"RateLimitError"``).
    """

    kind: ErrorKind
    message: str
    error_type: str = ""

    @property
    def error(self) -> str:
        """OpenJudge-compatible alias of :attr:`message`."""
        return self.message

    @property
    def reason(self) -> str:
        """OpenJudge-compatible: an error's reason is its message."""
        return self.message


GraderResult: TypeAlias = GraderScore | GraderRank | GraderError


class NotApplicable(_ResultBase):
    """The grader (or aggregate) does not apply to this sample: neither a score nor an error.

    The config's routing decided it (``when:``, or the sample's graders field): the grader
    was not called. Aggregators leave it out (a weighted mean is over the graders that
    apply), summaries count it apart from scores and errors, and it never counts toward an
    error rate.

    Attributes:
        reason: Why it does not apply, e.g. ``"task is 'facts', not 'math'"``.
    """

    reason: str = ""


RowResult: TypeAlias = GraderResult | NotApplicable
"""What a runner gives for one (sample, grader) pair or one sample's aggregate."""


RESPONSE_BLAME = "response"
"""``metadata["blame"]`` of a score given for a failure the response caused."""


def is_response_failure(result: GraderResult) -> bool:
    """Whether ``result`` is a score given for a failure the response caused."""
    return isinstance(result, GraderScore) and result.metadata.get("blame") == RESPONSE_BLAME
