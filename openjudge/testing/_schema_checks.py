"""What the test judge server checks in a request's schema, and which modes it can refuse.

A real server checks the schema it is asked to enforce before it decodes anything:
OpenAI's strict mode answers 400 to a schema outside its subset (an object without
``additionalProperties: false``, a property missing from ``required``), and every grammar
engine fails on an empty ``enum`` or bounds that allow nothing. :func:`schema_problem`
names the first such problem, so a test sees the 400 a real server would give.

The request's structured-output mode (:func:`format_kind`) is what a server may refuse
outright: llama-cpp-python's server answers 500 to ``response_format`` ``json_schema``
(:func:`refusal_message` imitates its message), other servers answer 400.
:class:`FormatChecks` applies both to a request, as a :class:`Refused` with the status.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping
from typing import Final

__all__ = [
    "FORMAT_KINDS",
    "FormatChecks",
    "Refused",
    "check_refuse",
    "format_kind",
    "refusal_message",
    "schema_of",
    "schema_problem",
]

FORMAT_KINDS = ("json_schema", "json_object", "structured_outputs")
"""The structured-output modes a request can ask for (``structured_outputs``: vLLM's field)."""

_TYPES: dict[str, tuple[type, ...]] = {
    "integer": (int,),
    "number": (int, float),
    "string": (str,),
    "boolean": (bool,),
}
_MAX_DEPTH = 64
_COMPACT: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_CACHE_SIZE: Final = 1024


class Refused(Exception):
    """The request's structured-output mode or schema is refused with ``status``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def check_refuse(refuse: Mapping[str, int]) -> dict[str, int]:
    """``refuse`` (mode -> HTTP error status) as a dict, or a ValueError naming the bad entry."""
    for kind, status in refuse.items():
        if kind not in FORMAT_KINDS:
            raise ValueError(f"refuse: unknown mode {kind!r} (modes: {', '.join(FORMAT_KINDS)})")
        if not (isinstance(status, int) and 400 <= status <= 599):
            raise ValueError(f"refuse: {kind} needs an HTTP error status 400..599, got {status!r}")
    return dict(refuse)


class FormatChecks:
    """Refuses the modes in ``refuse`` and the schemas no engine could enforce (one server's rules)."""

    def __init__(self, refuse: Mapping[str, int]) -> None:
        self.refuse = check_refuse(refuse)
        self._problems: dict[tuple[str, bool], str | None] = {}

    def check(self, request: Mapping[str, object]) -> None:
        """Raise :class:`Refused` for a mode this server refuses or a schema it cannot enforce."""
        kind = format_kind(request)
        if kind is None:
            return
        status = self.refuse.get(kind)
        if status is not None:
            raise Refused(status, refusal_message(kind, status))
        schema = schema_of(request)
        fmt = request.get("response_format")
        strict = kind == "json_schema" and isinstance(fmt, dict) and _strict(fmt.get("json_schema"))
        problem = None if schema is None else self._problem(schema, strict)
        if problem is not None:
            raise Refused(400, f"Invalid schema for response_format: {problem}")

    def _problem(self, schema: dict[str, object], strict: bool) -> str | None:
        """:func:`schema_problem`, cached: graders repeat their schema (and the benchmarks count this CPU)."""
        key = (_COMPACT.encode(schema), strict)
        if key not in self._problems:
            if len(self._problems) >= _CACHE_SIZE:
                self._problems.clear()
            self._problems[key] = schema_problem(schema, strict=strict)
        return self._problems[key]


def schema_of(request: Mapping[str, object]) -> dict[str, object] | None:
    """The JSON schema ``request`` asks the reply to fit, in whichever field it was sent."""
    fmt = request.get("response_format")
    schema: object = None
    if isinstance(fmt, dict):
        if fmt.get("type") == "json_schema" and isinstance(spec := fmt.get("json_schema"), dict):
            schema = spec.get("schema")
        elif fmt.get("type") == "json_object":
            schema = fmt.get("schema")
    if schema is None and isinstance(so := request.get("structured_outputs"), dict):
        schema = so.get("json")
    if schema is None:
        schema = request.get("guided_json")
    if isinstance(schema, str):
        with contextlib.suppress(ValueError):
            schema = json.loads(schema)
    return schema if isinstance(schema, dict) else None


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


def _strict(spec: object) -> bool:
    return isinstance(spec, dict) and spec.get("strict") is True


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
