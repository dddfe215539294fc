"""Normalise tool calls given in any of the usual shapes, for comparison with reference calls.

Accepted shapes (OpenJudge's, plus bare names):

* ``{"name": ..., "arguments": ...}``
* ``{"function": {"name": ..., "arguments": ...}}`` (the OpenAI ``tool_calls`` entry)
* ``{"tool_call": <either of the above>}``
* ``"name"``: a tool name alone, no arguments.

Arguments may be a JSON string or an already parsed value. A dict is read as the JSON it
serialises to, so ``{"q": "x"}`` and ``'{"q": "x"}'`` compare equal. Missing, ``None`` or
``""`` arguments mean ``{}``. A string that is not JSON is kept as that string (OpenJudge
turns it into ``{}``, which would make broken arguments match a call with no arguments).

Arguments nesting deeper than 100 levels are refused before they are compared or reported
(deeper values exhaust recursion when serialised or validated): in a predicted call that
is the response's failure (cause ``too_deep``, scored at the bottom), in a reference call
an ``invalid_input`` error. A call of the wrong shape (not a mapping, a ``function`` that is
not one, a ``name`` that is not a string, arguments JSON cannot write) is likewise the
response's failure in a predicted call (cause ``malformed_tool_call``) and ``invalid_input``
in a reference call. Arguments are cut to 2,000 characters in result metadata.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from pydantic import JsonValue

from openjudge.graders.agent._trajectory_parsing import Message, arguments_text, extract_tool_calls
from openjudge.graders.blame import check_depth, shape_fault, shown
from openjudge.results import InvalidInputError

__all__ = ["NormalizedCall", "ToolCallSpec", "normalize_calls", "predicted_calls"]

ToolCallSpec: TypeAlias = Mapping[str, object] | str
"""A tool call: a call mapping in one of the shapes above, or a bare tool name."""


@dataclass(frozen=True, slots=True)
class NormalizedCall:
    """A tool call reduced to what is compared.

    Attributes:
        name: The tool name.
        arguments: The parsed arguments (JSON values), or the raw text if it is not JSON.
    """

    name: str
    arguments: JsonValue

    def key(self, match_arguments: bool) -> str:
        """The comparison key: the name, or the name and canonical (sorted, compact) arguments."""
        if not match_arguments:
            return self.name
        return (
            self.name
            + ":"
            + json.dumps(self.arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        )

    def to_json(self) -> dict[str, JsonValue]:
        """The call for result metadata: arguments longer than 2,000 characters as cut JSON text."""
        text = json.dumps(self.arguments, ensure_ascii=False)
        name = shown(self.name, _METADATA_CHARS)
        if len(text) <= _METADATA_CHARS and shown(text, _METADATA_CHARS) == text:
            return {"name": name, "arguments": self.arguments}
        return {"name": name, "arguments": shown(text, _METADATA_CHARS)}


_METADATA_CHARS = 2000


def _parse_arguments(raw: object, where: str, response: bool) -> JsonValue:
    if not isinstance(raw, str):
        check_depth(raw, what=f"{where}.arguments", response=response)
    try:
        text = arguments_text(raw)
    except ValueError as exc:  # InvalidInputError: JSON cannot write the value
        raise shape_fault(f"{where}.arguments: {exc}", response=response) from None
    if not text:
        return {}
    try:
        value: JsonValue = json.loads(text)
    except (ValueError, RecursionError):
        return text  # not JSON: compared as written
    check_depth(value, what=f"{where}.arguments", response=response)
    return value


def normalize_call(call: object, where: str, *, response: bool = False) -> NormalizedCall:
    """Reduce one tool call (see the module docstring) to its name and parsed arguments.

    Args:
        call: The call.
        where: Where it is, for messages.
        response: The response made the call (arguments nesting too deep are its failure).

    Raises:
        InvalidInputError: the call, its name or its arguments have an unusable type (a
            reference call).
        ResponseFailure: ``response`` and the call has an unusable type (cause
            ``malformed_tool_call``) or arguments nesting deeper than 100 levels (``too_deep``).
    """
    if isinstance(call, str):
        return NormalizedCall(call, {})
    if isinstance(call, Mapping) and "tool_call" in call:
        call = call["tool_call"]
    if not isinstance(call, Mapping):
        raise shape_fault(
            f"{where}: expected a tool call mapping or a tool name, got {type(call).__name__}",
            response=response,
        )
    function = call.get("function", call)
    if not isinstance(function, Mapping):
        raise shape_fault(
            f"{where}.function: expected a mapping, got {type(function).__name__}", response=response
        )
    name = function.get("name")
    if name is None:
        name = ""
    elif not isinstance(name, str):
        raise shape_fault(f"{where}.name: expected a string, got {type(name).__name__}", response=response)
    return NormalizedCall(name, _parse_arguments(function.get("arguments"), where, response))


def normalize_calls(
    calls: object, field: str, *, allow_steps: bool = False, response: bool = False
) -> list[NormalizedCall]:
    """Normalise a list of tool calls, in order.

    Args:
        calls: The list.
        field: Its input name, for error messages.
        allow_steps: Also accept nested lists (steps of parallel calls), flattened in order.
        response: The calls are the response's (see :func:`normalize_call`).

    Raises:
        InvalidInputError: ``calls`` is not a list, or one of its entries is unusable.
    """
    if not isinstance(calls, Sequence) or isinstance(calls, str | bytes | bytearray):
        raise InvalidInputError(f"{field}: expected a list of tool calls, got {type(calls).__name__}")
    out: list[NormalizedCall] = []
    for i, call in enumerate(calls):
        if allow_steps and isinstance(call, list | tuple):
            out.extend(
                normalize_call(inner, f"{field}[{i}][{k}]", response=response) for k, inner in enumerate(call)
            )
        else:
            out.append(normalize_call(call, f"{field}[{i}]", response=response))
    return out


def predicted_calls(
    tool_calls: Sequence[ToolCallSpec] | None, messages: Sequence[Message] | None
) -> list[NormalizedCall]:
    """The calls to grade: ``tool_calls`` as given, or every call the assistant made in ``messages``.

    Raises:
        InvalidInputError: neither or both inputs are given, or one is malformed.
    """
    if (tool_calls is None) == (messages is None):
        raise InvalidInputError(
            "give exactly one of 'tool_calls' (a list of calls) or 'messages' (an OpenAI-format trajectory)"
        )
    if tool_calls is not None:
        return normalize_calls(tool_calls, "tool_calls", response=True)
    return [
        normalize_call(call, f"messages: tool call #{k}", response=True)
        for k, call in enumerate(extract_tool_calls(messages))
    ]
