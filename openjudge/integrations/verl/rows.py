"""VERL rows to samples: the real token ids of every row layout VERL sends.

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
VERL's own managers decode it. :func:`sample_from_row` then builds the sample with
:func:`openjudge.integrations.verl.samples.build_sample` (which documents each field's source).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import JsonValue

from openjudge.integrations.verl.functions import RewardSample
from openjudge.integrations.verl.samples import Tokenizer, build_sample, decode_pair, plain

if (
    TYPE_CHECKING
):  # only methods of the tensors are called: no VERL import (see openjudge.integrations.verl.plugin)
    import torch
    from verl import DataProto

__all__ = ["row_fields", "row_token_ids", "sample_from_row", "valid_response_lengths"]


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


async def sample_from_row(
    data: DataProto,
    i: int,
    tokenizer: Tokenizer,
    *,
    group_index: int = 0,
    reward_fn_key: str = "data_source",
) -> RewardSample:
    """Row ``i`` of ``data`` as a :class:`~openjudge.integrations.verl.RewardSample` (long texts decode off the loop)."""
    prompt_ids, response_ids = row_token_ids(data, i)
    prompt_text, response = await decode_pair(tokenizer, prompt_ids, response_ids)
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
