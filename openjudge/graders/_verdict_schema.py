"""The schema a judge is asked to reply with, its score range written the way grammar engines enforce it.

Constrained decoding (llama.cpp's grammar, llguidance, xgrammar, outlines, OpenAI's
structured outputs) can only keep a reply inside the range if the schema carries it:
``{"score": {"type": "number"}}`` lets a small judge write ``9`` on a 1-5 scale, which the
grader then has to re-ask and finally record as a ``parse_error``.

* **An integer scale** (integer ends at least two apart: 1-5, 0-10, -1 to 1) becomes an
  ``enum`` of its values, ``{"type": "integer", "enum": [1, 2, 3, 4, 5]}``: every engine
  enforces ``enum``, while llama.cpp's converters ignore ``minimum``/``maximum`` on numbers.
* **A continuous scale** (0-1, 0.5-2.5, integer ends further apart than
  :data:`MAX_ENUM_VALUES`) becomes ``{"type": "number", "minimum": low, "maximum": high}``:
  OpenAI's strict mode, llguidance and xgrammar enforce it; llama.cpp ignores it, and the
  grader's own range check catches what gets through.
* Any other **integer with both bounds** in the verdict model (``Field(ge=1, le=5)`` on an
  ``int``, as the trajectory judge's step scores) becomes the same ``enum``.

The grader still validates every reply against its model and range: the schema only makes
a wrong reply impossible where the engine enforces it. A verdict model whose ``score``
already says what it allows (an ``enum``, a ``const`` or bounds of its own) is sent as
written. Specs are cached per model and range, so providers can cache the request format
derived from them (:class:`~openjudge.models.chat_model.OutputSpec` compares by identity).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from openjudge.models.chat_model import OutputSpec
from openjudge.results import ScoreRange

__all__ = ["MAX_ENUM_VALUES", "is_integer_scale", "range_rule", "ranking_output", "verdict_output"]

MAX_ENUM_VALUES = 101
"""Integer scales with more values than this (0-100 has 101) are sent as bounds, not an enum."""

_BOUND_KEYS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def is_integer_scale(low: float, high: float) -> bool:
    """Whether a range is a scale of integers: integer ends at least two apart, and few enough values.

    ``(0, 1)`` is continuous (a probability, a share): an enum would make it pass/fail.
    """
    return float(low).is_integer() and float(high).is_integer() and 2 <= high - low < MAX_ENUM_VALUES


def _number(value: float) -> int | float:
    return int(value) if value.is_integer() else value


def score_schema(score_range: ScoreRange) -> dict[str, Any]:
    """The ``score`` property's schema for a range: an enum of an integer scale, else bounds."""
    low, high = score_range.low, score_range.high
    if is_integer_scale(low, high):
        return {"type": "integer", "enum": list(range(int(low), int(high) + 1))}
    return {"type": "number", "minimum": _number(low), "maximum": _number(high)}


def range_rule(score_range: ScoreRange) -> str:
    """The sentence that tells a judge the range (for the prompt, whatever the engine enforces)."""
    low, high = _number(score_range.low), _number(score_range.high)
    kind = "an integer" if is_integer_scale(score_range.low, score_range.high) else "a number"
    return f"The score must be {kind} from {low} to {high}."


def verdict_output(model: type[BaseModel], score_range: ScoreRange | None) -> OutputSpec:
    """The output spec for ``model``'s verdicts, with ``score_range`` in its ``score`` (cached)."""
    bounds = None if score_range is None else (score_range.low, score_range.high)
    return _verdict_output(model, bounds)


@functools.lru_cache(maxsize=512)
def _verdict_output(model: type[BaseModel], bounds: tuple[float, float] | None) -> OutputSpec:
    schema = copy.deepcopy(model.model_json_schema())
    properties = schema.get("properties")
    score = properties.get("score") if isinstance(properties, dict) else None
    if bounds is not None and isinstance(score, dict) and _open_number(score):
        assert isinstance(properties, dict)
        kept = {k: v for k, v in score.items() if k not in ("type", *_BOUND_KEYS)}
        properties["score"] = {**kept, **score_schema(ScoreRange(low=bounds[0], high=bounds[1]))}
    _bounded_integers_as_enums(schema)
    return OutputSpec.from_schema(model.__name__, schema)


def _open_number(schema: dict[str, Any]) -> bool:
    """A plain number or integer: nothing says which values it may take."""
    return (
        schema.get("type") in ("number", "integer")
        and not {"enum", "const", *_BOUND_KEYS} & schema.keys()
        and not {"anyOf", "oneOf", "allOf", "$ref"} & schema.keys()
    )


def _bounded_integers_as_enums(node: object) -> None:
    """Every ``{"type": "integer", "minimum": a, "maximum": b}`` (a small range) becomes an enum of a..b."""
    if isinstance(node, dict):
        low, high = node.get("minimum"), node.get("maximum")
        if (
            node.get("type") == "integer"
            and "enum" not in node
            and isinstance(low, int | float)
            and isinstance(high, int | float)
            and not isinstance(low, bool)
            and not isinstance(high, bool)
            and not {"exclusiveMinimum", "exclusiveMaximum", "multipleOf"} & node.keys()
            and float(low).is_integer()
            and float(high).is_integer()
            and 0 <= high - low < MAX_ENUM_VALUES
        ):
            del node["minimum"], node["maximum"]
            node["enum"] = list(range(int(low), int(high) + 1))
        for value in node.values():
            _bounded_integers_as_enums(value)
    elif isinstance(node, list):
        for item in node:
            _bounded_integers_as_enums(item)


def ranking_output(model: type[BaseModel], ids: Sequence[str]) -> OutputSpec:
    """The output spec of a ranking of ``ids``: ``ranking`` lists ids from ``ids``, exactly ``len(ids)`` of them.

    That each appears once is left to the grader (``uniqueItems`` is enforced by few engines).
    """
    return _ranking_output(model, tuple(ids))


@functools.lru_cache(maxsize=64)
def _ranking_output(model: type[BaseModel], ids: tuple[str, ...]) -> OutputSpec:
    schema = copy.deepcopy(verdict_output(model, None).schema)
    properties = schema.get("properties")
    ranking = properties.get("ranking") if isinstance(properties, dict) else None
    if isinstance(ranking, dict) and ranking.get("type") == "array":
        ranking["items"] = {"type": "string", "enum": list(ids)}
        ranking["minItems"] = ranking["maxItems"] = len(ids)
    return OutputSpec.from_schema(model.__name__, schema)
