"""ProvidedScoreGrader: a score computed upstream, taken as a grader result.

Some scores exist before grading: a dataset column, a metric another tool computed, or
the reward VERL's reward loop already gave a trajectory (the VERL group stage exposes
it as the sample field ``pointwise``). Mapping it to this grader's ``score`` input lets
aggregators weigh it with the other graders, normalised by the declared range.
"""

from __future__ import annotations

import math
from typing import ClassVar

from openjudge.graders.base_grader import BaseGrader, InvalidInputError, grader_boundary
from openjudge.results import GraderScore, ScoreRange

__all__ = ["ProvidedScoreGrader"]


class ProvidedScoreGrader(BaseGrader):
    """The ``score`` input as a :class:`GraderScore` (a missing or non-numeric one is an error).

    Inputs:
        score: The number (an int or a float; not a bool).

    Args:
        score_range: ``(low, high)`` of the score, so aggregators normalise it; a score
            outside it is ``invalid_input``. ``None``: raw.
        name: Result name (default ``"provided_score"``).
    """

    default_name: ClassVar[str] = "provided_score"

    def __init__(
        self, *, score_range: ScoreRange | tuple[float, float] | None = None, name: str = ""
    ) -> None:
        super().__init__(name=name, description="A score computed upstream", score_range=score_range)

    @grader_boundary
    async def aevaluate(self, *, score: float) -> GraderScore:
        if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
            raise InvalidInputError(f"score: expected a finite number, got {score!r}")
        value = float(score)
        if self.score_range is not None and not self.score_range.contains(value):
            raise InvalidInputError(
                f"score: {value:g} is outside the declared range [{self.score_range.low:g}, {self.score_range.high:g}]"
            )
        return GraderScore(name=self.name, score=value, reason="provided", score_range=self.score_range)
