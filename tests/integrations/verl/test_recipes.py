"""The documented recipes, as VERL computes them: its own functions act on the composed config.

No GPU: where VERL would start vLLM servers or placement groups, a stand-in records what
VERL asked of it (how many judge replicas, in which pool, whether it put them to sleep);
every decision before that is VERL's code: ``validate_config`` (batch arithmetic),
``ResourcePoolManager`` (GPU pools, checked against a node of 8 GPUs), the rollout
arithmetic of its workers (``engine_workers``: the trainer's GPUs hold whole rollout
replicas), ``RewardModelManager`` started in the reward pool as the V1 trainer starts it
(replica arithmetic, ``split_resource_pool``, sleep at start), ``ReplayBufferAsync``
(off-policy eviction) and ``PPOTrainerSeparateAsync.__init__`` (its prerequisites).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from omegaconf import DictConfig, OmegaConf
from verl.trainer.ppo.utils import need_critic, need_reference_policy

from tests.integrations.verl import fake_tq
from tests.integrations.verl.helpers import trainer_config
from tests.integrations.verl.test_docs_commands import command_blocks

ROOT = Path(__file__).resolve().parents[3]
PAGE = (ROOT / "docs" / "verl.md").read_text(encoding="utf-8")


def documented(title: str, graders: str = "/tmp/graders.yaml") -> list[str]:
    """The Hydra overrides of the bash block of docs/verl.md whose first line is ``# <title>``."""
    block = re.search(rf"```bash\n# {re.escape(title)}.*?\n```", PAGE, re.DOTALL)
    assert block is not None, f"docs/verl.md lost its {title!r} command"
    overrides = re.findall(r"^\s+(\+?[a-z_.0-9]+=\S+)", block.group(0), re.MULTILINE)
    return [o.replace("/abs/path/graders.yaml", graders) for o in overrides]


class Replica:
    """Stands in for a vLLM judge server: records what VERL's RewardModelManager asks of it."""

    made: ClassVar[list[Replica]] = []

    def __init__(
        self, replica_rank: int, config: Any, model_config: Any, gpus_per_node: int, **kw: Any
    ) -> None:
        self.rank, self.slept = replica_rank, False
        self.pool: Any = None  # the resource pool VERL starts it in (init_colocated)
        self._server_handle, self._server_address = None, f"10.0.0.{replica_rank}:8000"
        Replica.made.append(self)

    async def init_colocated(self, pool: Any) -> None:
        self.pool = pool

    async def init_standalone(self) -> None:
        return None

    async def sleep(self) -> None:
        self.slept = True

    async def wake_up(self) -> None:
        self.slept = False


class Model:
    def __init__(self, path: str) -> None:
        self.path = path

    def get_processor(self) -> None:
        return None


@pytest.fixture
def judge_servers(monkeypatch: pytest.MonkeyPatch) -> type[Replica]:
    from verl.experimental.reward_loop import reward_model
    from verl.experimental.reward_loop.router import naive_router

    Replica.made = []
    monkeypatch.setattr(reward_model, "get_rollout_replica_class", lambda name: Replica)
    monkeypatch.setattr(reward_model, "HFModelConfig", Model)
    monkeypatch.setattr(naive_router, "launch_router_process", lambda worker_urls: ("10.0.0.9:9000", None))
    return Replica


def bare_trainer(cfg: DictConfig) -> Any:
    """VERL's V1 trainer for ``cfg``'s mode, not set up (no GPUs): its methods run on the config."""
    from verl.trainer.ppo.v1.trainer_base import get_trainer_cls

    cls = get_trainer_cls(cfg.trainer.v1.trainer_mode)
    trainer = cls.__new__(cls)
    trainer.config, trainer.trainer_mode = cfg, cfg.trainer.v1.trainer_mode
    return trainer


NODE_GPUS = 8


