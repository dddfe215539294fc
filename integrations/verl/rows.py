"""What graders see of one VERL trajectory, built from every row shape VERL sends.

VERL hands a reward manager rows in three layouts, and each is read from what it
really carries (no padding assumption):

* **Streaming** (the agent loop's ``_compute_score``, V0 and V1): an unpadded row,
  ``attention_mask`` all ones, with ``prompt_len`` / ``response_len`` columns. Several
  rows (multi-output trajectories) are right-padded to the longest; the lengths say
  how much of each is real.
* **Trainer batch** (V0 colocated reward model, the legacy batch managers): prompts
  left-padded, responses right-padded, ``attention_mask`` aligned with both.
* **V1 colocated reward model** (``_compute_reward_colocate``): prompts *right*-padded,
  ``attention_mask`` rebuilt from the lengths, and only ``raw_prompt`` besides.

Without length columns, the valid tokens are the ones ``attention_mask`` marks, which is
right for both padded layouts. Text is decoded with ``skip_special_tokens=True``, as
VERL's own managers decode it.

:func:`build_sample` turns ids and the row's fields into a
:class:`~integrations.verl.RewardSample`; :func:`sample_from_row` does it for row ``i``
of a ``DataProto``. Code that holds agent-loop outputs rather than a ``DataProto`` (the
group judging of :mod:`integrations.verl.group`) calls :func:`build_sample` with the
same fields VERL would put in the row.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np
from pydantic import JsonValue

from integrations.verl._verl import DataProto, torch
from integrations.verl.functions import RewardSample

__all__ = [
    "AGENT_MESSAGES_FIELD",
    "THREAD_DECODE_TOKENS",
    "Tokenizer",
    "build_sample",
    "last_user_turn",
    "plain",
    "row_fields",
    "row_token_ids",
    "sample_from_row",
    "valid_response_lengths",
]

AGENT_MESSAGES_FIELD = "openjudge/messages"
"""The agent-loop extra field holding the structured trajectory (set by
:class:`~integrations.verl.agent_loop.OpenJudgeToolAgentLoop`)."""

# Decoding this many tokens or more goes to a worker thread so the event loop stays responsive.
THREAD_DECODE_TOKENS = 4096

# Agent-loop extra fields lifted into their own sample fields (not repeated in ``agent_fields``).
_LIFTED = frozenset(
    {AGENT_MESSAGES_FIELD, "messages", "raw_prompt", "turn_scores", "tool_rewards", "reward_extra_info"}
)


class Tokenizer(Protocol):
    """What the managers use of a Hugging Face tokenizer."""

    def decode(self, token_ids: list[int], skip_special_tokens: bool = ...) -> str | list[str]: ...


def plain(value: object) -> JsonValue:
    """A numpy-laden value (object arrays, numpy scalars, nested dicts) as plain JSON-like Python."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, np.generic):
        return plain(value.item())
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()]
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, Sequence | set | frozenset) and not isinstance(value, bytes):
        return [plain(v) for v in value]
    return str(value)


def _messages(value: JsonValue) -> list[dict[str, JsonValue]] | None:
    if isinstance(value, list) and value and all(isinstance(m, dict) and "role" in m for m in value):
        return [m for m in value if isinstance(m, dict)]
    return None


def _text(content: JsonValue) -> str:
    """A message's text: a string, or the text parts of a multimodal content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return "" if content is None else str(content)


def last_user_turn(messages: Sequence[Mapping[str, JsonValue]]) -> str | None:
    """The text of the last ``user`` message, or ``None`` when there is none."""
    for m in reversed(messages):
        if m.get("role") == "user":
            return _text(m.get("content"))
    return None


def valid_response_lengths(data: DataProto) -> torch.Tensor:
    """``attention_mask[:, P:].sum(-1)`` for every row of a trainer batch (the reward goes at length - 1)."""
    prompt_length = data.batch["prompts"].shape[-1]
    lengths: torch.Tensor = data.batch["attention_mask"][:, prompt_length:].sum(dim=-1)
    return lengths


def row_token_ids(data: DataProto, i: int) -> tuple[list[int], list[int]]:
    """The real prompt and response token ids of row ``i``, whatever its layout."""
    prompts = data.batch["prompts"][i]
    responses = data.batch["responses"][i]
    fields = data.non_tensor_batch
    if "prompt_len" in fields and "response_len" in fields:
        p, r = int(fields["prompt_len"][i]), int(fields["response_len"][i])
        prompt_ids: list[int] = prompts[:p].tolist()
        response_ids: list[int] = responses[:r].tolist()
        return prompt_ids, response_ids
    mask = data.batch["attention_mask"][i].bool()
    width = prompts.shape[-1]
    return prompts[mask[:width]].tolist(), responses[mask[width:]].tolist()


def row_fields(data: DataProto, i: int) -> dict[str, JsonValue]:
    """Row ``i``'s non-tensor fields as plain Python values."""
    return {str(key): plain(column[i]) for key, column in data.non_tensor_batch.items()}


