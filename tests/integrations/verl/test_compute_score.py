"""The async ``compute_score`` under VERL's own ``naive`` reward-loop manager."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import cast

import pytest
from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager
from verl.trainer.ppo.reward import load_reward_manager

from openjudge.integrations.scoring._guard import SampleFailed
from openjudge.integrations.verl import compute_score
from openjudge.integrations.verl._reward_loop import RewardLoopOutput
from tests.integrations.verl.helpers import (
    FAULT_PROMPTS,
    Prompt,
    make_batch,
    make_tokenizer,
    trainer_config,
    words_of,
)

pytestmark = pytest.mark.slow  # VERL's own managers on real batches (seconds per test)

TOKENIZER = make_tokenizer(words_of(FAULT_PROMPTS))


@pytest.fixture(scope="module")
def no_prompt_yaml(graders_yaml: Path) -> Path:
    """The test graders with the judge reading the question from ``extra_info`` (naive passes no prompt)."""
    path = graders_yaml.with_name("no_prompt.yaml")
    text = graders_yaml.read_text(encoding="utf-8")
    path.write_text(text.replace("question: prompt", "question: extra_info.question"), encoding="utf-8")
    return path


def test_naive_manager_with_our_compute_score(no_prompt_yaml: Path) -> None:
    cfg = trainer_config(
        [
            "reward.custom_reward_function.path=pkg://openjudge.integrations.verl",
            "reward.custom_reward_function.name=compute_score",
            f"+reward.custom_reward_function.reward_kwargs.openjudge.config={no_prompt_yaml}",
            "+reward.custom_reward_function.reward_kwargs.openjudge.on_failure=fallback",
            "+reward.custom_reward_function.reward_kwargs.openjudge.fallback_score=-5",
        ]
    )
    prompt = FAULT_PROMPTS[0]
    data = make_batch(
        TOKENIZER,
        [Prompt(prompt.text, prompt.ground_truth, prompt.responses, extra_info={"question": prompt.text})],
    )

    async def main() -> list[RewardLoopOutput]:
        manager = load_reward_manager(cfg, TOKENIZER)  # naive captures the loop: build it inside
        assert isinstance(manager, NaiveRewardManager) and manager.is_async_reward_score
        return [cast(RewardLoopOutput, await manager.run_single(data[i : i + 1])) for i in range(len(data))]

    outs = asyncio.run(main())
    assert [o["reward_score"] for o in outs] == [0.75, 0.25, -5.0]
    extras = [o["reward_extra_info"] for o in outs]
    assert all(list(e) == list(extras[0]) for e in extras)
    first = extras[2]
    assert first["score"] == -5.0 and first["openjudge/failed"] == 1.0
    assert first["openjudge/quality/error_kind"] == "provider_error"


def test_called_directly(no_prompt_yaml: Path) -> None:
    out = asyncio.run(
        compute_score(
            "demo", "the answer is 4", "4", {"question": "2+2?"}, openjudge={"config": str(no_prompt_yaml)}
        )
    )
    assert out["score"] == 0.75 and out["openjudge/correct"] == 1.0 and out["openjudge/quality"] == 3.0


def test_a_grader_that_needs_the_prompt_fails_visibly(graders_yaml: Path) -> None:
    options = {"config": str(graders_yaml), "on_failure": "fallback", "fallback_score": 0.0}
    out = asyncio.run(compute_score("demo", "4", "4", {}, openjudge=options))
    assert out["score"] == 0.0 and out["openjudge/failed"] == 1.0
    assert out["openjudge/quality"] == 0.0 and out["openjudge/quality/error_kind"] == "invalid_input"
    with pytest.raises(SampleFailed, match="quality: invalid_input"):  # on_failure=drop, the default
        asyncio.run(compute_score("demo", "4", "4", {}, openjudge={"config": str(graders_yaml)}))


def test_the_prompt_and_trajectory_the_naive_manager_merges_into_extra_info(graders_yaml: Path) -> None:
    trajectory = [
        {"role": "user", "content": "what is 2+2 ?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": "calc", "arguments": {"x": "2+2"}}}],
        },
        {"role": "tool", "content": "4"},
        {"role": "assistant", "content": "answer 4"},
    ]
    extra_info = {  # what NaiveRewardManager passes after merging tool_extra_fields
        "raw_prompt": trajectory[:1],
        "openjudge/messages": trajectory,
        "num_turns": 4,
    }
    options = {"config": str(graders_yaml), "include_reasons": True}
    out = asyncio.run(compute_score("demo", "answer 4", "4", extra_info, openjudge=options))
    assert out["openjudge/quality"] == 3.0 and out["openjudge/quality/error"] == 0.0  # it had a prompt
    assert out["score"] == 0.75
