"""What the test judge server checks in a request's schema, and which modes it can refuse.

A real server checks the schema it is asked to enforce before it decodes anything:
OpenAI's strict mode answers 400 to a schema outside its subset (an object without
``additionalProperties: false``, a property missing from ``required``), and every grammar
engine fails on an empty ``enum`` or bounds that allow nothing. :func:`schema_problem`
names the first such problem, so a test sees the 400 a real server would give.

The request's structured-output mode (:func:`format_kind`) is what a server may refuse
outright: llama-cpp-python's server answers 500 to ``response_format`` ``json_schema``
(:func:`refusal_message` imitates its message), other servers answer 400.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

__all__ = ["FORMAT_KINDS", "format_kind", "refusal_message", "schema_problem"]

FORMAT_KINDS = ("json_schema", "json_object", "structured_outputs")
"""The structured-output modes a request can ask for (``structured_outputs``: vLLM's field)."""

_TYPES: dict[str, tuple[type, ...]] = {
    "integer": (int,),
    "number": (int, float),
    "string": (str,),
    "boolean": (bool,),
}
_MAX_DEPTH = 64


def format_kind(request: Mapping[str, object]) -> str | None:
    """The structured-output mode ``request`` asks for, if any."""
    fmt = request.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") in ("json_schema", "json_object"):
        return str(fmt["type"])
    if isinstance(request.get("structured_outputs"), dict) or "guided_json" in request:
        return "structured_outputs"
    return None


def refusal_message(kind: str, status: int) -> str:
    """What a server that does not take ``kind`` answers (llama-cpp-python's words for a 500)."""
    if status >= 500 and kind != "structured_outputs":
        return (
            "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
            f"'msg': \"Input should be 'text' or 'json_object'\", 'input': '{kind}'}}"
        )
    field = "structured_outputs" if kind == "structured_outputs" else f"response_format type {kind!r}"
    return f"{field} is not supported by this server"


def schema_problem(schema: Mapping[str, object], *, strict: bool) -> str | None:
    """The first reason ``schema`` cannot be enforced, or ``None``.

    Args:
        schema: The schema sent (``$ref`` pointers are not followed; ``$defs`` are checked
            where they are defined).
        strict: Apply OpenAI's strict-mode rules too (``json_schema`` with ``"strict": true``).
    """
    return _problem(schema, strict, "#", 0)


def _problem(node: object, strict: bool, at: str, depth: int) -> str | None:
    if not isinstance(node, dict) or depth > _MAX_DEPTH:
        return None
    kind = node.get("type")
    if "enum" in node:
        enum = node["enum"]
        if not isinstance(enum, list) or not enum:
            return f"{at}: 'enum' must be a non-empty array"
        wanted = _TYPES.get(kind) if isinstance(kind, str) else None
        if wanted is not None:
            wrong = [
                v for v in enum if not isinstance(v, wanted) or isinstance(v, bool) != (kind == "boolean")
            ]
            if wrong:
                return f"{at}: enum value {wrong[0]!r} is not of type {kind!r}"
    low, high = node.get("minimum"), node.get("maximum")
    for name, bound in (("minimum", low), ("maximum", high)):
        if bound is not None and (
            not isinstance(bound, int | float) or isinstance(bound, bool) or not math.isfinite(bound)
        ):
            return f"{at}: {name!r} must be a finite number, got {bound!r}"
    if isinstance(low, int | float) and isinstance(high, int | float) and low > high:
        return f"{at}: 'minimum' {low} is greater than 'maximum' {high}"
    properties = node.get("properties")
    if strict and kind == "object" and isinstance(properties, dict):
        if node.get("additionalProperties") is not False:
            return f"{at}: 'additionalProperties' is required to be supplied and to be false"
        required = node.get("required")
        missing = [p for p in properties if not isinstance(required, list) or p not in required]
        if missing:
            return f"{at}: 'required' is required to include every property; missing {missing[0]!r}"
    for key, value in node.items():
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            for name, sub in value.items():
                problem = _problem(sub, strict, f"{at}/{key}/{name}", depth + 1)
                if problem is not None:
                    return problem
        elif key in ("items", "additionalProperties", "not"):
            problem = _problem(value, strict, f"{at}/{key}", depth + 1)
            if problem is not None:
                return problem
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems") and isinstance(value, list):
            for i, sub in enumerate(value):
                problem = _problem(sub, strict, f"{at}/{key}/{i}", depth + 1)
                if problem is not None:
                    return problem
    return None
