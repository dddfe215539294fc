"""One member of a group: its grader sample, built from what the agent loop produced.

The fields follow the per-row fields of the reward manager (``integrations.verl``):

======================  ==========================================================
``prompt``              the last user turn of ``raw_prompt`` (the decoded prompt
                        when ``raw_prompt`` has no user turn)
``prompt_text``         the prompt tokens, decoded (special tokens skipped)
``prompt_messages``     ``raw_prompt``, the chat the policy saw
``response``            the response tokens, decoded (special tokens skipped)
``messages``            the agent loop's structured trajectory (``extra_fields
                        ["messages"]``) when it exported one, else ``raw_prompt``
                        plus the response as an assistant turn
``ground_truth``        ``reward_model["ground_truth"]``
``data_source``,        the dataset row's columns
``extra_info``, ``uid``
``num_turns``           ``AgentLoopOutput.num_turns``
======================  ==========================================================

TODO(issue 10): switch to the shared row builder of ``integrations.verl`` once it takes
an ``AgentLoopOutput``; this module exists so the group stage does not wait for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from pydantic import JsonValue

from integrations.verl.functions import ExtraValue, RewardSample

__all__ = ["Member", "TextDecoder", "build_sample", "group_sample", "reward_sample"]

# Fields every member of a group shares (they come from the same dataset row).
SHARED_FIELDS = (
    "prompt",
    "prompt_text",
    "prompt_messages",
    "ground_truth",
    "data_source",
    "extra_info",
    "uid",
)


def plain(value: object) -> JsonValue:
    """A numpy-laden value (object arrays, numpy scalars, nested dicts) as plain JSON-like Python."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item) and getattr(value, "shape", None) == ():
        return plain(item())
    tolist = getattr(value, "tolist", None)  # numpy arrays
    if callable(tolist):
        return plain(tolist())
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return str(value)


class TextDecoder(Protocol):
    def decode(self, token_ids: list[int], skip_special_tokens: bool = ...) -> str | list[str]: ...


@dataclass(frozen=True, slots=True)
class Member:
    """A trajectory ready to be judged with its group.

    Attributes:
        session_id: Its session in the group (0..n-1).
        sample: The fields graders read (see the module docstring).
        pointwise: The reward loop's ``reward_score`` (``None``: not run, or it failed).
        pointwise_extra: The reward loop's ``reward_extra_info``.
        pointwise_failed: The reward loop flagged its reward as a fallback.
    """

    session_id: int
    sample: dict[str, JsonValue]
    pointwise: float | None = None
    pointwise_extra: Mapping[str, ExtraValue] | None = None
    pointwise_failed: bool = False


def _text(decoder: TextDecoder, ids: list[int]) -> str:
    text = decoder.decode(ids, skip_special_tokens=True)
    if not isinstance(text, str):
        raise TypeError(f"tokenizer.decode returned {type(text).__name__}, expected str")
    return text


def _chat(value: JsonValue) -> list[dict[str, JsonValue]] | None:
    if isinstance(value, list) and value and all(isinstance(m, dict) for m in value):
        return [m for m in value if isinstance(m, dict)]
    return None


def _last_user_turn(chat: list[dict[str, JsonValue]] | None) -> str | None:
    for message in reversed(chat or []):
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, str):
            return content
    return None


def build_sample(
    decoder: TextDecoder,
    prompt_ids: list[int],
    response_ids: list[int],
    fields: Mapping[str, object],
    extra_fields: Mapping[str, object],
    num_turns: int,
) -> dict[str, JsonValue]:
    """The grader sample of one trajectory (see the module docstring).

    Args:
        decoder: The policy tokenizer.
        prompt_ids: ``AgentLoopOutput.prompt_ids``.
        response_ids: ``AgentLoopOutput.response_ids``.
        fields: The dataset row as the agent loop received it (``kwargs``).
        extra_fields: ``AgentLoopOutput.extra_fields``.
        num_turns: ``AgentLoopOutput.num_turns``.
    """
    prompt_text, response = _text(decoder, prompt_ids), _text(decoder, response_ids)
    prompt_messages = _chat(plain(fields.get("raw_prompt")))
    trajectory = _chat(plain(extra_fields.get("messages")))
    if trajectory is None:
        trajectory = [*(prompt_messages or []), {"role": "assistant", "content": response}]
    reward_model = plain(fields.get("reward_model"))
    extra_info = plain(fields.get("extra_info"))
    sample: dict[str, JsonValue] = {
        "prompt": _last_user_turn(prompt_messages) or prompt_text,
        "prompt_text": prompt_text,
        "prompt_messages": list(prompt_messages or []),
        "response": response,
        "messages": list(trajectory),
        "extra_info": extra_info if isinstance(extra_info, dict) else {},
        "num_turns": num_turns,
    }
    if isinstance(reward_model, dict) and reward_model.get("ground_truth") is not None:
        sample["ground_truth"] = reward_model["ground_truth"]
    for key in ("data_source", "uid"):
        value = plain(fields.get(key))
        if value is not None:
            sample[key] = str(value)
    return sample


def group_sample(members: list[Member]) -> dict[str, JsonValue]:
    """What group graders' mappers read: the shared fields, ``query`` (= ``prompt``),
    ``responses`` (one per member, in session order) and ``members`` (their samples)."""
    first = members[0].sample
    shared: dict[str, JsonValue] = {k: first[k] for k in SHARED_FIELDS if k in first}
    shared["query"] = first.get("prompt")
    shared["responses"] = [m.sample.get("response") for m in members]
    shared["members"] = [dict(m.sample) for m in members]
    return shared


def reward_sample(member: Member, index: int) -> RewardSample:
    """The seed guide's :class:`RewardSample` of a member (``original_index`` = ``index``)."""
    s = member.sample
    extra = s.get("extra_info")
    ground_truth = s.get("ground_truth")
    data_source, uid = s.get("data_source"), s.get("uid")
    messages = _chat(s.get("messages")) or []
    return RewardSample(
        original_index=index,
        group_index=0,
        prompt=str(s.get("prompt", "")),
        response=str(s.get("response", "")),
        messages=messages,
        extra=dict(extra) if isinstance(extra, dict) else {},
        ground_truth=ground_truth,
        data_source=None if data_source is None else str(data_source),
        uid=None if uid is None else str(uid),
    )
