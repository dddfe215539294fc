"""Whole-batch scoring (the legacy ``__call__(data, return_dict)`` shape).

Decode every row, group the rows by ``uid`` (by prompt text when there is no ``uid``
column), hand the groups to a :class:`BaseOpenJudgeRewardFunction`, match the results
back by ``original_index``, and put each reward on the last valid response token.
:class:`BatchCall` gives both managers that call shape.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, overload

import torch

from openjudge.integrations.scoring._scorer import RewardScorer
from openjudge.integrations.verl._functions import BaseOpenJudgeRewardFunction, RewardResult, RewardSample
from openjudge.integrations.verl._rows import read_row, row_token_ids, valid_response_lengths
from openjudge.integrations.verl.samples import Tokenizer, to_sample
from openjudge.runner._sync import SyncPortal

if TYPE_CHECKING:  # no VERL import here (see openjudge.integrations.verl.plugin)
    from verl import DataProto

__all__ = [
    "BatchCall",
    "BatchRewards",
    "ScorerRewardFunction",
    "decode_batch",
    "group_by_prompt",
    "reward_tensor",
    "row_groups",
    "score_batch",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BatchRewards:
    """What a legacy manager returns: the token-level reward and extra columns in batch order."""

    reward_tensor: torch.Tensor
    reward_extra_info: dict[str, list[object]]


class ScorerRewardFunction(BaseOpenJudgeRewardFunction):
    """The graders YAML as a reward function: every sample graded independently."""

    def __init__(self, scorer: RewardScorer) -> None:
        self.scorer = scorer

    async def compute_batch_scores(
        self, prompt_to_samples: dict[str, list[RewardSample]]
    ) -> list[RewardResult]:
        samples = [s for group in prompt_to_samples.values() for s in group]
        groups = [str(s.group_index) for s in samples]  # group_by_prompt numbers the uid groups
        scored = await self.scorer.score_many([s.grader_sample() for s in samples], groups)
        return [
            RewardResult(s.original_index, s.group_index, r.reward, r.extra)
            for s, r in zip(samples, scored, strict=True)
        ]


async def decode_batch(
    data: DataProto, tokenizer: Tokenizer, *, reward_fn_key: str = "data_source"
) -> list[RewardSample]:
    """Every row as a :class:`RewardSample` (``group_index`` is set by :func:`group_by_prompt`)."""
    return [
        await to_sample(read_row(data, i), tokenizer, index=i, reward_fn_key=reward_fn_key)
        for i in range(len(data))
    ]


def group_by_prompt(samples: Sequence[RewardSample]) -> dict[str, list[RewardSample]]:
    """Groups in order of first appearance, keyed by prompt text; sets each ``group_index``.

    Rows are grouped by ``uid`` when they have one, else by prompt text. A group whose
    prompt text is already a key gets `` [uid=<uid>]`` appended to stay distinct.
    """
    by_group: dict[str, list[RewardSample]] = {}
    for s in samples:
        by_group.setdefault(s.uid if s.uid is not None else f"prompt:{s.prompt}", []).append(s)
    out: dict[str, list[RewardSample]] = {}
    for group_index, (group_id, members) in enumerate(by_group.items()):
        key = members[0].prompt
        if key in out:
            key = f"{key} [uid={group_id}]"
        for s in members:
            s.group_index = group_index
        out[key] = members
    return out


def _ordered(results: Sequence[RewardResult], n: int) -> list[RewardResult]:
    by_index: dict[int, RewardResult] = {}
    for r in results:
        if not 0 <= r.original_index < n:
            raise ValueError(
                f"compute_batch_scores returned original_index {r.original_index} for a batch of {n}"
            )
        if r.original_index in by_index:
            raise ValueError(
                f"compute_batch_scores returned two results for original_index {r.original_index}"
            )
        by_index[r.original_index] = r
    missing = [i for i in range(n) if i not in by_index]
    if missing:
        raise ValueError(
            f"compute_batch_scores returned no result for {len(missing)} sample(s) (original_index {missing[:5]}...)"
        )
    return [by_index[i] for i in range(n)]


def _columns(results: Sequence[RewardResult]) -> dict[str, list[object]]:
    keys = list(results[0].reward_info) if results else []
    for r in results:
        if set(r.reward_info) != set(keys):
            raise ValueError(
                f"RewardResult.reward_info keys differ between samples ({sorted(keys)} vs "
                f"{sorted(r.reward_info)} at original_index {r.original_index}); VERL needs the same keys "
                "for every sample"
            )
    columns: dict[str, list[object]] = {k: [r.reward_info[k] for r in results] for k in keys}
    if any(r.details is not None for r in results):
        columns["details"] = [r.details for r in results]
    return columns


def row_groups(data: DataProto) -> list[str]:
    """Each row's group: its ``uid``, or where the batch has none (VERL's V1 colocated
    path), its valid prompt token ids."""
    uids = data.non_tensor_batch.get("uid")
    if uids is not None:
        return [f"uid:{u}" for u in uids]
    return [f"prompt:{row_token_ids(data, i)[0]}" for i in range(len(data))]


def reward_tensor(data: DataProto, scores: Sequence[float]) -> torch.Tensor:
    """Zeros shaped like ``responses`` with each score at ``valid_response_length - 1`` (as VERL)."""
    lengths = valid_response_lengths(data)
    out = torch.zeros_like(data.batch["responses"], dtype=torch.float32)
    out[torch.arange(out.shape[0]), lengths - 1] = torch.tensor(list(scores), dtype=torch.float32)
    return out


async def score_batch(
    function: BaseOpenJudgeRewardFunction,
    data: DataProto,
    tokenizer: Tokenizer,
    *,
    reward_fn_key: str = "data_source",
    num_examine: int = 0,
) -> BatchRewards:
    """Score a whole batch with ``function`` (see the module docstring)."""
    samples = await decode_batch(data, tokenizer, reward_fn_key=reward_fn_key)
    groups = group_by_prompt(samples)
    results = _ordered(await function.compute_batch_scores(groups), len(samples))
    for s, r in list(zip(samples, results, strict=True))[:num_examine]:
        logger.info(
            "openjudge sample %d: prompt=%r response=%r score=%g",
            s.original_index,
            s.prompt,
            s.response,
            r.score,
        )
    return BatchRewards(reward_tensor(data, [r.score for r in results]), _columns(results))


class BatchCall:
    """The synchronous batch call, ``manager(data, return_dict=True)``, of OpenJudge's VERL guide.

    Both managers inherit it. Subclasses set :attr:`function`, :attr:`num_examine` and
    :attr:`reward_fn_key` and keep the policy tokenizer in :attr:`batch_tokenizer`. The call
    runs on one private event-loop thread (started on first use), so it works from plain
    code and from inside a running loop alike; the calling thread blocks until the batch is
    scored.
    """

    function: BaseOpenJudgeRewardFunction
    num_examine: int
    reward_fn_key: str
    batch_tokenizer: Tokenizer
    _portal: SyncPortal | None = None

    async def ascore_batch(self, data: DataProto) -> BatchRewards:
        """Score a whole batch from async code, grouped by ``uid``."""
        return await score_batch(
            self.function,
            data,
            self.batch_tokenizer,
            reward_fn_key=self.reward_fn_key,
            num_examine=self.num_examine,
        )

    def precomputed(self, data: DataProto, return_dict: bool) -> torch.Tensor | dict[str, object] | None:
        """What to return without scoring (``None``: score the batch)."""
        return None

    @overload
    def __call__(self, data: DataProto, return_dict: Literal[False] = ...) -> torch.Tensor: ...
    @overload
    def __call__(self, data: DataProto, return_dict: Literal[True]) -> dict[str, object]: ...
    @overload
    def __call__(self, data: DataProto, return_dict: bool = ...) -> torch.Tensor | dict[str, object]: ...
    def __call__(self, data: DataProto, return_dict: bool = False) -> torch.Tensor | dict[str, object]:
        """Score a batch: the reward tensor (shaped like ``responses``), or with
        ``return_dict=True`` ``{"reward_tensor": ..., "reward_extra_info": {key: [value per row]}}``."""
        ready = self.precomputed(data, return_dict)
        if ready is not None:
            return ready
        if self._portal is None:
            self._portal = SyncPortal()
        out = self._portal.call(self.ascore_batch, data)
        if return_dict:
            return {"reward_tensor": out.reward_tensor, "reward_extra_info": out.reward_extra_info}
        return out.reward_tensor

    def close(self) -> None:
        """Stop the helper thread of the synchronous call, if it was started."""
        if self._portal is not None:
            self._portal.close()
            self._portal = None
