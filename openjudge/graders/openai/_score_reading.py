"""How a ``score_model`` judge's output becomes a score: OpenAI's rule, made visible.

OpenAI's graders guide: the score_model's output is "truncated to the given range, and
default to 0 for all non-numeric outputs". ``openai_grader`` follows it:

* a number outside ``range`` is truncated into it; ``metadata["truncated_from"]`` keeps
  what the judge wrote;
* an output without a number (no JSON, no ``"result"``, a word, ``NaN``) scores 0 (the
  bottom of the range when 0 lies outside it), with ``metadata["non_numeric_output"]``
  true. This is not the response's fault in openjudge's vocabulary (it is the judge's),
  and the score is not a verdict: the flag lets a trainer or a report set it apart, and
  ``non_numeric="error"`` gives openjudge's own rule instead (one re-ask, then
  ``GraderError(parse_error)``).

A number is a JSON number or a string holding one (``"0.7"``); booleans are not numbers.
The reply is read as ``{"steps": [...], "result": n}``, a JSON object inside other text,
or a bare number.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Literal, TypeAlias

from pydantic import JsonValue

from openjudge.graders._judge_output import extract_json_object
from openjudge.results import ScoreRange

__all__ = ["NonNumeric", "Reply", "non_numeric_score", "number_in", "read_reply", "truncate"]

NonNumeric: TypeAlias = Literal["zero", "error"]
"""What a non-numeric ``score_model`` output becomes: OpenAI's 0 (``zero``) or a parse error (``error``)."""


@dataclass(frozen=True, slots=True)
class Reply:
    """A judge's reply read as OpenAI's format: its ``result`` and ``steps``.

    Attributes:
        result: The ``"result"`` value (or the bare number the whole reply is); None when
            the reply has neither.
        steps: The reasoning steps, when given as a list.
        problem: Why there is no ``result`` ("" when there is one).
    """

    result: JsonValue
    steps: list[JsonValue]
    problem: str = ""


def read_reply(content: str) -> Reply:
    """The ``result`` and ``steps`` of a reply (``result`` is None when there is none)."""
    try:
        reply: object = json.loads(content)
    except (ValueError, RecursionError):
        try:
            reply = extract_json_object(content)
        except ValueError as exc:
            return Reply(None, [], str(exc))
    if isinstance(reply, dict):
        steps = reply.get("steps")
        result = reply.get("result")
        return Reply(
            result,
            steps if isinstance(steps, list) else [],
            "" if result is not None else 'the reply has no "result"',
        )
    if isinstance(reply, int | float) and not isinstance(reply, bool):
        return Reply(reply, [])
    return Reply(None, [], f"expected a JSON object, got {type(reply).__name__}")


def number_in(result: JsonValue) -> float | None:
    """``result`` as a finite number, or None when it is not one."""
    if isinstance(result, bool):
        return None
    if isinstance(result, str):
        try:
            value = float(result.strip())
        except ValueError:
            return None
    elif isinstance(result, int | float):
        value = float(result)
    else:
        return None
    return value if math.isfinite(value) else None


def truncate(value: float, score_range: ScoreRange) -> float:
    """``value`` truncated into ``score_range``."""
    return min(score_range.high, max(score_range.low, value))


def non_numeric_score(score_range: ScoreRange) -> float:
    """OpenAI's 0 for a non-numeric output; the range's bottom when 0 lies outside it."""
    if score_range.contains(0.0):
        return 0.0
    return score_range.low if score_range.higher_is_better else score_range.high
