"""Decode VERL batch rows exactly as VERL's own reward managers do.

For row ``i`` of a batch with prompts ``[n, P]`` (left-padded) and responses ``[n, R]``
(right-padded)::

    valid_prompt   = attention_mask[i, :P].sum();  prompt   = decode(prompts[i, -valid_prompt:])
    valid_response = attention_mask[i, P:].sum();  response = decode(responses[i, :valid_response])

both with ``skip_special_tokens=True``. Non-tensor fields (numpy object arrays) are turned
into plain Python values before any grader sees them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np
from pydantic import JsonValue

from integrations.verl._verl import DataProto, torch
from integrations.verl.functions import RewardSample

__all__ = ["Tokenizer", "decode_row", "plain", "valid_response_lengths"]

# Decoding this many tokens or more goes to a worker thread so the event loop stays responsive.
THREAD_DECODE_TOKENS = 4096


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
    if isinstance(value, list) and all(isinstance(m, dict) for m in value):
        return [m for m in value if isinstance(m, dict)]
    return None


def valid_response_lengths(data: DataProto) -> torch.Tensor:
    """``attention_mask[:, P:].sum(-1)`` for every row (the reward goes at length - 1)."""
    prompt_length = data.batch["prompts"].shape[-1]
    lengths: torch.Tensor = data.batch["attention_mask"][:, prompt_length:].sum(dim=-1)
    return lengths


def token_ids(data: DataProto, i: int) -> tuple[list[int], list[int]]:
    """The valid prompt and response token ids of row ``i``."""
    prompts = data.batch["prompts"]
    prompt_length = prompts.shape[-1]
    mask = data.batch["attention_mask"][i]
    valid_prompt = int(mask[:prompt_length].sum())
    valid_response = int(mask[prompt_length:].sum())
    prompt_ids: list[int] = prompts[i][-valid_prompt:].tolist()  # as VERL: [-0:] keeps every token
    response_ids: list[int] = data.batch["responses"][i][:valid_response].tolist()
    return prompt_ids, response_ids


def _decode(tokenizer: Tokenizer, ids: list[int]) -> str:
    text = tokenizer.decode(ids, skip_special_tokens=True)
    if not isinstance(text, str):
        raise TypeError(f"tokenizer.decode returned {type(text).__name__}, expected str")
    return text


def decode_texts(tokenizer: Tokenizer, prompt_ids: list[int], response_ids: list[int]) -> tuple[str, str]:
    """The prompt and response texts, decoded as VERL decodes them."""
    return _decode(tokenizer, prompt_ids), _decode(tokenizer, response_ids)


def decode_row(
    data: DataProto,
    i: int,
    prompt: str,
    response: str,
    *,
    reward_fn_key: str = "data_source",
    group_index: int = 0,
) -> RewardSample:
    """Row ``i`` as a :class:`RewardSample`, given its decoded texts."""
    fields = data.non_tensor_batch

    def get(key: str) -> JsonValue:
        column = fields.get(key)
        return None if column is None else plain(column[i])

    extra_info = get("extra_info")
    extra: dict[str, JsonValue] = dict(extra_info) if isinstance(extra_info, dict) else {}
    tool_fields = get("tool_extra_fields")  # merged as VERL's naive manager does
    if isinstance(tool_fields, dict):
        extra.update(tool_fields)
    num_turns = get("__num_turns__")
    if num_turns is not None:
        extra["num_turns"] = num_turns
    reward_model = get("reward_model")
    ground_truth = reward_model.get("ground_truth") if isinstance(reward_model, dict) else None
    data_source = get(reward_fn_key)
    uid = get("uid")

    messages = _messages(get("messages"))
    if messages is None:
        raw_prompt = _messages(get("raw_prompt"))
        if raw_prompt is not None:
            messages = [*raw_prompt, {"role": "assistant", "content": response}]
        else:
            messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": response}]
    return RewardSample(
        original_index=i,
        group_index=group_index,
        prompt=prompt,
        response=response,
        messages=messages,
        extra=extra,
        ground_truth=ground_truth,
        data_source=None if data_source is None else str(data_source),
        uid=None if uid is None else str(uid),
    )
