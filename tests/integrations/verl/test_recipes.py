"""The documented recipes, as VERL computes them: its own functions act on the composed config.

No GPU: where VERL would start vLLM servers or placement groups, a stand-in records what
VERL asked of it (how many judge replicas, whether it put them to sleep); every decision
before that is VERL's code: ``RewardModelManager`` (replica arithmetic, sleep at start),
``PPOTrainer._init_resource_pool_mgr`` (GPU pools), ``ReplayBufferAsync`` (off-policy
eviction) and ``PPOTrainerSeparateAsync.__init__`` (its prerequisites).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from omegaconf import DictConfig, OmegaConf

from tests.integrations.verl import fake_tq
from tests.integrations.verl.helpers import trainer_config

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
        self.rank, self.slept, self.pool = replica_rank, False, None
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


def reward_pool(cfg: DictConfig) -> tuple[dict[str, list[int]], Any]:
    """VERL's resource-pool spec for ``cfg`` and the pool the reward model gets."""
    from verl.single_controller.ray.base import RayResourcePool
    from verl.trainer.ppo.utils import Role

    trainer = bare_trainer(cfg)
    trainer._init_resource_pool_mgr()
    spec = trainer.resource_pool_manager.resource_pool_spec
    pool = RayResourcePool(process_on_nodes=spec[trainer.mapping[Role.RewardModel]], use_gpu=True)
    return spec, pool


def start_judge(cfg: DictConfig) -> Any:
    from verl.experimental.reward_loop.reward_model import RewardModelManager

    # Standalone arithmetic (n_gpus_per_node x nnodes), the same world size as the reward pool VERL
    # builds from these keys; a real pool would ask Ray for GPU placement groups.
    return RewardModelManager(cfg.reward.reward_model, None)  # type: ignore[arg-type]  # VERL defaults it to None


def test_the_frozen_judge_recipe_starts_one_awake_replica_beside_the_trainer(
    judge_servers: type[Replica],
) -> None:
    cfg = trainer_config(documented("The frozen judge"))
    spec, _ = reward_pool(cfg)
    assert spec == {"global_pool": [7], "reward_pool": [1]}  # 8 GPUs, none shared
    manager = start_judge(cfg)
    assert len(judge_servers.made) == 1 and manager.router_address == "10.0.0.9:9000"
    assert not judge_servers.made[0].slept  # free_cache_engine=False: streaming calls find it awake
    assert cfg.reward.reward_model.rollout.gpu_memory_utilization > 0.5


def test_vERL_s_defaults_would_not_serve_the_frozen_judge(judge_servers: type[Replica]) -> None:
    recipe = documented("The frozen judge")
    ours = (
        "tensor_model_parallel_size",
        "free_cache_engine",
        "gpu_memory_utilization",
        "trainer.n_gpus_per_node",
    )
    defaults = trainer_config([o for o in recipe if not any(k in o for k in ours)])
    with pytest.raises(AssertionError, match="Not enough GPUs to run the reward model"):
        start_judge(defaults)  # TP 2 on one GPU: 1 // 2 = 0 replicas
    asleep = trainer_config([o for o in recipe if "free_cache_engine" not in o])
    start_judge(asleep)
    assert judge_servers.made[-1].slept  # asleep from the start; only compute_rm_score wakes it


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
    assert not prefetched_group_is_kept(one, store)  # the old advice: evicted and generated again


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
