"""Build [0, 1] scores for the agent rule graders without pydantic's per-call validation.

A rule grader here runs in a few microseconds, and validating its result would cost
about as much again (``GraderScore(...)`` runs the score and range validators and walks
the metadata as JSON). :func:`unit_score` skips that when, and only when, every field is
already known valid: the graders pass a score computed as a ratio or mean of numbers in
[0, 1] and metadata built from str/int/float/bool/list/dict only. The score is still
checked (one comparison, which NaN also fails); anything outside [0, 1] goes through the
validating constructor, which raises.

``GraderScore.model_construct`` would skip validation too, but it resolves aliases and
defaults field by field and measures slower than validation itself (about 10 µs against
5.5 µs here), so this sets the same four attributes ``model_construct`` sets, directly.
If ``GraderScore`` ever gains fields, a post-init hook or is a root model, the shortcut
switches itself off and every result is validated.
"""

from __future__ import annotations

from pydantic import JsonValue

from openjudge.results import GraderScore, ScoreRange

__all__ = ["UNIT_RANGE", "unit_score"]

# A constant known to be valid: built without validation so that importing a rule grader
# does not force the deferred validator build and pydantic's plugin scan (~30 ms).
UNIT_RANGE = ScoreRange.model_construct(low=0.0, high=1.0, higher_is_better=True)
"""The declared range of every agent rule grader."""

_FIELDS = ("name", "metadata", "usage", "latency_s", "queue_s", "score", "reason", "score_range")
_FIELDS_SET = frozenset({"name", "metadata", "score", "reason", "score_range"})
_SHORTCUT_OK = (
    tuple(GraderScore.model_fields) == _FIELDS
    and not GraderScore.__pydantic_post_init__
    and not GraderScore.__pydantic_root_model__
    and GraderScore.model_config.get("extra") != "allow"
)
_new = object.__new__
_set = object.__setattr__


def unit_score(name: str, score: float, reason: str, metadata: dict[str, JsonValue]) -> GraderScore:
    """A :class:`GraderScore` in the declared range [0, 1], equal to the validated one.

    Args:
        name: The grader's name.
        score: A finite float in [0, 1] (checked).
        reason: Human-readable explanation.
        metadata: JSON values only (lists, not tuples); not checked.
    """
    if not (_SHORTCUT_OK and 0.0 <= score <= 1.0):
        return GraderScore(name=name, score=score, reason=reason, metadata=metadata, score_range=UNIT_RANGE)
    result = _new(GraderScore)
    _set(
        result,
        "__dict__",
        {
            "name": name,
            "metadata": metadata,
            "usage": None,
            "latency_s": None,
            "queue_s": None,
            "score": float(score),
            "reason": reason,
            "score_range": UNIT_RANGE,
        },
    )
    _set(result, "__pydantic_fields_set__", set(_FIELDS_SET))
    _set(result, "__pydantic_extra__", None)
    _set(result, "__pydantic_private__", None)
    return result
