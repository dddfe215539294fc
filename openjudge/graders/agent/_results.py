"""Build [0, 1] scores for the agent rule graders without pydantic's per-call validation.

A rule grader here runs in a few microseconds, and validating its result would cost
about as much again (``GraderScore(...)`` runs the score and range validators and walks
the metadata as JSON). :func:`unit_score` skips that when, and only when, every field is
already known valid: the graders pass a score computed as a ratio or mean of numbers in
[0, 1] and metadata built from str/int/float/bool/list/dict only. The score is still
checked (one comparison, which NaN also fails); anything outside [0, 1] goes through the
validating constructor, which raises.

The result is built with ``GraderScore.model_construct`` and every field given, sharing
one fields set: pydantic copies it before any change (``model_copy``), and a set per kept
result would be one more object for the garbage collector to count and scan.

Gate: ``python bench/graders.py --only agent`` (4.7 µs per agent rule-grader call).
"""

from __future__ import annotations

from pydantic import JsonValue

from openjudge.results import GraderScore, ScoreRange

__all__ = ["UNIT_RANGE", "unit_score"]

# A constant known to be valid: built without validation so that importing a rule grader
# does not force the deferred validator build and pydantic's plugin scan (~30 ms).
UNIT_RANGE = ScoreRange.model_construct(low=0.0, high=1.0, higher_is_better=True)
"""The declared range of every agent rule grader."""

# What GraderScore(name=, score=, reason=, metadata=, score_range=) records as set.
_FIELDS_SET = {"name", "metadata", "score", "reason", "score_range"}


def unit_score(name: str, score: float, reason: str, metadata: dict[str, JsonValue]) -> GraderScore:
    """A :class:`GraderScore` in the declared range [0, 1], equal to the validated one.

    Args:
        name: The grader's name.
        score: A finite float in [0, 1] (checked).
        reason: Human-readable explanation.
        metadata: JSON values only (lists, not tuples); not checked.
    """
    if not 0.0 <= score <= 1.0:
        return GraderScore(name=name, score=score, reason=reason, metadata=metadata, score_range=UNIT_RANGE)
    return GraderScore.model_construct(
        _FIELDS_SET,
        name=name,
        metadata=metadata,
        usage=None,
        latency_s=None,
        queue_s=None,
        score=float(score),
        reason=reason,
        score_range=UNIT_RANGE,
    )
