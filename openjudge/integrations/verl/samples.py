"""What graders see of one VERL trajectory: :func:`to_sample` (no VERL, torch or numpy import).

A trajectory is its real token ids and its row's non-tensor fields (:class:`Trajectory`).
Both ways one reaches us produce that, and :func:`to_sample` turns it into a
:class:`~openjudge.integrations.verl.RewardSample` in one step (decode, then
:func:`build_sample`), so graders see the same fields on each:

* the reward managers read a ``DataProto`` row (:func:`openjudge.integrations.verl._rows.read_row`);
* the group stage reads the agent loop's ``AgentLoopOutput`` and the dataset row
  (:func:`sample_from_agent_output`), laid out as VERL's ``_compute_score`` lays them
  out for the reward loop (:func:`agent_output_fields`).

The fields come from a row's non-tensor columns:

=====================  ==========================================================================
sample field           VERL source
=====================  ==========================================================================
``prompt``             last ``user`` turn of ``raw_prompt`` (dataset column; the V0 agent loop also
                       copies it into ``tool_extra_fields``); the decoded prompt when absent
``prompt_text``        the prompt token ids, decoded with special tokens skipped
``prompt_messages``    ``raw_prompt`` (else one user turn holding ``prompt_text``)
``response``           the response token ids, decoded (tool outputs included for tool agents)
``messages``           ``tool_extra_fields["openjudge/messages"]`` (``openjudge_tool_agent``), or
                       ``tool_extra_fields["messages"]`` (another agent loop), or the trainer-batch
                       column ``openjudge/messages``; else ``prompt_messages`` + the response. A
                       dataset column named ``messages`` is never used.
``prompt_length``      ``prompt_len`` (streaming rows), else the number of prompt ids
``response_length``    ``response_len`` (streaming rows), else the number of response ids
``num_turns``          ``__num_turns__``
``turn_scores``        ``tool_extra_fields["turn_scores"]`` (``ToolAgentLoop``)
``tool_rewards``       ``tool_extra_fields["tool_rewards"]`` (``ToolAgentLoop``)
``ground_truth``       ``reward_model["ground_truth"]``
``data_source``        ``data_source`` (the ``reward_fn_key`` column)
``extra_info``         ``extra_info``
``uid``                ``uid``
``agent_fields``       the agent loop's other extra fields
=====================  ==========================================================================
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from pydantic import JsonValue

from openjudge.integrations._shared import plain
from openjudge.integrations.verl._functions import RewardSample

__all__ = [
    "AGENT_MESSAGES_FIELD",
    "THREAD_DECODE_TOKENS",
    "AgentOutput",
    "Tokenizer",
    "Trajectory",
    "agent_output_fields",
    "build_sample",
    "last_user_turn",
    "plain",
    "sample_from_agent_output",
    "to_sample",
]

AGENT_MESSAGES_FIELD = "openjudge/messages"
"""The agent-loop extra field holding the structured trajectory (set by
:class:`~openjudge.integrations.verl.agent_loop.OpenJudgeToolAgentLoop`)."""

# Decoding this many tokens or more goes to a worker thread so the event loop stays responsive.
THREAD_DECODE_TOKENS = 4096


class Tokenizer(Protocol):
    """What the integration uses of a Hugging Face tokenizer."""

    def decode(self, token_ids: list[int], skip_special_tokens: bool = ...) -> str | list[str]: ...


class AgentOutput(Protocol):
    """What the group stage reads of VERL's ``AgentLoopOutput``."""

    @property
    def prompt_ids(self) -> list[int]: ...
    @property
    def response_ids(self) -> list[int]: ...
    @property
    def extra_fields(self) -> dict[str, object]: ...
    @property
    def num_turns(self) -> int: ...


# Agent-loop extra fields lifted into their own sample fields (not repeated in ``agent_fields``).
_LIFTED = frozenset(
    {AGENT_MESSAGES_FIELD, "messages", "raw_prompt", "turn_scores", "tool_rewards", "reward_extra_info"}
)


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


def _agent_fields(fields: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """What the agent loop exported: ``tool_extra_fields`` (streaming) or its columns (batch)."""
    tool = fields.get("tool_extra_fields")
    if isinstance(tool, dict):
        return tool
    # Trainer batches carry the agent loop's extra fields as columns; only our own
    # namespaced trajectory column is taken from there (a dataset may have ``messages``).
    return {k: fields[k] for k in (AGENT_MESSAGES_FIELD, "turn_scores", "tool_rewards") if k in fields}


def _decode(tokenizer: Tokenizer, ids: list[int]) -> str:
    text = tokenizer.decode(ids, skip_special_tokens=True)
    if not isinstance(text, str):
        raise TypeError(f"tokenizer.decode returned {type(text).__name__}, expected str")
    return text


@dataclass(frozen=True, slots=True)
class Trajectory:
    """One trajectory as VERL hands it over, before decoding.

    Attributes:
        prompt_ids, response_ids: The real (unpadded) token ids.
        fields: The row's non-tensor fields, as VERL holds them (numpy values and all):
            dataset columns (``raw_prompt``, ``reward_model``, ``data_source``,
            ``extra_info``, ``uid``, ...), and on the streaming path ``tool_extra_fields``,
            ``__num_turns__``, ``prompt_len``, ``response_len``.
    """

    prompt_ids: list[int]
    response_ids: list[int]
    fields: Mapping[str, object]


async def to_sample(
    trajectory: Trajectory,
    tokenizer: Tokenizer,
    *,
    index: int = 0,
    group_index: int = 0,
    reward_fn_key: str = "data_source",
) -> RewardSample:
    """The trajectory as graders see it: decoded (special tokens skipped, as VERL's managers
    decode; long ones off the loop), then :func:`build_sample`."""
    prompt_ids, response_ids = trajectory.prompt_ids, trajectory.response_ids

    def decode() -> tuple[str, str]:
        return _decode(tokenizer, prompt_ids), _decode(tokenizer, response_ids)

    if len(prompt_ids) + len(response_ids) >= THREAD_DECODE_TOKENS:
        prompt_text, response = await asyncio.to_thread(decode)
    else:
        prompt_text, response = decode()
    return build_sample(
        prompt_ids,
        response_ids,
        {str(key): plain(value) for key, value in trajectory.fields.items()},
        prompt_text=prompt_text,
        response=response,
        index=index,
        group_index=group_index,
        reward_fn_key=reward_fn_key,
    )


def agent_output_fields(output: AgentOutput, row: Mapping[str, object]) -> dict[str, JsonValue]:
    """The non-tensor fields VERL's ``AgentLoopWorker._compute_score`` sends the reward loop.

    Args:
        output: The trajectory's (last) ``AgentLoopOutput``.
        row: The dataset row, as the agent loop received it (``kwargs``).
    """
    return {
        **{str(k): plain(v) for k, v in row.items()},
        "__num_turns__": output.num_turns,
        "tool_extra_fields": plain(output.extra_fields),
        "prompt_len": len(output.prompt_ids),
        "response_len": len(output.response_ids),
    }


async def sample_from_agent_output(
    output: AgentOutput,
    row: Mapping[str, object],
    tokenizer: Tokenizer,
    *,
    reward_fn_key: str = "data_source",
) -> RewardSample:
    """One agent-loop trajectory as graders see it: the same fields as the reward loop's row."""
    trajectory = Trajectory(
        list(output.prompt_ids), list(output.response_ids), agent_output_fields(output, row)
    )
    return await to_sample(trajectory, tokenizer, reward_fn_key=reward_fn_key)


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
        fields: The row's non-tensor fields, plain (:attr:`Trajectory.fields`).
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
