"""Compare a response with a reference string: exact, normalised, substring or regex."""

from __future__ import annotations

import re
from typing import ClassVar, Literal, TypeAlias

from pydantic import JsonValue

from openjudge.graders.base_grader import BaseGrader, InvalidInputError, grader_boundary
from openjudge.graders.inputs import require_str
from openjudge.graders.schema import GraderScore, ScoreRange
from openjudge.graders.text.tokens import normalize_for_match

__all__ = ["MatchMode", "StringMatchGrader"]

MatchMode: TypeAlias = Literal["exact", "normalized", "contains", "regex"]
_MODES: tuple[MatchMode, ...] = ("exact", "normalized", "contains", "regex")
_REASONS: dict[MatchMode, tuple[str, str]] = {
    "exact": ("response equals the reference", "response differs from the reference"),
    "normalized": (
        "response equals the reference after normalization",
        "response differs from the reference after normalization",
    ),
    "contains": ("response contains the reference", "response does not contain the reference"),
    "regex": ("response matches the reference pattern", "response does not match the reference pattern"),
}


class StringMatchGrader(BaseGrader):
    """1.0 if the response matches the reference under the chosen mode, else 0.0.

    Inputs:
        response: The text being graded.
        reference: The expected text (``exact``, ``normalized``, ``contains``) or a
            regular expression (``regex``).

    Score: 0.0 or 1.0 in [0, 1]; higher is better.

    Modes:
        ``exact``: ``response == reference`` (after stripping both ends when ``strip``;
        case-folded when not ``case_sensitive``).
        ``normalized``: equal after :func:`~openjudge.graders.text.tokens.normalize_for_match`
        (NFKC, case-fold, punctuation deleted, whitespace collapsed).
        ``contains``: the reference occurs in the response. An empty reference is
        contained in every response.
        ``regex``: ``re.search`` (or ``re.fullmatch`` with ``full_match``) of the pattern
        in the response. A pattern that does not compile is an ``invalid_input`` error.
        Python's ``re`` has no time limit: a pathological pattern on a long response
        can backtrack for a long time, so use trusted patterns.

    Args:
        match_mode: One of ``exact``, ``normalized``, ``contains``, ``regex``.
        case_sensitive: For ``exact``, ``contains`` and ``regex``; ``normalized`` always ignores case.
        strip: Strip leading and trailing whitespace of both texts (``exact`` and ``contains``).
        full_match: For ``regex``: the whole response must match.
        name: Result name (default ``"string_match"``).
        description: One line on what is measured.

    Example:
        >>> grader = StringMatchGrader("normalized")
        >>> # await grader.aevaluate(response="Paris!", reference="paris") -> score 1.0
    """

    default_name: ClassVar[str] = "string_match"
    default_score_range: ClassVar[ScoreRange | None] = ScoreRange(low=0.0, high=1.0)

    def __init__(
        self,
        match_mode: MatchMode = "exact",
        *,
        case_sensitive: bool = True,
        strip: bool = True,
        full_match: bool = False,
        name: str = "",
        description: str = "",
    ) -> None:
        if match_mode not in _MODES:
            raise ValueError(f"match_mode must be one of {', '.join(_MODES)}; got {match_mode!r}")
        super().__init__(name=name, description=description)
        self.match_mode: MatchMode = match_mode
        self.case_sensitive = case_sensitive
        self.strip = strip
        self.full_match = full_match

    def _matches(self, response: str, reference: str) -> bool:
        mode = self.match_mode
        if mode == "normalized":
            return normalize_for_match(response) == normalize_for_match(reference)
        if mode == "regex":
            flags = 0 if self.case_sensitive else re.IGNORECASE
            try:
                pattern = re.compile(reference, flags)
            except (re.error, RecursionError, OverflowError) as exc:
                raise InvalidInputError(
                    f"input 'reference' is not a valid regular expression: {exc}"
                ) from exc
            found = pattern.fullmatch(response) if self.full_match else pattern.search(response)
            return found is not None
        if self.strip:
            response, reference = response.strip(), reference.strip()
        if not self.case_sensitive:
            response, reference = response.casefold(), reference.casefold()
        return response == reference if mode == "exact" else reference in response

    @grader_boundary
    async def aevaluate(self, *, response: str, reference: str) -> GraderScore:
        """Grade ``response`` against ``reference`` (see the class docstring)."""
        response = require_str("response", response)
        reference = require_str("reference", reference)
        matched = self._matches(response, reference)
        metadata: dict[str, JsonValue] = {"match_mode": self.match_mode, "matched": matched}
        return GraderScore(
            name=self.name,
            score=1.0 if matched else 0.0,
            reason=_REASONS[self.match_mode][0 if matched else 1],
            metadata=metadata,
            score_range=self.score_range,
        )
