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
    """Wall time of the judge calls behind this result (LLM graders only)."""


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
