"""VERL 0.9.1's experimental trainers on CPU, up to the batch they hand to training.

``verl.experimental.one_step_off_policy`` and ``fully_async_policy`` compose VERL's
``ppo_trainer`` config (so they inherit ``trainer.use_v1: true``) but generate with the V0
``AgentLoopManager``, whose ``AgentLoopWorker`` gathers a batch's trajectories without
``return_exceptions``. What is VERL's here, and what is scripted:

* **VERL's**: each trainer's own config (``one_step_off_ppo_trainer``,
  ``fully_async_ppo_trainer``); ``OneStepOffRayTrainer._async_gen_next_batch`` (its uid,
  ``_get_gen_batch``, the repeat by ``rollout.n``, the union with the generated batch);
  ``prepare_single_generation_data``, ``FullyAsyncRollouter._process_single_sample_streaming``
  and ``FullyAsyncAgentLoopManager.generate_sequences_single``; V0's ``AgentLoopWorker`` with
  VERL's single-turn agent loop; ``RewardLoopWorker`` (in process, or Ray actors).
* **Scripted**: the rollout server (``ScriptedServer``); the trainers' Ray actors and GPU
  set-up (each method runs on an instance built without its constructor, given the
  attributes the method reads); the agent-loop manager of one-step-off (VERL's chunks a
  batch over Ray workers; here one in-process worker); the fully-async message queue
  (``put_sample`` accepts) and its statistics.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from omegaconf import DictConfig
from verl import DataProto

from tests.integrations.verl.agent_rig import agent_config

ONE_STEP_OFF = "one_step_off_ppo_trainer"
FULLY_ASYNC = "fully_async_ppo_trainer"
TRAINERS = {ONE_STEP_OFF: "one_step_off_policy", FULLY_ASYNC: "fully_async_policy"}


def experimental_config(trainer: str, model_dir: Path, overrides: Sequence[str] = ()) -> DictConfig:
    """The experimental trainer's own config for VERL's single-turn agent loop on ``model_dir``."""
    return agent_config(
        model_dir,
        ["actor_rollout_ref.rollout.agent.default_agent_loop=single_turn_agent", *overrides],
        trainer,
    )


def dataset_dict(question: str) -> dict[str, Any]:
    """One dataloader batch (one prompt), as VERL's ``RLHFDataset`` and collate give it."""
    raw = np.empty(1, dtype=object)
    raw[0] = [{"role": "user", "content": question}]
    return {
        "dummy_tensor": torch.zeros((1, 1), dtype=torch.uint8),  # RLHFDataset's, so the batch has a tensor
        "raw_prompt": raw,
        "index": np.array([0]),
        "data_source": np.array(["weather"], dtype=object),
        "reward_model": np.array([{"ground_truth": "sunny"}], dtype=object),
        "extra_info": np.array([{"index": 0}], dtype=object),
    }


class OneWorkerManager:
    """Stands in for V0's ``AgentLoopManager``: one in-process ``AgentLoopWorker`` takes the batch."""

    def __init__(self, worker: Any) -> None:
        self.worker = worker

    async def generate_sequences(self, prompts: DataProto) -> DataProto:
        out: DataProto = await self.worker.generate_sequences(prompts)
        return out


async def one_step_off_batch(
    config: DictConfig, worker: Any, question: str = "What is the weather?"
) -> DataProto:
    """VERL's ``OneStepOffRayTrainer._async_gen_next_batch``: one prompt, ``rollout.n`` trajectories
    (run it on the loop of ``worker``, V0's ``AgentLoopWorker``, as VERL's trainer awaits its manager)."""
    from verl.experimental.one_step_off_policy.ray_trainer import OneStepOffRayTrainer

    trainer: Any = object.__new__(OneStepOffRayTrainer)  # its constructor builds dataloaders and Ray pools
    trainer.config = config
    trainer.global_steps = 1
    trainer.async_rollout_manager = OneWorkerManager(worker)
    trainer._balance_batch = lambda batch, metrics: None  # reorders for the GPU ranks (its workers' stats)
    out = await trainer._async_gen_next_batch(iter([(0, dataset_dict(question))]))
    assert out is not None, "the one-step-off trainer produced no batch"
    batch: DataProto = out[3]  # (metrics, timing, epoch, batch, future_reward)
    return batch


class _Future:
    """A Ray object ref as ``generate_sequences_single`` uses it: ``.future()`` gives a concurrent future."""

    def __init__(self, future: concurrent.futures.Future[Any]) -> None:
        self._future = future

    def future(self) -> concurrent.futures.Future[Any]:
        return self._future


class _WorkerHandle:
    """An ``AgentLoopWorker`` actor handle: ``generate_sequences.remote(batch)`` runs it on ``loop``."""

    def __init__(self, worker: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._worker, self._loop = worker, loop
        self.generate_sequences = self

    def remote(self, prompts: DataProto) -> _Future:
        coro = cast(Coroutine[Any, Any, Any], self._worker.generate_sequences(prompts))
        return _Future(asyncio.run_coroutine_threadsafe(coro, self._loop))


class _Queue:
    def __init__(self) -> None:
        self.samples: list[bytes] = []

    async def put_sample(self, sample: bytes) -> bool:
        self.samples.append(sample)
        return True

    async def get_statistics(self) -> dict[str, int]:
        return {"queue_size": len(self.samples)}


async def fully_async_sample(
    config: DictConfig,
    worker: Any,
    loop: asyncio.AbstractEventLoop,
    step: int = 1,
    question: str = "What is the weather?",
) -> DataProto:
    """VERL's ``FullyAsyncRollouter._process_single_sample_streaming`` for one prompt: its
    ``rollout.n`` trajectories through ``FullyAsyncAgentLoopManager.generate_sequences_single``.

    ``worker`` (V0's ``AgentLoopWorker``) runs on ``loop``, as a Ray actor runs on its own;
    run this coroutine on another (the rollouter's actor). ``step`` numbers the sample, as
    the rollouter's ``global_steps`` does (its uid is ``uid_sample_<epoch>_<step>``).
    """
    from verl.experimental.fully_async_policy.detach_utils import (
        RolloutSample,
        prepare_single_generation_data,
    )
    from verl.experimental.fully_async_policy.fully_async_rollouter import (
        FullyAsyncAgentLoopManager,
        FullyAsyncRollouter,
    )

    manager: Any = object.__new__(FullyAsyncAgentLoopManager)  # its constructor starts Ray workers
    manager.agent_loop_workers = [_WorkerHandle(worker, loop)]
    rollouter: Any = object.__new__(cast(Any, FullyAsyncRollouter).__ray_actor_class__)
    rollouter.async_rollout_manager = manager
    rollouter.message_queue_client = _Queue()
    for name in ("total_generated_samples", "_step_generated_samples", "dropped_stale_samples"):
        setattr(rollouter, name, 0)
    rollouter.processed_sample_count = 0

    async def statistics() -> dict[str, int]:  # VERL's reads queues and counters of the running actor
        return {}

    rollouter.get_statistics = statistics
    sample = RolloutSample(
        full_batch=prepare_single_generation_data(dataset_dict(question), config),
        sample_id=f"sample_0_{step}",
        epoch=0,
        rollout_status={},
    )
    await rollouter._process_single_sample_streaming(sample)
    assert rollouter.message_queue_client.samples, "the rollouter queued no sample"
    batch: DataProto = sample.full_batch
    return batch
