"""Compare a response with a reference string: exact, normalised, substring or regex."""

from __future__ import annotations

import math
import re
from typing import ClassVar, Literal, TypeAlias

from pydantic import JsonValue

from openjudge.graders._inputs import require_str
from openjudge.graders._safe_regex import SafeRegex
from openjudge.graders._workers import WorkerPool, WorkTimeout
from openjudge.graders.base_grader import BaseGrader, InvalidInputError, grader_boundary
from openjudge.graders.text._tokens import normalize_for_match
from openjudge.results import GraderError, GraderScore, ResponseFailure, ScoreRange

__all__ = ["MatchMode", "StringMatchGrader"]

MatchMode: TypeAlias = Literal["exact", "normalized", "contains", "regex"]
_MODES: tuple[MatchMode, ...] = ("exact", "normalized", "contains", "regex")
_PATTERN_CACHE = 256
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
        ``normalized``: equal after :func:`~openjudge.graders.text._tokens.normalize_for_match`
        (NFKC, case-fold, punctuation deleted, whitespace collapsed).
        ``contains``: the reference occurs in the response. An empty reference is
        contained in every response.
        ``regex``: search (or full match with ``full_match``) of the pattern in the
        response, in linear time with RE2 (see :mod:`openjudge.graders._safe_regex` for
        its few differences from ``re``). A pattern RE2 cannot run (look-around,
        back-references) runs on ``re`` in a worker process that is killed after
        ``regex_timeout_s``: the response's failure (cause ``timeout``, scored at the
        bottom; the text made the fixed pattern backtrack). A pattern that does
        not compile is an ``invalid_input`` error.

    Args:
        match_mode: One of ``exact``, ``normalized``, ``contains``, ``regex``.
        case_sensitive: For ``exact``, ``contains`` and ``regex``; ``normalized`` always ignores case.
        strip: Strip leading and trailing whitespace of both texts (``exact`` and ``contains``).
        full_match: For ``regex``: the whole response must match.
        regex_timeout_s: Time limit of a backtracking (non-RE2) match.
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
        regex_timeout_s: float = 1.0,
        name: str = "",
        description: str = "",
    ) -> None:
        if match_mode not in _MODES:
            raise ValueError(f"match_mode must be one of {', '.join(_MODES)}; got {match_mode!r}")
        if not (math.isfinite(regex_timeout_s) and regex_timeout_s > 0):
            raise ValueError(f"regex_timeout_s must be a finite number > 0, got {regex_timeout_s!r}")
        super().__init__(name=name, description=description)
        self.match_mode: MatchMode = match_mode
        self.case_sensitive = case_sensitive
        self.strip = strip
        self.full_match = full_match
        self.regex_timeout_s = float(regex_timeout_s)
        self.workers = WorkerPool(max_workers=1, preload=("openjudge.graders._safe_regex",))
        self._patterns: dict[str, SafeRegex] = {}

    def _pattern(self, reference: str) -> SafeRegex:
        pattern = self._patterns.get(reference)
        if pattern is None:
            try:
                pattern = SafeRegex(reference, ignore_case=not self.case_sensitive)
            except (re.error, RecursionError, OverflowError) as exc:
                raise InvalidInputError(
                    f"input 'reference' is not a valid regular expression: {exc}"
                ) from exc
            if len(self._patterns) >= _PATTERN_CACHE:
                self._patterns.clear()
            self._patterns[reference] = pattern
        return pattern

    def _matches(self, response: str, reference: str) -> bool:
        mode = self.match_mode
        if mode == "normalized":
            return normalize_for_match(response) == normalize_for_match(reference)
        if self.strip:
            response, reference = response.strip(), reference.strip()
        if not self.case_sensitive:
            response, reference = response.casefold(), reference.casefold()
        return response == reference if mode == "exact" else reference in response

    @grader_boundary
    async def aevaluate(self, *, response: str, reference: str) -> GraderScore | GraderError:
        """Grade ``response`` against ``reference`` (see the class docstring)."""
        response = require_str("response", response)
        reference = require_str("reference", reference)
        if self.match_mode == "regex":
            pattern = self._pattern(reference)
            try:
                matched = await pattern.amatches(
                    response,
                    "fullmatch" if self.full_match else "search",
                    workers=self.workers,
                    timeout_s=self.regex_timeout_s,
                )
            except WorkTimeout:
                # The pattern is fixed; what makes it backtrack without end is the response's text.
                raise ResponseFailure(
                    "timeout",
                    f"the pattern needs backtracking (RE2 cannot run it) and did not finish on the "
                    f"response within {self.regex_timeout_s:g} s",
                ) from None
        else:
            matched = self._matches(response, reference)
        metadata: dict[str, JsonValue] = {"match_mode": self.match_mode, "matched": matched}
        return GraderScore(
            name=self.name,
            score=1.0 if matched else 0.0,
            reason=_REASONS[self.match_mode][0 if matched else 1],
            metadata=metadata,
            score_range=self.score_range,
        )