@pytest.fixture
def node(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ray cluster of one node with 8 GPUs, as VERL's ``ResourcePoolManager`` checks it; the
    placement groups it would reserve there are stand-ins (one per node)."""
    import ray
    from verl.single_controller.ray.base import RayResourcePool

    monkeypatch.setattr(
        ray._private.state, "available_resources_per_node", lambda: {"node-0": {"GPU": float(NODE_GPUS)}}
    )
    monkeypatch.setattr(
        RayResourcePool, "get_placement_groups", lambda self, *args, **kwargs: [object() for _ in self.store]
    )


def resource_pools(cfg: DictConfig) -> Any:
    """VERL's ``ResourcePoolManager`` for ``cfg``, its pools created (and checked against the node):
    the V1 trainer's, or the V0 task runner's (``main_ppo_v0``) with ``trainer.use_v1=false``."""
    if cfg.trainer.use_v1:
        trainer = bare_trainer(cfg)
        trainer._init_resource_pool_mgr()
        manager = trainer.resource_pool_manager
    else:
        from verl.trainer.main_ppo_v0 import BaseTaskRunner

        runner: Any = BaseTaskRunner()  # type: ignore[no-untyped-call]  # VERL's, unannotated
        runner.add_actor_rollout_worker(cfg)
        runner.add_reward_model_resource_pool(cfg)
        manager = runner.init_resource_pool_mgr(cfg)
    manager.create_resource_pool()
    return manager


def start_judge(cfg: DictConfig) -> Any:
    """VERL's ``RewardModelManager`` as the V1 trainer starts it (``_setup``: the reward role's pool)."""
    from verl.experimental.reward_loop.reward_model import RewardModelManager
    from verl.trainer.ppo.utils import Role

    pool = resource_pools(cfg).get_resource_pool(Role.RewardModel)
    return RewardModelManager(cfg.reward.reward_model, pool)


def test_the_frozen_judge_recipe_starts_awake_replicas_in_a_pool_of_their_own(
    node: None, judge_servers: type[Replica]
) -> None:
    cfg = trainer_config([*GRPO, *documented("The frozen judge")])
    pools = resource_pools(cfg).resource_pool_spec
    assert pools == {"global_pool": [4], "reward_pool": [4]}  # 8 GPUs, none shared
    manager = start_judge(cfg)
    assert len(judge_servers.made) == 4 and manager.router_address == "10.0.0.9:9000"  # TP 1: one per GPU
    assert [r.pool.world_size for r in judge_servers.made] == [1, 1, 1, 1]  # each in the reward pool
    # free_cache_engine=False: streaming calls find them awake
    assert [r.slept for r in judge_servers.made] == [False] * 4
    assert cfg.reward.reward_model.rollout.gpu_memory_utilization > 0.5


def test_vERL_s_defaults_would_not_serve_the_frozen_judge(node: None, judge_servers: type[Replica]) -> None:
    recipe = [*GRPO, *documented("The frozen judge")]
    overlapping = trainer_config([o for o in recipe if not o.startswith("trainer.n_gpus_per_node")])
    with pytest.raises(ValueError, match="less than total desired GPUs 12"):
        resource_pools(overlapping)  # the trainer's default 8 GPUs beside the judge's 4
    asleep = trainer_config([o for o in recipe if "free_cache_engine" not in o])
    start_judge(asleep)
    assert judge_servers.made[-1].slept  # asleep from the start; only compute_rm_score wakes it
    one_gpu = trainer_config(
        [
            *recipe,
            "reward.reward_model.n_gpus_per_node=1",
            "reward.reward_model.rollout.tensor_model_parallel_size=2",
        ]
    )
    with pytest.raises(AssertionError, match="Not enough GPUs to run the reward model"):
        start_judge(one_gpu)  # TP 2 on one GPU: 1 // 2 = 0 replicas


def test_the_frozen_judge_of_seven_plus_one_gpus_cannot_start() -> None:
    """What docs/verl.md said before: 7 trainer GPUs beside one judge GPU."""
    from verl.utils.config import validate_config

    seven = trainer_config([*GRPO, *documented("The frozen judge"), "trainer.n_gpus_per_node=7"])
    with pytest.raises(AssertionError, match=r"real_train_batch_size \(8192\) must be divisible by .*\(7\)"):
        validate_config(
            seven, use_reference_policy=need_reference_policy(seven), use_critic=need_critic(seven)
        )
    assert rollout_replicas(seven) is None  # 7 GPUs do not hold whole replicas of TP 2


GRPO = [
    "actor_rollout_ref.rollout.name=vllm",
    "algorithm.adv_estimator=grpo",
    "actor_rollout_ref.rollout.n=8",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=16",
]
"""What ``...`` stands for in the documented commands: a GRPO run's own settings (VERL's GSM8K example)."""


def rollout_replicas(cfg: DictConfig) -> int | None:
    """Policy rollout replicas on the GPUs that serve them, by the arithmetic of VERL's workers
    (``engine_workers.ActorRolloutRefWorker``: the worker group's world size must divide by the
    rollout's TP x DP x PP; ``LLMServerManager``: ``world // (TP x DP x PP)`` replicas);
    ``None`` when it does not divide."""
    from verl.utils.config import omega_conf_to_dataclass
    from verl.workers.config import RolloutConfig

    rollout: RolloutConfig = omega_conf_to_dataclass(cfg.actor_rollout_ref.rollout)
    per_replica = (
        rollout.tensor_model_parallel_size * rollout.data_parallel_size * rollout.pipeline_model_parallel_size
    )
    if cfg.actor_rollout_ref.hybrid_engine:  # rollout in the trainer's own workers
        world = cfg.trainer.n_gpus_per_node * cfg.trainer.nnodes
    else:  # separate_async: rollout on GPUs of its own
        world = cfg.actor_rollout_ref.rollout.n_gpus_per_node * cfg.actor_rollout_ref.rollout.nnodes
    return world // per_replica if world % per_replica == 0 and world >= per_replica else None


COMMANDS = [(i, overrides) for i, overrides, for_09 in command_blocks() if for_09]


def test_the_commands_checked_include_both_trainers() -> None:
    assert sum("trainer.use_v1=false" in o for _, o in COMMANDS) >= 1 and len(COMMANDS) >= 10


@pytest.mark.parametrize(("index", "overrides"), COMMANDS, ids=[f"block{i}" for i, _ in COMMANDS])
def test_every_documented_command_passes_vERL_s_own_checks(
    node: None, judge_servers: type[Replica], index: int, overrides: list[str]
) -> None:
    """``validate_config`` (as ``main_ppo`` calls it), the resource pools on a node of 8 GPUs, whole
    rollout replicas on the trainer's GPUs, and the judge's replicas in its pool when VERL hosts one."""
    from verl.utils.config import validate_config

    cfg = trainer_config([*GRPO, *(o.replace("/abs/path/", "/tmp/") for o in overrides)])
    validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    resource_pools(cfg)
    assert rollout_replicas(cfg) is not None
    if cfg.reward.reward_model.enable:
        start_judge(cfg)
        assert judge_servers.made


@pytest.fixture
def store() -> Iterator[fake_tq.Store]:
    with fake_tq.installed() as s:
        yield s


def prefetched_group_is_kept(cfg: DictConfig, store: fake_tq.Store) -> bool:
    """Whether VERL's async buffer, built as its trainer builds it, trains a group generated a step early."""
    trainer = bare_trainer(cfg)
    refills: list[int] = []
    trainer._add_prompts_to_generate = refills.append
    buffer = trainer._build_replay_buffer()
    buffer.poll_interval = 0.0
    store.put("train", "u", {"is_prompt": True, "status": "finished", "global_steps": 1}, None)
    store.put("train", "u_0_0", {"status": "success", "global_steps": 1}, {"extra_fields": {}})
    try:
        buffer.wait_for_sampleable(global_steps=2, partition_id="train", target_count=0)
    finally:
        store.tags.clear()
    return not refills


def test_the_async_recipe_keeps_what_it_generated_ahead(store: fake_tq.Store) -> None:
    cfg = trainer_config(documented("Async: colocate_async"))
    assert cfg.trainer.v1.sampler.max_off_policy_threshold == 8  # VERL's default, kept
    assert prefetched_group_is_kept(cfg, store)
    one = trainer_config(
        [*documented("Async: colocate_async"), "trainer.v1.sampler.max_off_policy_threshold=1"]
    )
    assert not prefetched_group_is_kept(one, store)  # the old advice: evicted, new prompts in its place


def test_the_separate_async_recipe_meets_vERL_s_prerequisites(monkeypatch: pytest.MonkeyPatch) -> None:
    from verl.trainer.ppo.v1 import trainer_separate_async
    from verl.trainer.ppo.v1.trainer_base import PPOTrainer

    monkeypatch.setattr(PPOTrainer, "__init__", lambda self, config: setattr(self, "config", config))
    cfg = trainer_config(documented("Async: separate_async"))
    trainer_separate_async.PPOTrainerSeparateAsync(cfg)  # VERL's checks, then (stubbed) the GPU set-up
    broken = OmegaConf.merge(
        cfg, {"actor_rollout_ref": {"rollout": {"checkpoint_engine": {"backend": "naive"}}}}
    )
    assert isinstance(broken, DictConfig)
    with pytest.raises(AssertionError, match="backend for separate async"):
        trainer_separate_async.PPOTrainerSeparateAsync(broken)


DAPO = ["algorithm.filter_groups.enable=True", "algorithm.filter_groups.metric=openjudge/reward"]


def test_dapo_filter_groups_beside_the_openjudge_buffer_is_said_at_start(
    store: fake_tq.Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """VERL builds a custom replay buffer without DAPO's metric (``_build_replay_buffer``): group
    filtering would not run, unseen. The reward manager says so when VERL builds it."""
    from verl.trainer.ppo.reward import load_reward_manager

    from openjudge.integrations.verl._reward_loop import OpenJudgeRewardManager
    from tests.integrations.verl.helpers import make_tokenizer, write_graders_yaml

    graders = write_graders_yaml(tmp_path, "http://127.0.0.1:9/v1")
    sampler = [o for o in documented("Async: colocate_async") if "custom_sampler" in o]
    with_ours = trainer_config([*documented("Async: colocate_async", str(graders)), *DAPO])
    assert bare_trainer(with_ours)._build_replay_buffer().filter_groups_metric is None  # VERL's own choice
    vERL_s = trainer_config([o for o in documented("Async: colocate_async") if o not in sampler] + DAPO)
    assert bare_trainer(vERL_s)._build_replay_buffer().filter_groups_metric == "openjudge/reward"

    OpenJudgeRewardManager._warned = frozenset()
    with caplog.at_level(logging.WARNING, logger="openjudge.integrations.verl._reward_loop"):
        manager = load_reward_manager(with_ours, make_tokenizer(["a"]))
    assert isinstance(manager, OpenJudgeRewardManager)
    assert "algorithm.filter_groups.enable=True is ignored with a custom replay buffer" in caplog.text
    caplog.clear()
    OpenJudgeRewardManager._warned = frozenset()
    with caplog.at_level(logging.WARNING, logger="openjudge.integrations.verl._reward_loop"):
        load_reward_manager(
            trainer_config(documented("Async: colocate_async", str(graders))), make_tokenizer(["a"])
        )
    assert "filter_groups" not in caplog.text  # no DAPO asked: nothing to say


@pytest.mark.parametrize(
    ("mode", "name"), [("colocate_async", "OpenJudgeReplayBuffer"), ("sync", "OpenJudgeReplayBufferAsync")]
)
def test_a_buffer_that_does_not_fit_the_trainer_is_refused_when_vERL_builds_it(
    store: fake_tq.Store, mode: str, name: str
) -> None:
    """The minimal command names the sync buffer: switching the mode alone is refused with the fix."""
    cfg = trainer_config([f"trainer.v1.trainer_mode={mode}", *documented("Minimal")])
    cfg.trainer.v1.sampler.custom_sampler.name = name
    fits = "OpenJudgeReplayBufferAsync" if mode != "sync" else "OpenJudgeReplayBuffer"
    with pytest.raises(ValueError, match=f"custom_sampler.name={name} does not fit .*use .*name={fits}$"):
        bare_trainer(cfg)._build_replay_buffer()
    cfg.trainer.v1.sampler.custom_sampler.name = fits
    assert type(bare_trainer(cfg)._build_replay_buffer()).__name__ == fits
