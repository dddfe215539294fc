"""Build the ``response_format`` for each structured-output mode (cached per schema)."""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from typing import Any

from openjudge.models.chat_model import OutputSpec, StructuredOutputMode

__all__ = ["response_format_for", "strict_schema"]


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a JSON schema in OpenAI's strict form.

    Every object gets ``additionalProperties: false`` and all its properties required;
    ``default`` and ``title`` keywords (not allowed or not useful in strict mode) are dropped.
    """
    out = copy.deepcopy(dict(schema))
    _strictify(out)
    return out


def _strictify(node: Any) -> None:
    if isinstance(node, dict):
        node.pop("default", None)
        node.pop("title", None)
        if node.get("type") == "object" and isinstance(node.get("properties"), dict):
            node["additionalProperties"] = False
            node["required"] = list(node["properties"])
        for value in node.values():
            _strictify(value)
    elif isinstance(node, list):
        for item in node:
            _strictify(item)


@functools.lru_cache(maxsize=256)
def _cached(output: OutputSpec, mode: StructuredOutputMode) -> dict[str, Any]:
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": output.name, "schema": strict_schema(output.schema), "strict": True},
        }
    if mode == "json_object":
        return {"type": "json_object", "schema": dict(output.schema)}
    raise ValueError(f"structured output mode {mode!r} sends no response_format")


def response_format_for(output: OutputSpec, mode: StructuredOutputMode) -> dict[str, Any]:
    """The request's ``response_format`` for ``mode`` (shared dict: do not mutate)."""
    return _cached(output, mode)
