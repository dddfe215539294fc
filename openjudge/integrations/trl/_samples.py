"""Turn what TRL passes a reward function into one openjudge sample per completion.

TRL calls ``f(prompts=..., completions=..., completion_ids=..., **columns)``, where each
extra dataset column arrives as a list with one value per completion (the prompt's
value repeated for each of its generations). Every sample gets these fields, for
grader mappers to pick from:

================  =====================================================================
``prompt``        the prompt text; for a conversational prompt, the last user message
``response``      the completion text; for a conversational completion, the last
                  assistant message (all its messages' text when none is an assistant's)
``messages``      the whole conversation: the prompt messages (or one user message)
                  followed by the completion messages (or one assistant message)
``completion``    the completion exactly as TRL passed it (text or messages)
``completion_ids`` the completion's token ids, when TRL passes them
``item``          the dataset row: the prompt as TRL passed it (``prompt``) and every
                  column, nothing the completion wrote (what an OpenAI grader reads as
                  ``item``; a column named ``item`` is kept instead)
``<column>``      every other dataset column, by its name (``answer``, ``solution``, ...)
================  =====================================================================

A dataset column whose name is one of the fields above (but ``item``) is shadowed by the field.
Message content given as a list of parts (``[{"type": "text", "text": ...}]``) is read
as the concatenation of its text parts. Values are turned into plain JSON data
(numpy scalars and arrays, tuples, nested mappings) before any grader sees them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

from pydantic import JsonValue

from openjudge.integrations._shared import plain

__all__ = [
    "DERIVED_FIELDS",
    "TRL_KEYWORDS",
    "Conversation",
    "TRLText",
    "message_text",
    "plain",
    "samples_from_batch",
]

Conversation: TypeAlias = Sequence[Mapping[str, object]]
"""A list of chat messages (``{"role": ..., "content": ...}``)."""

TRLText: TypeAlias = str | Conversation
"""A prompt or a completion as TRL passes it: plain text, or a list of messages."""

DERIVED_FIELDS = frozenset({"prompt", "response", "messages", "completion", "completion_ids"})
"""Sample fields the integration fills in (they shadow dataset columns of the same name)."""

TRL_KEYWORDS = frozenset({"trainer_state", "log_extra", "log_metric", "environments"})
"""Keyword arguments TRL adds that are not dataset columns."""


def message_text(message: Mapping[str, object]) -> str:
    """The text of one message (a string content, or the text parts of a list content)."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(str(part["text"]))
        return "".join(parts)
    return str(content)


def _conversation(value: TRLText, where: str) -> list[dict[str, JsonValue]] | None:
    """The messages of a conversational value, ``None`` for plain text."""
    if isinstance(value, str):
        return None
    messages: list[dict[str, JsonValue]] = []
    if isinstance(value, Sequence):
        for m in value:
            if not isinstance(m, Mapping):
                break
            messages.append({str(k): plain(v) for k, v in m.items()})
        else:
            return messages
    raise TypeError(f"{where} must be a string or a list of message dicts, got {type(value).__name__}")


def _last_text(messages: Sequence[Mapping[str, object]], role: str) -> str | None:
    for message in reversed(messages):
        if message.get("role") == role:
            return message_text(message)
    return None


def _sample(prompt: TRLText, completion: TRLText, index: int) -> dict[str, JsonValue]:
    prompt_messages = _conversation(prompt, f"prompts[{index}]")
    completion_messages = _conversation(completion, f"completions[{index}]")
    if prompt_messages is None:
        assert isinstance(prompt, str)
        prompt_text = prompt
        prompt_messages = [{"role": "user", "content": prompt}]
    else:
        user = _last_text(prompt_messages, "user")
        prompt_text = user if user is not None else "".join(message_text(m) for m in prompt_messages)
    if completion_messages is None:
        assert isinstance(completion, str)
        response = completion
        completion_messages = [{"role": "assistant", "content": completion}]
        raw_completion: JsonValue = completion
    else:
        answer = _last_text(completion_messages, "assistant")
        response = answer if answer is not None else "".join(message_text(m) for m in completion_messages)
        raw_completion = [*completion_messages]
    messages: list[JsonValue] = [*prompt_messages, *completion_messages]
    return {"prompt": prompt_text, "response": response, "messages": messages, "completion": raw_completion}


def samples_from_batch(
    prompts: Sequence[TRLText],
    completions: Sequence[TRLText],
    completion_ids: Sequence[Sequence[int]] | None = None,
    columns: Mapping[str, object] | None = None,
) -> list[dict[str, JsonValue]]:
    """One sample per completion, with the fields described in the module docstring.

    Args:
        prompts: TRL's ``prompts`` (one per completion).
        completions: TRL's ``completions``.
        completion_ids: TRL's ``completion_ids``, if any.
        columns: The other keyword arguments TRL passed. Lists with one value per
            completion become sample fields; TRL's own keywords (``trainer_state``,
            ``log_metric``, ...) and anything that is not such a list are skipped.

    Raises:
        ValueError: ``prompts``, ``completions`` or ``completion_ids`` differ in length.
        TypeError: A prompt or completion is neither text nor a list of messages.
    """
    n = len(completions)
    if len(prompts) != n:
        raise ValueError(
            f"got {len(prompts)} prompts for {n} completions; TRL passes one prompt per completion"
        )
    if completion_ids is not None and len(completion_ids) != n:
        raise ValueError(f"got {len(completion_ids)} completion_ids for {n} completions")
    per_sample: dict[str, Sequence[object]] = {}
    for key, value in (columns or {}).items():
        if key in TRL_KEYWORDS or key in DERIVED_FIELDS:
            continue
        if isinstance(value, list | tuple) and len(value) == n:
            per_sample[key] = value
    own_item = "item" in per_sample
    samples: list[dict[str, JsonValue]] = []
    for i in range(n):
        row: dict[str, JsonValue] = {key: plain(values[i]) for key, values in per_sample.items()}
        sample = dict(row)
        sample.update(_sample(prompts[i], completions[i], i))
        if not own_item:
            # The row without what the completion wrote: an OpenAI grader's implicit item would
            # otherwise hold the completion (and its tool calls) as dataset data.
            sample["item"] = {"prompt": plain(prompts[i]), **row}
        if completion_ids is not None:
            sample["completion_ids"] = [int(t) for t in completion_ids[i]]
        samples.append(sample)
    return samples
