"""Penalise responses shorter or longer than a target length range."""

from __future__ import annotations

import math
from typing import ClassVar, Literal, TypeAlias

from pydantic import JsonValue

from openjudge.graders._inputs import require_str
from openjudge.graders.base_grader import BaseGrader, grader_boundary
from openjudge.graders.text._tokens import normalize_for_counting
from openjudge.results import GraderScore, ScoreRange

__all__ = ["LengthPenaltyGrader", "LengthUnit"]

# A character drawn as a blank that is not whitespace to str.split (the braille blank).
_BLANKS = str.maketrans({"\u2800": " "})

LengthUnit: TypeAlias = Literal["chars", "tokens"]


class LengthPenaltyGrader(BaseGrader):
    """A penalty in [-1, 0] for length outside ``[min_length, max_length]``; higher is better.

    ``score = -min(1, penalty_rate * distance)``, where ``distance`` is how many units
    the response is below ``min_length`` or above ``max_length`` (0 inside the range,
    which scores 0.0, no penalty). With the defaults each character outside the range
    costs 0.01 and 100 or more characters outside cost the full -1.

    Units: ``chars`` counts Unicode code points after NFC normalisation (so a
    decomposed ``é`` counts once); ``tokens`` counts whitespace-separated words, which
    undercounts scripts written without spaces (Chinese, Japanese): use ``chars`` there.

    Inputs:
        response: The text being measured.

    Args:
        min_length: Shortest length without penalty (>= 0).
        max_length: Longest length without penalty (>= min_length), or None for no upper bound.
        unit: ``chars`` or ``tokens``.
        penalty_rate: Penalty per unit outside the range (> 0).
        name: Result name (default ``"length_penalty"``).
        description: One line on what is measured.
    """

    default_name: ClassVar[str] = "length_penalty"
    default_score_range: ClassVar[ScoreRange | None] = ScoreRange(low=-1.0, high=0.0)

    def __init__(
        self,
        *,
        min_length: int = 10,
        max_length: int | None = 1000,
        unit: LengthUnit = "chars",
        penalty_rate: float = 0.01,
        name: str = "",
        description: str = "",
    ) -> None:
        if min_length < 0 or (max_length is not None and max_length < min_length):
            raise ValueError(f"need 0 <= min_length <= max_length, got {min_length} and {max_length}")
        if unit not in ("chars", "tokens"):
            raise ValueError(f"unit must be 'chars' or 'tokens', got {unit!r}")
        if not (math.isfinite(penalty_rate) and penalty_rate > 0):
            raise ValueError(f"penalty_rate must be a finite number > 0, got {penalty_rate!r}")
        super().__init__(name=name, description=description)
        self.min_length = min_length
        self.max_length = max_length
        self.unit: LengthUnit = unit
        self.penalty_rate = float(penalty_rate)

    def measure(self, text: str) -> int:
        """The length of ``text`` in this grader's unit, counted as a reader sees it.

        Invisible characters are dropped first (:func:`~openjudge.graders.text._tokens.normalize_for_counting`),
        so zero-width padding cannot lift a short response over ``min_length``, and blank
        look-alikes such as U+2800 separate words, so they cannot hide words from ``max_length``.
        """
        text = normalize_for_counting(text)
        if self.unit == "tokens":
            return len(text.translate(_BLANKS).split())
        return len(text)

    @grader_boundary
    async def aevaluate(self, *, response: str) -> GraderScore:
        """Penalise ``response`` for being outside the length range."""
        response = require_str("response", response)
        length = self.measure(response)
        if length < self.min_length:
            distance = self.min_length - length
            reason = f"too short: {length} < {self.min_length} {self.unit}"
        elif self.max_length is not None and length > self.max_length:
            distance = length - self.max_length
            reason = f"too long: {length} > {self.max_length} {self.unit}"
        else:
            distance = 0
            reason = f"length {length} {self.unit} is within range"
        penalty = min(1.0, self.penalty_rate * distance)
        metadata: dict[str, JsonValue] = {
            "length": length,
            "unit": self.unit,
            "min_length": self.min_length,
            "max_length": self.max_length,
            "distance": distance,
        }
        return GraderScore(
            name=self.name,
            score=-penalty if penalty else 0.0,
            reason=reason,
            metadata=metadata,
            score_range=self.score_range,
        )
