"""The VERL <= 0.7.0 batch manager, found through VERL's legacy registry."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import torch
from verl.workers.reward_manager import get_reward_manager_cls

import openjudge.integrations.verl.legacy
from openjudge.integrations.verl import OpenJudgeLegacyRewardManager, OpenJudgeRewardManager
from tests.integrations.verl.guide_functions import LengthRank
from tests.integrations.verl.helpers import (
    FALLBACK,
    FAULT_KINDS,
    FAULT_PROMPTS,
    FAULT_REWARDS,
    last_token_rewards,
    make_batch,
    make_tokenizer,
    nonzero_only_at_last_token,
    unpack,
    words_of,
)

pytestmark = pytest.mark.slow  # VERL's own managers on real batches (seconds per test)

TOKENIZER = make_tokenizer(words_of(FAULT_PROMPTS))


def registered() -> type[OpenJudgeLegacyRewardManager]:
    cls = get_reward_manager_cls("openjudge")
    assert cls is OpenJudgeLegacyRewardManager
    return OpenJudgeLegacyRewardManager


def legacy_manager(openjudge: dict[str, object]) -> OpenJudgeLegacyRewardManager:
    """As VERL <= 0.7.0's ``load_reward_manager`` builds it: ``reward_model.reward_kwargs`` as keywords."""
    cls = get_reward_manager_cls("openjudge")
    assert cls is OpenJudgeLegacyRewardManager
    reward_kwargs = {"openjudge": openjudge}
    manager = cls(
        tokenizer=TOKENIZER, num_examine=1, compute_score=None, reward_fn_key="data_source", **reward_kwargs
    )
    assert isinstance(manager, OpenJudgeLegacyRewardManager)
    return manager


def test_registered_in_the_legacy_registry() -> None:
    assert openjudge.integrations.verl.legacy.LEGACY_REGISTERED_NAME == "openjudge"
    assert get_reward_manager_cls("openjudge") is OpenJudgeLegacyRewardManager


def test_return_dict_with_failing_judge_calls(graders_yaml: Path) -> None:
    manager = legacy_manager(
        openjudge={"config": str(graders_yaml), "on_failure": "fallback", "fallback_score": FALLBACK}
    )
    data = make_batch(TOKENIZER, FAULT_PROMPTS)
    tensor, extra = unpack(manager(data, return_dict=True))
    assert tensor.shape == data.batch["responses"].shape
    assert nonzero_only_at_last_token(tensor, data)
    assert [score for _, score in last_token_rewards(tensor, data)] == FAULT_REWARDS
    assert all(len(column) == len(data) for column in extra.values())  # lists in batch order
    assert extra["openjudge/quality/error_kind"] == FAULT_KINDS
    assert extra["openjudge/failed"] == [0.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    assert extra["openjudge/correct"] == [1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    plain = manager(data)  # return_dict=False: the tensor alone
    assert torch.equal(plain, tensor)
    manager.close()


def test_groups_by_uid_and_returns_batch_order_even_when_rows_are_shuffled() -> None:
    function = LengthRank()
    manager = registered()(tokenizer=TOKENIZER, num_examine=0, compute_score=function)
    data = make_batch(TOKENIZER, FAULT_PROMPTS)
    order = [5, 0, 3, 1, 4, 2]  # the rows of the two prompts, mixed
    shuffled = data.select_idxs(order)  # type: ignore[no-untyped-call]  # VERL leaves it unannotated
    tensor, extra = unpack(manager(shuffled, return_dict=True))
    groups = function.calls[-1]
    assert list(groups) == ["what is 3+3 ?", "what is 2+2 ?"]  # by uid, in order of first appearance
    assert list(groups.values()) == [[0, 2, 4], [1, 3, 5]]
    responses = [
        TOKENIZER.decode(TOKENIZER.encode(r), skip_special_tokens=True)
        for p in FAULT_PROMPTS
        for r in p.responses
    ]
    lengths = [len(responses[i]) for i in order]
    assert extra["length"] == lengths  # batch order, not group order
    assert extra["group_size"] == [3] * 6
    # Per group the shortest response scores 1: "answer 7" (row 4); "answer 4" and "answer 5" tie (rows 1, 3).
    assert [s for _, s in last_token_rewards(tensor, shuffled)] == [
        0.0,
        1.0,
        0.0,
        1.0,
        1.0,
        0.0,
    ]
    manager.close()


def test_works_inside_a_running_event_loop(graders_yaml: Path) -> None:
    manager = legacy_manager(
        openjudge={"config": str(graders_yaml), "on_failure": "fallback", "fallback_score": FALLBACK}
    )
    data = make_batch(TOKENIZER, [FAULT_PROMPTS[0]])

    async def from_async_code() -> list[float]:
        tensor, _ = unpack(
            manager(data, return_dict=True)
        )  # a sync call inside a running loop (Jupyter, Ray)
        return [s for _, s in last_token_rewards(tensor, data)]

    assert asyncio.run(from_async_code()) == [0.75, 0.25, FALLBACK]
    assert asyncio.run(from_async_code()) == [0.75, 0.25, FALLBACK]  # and from a second loop
    manager.close()


def test_reward_loop_manager_offers_the_same_batch_call(graders_yaml: Path) -> None:
    options = {"config": str(graders_yaml), "on_failure": "fallback", "fallback_score": 0.0}
    manager = OpenJudgeRewardManager(tokenizer=TOKENIZER, num_examine=5, openjudge=options)
    data = make_batch(TOKENIZER, FAULT_PROMPTS)
    tensor, _ = unpack(manager(data, return_dict=True))
    assert [s for _, s in last_token_rewards(tensor, data)] == [
        r if r != FALLBACK else 0.0 for r in FAULT_REWARDS
    ]
    manager.close()


def test_the_default_never_fails_the_legacy_batch(graders_yaml: Path) -> None:
    manager = legacy_manager(openjudge={"config": str(graders_yaml)})
    data = make_batch(TOKENIZER, FAULT_PROMPTS)
    tensor, extra = unpack(manager(data, return_dict=True))  # drop cannot drop a row here: neutral
    rewards = [s for _, s in last_token_rewards(tensor, data)]
    # Each failed row gets the mean of its uid group's scored rows (VERL's GRPO: zero advantage).
    assert rewards == pytest.approx([0.75, 0.25, 0.5, 0.25, 0.25, 0.25])
    assert extra["openjudge/failed"] == [0.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    manager.close()


def test_inconsistent_reward_info_keys_are_refused() -> None:
    from openjudge.integrations.verl import BaseOpenJudgeRewardFunction, RewardResult, RewardSample

    class Uneven(BaseOpenJudgeRewardFunction):
        async def compute_batch_scores(
            self, prompt_to_samples: dict[str, list[RewardSample]]
        ) -> list[RewardResult]:
            samples = [s for g in prompt_to_samples.values() for s in g]
            return [
                RewardResult(s.original_index, s.group_index, 0.0, {f"k{s.original_index % 2}": 1})
                for s in samples
            ]

    manager = registered()(tokenizer=TOKENIZER, compute_score=Uneven())
    with pytest.raises(ValueError, match="same keys for every sample"):
        manager(make_batch(TOKENIZER, FAULT_PROMPTS), return_dict=True)
    manager.close()
