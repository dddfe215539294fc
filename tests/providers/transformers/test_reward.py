"""The in-process reward model: scores equal a direct forward pass, batching, the grader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from openjudge.graders.base_grader import InvalidInputError
from openjudge.graders.reward_model import RewardModelGrader
from openjudge.models._errors import ChatModelError
from openjudge.models.policy import ProviderPolicy, RetryPolicy
from openjudge.providers.transformers import TransformersRewardModel
from openjudge.results import GraderError, GraderScore
from tests.providers.transformers import tiny
from tests.providers.transformers.helpers import direct

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # real (tiny) models run forward passes and generate

CASES: list[tuple[str, dict[str, Any]]] = [
    ("4", {"prompt": "what is 2+2?"}),
    ("paris is the capital of france", {"prompt": "capital of france?"}),
    (
        "a good answer",
        {
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "say something"},
            ]
        },
    ),
    ("a bad answer that goes on for quite a while longer than the others", {}),
]


def reward_model(path: Path, **options: Any) -> TransformersRewardModel:
    options.setdefault("device", "cpu")
    return TransformersRewardModel(str(path), **options)


async def test_batched_rewards_equal_a_direct_forward_pass(reward_path: Path) -> None:
    rm = reward_model(reward_path, max_batch_size=4, batch_window_s=30.0)
    rewards: list[Any] = [None] * len(CASES)

    async def one(i: int) -> None:
        response, context = CASES[i]
        rewards[i] = await rm.ascore(response, **context)

    async with anyio.create_task_group() as tg:
        for i in range(len(CASES)):
            tg.start_soon(one, i)
    assert rm.local_model.stats.batches == 1  # all four shared one left-padded forward pass
    for (response, context), reward in zip(CASES, rewards, strict=True):
        assert reward.value == pytest.approx(direct(reward_path, response, **context), abs=1e-5)
        assert reward.values == (reward.value,)
        assert reward.model == str(reward_path)
        assert reward.usage.requests == 1 and reward.usage.prompt_tokens > 0
    assert len({round(r.value, 6) for r in rewards}) == len(CASES)


async def test_64_concurrent_scores_make_exactly_4_forward_passes(reward_path: Path) -> None:
    rm = reward_model(reward_path, max_batch_size=16, batch_window_s=30.0)
    model = rm.local_model.load().model
    forwards: list[int] = []
    handle = model.register_forward_pre_hook(
        lambda module, args, kwargs: forwards.append(kwargs["input_ids"].shape[0]), with_kwargs=True
    )
    values: list[float] = [0.0] * 64

    async def one(i: int) -> None:
        values[i] = (await rm.ascore(f"answer {i}", prompt="what is 2+2?")).value

    try:
        async with anyio.create_task_group() as tg:
            for i in range(64):
                tg.start_soon(one, i)
    finally:
        handle.remove()
    assert forwards == [16, 16, 16, 16]
    assert values[7] == pytest.approx(direct(reward_path, "answer 7", prompt="what is 2+2?"), abs=1e-5)


async def test_the_reward_model_grader_fronts_the_local_model(reward_path: Path) -> None:
    rm = reward_model(reward_path)
    grader = RewardModelGrader(rm, name="rm")
    result = await grader.aevaluate(response="4", prompt="what is 2+2?")
    expected = direct(reward_path, "4", prompt="what is 2+2?")
    assert isinstance(result, GraderScore) and result.score == pytest.approx(expected, abs=1e-5)
    assert result.metadata["raw_reward"] == result.score and result.score_range is None
    both = await grader.aevaluate(response="4", prompt="q", messages=[{"role": "user", "content": "q"}])
    assert isinstance(both, GraderError) and both.kind == "invalid_input"
    clipped = await RewardModelGrader(rm, score_range=(-0.001, 0.001), clip_to_range=True).aevaluate(
        response="4", prompt="what is 2+2?"
    )
    assert isinstance(clipped, GraderScore) and clipped.score == (0.001 if expected > 0 else -0.001)


async def test_a_label_index_past_the_head_is_a_provider_error(reward_path: Path) -> None:
    rm = reward_model(reward_path, label_index=3, policy=ProviderPolicy(retry=RetryPolicy(max_attempts=1)))
    with pytest.raises(ChatModelError, match="label_index=3 but the model returns 1 value"):
        await rm.ascore("4", prompt="what is 2+2?")
    with pytest.raises(InvalidInputError):
        await rm.ascore("4", prompt="q", messages=[])


async def test_several_labels_pick_label_index(tmp_path: Path) -> None:
    path = tiny.random_reward_model(tmp_path / "two-labels", num_labels=2)
    first = await reward_model(path).ascore("4", prompt="what is 2+2?")
    second = await reward_model(path, label_index=1).ascore("4", prompt="what is 2+2?")
    assert first.values == second.values and len(first.values) == 2
    assert (first.value, second.value) == first.values


async def test_a_too_long_input_fails_alone(reward_path: Path) -> None:
    rm = reward_model(
        reward_path, max_input_tokens=30, policy=ProviderPolicy(retry=RetryPolicy(max_attempts=1))
    )
    with pytest.raises(ChatModelError) as raised:
        await rm.ascore("x" * 100, prompt="q")
    assert raised.value.kind == "invalid_input" and "more than the model's 30" in raised.value.message
    assert (await rm.ascore("4")).value == pytest.approx(direct(reward_path, "4"), abs=1e-5)
