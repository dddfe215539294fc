"""VERL's ``RewardLoopManager`` on local Ray: two ``RewardLoopWorker`` actors score both paths.

The suite's Ray session (``ray_session``); two actors that import VERL cost ~10 s:

* streaming: VERL's ``AgentLoopWorker`` runs the tool agent loop against a scripted
  rollout server and sends each finished trajectory to a random reward actor;
* colocated: ``compute_rm_score`` chunks a trainer batch over the actors.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from verl.experimental.reward_loop import RewardLoopManager

from openjudge.testing.judge_server import JudgeServerProcess
from tests.integrations.verl.agent_rig import (
    ScriptedServer,
    agent_config,
    agent_loop_worker,
    byte_tokenizer,
    dataset_batch,
    weather_script,
)
from tests.integrations.verl.helpers import (
    FALLBACK,
    FALLBACK_OPTIONS,
    FAULT_KINDS,
    FAULT_PROMPTS,
    last_token_rewards,
    make_batch,
    nonzero_only_at_last_token,
    stop_actors,
)
from tests.integrations.verl.test_streaming import AGENT_GRADERS, BROKEN, PARIS, PARIS_TWICE

pytestmark = pytest.mark.slow  # VERL's reward actors on Ray (half a minute)


@pytest.fixture(scope="module")
def reward_loop(
    ray_session: None,
    judge_server: JudgeServerProcess,
    model_dir: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RewardLoopManager]:
    graders = tmp_path_factory.mktemp("graders") / "graders.yaml"
    graders.write_text(AGENT_GRADERS.format(base_url=judge_server.base_url), encoding="utf-8")
    cfg = agent_config(
        model_dir,
        [
            "reward.reward_manager.name=openjudge",  # found through the verl.plugins entry point
            f"+reward.openjudge.config={graders}",
            *FALLBACK_OPTIONS,
            "reward.num_workers=2",
        ],
    )
    manager = RewardLoopManager(config=cfg, rm_resource_pool=None)  # type: ignore[arg-type]  # None: no reward model
    try:
        yield manager
    finally:
        workers = manager.reward_loop_workers
        stop_actors(workers, [f"reward_loop_worker_{i}" for i in range(len(workers))])


def test_streaming_tool_trajectories_through_reward_actors(
    reward_loop: RewardLoopManager, model_dir: Path
) -> None:
    handles = reward_loop.reward_loop_worker_handles
    assert handles is not None and len(handles) == 2  # no reward model: VERL streams rewards
    config = agent_config(
        model_dir, ["actor_rollout_ref.rollout.agent.default_agent_loop=openjudge_tool_agent"]
    )
    worker = agent_loop_worker(config, ScriptedServer(weather_script), handles)
    out = asyncio.run(worker.generate_sequences(dataset_batch([PARIS, PARIS_TWICE, BROKEN])))
    extra = out.non_tensor_batch
    assert extra["openjudge/loops"].tolist() == [1.0, 0.0, 1.0]  # the repeated call was seen as a loop
    assert extra["openjudge/quality/error_kind"].tolist() == ["", "", "provider_error"]
    assert extra["openjudge/failed"].tolist() == [0.0, 0.0, 1.0]
    rewards = [(1.0 + 1.0 + 0.5) / 3, (1.0 + 0.0 + 0.5) / 3, FALLBACK]
    assert extra["openjudge/reward"].tolist() == pytest.approx(rewards)
    p = out.batch["prompts"].shape[1]
    last = out.batch["attention_mask"][:, p:].sum(-1) - 1
    assert [float(out.batch["rm_scores"][i, int(last[i])]) for i in range(3)] == pytest.approx(rewards)


def test_colocated_compute_rm_score_with_failing_judge_calls(reward_loop: RewardLoopManager) -> None:
    data = make_batch(byte_tokenizer(), FAULT_PROMPTS, prompt_length=32, response_length=32)
    correct = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    expected = [
        FALLBACK if kind else (c + 1.0 + 0.5) / 3 for c, kind in zip(correct, FAULT_KINDS, strict=True)
    ]
    for _ in range(2):  # the second step reuses the actors, their event loops and clients
        out = reward_loop.compute_rm_score(data)
        rm = out.batch["rm_scores"]
        assert rm.shape == data.batch["responses"].shape
        assert nonzero_only_at_last_token(rm, data)
        assert [score for _, score in last_token_rewards(rm, data)] == pytest.approx(expected)
        keys = out.meta_info["reward_extra_keys"]
        assert "openjudge/quality/error" in keys and "openjudge/failed" in keys
        assert set(out.non_tensor_batch) == set(keys)
        assert list(out.non_tensor_batch["openjudge/quality/error_kind"]) == FAULT_KINDS
        assert out.non_tensor_batch["openjudge/failed"].tolist() == [0.0, 0.0, 1.0, 1.0, 0.0, 1.0]
        quality = out.non_tensor_batch["openjudge/quality"]
        assert quality.dtype == np.float64 and quality.tolist() == [3.0, 3.0, 0.0, 0.0, 3.0, 0.0]
