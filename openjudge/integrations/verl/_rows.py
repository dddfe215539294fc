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
right for both padded layouts. :func:`read_row` gives the row as a
:class:`~openjudge.integrations.verl.samples.Trajectory`, which
:func:`~openjudge.integrations.verl.samples.to_sample` turns into the sample graders see
(documenting each field's source). One row's trip through ``run_single``::

    rows.read_row -> samples.to_sample -> RewardScorer.score -> {"reward_score", "reward_extra_info"}
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openjudge.integrations.verl.samples import Trajectory

if (
    TYPE_CHECKING
):  # only methods of the tensors are called: no VERL import (see openjudge.integrations.verl.plugin)
    import torch
    from verl import DataProto

__all__ = ["read_row", "row_token_ids", "valid_response_lengths"]


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


def read_row(data: DataProto, i: int) -> Trajectory:
    """Row ``i`` of ``data``: its real token ids and its non-tensor fields."""
    prompt_ids, response_ids = row_token_ids(data, i)
    return Trajectory(
        prompt_ids, response_ids, {key: column[i] for key, column in data.non_tensor_batch.items()}
    )
