"""Parse a response as strict JSON, optionally unwrapping a Markdown code fence."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from pydantic import JsonValue

__all__ = ["ParsedJson", "canonical_json", "json_type_name", "parse_json", "strip_code_fence"]

# A response that is exactly one fenced block: ```json ... ``` (any info string, or none).
_FENCE = re.compile(r"\A\s*(?P<fence>`{3,}|~{3,})[^\n`]*\n(?P<body>.*?)\n?[ \t]*(?P=fence)\s*\Z", re.DOTALL)


def strip_code_fence(text: str) -> tuple[str, bool]:
    """If ``text`` is one fenced code block (surrounding whitespace allowed), return its body.

    Returns:
        ``(body, True)`` when a fence was removed, else ``(text, False)``.

    Example:
        >>> strip_code_fence('```json\\n{"a": 1}\\n```')
        ('{"a": 1}', True)
    """
    match = _FENCE.match(text)
    if match is None:
        return text, False
    return match["body"], True


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


@dataclass(frozen=True, slots=True)
class ParsedJson:
    """The outcome of :func:`parse_json`.

    Attributes:
        ok: Whether the text is valid JSON.
        value: The parsed value (``None`` when not ``ok``, or for the JSON ``null``).
        error: Why parsing failed (empty when ``ok``).
        fence_stripped: Whether a Markdown code fence was removed first.
    """

    ok: bool
    value: JsonValue
    error: str
    fence_stripped: bool


def parse_json(text: str, *, strip_fence: bool) -> ParsedJson:
    """Parse ``text`` as RFC 8259 JSON (``NaN`` and ``Infinity`` are rejected).

    Surrounding whitespace is allowed, as in ``json.loads``. Nesting deeper than the
    interpreter's recursion limit is reported as an error, not raised.
    """
    stripped = False
    if strip_fence:
        text, stripped = strip_code_fence(text)
    try:
        value: JsonValue = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        return ParsedJson(False, None, f"{exc.msg} at line {exc.lineno} column {exc.colno}", stripped)
    except ValueError as exc:
        return ParsedJson(False, None, str(exc), stripped)
    except RecursionError:
        return ParsedJson(False, None, "JSON nesting is too deep to parse", stripped)
    return ParsedJson(True, value, "", stripped)


def json_type_name(value: object) -> str:
    """The JSON Schema type name of a parsed JSON value (``integer`` for whole numbers)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def canonical_json(value: object, *, strict_order: bool = True) -> str:
    """A string that is equal for two values exactly when they are equal as JSON.

    Object keys are unordered, ``1`` equals ``1.0``, ``true`` differs from ``1``; with
    ``strict_order=False`` arrays are compared as multisets at every depth.
    """
    if isinstance(value, dict):
        items = sorted(
            json.dumps(k) + ":" + canonical_json(v, strict_order=strict_order) for k, v in value.items()
        )
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        parts = [canonical_json(v, strict_order=strict_order) for v in value]
        return "[" + ",".join(parts if strict_order else sorted(parts)) + "]"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, float):
        return repr(value)
    return json.dumps(value)
