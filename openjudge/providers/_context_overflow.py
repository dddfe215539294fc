"""Read a server's "the request does not fit the context window" answer into a :class:`ContextOverflow`.

A judge call whose prompt is longer than the model's context window fails with a 400 whose
wording depends on the server. What each says (the strings below are theirs):

============================  ===========================================================================
server                        the answer
============================  ===========================================================================
OpenAI                        ``code: context_length_exceeded``; "This model's maximum context length is
                              L tokens. However, your messages resulted in P tokens."
vLLM (chat, before 0.10)      "This model's maximum context length is L tokens. However, you requested T
                              tokens (P in the messages, C in the completion)."
vLLM (chat, 0.10 and later)   "This model's maximum context length is L tokens. However, you requested C
                              output tokens and your prompt contains at least P input tokens, ..."; or
                              "You passed P input tokens and requested C output tokens. However, the
                              model's context length is only L tokens, ..."
vLLM (pooling, reward)        "This model's maximum context length is L tokens. However, you requested P
                              tokens in the input for embedding generation."
llama.cpp server              ``type: exceed_context_size_error``, ``n_prompt_tokens``, ``n_ctx``; "request
                              (P tokens) exceeds the available context size (L tokens)"
llama-cpp-python              the vLLM wording, ``code: context_length_exceeded``; its raw error
                              "Requested tokens (P) exceed context window of L"
Anthropic (through litellm)   "prompt is too long: P tokens > L maximum"; "input length and `max_tokens`
                              exceed context limit: P + C > L"
============================  ===========================================================================

litellm's own list of these phrases (``is_error_str_context_window_exceeded``) was the
starting point. An HTTP 413 (the body is larger than the server takes) is an overflow too,
with no counts. Anything else is not an overflow, so a 400 for another reason stays the
system's failure.
"""

from __future__ import annotations

import json
import re
from typing import Final

from openjudge.errors import ContextOverflow

__all__ = ["read_context_overflow"]

_PHRASES: Final = (
    "maximum context length",
    "context_length_exceeded",
    "exceed_context_size_error",
    "exceeds the available context size",
    "exceed context window",
    "exceed context limit",
    "context length is only",
    "longer than the model's context length",
    "longer than the model's maximum context length",
    "prompt is too long",
    "input tokens exceed the configured limit",
    "please reduce the length of the input",
)

_I = re.IGNORECASE
_COUNTS: Final = (
    # (pattern, the ContextOverflow fields its groups fill, in order)
    (re.compile(r"maximum context length is (\d+)", _I), ("limit_tokens",)),
    (
        re.compile(r"\((\d+) in the messages, (\d+) in the completion\)", _I),
        ("prompt_tokens", "completion_tokens"),
    ),
    (
        re.compile(r"\((\d+) in your prompt; (\d+) for the completion\)", _I),
        ("prompt_tokens", "completion_tokens"),
    ),
    (re.compile(r"messages resulted in (\d+) tokens", _I), ("prompt_tokens",)),
    (re.compile(r"requested (\d+) tokens in the input", _I), ("prompt_tokens",)),
    (
        re.compile(r"requested (\d+) output tokens and your prompt contains at least (\d+) input tokens", _I),
        ("completion_tokens", "prompt_tokens"),
    ),
    (
        re.compile(r"passed (\d+) input tokens and requested (\d+) output tokens", _I),
        ("prompt_tokens", "completion_tokens"),
    ),
    (re.compile(r"context length is only (\d+)", _I), ("limit_tokens",)),
    (
        re.compile(r"request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)", _I),
        ("prompt_tokens", "limit_tokens"),
    ),
    (
        re.compile(r"requested tokens \((\d+)\) exceed context window of (\d+)", _I),
        ("prompt_tokens", "limit_tokens"),
    ),
    (re.compile(r"prompt is too long: (\d+) tokens > (\d+)", _I), ("prompt_tokens", "limit_tokens")),
    (
        re.compile(r"exceed context limit: (\d+) \+ (\d+) > (\d+)", _I),
        ("prompt_tokens", "completion_tokens", "limit_tokens"),
    ),
)
_MAX_TEXT = 4000  # an error body is short; a longer one is not read further


def read_context_overflow(
    status: int | None, body: bytes | str, *, code: object = None
) -> ContextOverflow | None:
    """The overflow a failed request's answer describes, or ``None`` when it is about something else.

    Args:
        status: The HTTP status (``None`` when the SDK gave none).
        body: The answer's body (JSON or text) or an SDK exception's message.
        code: An error code the SDK read from the body (``context_length_exceeded``).
    """
    if status == 413:
        return ContextOverflow()
    if status is not None and status != 400:
        return None
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    text = text[:_MAX_TEXT]
    lowered = text.lower()
    fields = _json_fields(text)
    codes = {str(code).lower(), str(fields.get("code", "")).lower(), str(fields.get("type", "")).lower()}
    if not (codes & {"context_length_exceeded", "exceed_context_size_error"}) and not any(
        phrase in lowered for phrase in _PHRASES
    ):
        return None
    counts: dict[str, int] = {}
    for pattern, names in _COUNTS:
        match = pattern.search(text)
        if match is not None:
            for name, value in zip(names, match.groups(), strict=True):
                counts.setdefault(name, int(value))
    for name, key in (("prompt_tokens", "n_prompt_tokens"), ("limit_tokens", "n_ctx")):
        value = fields.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            counts.setdefault(name, value)
    return ContextOverflow(**counts)


def _json_fields(text: str) -> dict[str, object]:
    """The error object of a JSON error body (``{"error": {...}}`` or a flat one), else ``{}``."""
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    error = data.get("error")
    return error if isinstance(error, dict) else data
