"""VERL 0.9's own V1 agent loop judging whole groups, on CPU.

What runs is VERL's: the trainer config (Hydra ``ppo_trainer``), ``AgentLoopManagerTQ``'s
dispatch, ``AgentLoopWorkerTQ`` as a Ray actor (``_run_prompt``, ``_run_agent_loop``,
``SingleTurnAgentLoop``, the V1 postprocess writing to a real TransferQueue), and the
reward loop (``RewardLoopManager`` with ``OpenJudgeRewardManager`` scoring each trajectory
first). Scripted: the rollout server (``rollout.py``) and the HTTP judge (``judge_http.py``).

The suite's Ray session (``ray_session``) and one TransferQueue for the module. Starting
the actors that import VERL dominates the time, so the module starts its reward worker
and both agent-loop managers' workers at once, in its fixture, and stops them after.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import transfer_queue as tq  # type: ignore[import-untyped]  # no py.typed
from omegaconf import DictConfig, OmegaConf
from verl.experimental.agent_loop.agent_loop import AgentLoopManager
from verl.experimental.reward_loop import RewardLoopManager
from verl.utils import tensordict_utils as tu

from openjudge.integrations.verl.group import OpenJudgeAgentLoopManager
from tests.integrations.verl.group.judge_http import ScriptedJudge
from tests.integrations.verl.group.rollout import ScriptedRollout, model_dir, tokenizer
from tests.integrations.verl.helpers import stop_actors, trainer_config

pytestmark = pytest.mark.slow

GUIDE_FUNCTION_FILE = Path(__file__).with_name("guide_group_function.py")
TOKENIZER = tokenizer()


def write_configs(directory: Path, judge_url: str) -> tuple[Path, Path]:
    pointwise = directory / "pointwise.yaml"
    pointwise.write_text(
        "version: 1\n"
        "graders:\n"
        "  correct: {type: string_match, params: {match_mode: contains}, mapper: {response: response, reference: ground_truth}}\n"
        "cache: {enabled: false}\n"
    )
    group = directory / "group.yaml"
    group.write_text(
        "version: 1\n"
        "providers:\n"
        f"  judge: {{kind: openai, model: scripted, base_url: '{judge_url}', api_key: test, max_retries: 0, timeout_s: 30}}\n"
        "graders:\n"
        "  rank: {type: listwise_ranking, provider: judge, mapper: {query: query, responses: responses}}\n"
        "  pointwise: {type: provided_score, params: {score_range: [0, 1]}, mapper: {score: pointwise}}\n"
        "aggregators:\n"
        "  - {type: weighted_mean, name: reward, weights: {pointwise: 1, rank: 1}}\n"
        "cache: {enabled: false}\n"
    )
    return pointwise, group


def config(model: Path, *overrides: str) -> DictConfig:
    return trainer_config(
        [
            f"actor_rollout_ref.model.path={model}",
            "actor_rollout_ref.rollout.name=vllm",
            "actor_rollout_ref.rollout.n=4",
            "actor_rollout_ref.rollout.val_kwargs.n=1",
            "actor_rollout_ref.rollout.agent.num_workers=1",
            "actor_rollout_ref.rollout.prompt_length=32",
            "actor_rollout_ref.rollout.response_length=8",
            "+actor_rollout_ref.rollout.agent.agent_loop_manager_class="
            "openjudge.integrations.verl.group.OpenJudgeAgentLoopManager",
            *overrides,
        ]
    )


class Runtime:
    """The module's actors: the reward loop, the group and guide-function managers; the judge; a way to run a batch."""

    def __init__(self, model: Path, pointwise: Path, group: Path, judge: ScriptedJudge) -> None:
        self.model, self.pointwise, self.group, self.judge = model, pointwise, group, judge
        self.config = config(
            model,
            "reward.reward_manager.source=importlib",
            "reward.reward_manager.module.path=pkg://openjudge.integrations.verl",
            "reward.reward_manager.name=OpenJudgeRewardManager",
            f"+reward.openjudge.config={pointwise}",
            "reward.num_workers=1",
            f"+reward.openjudge_group.config={group}",
            "+reward.openjudge_group.on_failure=fallback",
            "+reward.openjudge_group.fallback_score=-1.0",
            "+reward.openjudge_group.judge_timeout_s=10",  # a healthy group judges well inside it on a loaded 2-core machine
        )
        self.reward_loop = RewardLoopManager(config=self.config, rm_resource_pool=None)  # type: ignore[arg-type]  # None: no reward model
        # Created now: their workers start (and import VERL) while the first test runs.
        self.group_manager = self.manager(self.config)
        guide_function = config(
            model,
            f"reward.custom_reward_function.path={GUIDE_FUNCTION_FILE}",
            "reward.custom_reward_function.name=compute_score_async",
        )
        self.guide_function_manager = self.manager(guide_function)

    def stop(self) -> None:
        workers = self.reward_loop.reward_loop_workers
        loops = [*self.group_manager.agent_loop_workers, *self.guide_function_manager.agent_loop_workers]
        stop_actors([*loops, *workers], [f"reward_loop_worker_{i}" for i in range(len(workers))])

    def manager(self, cfg: DictConfig) -> Any:
        return OpenJudgeAgentLoopManager.create(
            config=cfg,
            llm_client=ScriptedRollout(),
            teacher_client=None,
            reward_loop_worker_handles=self.reward_loop.reward_loop_worker_handles,
        )

    @staticmethod
    def run(
        manager: Any, prompts: list[str], rollout_n: list[int], *, validate: bool = False
    ) -> dict[str, Any]:
        """Submit one batch as VERL's V1 trainer does; return {uid: {status, trajectories}}."""
        partition = "val" if validate else "train"
        uids = [f"u{uuid.uuid4().hex[:12]}" for _ in prompts]
        batch_dict: dict[str, Any] = {
            "raw_prompt": np.array([[{"role": "user", "content": p}] for p in prompts], dtype=object),
            "uid": np.array(uids, dtype=object),
            "index": np.arange(len(prompts)),
            "data_source": np.array(["demo"] * len(prompts), dtype=object),
            "reward_model": np.array([{"ground_truth": "answer"}] * len(prompts), dtype=object),
            "extra_info": np.array([{"split": partition}] * len(prompts), dtype=object),
            "__rollout_n__": np.array(rollout_n),
        }
        batch = tu.get_tensordict(batch_dict)
        tu.assign_non_tensor_data(batch, "global_steps", 1)
        if validate:
            tu.assign_non_tensor_data(batch, "validate", True)
        tags = [{"is_prompt": True, "status": "pending", "global_steps": 1} for _ in uids]
        tq.kv_batch_put(keys=uids, partition_id=partition, tags=tags)
        manager.generate_sequences(batch)
        deadline = time.monotonic() + 180
        while True:
            listed = tq.kv_list(partition_id=partition).get(partition, {})
            status = {u: listed.get(u, {}).get("status") for u in uids}
            if all(s in ("finished", "failure") for s in status.values()):
                break
            assert time.monotonic() < deadline, f"groups still running: {status}"
            time.sleep(0.2)
        out: dict[str, Any] = {}
        for uid, prompt in zip(uids, prompts, strict=True):
            keys = sorted(k for k in listed if k.startswith(f"{uid}_"))
            rows = []
            if keys:
                data = tq.kv_batch_get(
                    keys=keys,
                    partition_id=partition,
                    select_fields=["responses", "rm_scores", "extra_fields"],
                )
                for i in range(len(keys)):
                    response = TOKENIZER.decode(data["responses"][i].tolist(), skip_special_tokens=True)
                    rows.append(
                        {
                            "response": response,
                            "reward": float(data["rm_scores"][i][-1]),
                            "extra": dict(data["extra_fields"][i]["reward_extra_info"]),
                        }
                    )
            tq.kv_clear(keys=[*keys, uid], partition_id=partition)
            out[prompt] = {"status": status[uid], "rows": rows}
        return out


