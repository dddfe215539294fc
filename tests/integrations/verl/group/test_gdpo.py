"""The group stage's per-grader keys through VERL's own GDPO estimator.

GDPO (``algorithm.adv_estimator=gdpo``) normalises each key of ``algorithm.gdpo_reward_keys``
within its ``uid`` group. The group stage writes every key as a float and gives a failed
member the group's mean, so its advantage on that key is exactly zero.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from verl import DataProto
from verl.trainer.ppo.core_algos import compute_gdpo_outcome_advantage, compute_grpo_outcome_advantage
from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

from openjudge.graders.comparison import ListwiseRankingGrader
from openjudge.graders.provided_score import ProvidedScoreGrader
from openjudge.integrations.verl.group import GroupSettings
from openjudge.integrations.verl.group._verdict import MemberReward
from openjudge.integrations.verl.group.judges import GraderGroupJudge
from openjudge.runner.aggregators import WeightedMeanAggregator
from openjudge.runner.grading_runner import GraderConfig, GradingRunner
from tests.integrations.verl.group.scripted import listwise_judge, member

KEYS = ["openjudge/rank", "openjudge/pointwise"]


def judged_groups() -> list[dict[str, float]]:
    """Two groups of four; in the second, member 2's reward-loop reward was a fallback."""
    runner = GradingRunner(
        {
            "rank": GraderConfig(
                ListwiseRankingGrader(listwise_judge()[0]), {"query": "query", "responses": "responses"}
            ),
            "pointwise": GraderConfig(ProvidedScoreGrader(score_range=(0, 1)), {"score": "pointwise"}),
        },
        aggregators=[WeightedMeanAggregator("reward", {"rank": 1.0, "pointwise": 1.0}, on_error="skip")],
    )
    judge = GraderGroupJudge(runner, GroupSettings(), source="group.yaml")
    first = {
        k: member(k, f"q{q}", pointwise=p)
        for k, (q, p) in enumerate([(1, 0.2), (4, 0.9), (2, 0.5), (3, 0.4)])
    }
    second = {
        k: member(k, f"q{q}", pointwise=p)
        for k, (q, p) in enumerate([(2, 0.7), (1, 0.3), (4, 0.0), (3, 0.9)])
    }
    second[2] = member(2, "q4", pointwise=0.0, failed=True)
    rows: list[dict[str, float]] = []
    for group in (first, second):
        verdict = asyncio.run(judge.judge(group, 4))
        for k in range(4):
            outcome = verdict.outcomes[k]
            assert isinstance(outcome, MemberReward)
            rows.append({key: float(outcome.extra[key]) for key in KEYS})  # type: ignore[arg-type]  # floats
    return rows


def batch(
    rows: list[dict[str, float]],
) -> tuple[torch.Tensor, dict[str, np.ndarray], dict[str, torch.Tensor]]:
    n, length = len(rows), 3
    prompts = torch.ones((n, 2), dtype=torch.long)
    mask = torch.ones((n, 2 + length), dtype=torch.long)
    response_mask = torch.ones((n, length))
    non_tensor = {key: np.array([r[key] for r in rows], dtype=object) for key in KEYS}
    non_tensor["uid"] = np.array(["g1"] * 4 + ["g2"] * 4, dtype=object)
    return response_mask, non_tensor, {"prompts": prompts, "attention_mask": mask}


def test_gdpo_runs_on_the_group_keys_and_a_failed_member_has_zero_advantage_there() -> None:
    rows = judged_groups()
    failed = rows[6]
    others = [rows[4], rows[5], rows[7]]
    assert failed["openjudge/pointwise"] == pytest.approx(np.mean([r["openjudge/pointwise"] for r in others]))
    response_mask, non_tensor, tensors = batch(rows)
    config = OmegaConf.create({"gdpo_reward_keys": KEYS, "norm_adv_by_std_in_grpo": True})
    advantages, _ = compute_gdpo_outcome_advantage(
        token_level_rewards=torch.zeros_like(response_mask),
        response_mask=response_mask,
        index=non_tensor["uid"],
        config=config,
        non_tensor_batch=non_tensor,
        batch=tensors,
    )
    assert advantages.shape == response_mask.shape and torch.isfinite(advantages).all()
    # GDPO's first step, per key, for the failed member: zero on the neutralised key.
    scores = torch.zeros_like(response_mask)
    scores[:, -1] = torch.tensor([r["openjudge/pointwise"] for r in rows])
    per_key, _ = compute_grpo_outcome_advantage(scores, response_mask, non_tensor["uid"])
    assert per_key[6, -1].item() == pytest.approx(0.0, abs=1e-5)
    assert per_key[4, -1].item() != pytest.approx(0.0, abs=1e-3)


def test_v1_trainer_does_not_pass_reward_keys_to_gdpo() -> None:
    # VERL 0.9.1's V1 _compute_advantage fetches only uid and rm_scores from TransferQueue,
    # so GDPO finds no per-key rewards there: the recipe needs trainer.use_v1=false.
    rows = judged_groups()
    response_mask, non_tensor, tensors = batch(rows)
    data = DataProto.from_dict(
        tensors={
            "response_mask": response_mask,
            "token_level_rewards": torch.zeros_like(response_mask),
            **tensors,
        },
        non_tensors={"uid": non_tensor["uid"]},
    )
    config = OmegaConf.create({"gdpo_reward_keys": KEYS, "norm_adv_by_std_in_grpo": True})
    with pytest.raises(
        AssertionError, match="GDPO reward key 'openjudge/rank' not found in non_tensor_batch"
    ):
        compute_advantage_for_multi_trajectories(
            data, batch_keys=[f"g_{k}_0" for k in range(8)], adv_estimator="gdpo", num_repeat=4, config=config
        )
