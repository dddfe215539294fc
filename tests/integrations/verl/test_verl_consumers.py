"""VERL's own consumers of ``reward_extra_info`` run on outputs that contain judge failures.

Validation metrics (``process_validation_metrics``), DAPO's ``filter_groups`` (the V1
``ReplayBuffer``) and the GDPO advantage estimator cast every numeric extra with
``np.mean`` / ``float(...)``: a ``None`` for a failed grader breaks them (VERL 0.7 to
0.9.0 included). Our extras are floats plus ``/error`` flags in every case.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import anyio
import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from verl.trainer.ppo.core_algos import compute_gdpo_outcome_advantage
from verl.trainer.ppo.metric_utils import process_validation_metrics

from openjudge.graders.function_grader import FunctionGrader
from openjudge.graders.llm_grader import LLMGrader
from openjudge.integrations.scoring._scorer import RewardScorer, ScoredSample
from openjudge.integrations.verl._settings import OpenJudgeVerlSettings
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import ChatRequest
from openjudge.models.policy import ProviderPolicy, RetryPolicy
from openjudge.runner.grading_runner import GraderConfig, GradingRunner
from openjudge.testing.function_model import FunctionChatModel
from tests.integrations.verl import fake_tq


def reply(request: ChatRequest) -> str:
    if "TIMEOUT" in json.dumps(request.messages):
        raise ChatModelError("judge timed out", kind="timeout", retryable=False)
    return json.dumps({"reason": "ok", "score": 5 if "good" in json.dumps(request.messages) else 1})


# Two prompt groups of three; group b's judge calls all fail.
UIDS = ["a", "a", "a", "b", "b", "b"]
RESPONSES = ["good 4", "bad 5", "good TIMEOUT 4", "TIMEOUT 4", "TIMEOUT 3", "TIMEOUT 4"]


@pytest.fixture(scope="module")
def scored() -> list[ScoredSample]:
    judge = FunctionChatModel(reply, model="judge", policy=ProviderPolicy(retry=RetryPolicy(max_attempts=1)))
    runner = GradingRunner(
        {
            "correct": GraderConfig(
                FunctionGrader(lambda response: "4" in response, score_range=(0, 1)), {"response": "response"}
            ),
            "judge": GraderConfig(
                LLMGrader(judge, template="{answer}", score_range=(1, 5)), {"answer": "response"}
            ),
        },
        show_progress=False,
    )
    settings = OpenJudgeVerlSettings(
        config="x", on_failure="fallback", fallback_score=0.0, max_failure_rate=None
    )
    scorer = RewardScorer(runner, settings)
    return anyio.run(scorer.score_many, [{"response": r} for r in RESPONSES])


def columns(scored: list[ScoredSample]) -> dict[str, list[Any]]:
    return {key: [s.extra[key] for s in scored] for key in scored[0].extra}


def test_validation_metrics(scored: list[ScoredSample]) -> None:
    infos: dict[str, list[Any]] = {"reward": [s.reward for s in scored], **columns(scored)}
    metrics = process_validation_metrics(["weather"] * 6, UIDS, infos)["weather"]
    assert metrics["openjudge/judge/error"]["mean@3"] == pytest.approx((1 / 3 + 1) / 2)
    assert metrics["openjudge/failed"]["mean@3"] == pytest.approx((1 / 3 + 1) / 2)
    assert metrics["openjudge/correct"]["mean@3"] == pytest.approx(2 / 3)
    assert metrics["reward"]["best@2/mean"] >= metrics["reward"]["worst@2/mean"]
    assert "openjudge/judge/error_kind" not in metrics  # strings are skipped by VERL
    assert all(math.isfinite(v) for var in metrics.values() for v in var.values())


@pytest.fixture
def transfer_queue() -> Iterator[fake_tq.Store]:
    with fake_tq.installed() as store:
        yield store


def test_dapo_filter_groups_in_the_v1_replay_buffer(
    transfer_queue: fake_tq.Store, scored: list[ScoredSample]
) -> None:
    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer

    for uid in ("a", "b"):
        transfer_queue.put("train", uid, {"is_prompt": True, "status": "finished", "global_steps": 1}, None)
    for i, (uid, s) in enumerate(zip(UIDS, scored, strict=True)):
        key = f"{uid}_{i % 3}_0"
        extra_fields = {"reward_extra_info": s.extra}
        transfer_queue.put(
            "train", key, {"status": "success", "global_steps": 1}, {"extra_fields": extra_fields}
        )
    buffer = ReplayBuffer(
        trainer_mode="sync",
        trainer_config={},  # type: ignore[arg-type]  # VERL annotates DictConfig, reads nothing from it here
        max_off_policy_threshold=None,
        max_off_policy_strategy="drop",
        sampler_kwargs={},  # type: ignore[arg-type]  # as above
        refill_fn=lambda n: None,
        filter_groups_metric="openjudge/reward",
        train_batch_size=2,
        gen_batch_size=1,
    )
    buffer._sync_metadata_from_transfer_queue()  # type: ignore[no-untyped-call]  # VERL leaves it unannotated
    filtered, counts = buffer._dapo_filtered_keys("train")
    # Group b got the fallback everywhere: no signal, DAPO drops it; group a varies and stays.
    assert filtered == {"b"} and dict(counts) == {0.0: 1}


def test_gdpo_advantages(scored: list[ScoredSample]) -> None:
    n, prompt_len, response_len = 6, 3, 4
    mask = torch.ones(n, prompt_len + response_len, dtype=torch.int64)
    response_mask = torch.ones(n, response_len, dtype=torch.int64)
    rewards = torch.zeros(n, response_len)
    rewards[:, -1] = torch.tensor([s.reward for s in scored])
    cols = columns(scored)
    non_tensor = {k: np.array(v) for k, v in cols.items()}
    advantages, returns = compute_gdpo_outcome_advantage(
        token_level_rewards=rewards,
        response_mask=response_mask,
        index=np.array(UIDS, dtype=object),
        config={"gdpo_reward_keys": ["openjudge/correct", "openjudge/judge"]},
        non_tensor_batch=non_tensor,
        batch={"prompts": torch.zeros(n, prompt_len), "attention_mask": mask},
    )
    assert advantages.shape == (n, response_len) and bool(torch.isfinite(advantages).all())
    assert torch.equal(advantages, returns)
    assert float(advantages[0, 0]) > float(advantages[1, 0])  # "good 4" beats "bad 5" on both keys


def test_failure_counts_reach_the_v1_training_metrics(
    transfer_queue: fake_tq.Store, scored: list[ScoredSample]
) -> None:
    from openjudge.integrations.verl.sampler import OpenJudgeReplayBuffer

    transfer_queue.put("train", "a", {"is_prompt": True, "status": "finished", "global_steps": 1}, None)
    transfer_queue.put("train", "b", {"is_prompt": True, "status": "failure", "global_steps": 1}, None)
    for i, (uid, s) in enumerate(zip(UIDS, scored, strict=True)):
        if i == 5:
            continue  # b's third trajectory was dropped (on_failure=drop): the group is a "failure"
        fields = {"extra_fields": {"reward_extra_info": s.extra}}
        transfer_queue.put("train", f"{uid}_{i % 3}_0", {"status": "success", "global_steps": 1}, fields)
    buffer = OpenJudgeReplayBuffer(  # the arguments VERL's trainer gives a custom sampler
        trainer_mode="sync",
        trainer_config=OmegaConf.create({}),
        max_off_policy_threshold=None,
        max_off_policy_strategy="drop",
        sampler_kwargs=OmegaConf.create({}),
        refill_fn=lambda n: None,
    )
    batch, metrics = buffer.sample(global_steps=1, partition_id="train", batch_size=2)
    assert len(batch.keys) == 5
    assert metrics["training/openjudge/samples"] == 5.0
    assert metrics["training/openjudge/failed"] == 3.0  # "good TIMEOUT 4" and b's two kept members
    assert metrics["training/openjudge/judge/error"] == 3.0
    assert metrics["training/openjudge/correct/error"] == 0.0
    assert metrics["training/openjudge/groups_with_dropped"] == 1.0


def test_group_judging_failures_are_counted_too(transfer_queue: fake_tq.Store) -> None:
    from openjudge.integrations.verl.sampler import failure_metrics

    neutral = {"openjudge/group/failed": 1.0, "openjudge/rank/error": 1.0, "openjudge/group/size": 4.0}
    judged = {"openjudge/group/failed": 0.0, "openjudge/rank/error": 0.0, "openjudge/group/size": 4.0}
    assert failure_metrics([neutral, {**judged, "openjudge/rank/error_kind": ""}], "training") == {
        "training/openjudge/samples": 2.0,
        "training/openjudge/group/failed": 1.0,
        "training/openjudge/rank/error": 1.0,
    }
