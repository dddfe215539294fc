"""The default failure policy never ends a step and never invents a reward, on every reward path.

VERL's own code is the oracle: ``compute_grpo_outcome_advantage`` for what a policy does to
advantages, ``load_reward_manager`` for the manager, ``assemble_rm_scores`` as
``compute_rm_score`` calls it. The judge is the HTTP test server: ``#oj:status=503`` in a
response makes its call fail (after the provider's retries).
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from verl import DataProto
from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage
from verl.trainer.ppo.reward import load_reward_manager

from openjudge.integrations.scoring._guard import SampleFailed, is_outage
from openjudge.integrations.scoring._scorer import neutral_values
from openjudge.integrations.verl._reward_loop import OpenJudgeRewardManager, RewardLoopOutput
from openjudge.results import GraderError
from tests.integrations.verl.helpers import (
    Prompt,
    importlib_overrides,
    make_batch,
    make_tokenizer,
    trainer_config,
    words_of,
)

pytestmark = pytest.mark.slow  # real VERL managers and trainers (seconds per test)

EPS = 1e-6


def grpo(rewards: list[float], groups: list[str]) -> list[float]:
    """VERL's GRPO advantages for one-token responses with these outcome rewards."""
    scores = torch.tensor(rewards, dtype=torch.float32).unsqueeze(1)
    advantages, _ = compute_grpo_outcome_advantage(
        token_level_rewards=scores,
        response_mask=torch.ones_like(scores),
        index=np.array(groups, dtype=object),
        epsilon=EPS,
    )
    return [float(a) for a in advantages[:, 0]]


def test_neutral_is_zero_advantage_and_drop_is_not_in_vERL_s_own_estimator() -> None:
    # One group of four; member 3's judge failed.
    survivors = [1.0, 0.0, 1.0]
    neutral = neutral_values(["u"] * 4, [*survivors, None])["u"]
    assert neutral == pytest.approx(2 / 3)
    with_neutral = grpo([*survivors, neutral], ["u"] * 4)
    assert with_neutral[3] == pytest.approx(0.0, abs=1e-6)  # the failed member: no signal
    assert with_neutral[0] > 0 > with_neutral[1]  # the others keep their order and sign
    # drop: VERL normalises the survivors among themselves (same signs, std of 3 not 4).
    dropped = grpo(survivors, ["u"] * 3)
    assert dropped[0] == pytest.approx((1 - 2 / 3) / float(torch.tensor(survivors).std()), rel=1e-4)
    # The lone survivor: VERL gives a group of one mean 0 and std 1, so its advantage is its raw
    # reward, with no baseline: a drop that leaves one member rewards it absolutely.
    assert grpo([0.8], ["u"]) == pytest.approx([0.8 / (1 + EPS)])
    # ... while neutral keeps it relative: with its failed sibling at its own value, zero.
    lone = neutral_values(["u", "u"], [0.8, None])["u"]
    assert grpo([0.8, lone], ["u", "u"]) == pytest.approx([0.0, 0.0], abs=1e-6)
    # Every member failed: 0.0 for all, equal rewards, zero advantage.
    assert neutral_values(["v"] * 3, [None] * 3) == {"v": 0.0}
    assert grpo([0.0, 0.0, 0.0], ["v"] * 3) == [0.0, 0.0, 0.0]


def test_a_final_4xx_is_not_an_outage() -> None:
    def err(kind: str, message: str) -> GraderError:
        return GraderError.model_validate({"name": "j", "kind": kind, "message": message})

    assert not is_outage(err("provider_error", "judge: HTTP 400: maximum context length is 4096 tokens"))
    assert not is_outage(err("provider_error", "judge: HTTP 404: model not found"))
    assert not is_outage(err("parse_error", "no score"))
    assert is_outage(err("provider_error", "judge: HTTP 503: overloaded"))
    assert is_outage(err("provider_error", "judge: HTTP 429: slow down"))
    assert is_outage(err("provider_error", "judge: connection failed: reset"))
    assert is_outage(err("timeout", "judge: no response within 30s"))


FAILING = [Prompt("what is 2+2 ?", "4", ["answer 4", "answer 5", "answer 4 #oj:status=503"])]


@pytest.fixture(scope="module")
def tokenizer() -> object:
    return make_tokenizer(words_of(FAILING, ["#oj:status=503"]))


def manager(graders: Path, tokenizer: object, *extra: str) -> OpenJudgeRewardManager:
    built = load_reward_manager(
        trainer_config(importlib_overrides(graders, "+reward.openjudge.max_failure_rate=null", *extra)),
        tokenizer,
        reward_router_address=None,
        reward_model_tokenizer=None,
    )
    assert isinstance(built, OpenJudgeRewardManager)
    return built


def streaming_rows(data: DataProto) -> list[DataProto]:
    """Each row as VERL's agent loop sends it: unpadded, with its lengths."""
    rows = []
    p = data.batch["prompts"].shape[1]
    for i in range(len(data)):
        mask = data.batch["attention_mask"][i].bool()
        prompt, response = data.batch["prompts"][i][mask[:p]], data.batch["responses"][i][mask[p:]]
        ids = torch.cat([prompt, response]).unsqueeze(0)
        non_tensors = {k: v[i : i + 1] for k, v in data.non_tensor_batch.items()}
        non_tensors["prompt_len"] = np.array([len(prompt)])
        non_tensors["response_len"] = np.array([len(response)])
        rows.append(
            DataProto.from_dict(
                tensors={
                    "prompts": prompt.unsqueeze(0),
                    "responses": response.unsqueeze(0),
                    "input_ids": ids,
                    "attention_mask": torch.ones_like(ids),
                    "position_ids": torch.arange(ids.shape[1]).unsqueeze(0),
                },
                non_tensors=non_tensors,
            )
        )
    return rows


