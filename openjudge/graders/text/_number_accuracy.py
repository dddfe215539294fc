"""Compare the numbers written in a response with those in a reference."""

from __future__ import annotations

import heapq
import math
import re
import unicodedata
from typing import ClassVar, Literal, TypeAlias

from pydantic import JsonValue

from openjudge.graders._inputs import require_str
from openjudge.graders.base_grader import BaseGrader, InvalidInputError, grader_boundary
from openjudge.results import GraderScore, ScoreRange

__all__ = ["NumberAccuracyGrader", "NumberScoring", "extract_numbers"]

NumberScoring: TypeAlias = Literal["recall", "f1", "all"]
_SCORINGS: tuple[NumberScoring, ...] = ("recall", "f1", "all")
_METADATA_LIST_CAP = 50

# A sign counts only where it cannot be a hyphen or an operator between two operands:
# not right after an ASCII letter, digit, "_" or closing bracket ("2020-2021" is two
# positive numbers; "温度是-3" is negative).
_NUMBER = re.compile(
    r"(?:(?<![A-Za-z0-9_)\]])(?P<sign>[-+\u2212]))?"
    r"(?<![0-9.])"
    r"(?P<mantissa>(?:[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])|[0-9]+)(?:\.[0-9]+)?|\.[0-9]+)"
    r"(?P<exponent>[eE][-+]?[0-9]+)?"
)


def extract_numbers(text: str) -> list[float]:
    """Finite numbers written in ``text``, in order of appearance.

    Text is NFKC-normalised first (full-width digits become ASCII). Recognised:
    integers, decimals (``3.14``, ``.5``), thousands separators (``1,234,567``),
    scientific notation (``6.02e23``) and a leading ``+``, ``-`` or ``−`` (U+2212)
    unless it follows an ASCII letter, digit or closing bracket (then it is read as a
    hyphen or an operator: ``2020-2021`` is 2020 and 2021). ``50%`` is 50 and ``1/2`` is
    two numbers. Values that overflow a float are skipped.

    Example:
        >>> extract_numbers("Sales rose 12.5% to $1,234 (from -3e2) in 2020-2021.")
        [12.5, 1234.0, -300.0, 2020.0, 2021.0]
    """
    text = unicodedata.normalize("NFKC", text)
    numbers: list[float] = []
    for match in _NUMBER.finditer(text):
        literal = match["mantissa"].replace(",", "") + (match["exponent"] or "")
        value = float(literal)
        if not math.isfinite(value):
            continue
        numbers.append(-value if match["sign"] in ("-", "\u2212") else value)
    return numbers


def count_matches(response: list[float], reference: list[float], abs_tol: float, rel_tol: float) -> int:
    """Size of a maximum one-to-one matching of response numbers to reference numbers.

    A response number ``x`` may match reference number ``r`` when
    ``|x - r| <= max(abs_tol, rel_tol * |r|)``: each reference number is an interval
    and each response number a point, and the classic sweep (give each point, in
    increasing order, the open interval that ends first) finds a maximum matching.
    """
    windows = sorted(
        (r - max(abs_tol, rel_tol * abs(r)), r + max(abs_tol, rel_tol * abs(r))) for r in reference
    )
    open_ends: list[float] = []
    matched = 0
    i = 0
    for x in sorted(response):
        while i < len(windows) and windows[i][0] <= x:
            heapq.heappush(open_ends, windows[i][1])
            i += 1
        while open_ends and open_ends[0] < x:
            heapq.heappop(open_ends)
        if open_ends:
            heapq.heappop(open_ends)
            matched += 1
    return matched


def _capped(values: list[float]) -> list[JsonValue]:
    return list(values[:_METADATA_LIST_CAP])


class NumberAccuracyGrader(BaseGrader):
    """How many of the reference's numbers the response reproduces, within a tolerance.

    Numbers are extracted from both texts with :func:`extract_numbers` and matched
    one-to-one regardless of order (a maximum matching, so each response number
    counts for at most one reference number). A response number ``x`` matches a
    reference number ``r`` when ``|x - r| <= max(abs_tol, rel_tol * |r|)``.

    Inputs:
        response: The text being graded.
        reference: Text containing the expected numbers. A reference without any
            number is an ``invalid_input`` error (there is nothing to grade against).

    Score in [0, 1], higher is better, by ``scoring``:
        ``recall`` (default): matched / number of reference numbers. Extra numbers in
        the response are not penalised.
        ``f1``: harmonic mean of that recall and precision (matched / number of
        response numbers), so extra numbers are penalised.
        ``all``: 1.0 if every reference number is matched, else 0.0.
    A response without numbers scores 0.0.

    Args:
        abs_tol: Absolute tolerance (>= 0).
        rel_tol: Relative tolerance (>= 0), relative to the reference number.
        scoring: ``recall``, ``f1`` or ``all``.
        name: Result name (default ``"number_accuracy"``).
        description: One line on what is measured.
    """

    default_name: ClassVar[str] = "number_accuracy"
    default_score_range: ClassVar[ScoreRange | None] = ScoreRange(low=0.0, high=1.0)

    def __init__(
        self,
        *,
        abs_tol: float = 1e-6,
        rel_tol: float = 0.0,
        scoring: NumberScoring = "recall",
        name: str = "",
        description: str = "",
    ) -> None:
        for field, value in (("abs_tol", abs_tol), ("rel_tol", rel_tol)):
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{field} must be a finite number >= 0, got {value!r}")
        if scoring not in _SCORINGS:
            raise ValueError(f"scoring must be one of {', '.join(_SCORINGS)}; got {scoring!r}")
        super().__init__(name=name, description=description)
        self.abs_tol = float(abs_tol)
        self.rel_tol = float(rel_tol)
        self.scoring: NumberScoring = scoring

    @grader_boundary
    async def aevaluate(self, *, response: str, reference: str) -> GraderScore:
        """Grade the numbers in ``response`` against those in ``reference``."""
        response = require_str("response", response)
        reference = require_str("reference", reference)
        expected = extract_numbers(reference)
        if not expected:
            raise InvalidInputError("input 'reference' contains no numbers to compare against")
        found = extract_numbers(response)
        matched = count_matches(found, expected, self.abs_tol, self.rel_tol)
        recall = matched / len(expected)
        precision = matched / len(found) if found else 0.0
        if self.scoring == "recall":
            score = recall
        elif self.scoring == "f1":
            score = 0.0 if matched == 0 else 2 * precision * recall / (precision + recall)
        else:
            score = 1.0 if matched == len(expected) else 0.0
        metadata: dict[str, JsonValue] = {
            "scoring": self.scoring,
            "matched": matched,
            "reference_count": len(expected),
            "response_count": len(found),
            "recall": recall,
            "precision": precision,
            "reference_numbers": _capped(expected),
            "response_numbers": _capped(found),
        }
        return GraderScore(
            name=self.name,
            score=score,
            reason=f"{matched} of {len(expected)} reference numbers found in the response "
            f"({len(found)} numbers in the response)",
            metadata=metadata,
            score_range=self.score_range,
        )
