"""Result models every grader returns.

A grader returns exactly one of:

* :class:`GraderScore`: a finite number, optionally with its declared range;
* :class:`GraderRank`: a ranking (a permutation of ``1..n``) for listwise graders;
* :class:`GraderError`: a typed failure. It has no ``score``: a failure is never a number.
  Callers pick the policy (fallback value, mask) explicitly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from enum import StrEnum
from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

from openjudge.models.usage import TokenUsage

__all__ = [
    "ErrorKind",
    "GraderError",
    "GraderMode",
    "GraderRank",
    "GraderResult",
    "GraderScore",
    "ScoreRange",
]


class GraderMode(StrEnum):
    """How a grader looks at its inputs: one response at a time, or a list of them."""

    POINTWISE = "pointwise"
    LISTWISE = "listwise"


ErrorKind: TypeAlias = Literal[
    "parse_error",
    "provider_error",
    "timeout",
    "invalid_input",
    "refused",
    "budget_exceeded",
    "internal",
]


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

    @property
    def normalized_score(self) -> float:
        """The score mapped to [0, 1] (1 is best) using the declared range; raw if none is declared."""
        if self.score_range is None:
            return self.score
        return self.score_range.normalize(self.score)


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