SCORED = [(1.0 + 0.5) / 2, (0.0 + 0.5) / 2]  # correct + quality 3 of 1..5, averaged


def test_v1_streaming_drops_a_failed_trajectory(graders_yaml: Path, tokenizer: object) -> None:
    mgr = manager(graders_yaml, tokenizer, "actor_rollout_ref.rollout.n=3")
    rows = streaming_rows(make_batch(tokenizer, FAILING))  # type: ignore[arg-type]  # the fixture's tokenizer
    assert asyncio.run(mgr.run_single(rows[0]))["reward_score"] == pytest.approx(SCORED[0])
    with pytest.raises(SampleFailed, match="quality: provider_error"):
        asyncio.run(mgr.run_single(rows[2]))


def test_v0_streaming_gives_a_failed_trajectory_its_group_mean(graders_yaml: Path, tokenizer: object) -> None:
    mgr = manager(graders_yaml, tokenizer, "trainer.use_v1=false", "actor_rollout_ref.rollout.n=3")
    rows = streaming_rows(make_batch(tokenizer, FAILING))  # type: ignore[arg-type]

    async def group() -> list[RewardLoopOutput]:  # what V0's agent loop does: at once, no return_exceptions
        return list(await asyncio.gather(*(mgr.run_single(r) for r in rows)))

    outs = asyncio.run(group())
    rewards = [float(o["reward_score"]) for o in outs]
    assert rewards == pytest.approx([*SCORED, sum(SCORED) / 2])
    failed = outs[2]["reward_extra_info"]
    assert failed["openjudge/failed"] == 1.0 and failed["openjudge/quality/error_kind"] == "provider_error"
    assert grpo(rewards, ["u"] * 3)[2] == pytest.approx(0.0, abs=1e-6)


def test_a_failed_trajectory_whose_group_has_no_mean_is_dropped_not_given_zero(
    graders_yaml: Path, tokenizer: object, caplog: pytest.LogCaptureFixture
) -> None:
    """Its siblings are not scored within neutral_wait_s: 0.0 would be an invented reward."""
    wait = "+reward.openjudge.neutral_wait_s=0.2"
    rows = streaming_rows(make_batch(tokenizer, FAILING))  # type: ignore[arg-type]
    v1 = manager(
        graders_yaml, tokenizer, "+reward.openjudge.on_failure=neutral", wait, "actor_rollout_ref.rollout.n=3"
    )
    with pytest.raises(SampleFailed, match=r"no member of group .* was scored within neutral_wait_s"):
        asyncio.run(v1.run_single(rows[2]))
    # V0 gathers a step's trajectories without return_exceptions: it cannot drop, so 0.0, said aloud.
    v0 = manager(graders_yaml, tokenizer, "trainer.use_v1=false", wait, "actor_rollout_ref.rollout.n=3")
    out = asyncio.run(v0.run_single(rows[2]))
    assert out["reward_score"] == 0.0 and out["reward_extra_info"]["openjudge/failed"] == 1.0
    assert "its mean is unknown" in caplog.text


def test_colocated_batch_neutral_is_set_where_vERL_assembles_the_scores(
    graders_yaml: Path, tokenizer: object
) -> None:
    mgr = manager(graders_yaml, tokenizer)
    data = make_batch(tokenizer, FAILING * 2)  # type: ignore[arg-type]  # two groups, same prompt text

    async def per_row() -> list[RewardLoopOutput]:  # what RewardLoopWorker.compute_score_batch does
        return list(await asyncio.gather(*(mgr.run_single(data[i : i + 1]) for i in range(len(data)))))

    outs = asyncio.run(per_row())
    scores = [float(o["reward_score"]) for o in outs]
    assert math.isnan(scores[2]) and math.isnan(scores[5])  # pending: only the driver sees the group
    rm = type(mgr).assemble_rm_scores(data, scores)
    p = data.batch["prompts"].shape[1]
    last = data.batch["attention_mask"][:, p:].sum(-1) - 1
    rewards = [float(rm[i, int(last[i])]) for i in range(len(data))]
    assert rewards == pytest.approx([*SCORED, sum(SCORED) / 2] * 2)
    assert not torch.isnan(rm).any()
    # V1's colocated path sends no uid: rows are grouped by their prompt tokens instead.
    no_uid = DataProto.from_dict(
        tensors=dict(data.batch.items()), non_tensors={"raw_prompt": data.non_tensor_batch["raw_prompt"]}
    )
    rm = type(mgr).assemble_rm_scores(no_uid, scores)
    assert [float(rm[i, int(last[i])]) for i in range(len(data))] == pytest.approx(rewards)


def test_the_batch_call_never_raises_for_a_failed_sample(graders_yaml: Path, tokenizer: object) -> None:
    from openjudge.integrations.verl import OpenJudgeRewardManager

    mgr = OpenJudgeRewardManager(
        tokenizer=tokenizer,  # type: ignore[arg-type]
        openjudge={"config": str(graders_yaml), "max_failure_rate": None},
    )
    data = make_batch(tokenizer, FAILING)  # type: ignore[arg-type]
    out = mgr(data, return_dict=True)
    p = data.batch["prompts"].shape[1]
    last = data.batch["attention_mask"][:, p:].sum(-1) - 1
    rewards = [float(out["reward_tensor"][i, int(last[i])]) for i in range(3)]  # type: ignore[index]
    assert rewards == pytest.approx([*SCORED, sum(SCORED) / 2])
    assert out["reward_extra_info"]["openjudge/failed"] == [0.0, 0.0, 1.0]  # type: ignore[index]
    mgr.close()
