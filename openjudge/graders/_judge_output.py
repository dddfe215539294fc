"""Reading a judge's reply: the judge's own verdict, the default verdict model, and
evicting a reply that could not be used from the judge cache.

When the reply is not one bare JSON object (``structured_output: prompt``, or a server
that ignores ``response_format``), the verdict is the **last** complete top-level JSON
object in it, bare, fenced or wrapped in prose. Judges write their verdict last (the
prompt asks for only the JSON object, reasoning models think first), while text they
quote from the candidate comes before it; taking the first object would let a response
that contains ``{"score": 5}`` forge its own score.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from openjudge.models.chat_model import CachingChatModel, ChatModel, ChatResponse

__all__ = ["JudgeVerdict", "evict_unusable", "extract_json_object", "key_value_offset", "verdict_object"]

# Characters that failed parse attempts may scan, as a multiple of the reply's length:
# a "{" in prose fails at once, but a long unterminated object would be rescanned from
# every "{" in it. Past the budget the reply is not read further (it fails closed).
_SCAN_BUDGET = 8
_DEEP_FAILURE_COST = 20_000
# strict=False: accept raw control characters (tabs, newlines) inside strings, which
# models often write in a "reason" and which strict JSON forbids.
_DECODER = json.JSONDecoder(strict=False)


class JudgeVerdict(BaseModel):
    """The default judge output: a short reason, then a score."""

    model_config = ConfigDict(extra="ignore")

    reason: str = Field(description="A brief justification of the score.")
    score: float = Field(description="The score.")


def extract_json_object(text: str) -> dict[str, Any]:
    """The judge's verdict object: the whole reply if it is one, else the last top-level object in it.

    Objects nested inside another object do not count on their own; a ``{`` that does
    not start valid JSON is skipped.

    Raises:
        ValueError: No JSON object could be read (the message says why).
    """
    return verdict_object(text)[0]


def verdict_object(text: str) -> tuple[dict[str, Any], int, int]:
    """:func:`extract_json_object`'s object with where it lies in ``text``: ``(object, start, end)``.

    ``text[start:end]`` is the object's JSON source (the score reader finds the score in it).

    Raises:
        ValueError: No JSON object could be read (the message says why).
    """
    stripped = text.strip()
    if not stripped:
        raise ValueError("the reply is empty")
    lead = len(text) - len(text.lstrip())
    try:
        value = _DECODER.decode(stripped)
    except (ValueError, RecursionError):
        pass
    else:
        if isinstance(value, dict):
            return value, lead, lead + len(stripped)
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    last: tuple[dict[str, Any], int, int] | None = None
    budget = _SCAN_BUDGET * len(stripped) + _DEEP_FAILURE_COST
    start = stripped.find("{")
    while start != -1 and budget > 0:
        try:
            value, end = _DECODER.raw_decode(stripped, start)
        except json.JSONDecodeError as exc:
            budget -= max(1, exc.pos - start)
            start = stripped.find("{", start + 1)
            continue
        except (ValueError, RecursionError):  # digit limits, nesting past the recursion limit
            budget -= _DEEP_FAILURE_COST
            start = stripped.find("{", start + 1)
            continue
        if isinstance(value, dict):
            last = value, lead + start, lead + end
        start = stripped.find("{", end)
    if last is None:
        raise ValueError("no JSON object found in the reply")
    return last


def key_value_offset(source: str, start: int, key: str) -> int | None:
    """Where the value of ``key`` starts in the JSON object at ``source[start:]``, or ``None``.

    The object must be valid JSON (as :func:`verdict_object` returns it). Only the object's
    own keys count, not those of nested objects; with a repeated key the last wins, as
    ``json.loads`` reads it.
    """
    found: int | None = None
    pos = _skip_space(source, start + 1)
    while pos < len(source) and source[pos] == '"':
        name, pos = _DECODER.raw_decode(source, pos)
        pos = _skip_space(source, pos)
        pos = _skip_space(source, pos + 1)  # past the ":"
        if name == key:
            found = pos
        _, pos = _DECODER.raw_decode(source, pos)
        pos = _skip_space(source, pos)
        if pos < len(source) and source[pos] == ",":
            pos = _skip_space(source, pos + 1)
    return found


def _skip_space(source: str, pos: int) -> int:
    while pos < len(source) and source[pos] in " \t\n\r":
        pos += 1
    return pos


async def evict_unusable(model: ChatModel, response: ChatResponse) -> None:
    """Tell ``model``'s judge cache that ``response`` could not be used (a verdict that failed
    to parse, a content-filtered reply), so the next identical call asks the backend again.

    Nothing to do for a model without a cache or a reply that is not in one.
    """
    if response.cache_key is not None and isinstance(model, CachingChatModel):
        await model.asettle(response, usable=False)
