"""The ``sample`` namespace of OpenAI's graders, built from what openjudge graders receive.

=================  ==============================================================
``sample`` field   from
=================  ==============================================================
``output_text``    the ``response`` text (or the ``content`` of a response message)
``output_json``    ``output_text`` parsed as JSON when it is valid JSON, else empty
``output_tools``   ``tool_calls`` (or the response message's ``tool_calls``), as
                   Chat Completions writes them: ``arguments`` is a JSON string
``choices``        one Chat Completions choice holding that message
=================  ==============================================================

OpenAI fills ``output_json`` "if the model sample is a valid JSON string"; so here:
``json.loads`` of the text, refusing ``NaN``/``Infinity`` and numbers that overflow; a
value nested deeper than :data:`~openjudge.graders.blame.MAX_RESPONSE_DEPTH` (100) is
not used as JSON either. A template that needs ``output_json`` when it is empty is
OpenAI's ``sample_parse_error``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence

from pydantic import JsonValue

from openjudge.graders.blame import MAX_RESPONSE_DEPTH, nesting_depth

__all__ = ["SampleError", "build_sample", "parse_json_output"]


class SampleError(ValueError):
    """The response cannot be read as a sample (a tool call that is not an object, ...)."""


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("a number that overflows is not JSON")
    return value


def _no_constant(text: str) -> float:
    raise ValueError(f"{text} is not JSON")


_DECODER = json.JSONDecoder(parse_float=_finite, parse_constant=_no_constant)  # built once: ~45 µs each


def parse_json_output(text: str) -> JsonValue:
    """``text`` as JSON, or None when it is not valid JSON (NaN, Infinity and overflowing numbers refused)."""
    try:
        value: JsonValue = _DECODER.decode(text)
    except (ValueError, RecursionError, MemoryError):
        return None
    if nesting_depth(value, MAX_RESPONSE_DEPTH) > MAX_RESPONSE_DEPTH:
        return None  # deeper than any real answer; it would exhaust recursion further on
    return value


def _tool_call(call: object, index: int) -> dict[str, JsonValue]:
    if not isinstance(call, Mapping):
        raise SampleError(f"tool_calls[{index}] must be an object, got {type(call).__name__}")
    out: dict[str, JsonValue] = {str(k): v for k, v in call.items()}
    function = out.get("function")
    if isinstance(function, Mapping):
        function = {str(k): v for k, v in function.items()}
        arguments = function.get("arguments")
        if arguments is not None and not isinstance(arguments, str):
            # Chat Completions sends arguments as a JSON string; datasets often hold the object.
            function["arguments"] = json.dumps(arguments, ensure_ascii=False)
        out["function"] = function
    out.setdefault("type", "function")
    return out


def build_sample(
    response: str | Mapping[str, JsonValue], tool_calls: Sequence[object] | None = None
) -> dict[str, JsonValue]:
    """The ``sample`` namespace for one response.

    Args:
        response: The model's text, or its assistant message (``content`` and ``tool_calls``).
        tool_calls: The response's tool calls (overrides a message's own).

    Raises:
        SampleError: The response or its tool calls have the wrong shape.
    """
    if isinstance(response, Mapping):
        content = response.get("content")
        if isinstance(content, list):  # content parts
            content = "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
        text = content if isinstance(content, str) else ""
        if tool_calls is None:
            own = response.get("tool_calls")
            tool_calls = own if isinstance(own, list) else None
    elif isinstance(response, str):
        text = response
    else:
        raise SampleError(f"the response must be text or a message object, got {type(response).__name__}")
    if tool_calls is not None and (
        isinstance(tool_calls, str | bytes) or not isinstance(tool_calls, Sequence)
    ):
        raise SampleError(f"tool_calls must be a list, got {type(tool_calls).__name__}")
    tools: list[JsonValue] = [_tool_call(call, i) for i, call in enumerate(tool_calls or ())]
    message: dict[str, JsonValue] = {"role": "assistant", "content": text}
    if tools:
        message["tool_calls"] = tools
    return {
        "output_text": text,
        "output_json": parse_json_output(text),
        "output_tools": tools,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tools else "stop"}],
    }