@pytest.fixture(scope="module")
def runtime(ray_session: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    directory = tmp_path_factory.mktemp("group_runtime")
    model = model_dir(directory / "model")
    tq.init(OmegaConf.create({"backend": {"SimpleStorage": {"num_data_storage_units": 1}}}))
    try:
        with ScriptedJudge() as judge:
            pointwise, group = write_configs(directory, judge.base_url)
            runtime = Runtime(model, pointwise, group, judge)
            try:
                yield runtime
            finally:
                runtime.stop()
    finally:
        tq.close()


def borda(qualities: list[int]) -> dict[int, float]:
    order = sorted(qualities, reverse=True)
    n = len(qualities)
    return {q: (n - 1 - order.index(q)) / (n - 1) for q in qualities}


def quality_of(row: dict[str, Any]) -> int:
    return int(str(row["response"]).split("q")[-1])


def test_groups_of_four_and_eight_failures_and_validation(runtime: Runtime) -> None:
    manager = runtime.group_manager
    assert type(manager) is OpenJudgeAgentLoopManager
    prompts = ["what is 2+2 ?", "what is 3+3 ?", "what is 4+4 ? fail", "what is 6+6 ? #hang"]
    out = runtime.run(manager, prompts, [4, 8, 4, 4])

    # n=4 and n=8: every member's reward is the group's: (pointwise 1.0 + Borda rank) / 2.
    for prompt, n in (("what is 2+2 ?", 4), ("what is 3+3 ?", 8)):
        rows = out[prompt]["rows"]
        assert out[prompt]["status"] == "finished" and len(rows) == n
        expected = borda(list(range(n)))
        assert sorted(quality_of(r) for r in rows) == list(range(n))
        for row in rows:
            assert row["reward"] == pytest.approx((1.0 + expected[quality_of(row)]) / 2)
            assert row["extra"]["openjudge/rank"] == pytest.approx(expected[quality_of(row)])
            assert row["extra"]["openjudge/group/size"] == float(n)
            assert row["extra"]["openjudge/reward"] == pytest.approx(row["reward"])
        assert runtime.judge.calls_for(prompt) == 1  # listwise: one call per group

    # A member whose generation raised does not block its group: three are judged.
    failed = out["what is 4+4 ? fail"]
    assert failed["status"] == "failure"  # VERL marks the group; the ReplayBuffer pads it
    assert sorted(quality_of(r) for r in failed["rows"]) == [0, 2, 3]
    for row in failed["rows"]:
        assert row["reward"] == pytest.approx((1.0 + borda([0, 2, 3])[quality_of(row)]) / 2)
        assert row["extra"]["openjudge/group/size"] == 3.0
    assert runtime.judge.calls_for("fail") == 1

    # A judge that never answers: judge_timeout_s ends it and on_failure's fallback applies, flagged.
    hung = out["what is 6+6 ? #hang"]
    assert hung["status"] == "finished" and len(hung["rows"]) == 4
    for row in hung["rows"]:
        assert row["reward"] == -1.0
        assert row["extra"]["openjudge/group/failed"] == 1.0 and row["extra"]["openjudge/rank/error"] == 1.0

    # The same reward_extra_info keys everywhere; numbers are floats (strings: error kinds).
    rows = [r for v in out.values() for r in v["rows"]]
    assert all(r["extra"].keys() == rows[0]["extra"].keys() for r in rows)
    for r in rows:
        assert all(isinstance(v, float | str) for v in r["extra"].values()), r["extra"]

    # Validation uses its own n (val_kwargs.n=1): nothing to compare, the pointwise reward stands.
    val = runtime.run(manager, ["what is 5+5 ?"], [1], validate=True)["what is 5+5 ?"]
    assert val["status"] == "finished" and [r["reward"] for r in val["rows"]] == [1.0]
    assert val["rows"][0]["extra"]["openjudge/group/size"] == 1.0
    assert runtime.judge.calls_for("5+5") == 0


def test_guide_reward_function_receives_whole_groups(runtime: Runtime) -> None:
    out = runtime.run(runtime.guide_function_manager, ["what is 2+2 ?"], [4])["what is 2+2 ?"]
    assert out["status"] == "finished"
    rewards = sorted((r["extra"]["quality"], r["reward"]) for r in out["rows"])
    assert [q for q, _ in rewards] == [0.0, 1.0, 2.0, 3.0]
    assert [r for _, r in rewards] == pytest.approx([0.0, 1 / 3, 2 / 3, 1.0])  # rm_scores are float32
    assert all(r["extra"]["group_size"] == 4.0 for r in out["rows"])


def test_v0_trainer_falls_back_to_verls_manager(runtime: Runtime, caplog: pytest.LogCaptureFixture) -> None:
    cfg = config(
        runtime.model,
        "trainer.use_v1=false",
        "actor_rollout_ref.rollout.agent.num_workers=0",  # nothing to start: only the class matters here
        f"+reward.openjudge_group.config={runtime.group}",
    )
    with caplog.at_level(logging.WARNING, logger="openjudge.integrations.verl.group._manager"):
        manager = runtime.manager(cfg)
    assert type(manager) is AgentLoopManager
    assert "group judging needs VERL's V1 trainer (trainer.use_v1=true)" in caplog.text
