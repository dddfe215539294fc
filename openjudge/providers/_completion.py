"""The chat-completions wire format: a request's sampling fields, and the reply read back.

:func:`add_sampling_fields` names a :class:`ChatRequest`'s sampling and logprob options
as the API does (for the raw HTTP transport and for litellm's arguments alike).
:func:`parse_completion` reads a reply (the JSON body) into a :class:`ChatResponse`:
strict about the fields it uses and tolerant of everything else, so a server that
adds fields keeps working and one that drops required fields gives a clear error.
"""

from __future__ import annotations

from typing import Any

from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import ChatRequest, ChatResponse, TokenLogprob
from openjudge.results import TokenUsage

__all__ = ["add_sampling_fields", "parse_completion"]


def add_sampling_fields(
    fields: dict[str, Any], request: ChatRequest, *, max_tokens_field: str = "max_tokens"
) -> None:
    """Add the sampling options ``request`` sets, and its logprobs, under their API names.

    ``max_tokens_field`` names the completion cap: ``max_tokens`` (what OpenAI-compatible
    servers document), or ``max_completion_tokens`` (OpenAI's own API, whose reasoning
    models refuse ``max_tokens``). ``extra_body`` and the response format are left to the
    caller: where they go differs.
    """
    s = request.sampling
    if s.temperature is not None:
        fields["temperature"] = s.temperature
    if s.top_p is not None:
        fields["top_p"] = s.top_p
    if s.max_tokens is not None:
        fields[max_tokens_field] = s.max_tokens
    if s.seed is not None:
        fields["seed"] = s.seed
    if s.stop:
        fields["stop"] = list(s.stop)
    if s.reasoning_effort is not None:
        fields["reasoning_effort"] = s.reasoning_effort
    if request.top_logprobs:
        fields["logprobs"] = True
        fields["top_logprobs"] = request.top_logprobs


def _logprobs(raw: object) -> tuple[TokenLogprob, ...]:
    content = raw.get("content") if isinstance(raw, dict) else None
    if not isinstance(content, list):
        return ()
    out = []
    for item in content:
        if not isinstance(item, dict) or not isinstance(item.get("token"), str):
            continue
        top = item.get("top_logprobs")
        alternatives = tuple(
            (alt["token"], float(alt["logprob"]))
            for alt in (top if isinstance(top, list) else [])
            if isinstance(alt, dict)
            and isinstance(alt.get("token"), str)
            and isinstance(alt.get("logprob"), int | float)
        )
        logprob = item.get("logprob")
        out.append(
            TokenLogprob(
                item["token"],
                float(logprob) if isinstance(logprob, int | float) else float("-inf"),
                alternatives,
            )
        )
    return tuple(out)


def parse_completion(data: Any, *, where: str, model: str) -> ChatResponse:
    """The :class:`ChatResponse` for a decoded chat-completions body (JSON objects as dicts).

    The first choice's message is reached by indexing: on decoded JSON (dicts, lists, strings,
    numbers) every wrong shape fails that with ``KeyError``, ``IndexError`` or ``TypeError``,
    as a string does for ``choices[0]["message"]``; only the message itself is then checked to
    be a dict. That is fewer steps per reply than checking each level's type first.

    Raises:
        ChatModelError: The body has no usable choice (retryable), or the model refused.
    """
    try:
        choice = data["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError):
        message = None
    if type(message) is not dict:
        raise _no_message(data, where)
    refusal = message.get("refusal")
    if refusal and type(refusal) is str:
        raise ChatModelError(f"{where}: the model refused: {refusal}", kind="refused", error_type="Refusal")
    content = message.get("content")
    usage = data.get("usage")
    prompt_tokens = completion_tokens = 0
    if type(usage) is dict:
        # Counts are kept only when they are non-negative ints (a bool is not one).
        prompt = usage.get("prompt_tokens")
        if type(prompt) is int and prompt >= 0:
            prompt_tokens = prompt
        completion = usage.get("completion_tokens")
        if type(completion) is int and completion >= 0:
            completion_tokens = completion
    finish = choice.get("finish_reason")
    reported_model = data.get("model")
    raw_logprobs = choice.get("logprobs")
    fingerprint = data.get("system_fingerprint")
    return ChatResponse(
        content if type(content) is str else "",
        TokenUsage(prompt_tokens, completion_tokens, 1),
        finish if type(finish) is str else None,
        _logprobs(raw_logprobs) if raw_logprobs else (),
        0.0,
        reported_model if type(reported_model) is str else model,
        system_fingerprint=fingerprint if type(fingerprint) is str else None,
    )


def _no_message(data: Any, where: str) -> ChatModelError:
    """The error for a body whose first choice has no message object, naming what is missing."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return ChatModelError(
            f"{where}: the response has no choices", retryable=True, error_type="MalformedResponse"
        )
    return ChatModelError(
        f"{where}: the response's choice has no message", retryable=True, error_type="MalformedResponse"
    )
