"""Local models behind the training adapters: a TRL reward function and VERL's compute_score."""

from __future__ import annotations

from pathlib import Path

import pytest

from openjudge.graders.reward_model import RewardModelGrader
from openjudge.integrations.trl import OpenJudgeRewards
from openjudge.integrations.verl import compute_score
from openjudge.integrations.verl._scoring import shared_scorer
from openjudge.integrations.verl._settings import OpenJudgeVerlSettings
from tests.providers.transformers.helpers import direct_reward

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # real (tiny) models run forward passes and generate


def write_config(tmp_path: Path, reward: Path, judge: Path, prompt_field: str) -> Path:
    config = tmp_path / "graders.yaml"
    config.write_text(
        f"""\
version: 1
providers:
  rm: {{kind: transformers, model: {reward}, device: cpu, max_batch_size: 16}}
  judge: {{kind: transformers, model: {judge}, device: cpu, max_new_tokens: 16}}
graders:
  rm_score:  # not "reward": VERL's extra info keeps openjudge/reward for the final reward
    type: reward_model
    provider: rm
    params: {{score_range: [-100, 100], clip_to_range: true}}  # mixed by the default mean
    mapper: {{response: response, prompt: {prompt_field}}}
  helpful:
    type: llm
    provider: judge
    params: {{template: "Q: {{q}}\\nA: {{a}}", score_range: [1, 5]}}
    mapper: {{q: {prompt_field}, a: response}}
""",
        encoding="utf-8",
    )
    return config


async def test_trl_reward_functions_score_with_in_process_models(
    tmp_path: Path, reward_path: Path, judge_path: Path
) -> None:
    rewards = OpenJudgeRewards.from_config(
        write_config(tmp_path, reward_path, judge_path, "prompt"), normalize=False
    )
    reward_fn, helpful_fn = rewards.per_grader()
    prompts = ["what is 2+2?", "capital of france?", "say hello"]
    completions = ["4", "paris", "hello there"]
    values = await reward_fn(prompts=prompts, completions=completions)
    assert values == pytest.approx(
        [direct_reward(reward_path, p, c) for p, c in zip(prompts, completions, strict=True)], abs=1e-5
    )
    assert await helpful_fn(prompts=prompts, completions=completions) == [4.0, 4.0, 4.0]


async def test_verl_compute_score_uses_one_model_per_process(
    tmp_path: Path, reward_path: Path, judge_path: Path
) -> None:
    config = write_config(tmp_path, reward_path, judge_path, "extra_info.question")
    options = {"config": str(config)}
    result = await compute_score("math", "4", "4", {"question": "what is 2+2?"}, openjudge=options)
    assert result["openjudge/rm_score"] == pytest.approx(
        direct_reward(reward_path, "what is 2+2?", "4"), abs=1e-5
    )
    assert result["openjudge/helpful"] == 4.0
    again = await compute_score("math", "5", "4", {"question": "what is 2+2?"}, openjudge=options)
    assert again["openjudge/rm_score"] == pytest.approx(
        direct_reward(reward_path, "what is 2+2?", "5"), abs=1e-5
    )
    scorer = shared_scorer(OpenJudgeVerlSettings(config=str(config)))
    grader = scorer.runner.grader_configs["rm_score"].grader
    assert isinstance(grader, RewardModelGrader)
    assert grader.reward_model.local_model.stats.items == 2  # type: ignore[attr-defined]  # both calls, one loaded model