def _decode(tokenizer: Tokenizer, ids: list[int]) -> str:
    text = tokenizer.decode(ids, skip_special_tokens=True)
    if not isinstance(text, str):
        raise TypeError(f"tokenizer.decode returned {type(text).__name__}, expected str")
    return text


def _agent_fields(fields: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """What the agent loop exported: ``tool_extra_fields`` (streaming) or its columns (batch)."""
    tool = fields.get("tool_extra_fields")
    if isinstance(tool, dict):
        return tool
    # Trainer batches carry the agent loop's extra fields as columns; only our own
    # namespaced trajectory column is taken from there (a dataset may have ``messages``).
    return {k: fields[k] for k in (AGENT_MESSAGES_FIELD, "turn_scores", "tool_rewards") if k in fields}


def build_sample(
    prompt_ids: Sequence[int],
    response_ids: Sequence[int],
    fields: Mapping[str, JsonValue],
    *,
    prompt_text: str,
    response: str,
    index: int = 0,
    group_index: int = 0,
    reward_fn_key: str = "data_source",
) -> RewardSample:
    """One trajectory as graders see it.

    Args:
        prompt_ids, response_ids: The real (unpadded) token ids.
        fields: The row's non-tensor fields, plain (see :func:`row_fields`): dataset
            columns (``raw_prompt``, ``reward_model``, ``data_source``, ``extra_info``,
            ``uid``, ...), and on the streaming path ``tool_extra_fields``,
            ``__num_turns__``, ``prompt_len``, ``response_len``.
        prompt_text, response: The decoded ids.
        index: The sample's row in its batch.
        group_index: Its prompt group.
        reward_fn_key: The field holding the data source.
    """
    agent = _agent_fields(fields)
    raw_prompt = _messages(fields.get("raw_prompt")) or _messages(agent.get("raw_prompt"))
    prompt_messages: list[dict[str, JsonValue]] = (
        raw_prompt if raw_prompt is not None else [{"role": "user", "content": prompt_text}]
    )
    prompt = last_user_turn(prompt_messages)
    trajectory = _messages(agent.get(AGENT_MESSAGES_FIELD)) or _messages(agent.get("messages"))
    if trajectory is None:
        trajectory = [*prompt_messages, {"role": "assistant", "content": response}]
    extra_info = fields.get("extra_info")
    reward_model = fields.get("reward_model")
    data_source = fields.get(reward_fn_key)
    uid = fields.get("uid")
    num_turns = fields.get("__num_turns__")
    prompt_len, response_len = fields.get("prompt_len"), fields.get("response_len")
    return RewardSample(
        original_index=index,
        group_index=group_index,
        prompt=prompt if prompt is not None else prompt_text,
        response=response,
        messages=trajectory,
        extra=dict(extra_info) if isinstance(extra_info, dict) else {},
        ground_truth=reward_model.get("ground_truth") if isinstance(reward_model, dict) else None,
        data_source=None if data_source is None else str(data_source),
        uid=None if uid is None else str(uid),
        prompt_text=prompt_text,
        prompt_messages=prompt_messages,
        prompt_length=prompt_len if isinstance(prompt_len, int) else len(prompt_ids),
        response_length=response_len if isinstance(response_len, int) else len(response_ids),
        num_turns=num_turns if isinstance(num_turns, int) else None,
        turn_scores=agent.get("turn_scores"),
        tool_rewards=agent.get("tool_rewards"),
        agent_fields={k: v for k, v in agent.items() if k not in _LIFTED},
    )


async def sample_from_row(
    data: DataProto,
    i: int,
    tokenizer: Tokenizer,
    *,
    group_index: int = 0,
    reward_fn_key: str = "data_source",
) -> RewardSample:
    """Row ``i`` of ``data`` as a :class:`~integrations.verl.RewardSample` (long texts decode off the loop)."""
    prompt_ids, response_ids = row_token_ids(data, i)

    def decode() -> tuple[str, str]:
        return _decode(tokenizer, prompt_ids), _decode(tokenizer, response_ids)

    if len(prompt_ids) + len(response_ids) >= THREAD_DECODE_TOKENS:
        prompt_text, response = await asyncio.to_thread(decode)
    else:
        prompt_text, response = decode()
    return build_sample(
        prompt_ids,
        response_ids,
        row_fields(data, i),
        prompt_text=prompt_text,
        response=response,
        index=i,
        group_index=group_index,
        reward_fn_key=reward_fn_key,
    )
