"""What a grader's result says about a pair or a response, and which graders judge pairs.

A *pair grader* reads both responses (``response_a`` and ``response_b``, or
``responses``); its result is read as a verdict on the order shown:

* a score with ``metadata["winner"]`` in ``A``/``B``/``tie`` (the comparison graders,
  :class:`~openjudge.graders.comparison.PairwiseJudge`) is that winner;
* otherwise a score with a declared range is P(shown first is better): above the
  middle of the range "A", below it "B", at it a tie;
* a rank of two responses (listwise graders) names the better one; with
  ``metadata["rewards"]`` (the group tournament) equal rewards are a tie.

A *single grader* scores one response; on a pair, the response with the higher
normalised score wins (equal scores tie). A result that cannot be read this way is a
failure of kind ``no_verdict``; a :class:`GraderError` is a failure of its own kind.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, TypeAlias

from openjudge.results import GraderError, GraderRank, GraderResult, GraderScore
from openjudge.runner._grader_config import GraderConfig

__all__ = [
    "NONE",
    "TIE",
    "A",
    "B",
    "GraderKind",
    "PairReading",
    "SingleReading",
    "grader_kind",
    "kind_of_fields",
    "read_pair",
    "read_single",
]

GraderKind: TypeAlias = Literal["pair", "single"]

A, B, TIE, NONE = 0, 1, 2, -1
"""Verdict codes: the first response wins, the second wins, a tie, no verdict."""

_WINNER_CODES = {"A": A, "B": B, "tie": TIE}
_PAIR_FIELDS = frozenset({"response_a", "response_b", "responses"})
_EPS = 1e-9


def grader_kind(name: str, config: GraderConfig) -> GraderKind:
    """``"pair"`` if the grader reads ``response_a``/``response_b`` or ``responses``, else ``"single"``.

    A dict mapper is read by the sample fields its paths start with; without a mapper, by
    the grader's own inputs.

    Raises:
        ValueError: The mapper is a function, so what it reads cannot be known.
    """
    mapper = config.mapper
    if mapper is None:
        fields = set(config.grader.input_spec().names)
    elif isinstance(mapper, Mapping):
        fields = {str(path).split(".", 1)[0] for path in mapper.values()}
    else:
        raise ValueError(
            f"grader {name!r} has a function mapper, so whether it judges pairs cannot be told; "
            f"pass kinds={{{name!r}: 'pair'}} (or 'single')"
        )
    return kind_of_fields(fields)


def kind_of_fields(fields: Iterable[str]) -> GraderKind:
    """``"pair"`` if the sample fields a grader reads include a pair of responses."""
    return "pair" if set(fields) & _PAIR_FIELDS else "single"


@dataclass(frozen=True, slots=True)
class PairReading:
    """A pair grader's result on one shown order.

    Attributes:
        verdict: :data:`A` (shown first wins), :data:`B`, :data:`TIE`, or :data:`NONE`.
        first_preference: P(shown first is better) in [0, 1] (NaN without a verdict).
        failure: The failure kind when there is no verdict.
        message: What went wrong, for the report.
        judge_flip: For graders that judge both orders inside (``metadata["flip"]``):
            1.0 if their two orders disagreed, 0.0 if not, NaN if not reported.
        judge_first_wins: Inner calls won by the response they showed first.
        judge_decisive: Inner calls that named a winner.
    """

    verdict: int
    first_preference: float
    failure: str | None = None
    message: str = ""
    judge_flip: float = math.nan
    judge_first_wins: int = 0
    judge_decisive: int = 0


def _from_preference(p: float) -> int:
    if p > 0.5 + _EPS:
        return A
    if p < 0.5 - _EPS:
        return B
    return TIE


def _inner(result: GraderScore) -> tuple[float, int, int]:
    flip = result.metadata.get("flip")
    judge_flip = float(flip) if isinstance(flip, bool) else math.nan
    wins = decisive = 0
    inner = result.metadata.get("verdicts")
    if isinstance(inner, list):
        for call in inner:
            raw = call.get("raw_winner") if isinstance(call, dict) else None
            if raw in ("A", "B"):
                decisive += 1
                wins += raw == "A"
    return judge_flip, wins, decisive


def read_pair(result: GraderResult) -> PairReading:
    """Read a pair grader's result on the order it was shown."""
    if isinstance(result, GraderError):
        return PairReading(NONE, math.nan, result.kind, result.message)
    if isinstance(result, GraderRank):
        rewards = result.metadata.get("rewards")
        if (
            isinstance(rewards, list)
            and len(rewards) == 2
            and all(isinstance(r, int | float) for r in rewards)
        ):
            first, second = float(rewards[0]), float(rewards[1])  # type: ignore[arg-type]  # checked above
            verdict = TIE if abs(first - second) <= _EPS else (A if first > second else B)
        elif len(result.rank) == 2:
            verdict = A if result.rank[0] < result.rank[1] else B
        else:
            return PairReading(
                NONE, math.nan, "no_verdict", f"a rank of {len(result.rank)} responses for a pair"
            )
        return PairReading(verdict, {A: 1.0, B: 0.0, TIE: 0.5}[verdict])
    winner = result.metadata.get("winner")
    judge_flip, wins, decisive = _inner(result)
    normalised = result.normalized_score if result.score_range is not None else None
    if isinstance(winner, str) and winner in _WINNER_CODES:
        verdict = _WINNER_CODES[winner]
        preference = normalised if normalised is not None else {A: 1.0, B: 0.0, TIE: 0.5}[verdict]
    elif normalised is not None:
        verdict, preference = _from_preference(normalised), normalised
    else:
        return PairReading(
            NONE,
            math.nan,
            "no_verdict",
            "a pair grader's score needs a declared score_range (read as P(first is better)) "
            "or metadata['winner']",
        )
    return PairReading(verdict, preference, None, "", judge_flip, wins, decisive)


@dataclass(frozen=True, slots=True)
class SingleReading:
    """A single grader's result on one response.

    Attributes:
        score: The raw score (NaN without one).
        oriented: The normalised score (1 best) when the grader declares a range, else the
            raw score, read as higher-is-better; NaN without a score.
        failure: The failure kind when there is no score.
        message: What went wrong.
    """

    score: float
    oriented: float
    failure: str | None = None
    message: str = ""


def read_single(result: GraderResult) -> SingleReading:
    """Read a single grader's result on one response."""
    if isinstance(result, GraderError):
        return SingleReading(math.nan, math.nan, result.kind, result.message)
    if isinstance(result, GraderRank):
        return SingleReading(
            math.nan, math.nan, "no_verdict", "a rank where a score of one response was expected"
        )
    return SingleReading(result.score, result.normalized_score)
