"""What every group grader returns, and how it becomes one result per response.

A group grader (listwise, all-pairs tournament, knockout, anchor comparison) judges the
``n`` responses to one query together and returns one :class:`GraderRank` whose metadata
holds, in input order:

* ``scores``: each response's score in [0, 1] (1 best), or ``null`` for a *failed
  member*: a response whose comparisons failed. A failed member never gets a number
  from a partial record (see each grader for what counts as failed);
* ``member_errors``: ``null`` or ``{"kind": ..., "message": ...}`` per response;
* ``scoring``: how the scores were made (``borda``, ``bradley_terry`` or ``anchor``);
* ``too_long`` (when a response made the judge's prompt too long) and ``degenerate`` (a
  response with no content): the members scored 0.0 for it without being judged, each the
  response's failure (cause ``response_too_long``, ``degenerate_response``) in :func:`member_results`.

``rank`` orders the scored responses by score (ties by position), failed members last.
When every member failed, the result is a :class:`GraderError` instead.

:func:`member_results` splits such a result into one :class:`GraderScore` (range [0, 1])
or :class:`GraderError` per response, which aggregators combine with pointwise results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from openjudge.results import (
    RESPONSE_BLAME,
    ErrorKind,
    GraderError,
    GraderRank,
    GraderResult,
    GraderScore,
    ScoreRange,
    TokenUsage,
)

__all__ = ["UNIT_RANGE", "MemberError", "finish_group", "format_scores", "group_rank", "member_results"]

UNIT_RANGE = ScoreRange(low=0.0, high=1.0)

_KINDS: frozenset[str] = frozenset(
    {"parse_error", "provider_error", "timeout", "invalid_input", "refused", "budget_exceeded", "internal"}
)


@dataclass(frozen=True, slots=True)
class MemberError:
    """Why one response of a group has no score."""

    kind: ErrorKind
    message: str

    @classmethod
    def of(cls, error: GraderError, prefix: str = "") -> MemberError:
        return cls(error.kind, f"{prefix}{error.message}")

    def as_json(self) -> dict[str, JsonValue]:
        return {"kind": self.kind, "message": self.message}


def _ranks(scores: Sequence[float | None]) -> list[int]:
    order = sorted(
        range(len(scores)),
        key=lambda k: (scores[k] is None, -(scores[k] or 0.0), k),
    )
    rank = [0] * len(scores)
    for place, k in enumerate(order, start=1):
        rank[k] = place
    return rank


def format_scores(scores: Sequence[float | None], *, digits: int = 3) -> str:
    """The scores for a reason line: ``"0.500, -, 1.000"`` (``-`` for a failed member)."""
    return ", ".join("-" if s is None else f"{s:.{digits}f}" for s in scores)


def finish_group(
    name: str,
    scores: Sequence[float | None],
    errors: Sequence[MemberError | None],
    *,
    scoring: str,
    reason: str,
    metadata: Mapping[str, JsonValue],
    usage: TokenUsage | None,
    latency_s: float | None,
) -> GraderRank | GraderError:
    """The grader's result: a rank with the shared metadata, or an error if no member was scored."""
    if all(s is None for s in scores):
        failures = [e for e in errors if e is not None]
        first = failures[0] if failures else MemberError("internal", "no response was scored")
        return GraderError(
            name=name,
            kind=first.kind,
            message=f"no response of the group could be scored: {first.message}",
            usage=usage,
            latency_s=latency_s,
        )
    return group_rank(
        name,
        scores,
        errors,
        scoring=scoring,
        reason=reason,
        metadata=metadata,
        usage=usage,
        latency_s=latency_s,
    )


def group_rank(
    name: str,
    scores: Sequence[float | None],
    errors: Sequence[MemberError | None],
    *,
    scoring: str,
    reason: str,
    metadata: Mapping[str, JsonValue],
    usage: TokenUsage | None = None,
    latency_s: float | None = None,
) -> GraderRank:
    """The rank of a group with at least one scored member, with the shared metadata."""
    shared: dict[str, JsonValue] = {
        "scores": list(scores),
        "member_errors": [None if e is None else e.as_json() for e in errors],
        "scoring": scoring,
    }
    return GraderRank(
        name=name,
        rank=_ranks(scores),
        reason=reason,
        metadata={**metadata, **shared},
        usage=usage,
        latency_s=latency_s,
    )


def _member_error(name: str, raw: JsonValue) -> GraderError:
    kind: ErrorKind = "internal"
    message = "no score for this response"
    if isinstance(raw, dict):
        raw_kind, raw_message = raw.get("kind"), raw.get("message")
        if isinstance(raw_kind, str) and raw_kind in _KINDS:
            kind = raw_kind  # type: ignore[assignment]  # checked against the ErrorKind values
        if isinstance(raw_message, str):
            message = raw_message
    return GraderError(name=name, kind=kind, message=message)


def member_results(result: GraderResult, n: int) -> list[GraderScore | GraderError]:
    """One result per response of a group grader's result (see the module docstring).

    A :class:`GraderError` for the whole group becomes the same error for every response.

    Raises:
        ValueError: ``result`` is not a group grader's result for ``n`` responses.
    """
    name = result.name
    if isinstance(result, GraderError):
        return [result] * n
    scores = result.metadata.get("scores")
    if not isinstance(result, GraderRank) or not isinstance(scores, list) or len(scores) != n:
        raise ValueError(f"{name}: not a group grader result for {n} responses (no metadata['scores'])")
    errors = result.metadata.get("member_errors")
    errors_list: list[JsonValue] = errors if isinstance(errors, list) and len(errors) == n else [None] * n
    blamed_members: dict[int, str] = {}
    for cause, key in (("response_too_long", "too_long"), ("degenerate_response", "degenerate")):
        members = result.metadata.get(key)
        for k in members if isinstance(members, list) else ():
            if isinstance(k, int):
                blamed_members[k] = cause
    out: list[GraderScore | GraderError] = []
    for k, (score, error) in enumerate(zip(scores, errors_list, strict=True)):
        if isinstance(score, int | float) and not isinstance(score, bool):
            blamed: dict[str, JsonValue] = (
                {"blame": RESPONSE_BLAME, "cause": blamed_members[k]} if k in blamed_members else {}
            )
            out.append(
                GraderScore(
                    name=name,
                    score=float(score),
                    score_range=UNIT_RANGE,
                    reason=result.reason,
                    metadata=blamed,
                )
            )
        else:
            out.append(_member_error(name, error))
    return out
