"""A reward worker that cannot start stops the run with its error, in every trainer mode.

VERL starts its ``RewardLoopWorker`` Ray actors without waiting for them: a worker whose
graders YAML is missing (or whose node lacks the key) dies in its constructor, and only
the trajectories sent to it notice. Here the broken worker is a real Ray actor running
VERL's ``RewardLoopWorker``, which dies as it would in a run:

* **Ray lifetimes**: the run's ledger is created by VERL's driver (the openjudge replay
  buffer, built with the trainer) and outlives the dying worker, which leaves its error
  there; a worker that cannot start never creates the ledger (it would take it along).
* **V1** (``sync``, ``colocate_async``, ``separate_async``), one worker broken beside a
  healthy one: VERL's trainer loop, with the openjudge buffer, stops at its first
  ``sample()`` with the worker's error, instead of dropping that worker's trajectories
  for ever (sync: "no materializable trajectories" once all fail; async: refills).
* **V0 and the experimental trainers**: VERL's calls to the dead actor raise Ray's
  ``ActorDiedError``, which carries the constructor's exception; V0's agent-loop worker
  gathers without ``return_exceptions``, so the step (one-step-off: the batch; fully
  async: the rollouter) ends with the config's error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openjudge.integrations.scoring._guard import FailureRateExceeded
from openjudge.integrations.verl._ledger import actor_name, driver_view, existing_ray_ledger, own_run_ledger
from openjudge.testing.judge_server import JudgeServerProcess
from tests.integrations.verl import fake_tq
from tests.integrations.verl.agent_rig import (
    LocalRewardHandle,
    Question,
    ScriptedServer,
    agent_config,
    agent_loop_worker,
    dataset_batch,
)
from tests.integrations.verl.test_outages_trainers import EXPERIMENTAL, V1_MODES, experimental_run
from tests.integrations.verl.trainer_rig import N, answers, graders_yaml, verl_run

pytestmark = pytest.mark.slow  # Ray actors that import VERL (several seconds each)


def broken_reward_worker(model_dir: Path, missing: Path) -> Any:
    """VERL's ``RewardLoopWorker`` as the Ray actor VERL starts, with a graders YAML that does not
    exist; returns its handle once it has died in its constructor."""
    import ray
    from ray.exceptions import ActorDiedError
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

    config = agent_config(
        model_dir, ["reward.reward_manager.name=openjudge", f"+reward.openjudge.config={missing}"]
    )
    actor: Any = ray.remote(RewardLoopWorker).options(num_cpus=0).remote(config)
    with pytest.raises(ActorDiedError, match=missing.name):
        ray.get(actor.__ray_ready__.remote(), timeout=300)
    return actor


@pytest.fixture
def store() -> Iterator[fake_tq.Store]:
    with fake_tq.installed() as s:
        yield s


def test_the_driver_s_ledger_outlives_a_worker_that_cannot_start(
    ray_session: None, model_dir: Path, tmp_path: Path
) -> None:
    import ray

    broken_reward_worker(model_dir, tmp_path / "nobody-created-the-ledger.yaml")
    assert existing_ray_ledger() is None  # a dying worker creates no ledger: it would take it along
    own_run_ledger()  # VERL's driver: the openjudge replay buffer's constructor, before any worker
    broken_reward_worker(model_dir, tmp_path / "missing-graders.yaml")
    problem, _ = driver_view()
    assert problem is not None and "a reward worker could not start" in problem
    assert "missing-graders.yaml" in problem
    ledger: Any = ray.get_actor(actor_name())  # still there, with the error, after its reporter died
    assert ray.get(ledger.problem.remote()) == problem


@pytest.mark.parametrize("mode", V1_MODES)
def test_v1_stops_with_the_error_of_a_worker_that_cannot_start(
    ray_session: None,
    store: fake_tq.Store,
    model_dir: Path,
    tmp_path: Path,
    judge_server: JudgeServerProcess,
    mode: str,
) -> None:
    """One worker broken (one node lacks the file), one healthy: the run stops with the broken one's error."""
    with verl_run(mode, model_dir, graders_yaml(tmp_path, judge_server.base_url)) as run:  # builds the buffer
        dead = broken_reward_worker(model_dir, tmp_path / f"{mode}-graders.yaml")
        run.manager.worker.reward_loop_worker_handles.append(dead)  # VERL picks a worker at random
        with pytest.raises(FailureRateExceeded, match=rf"could not start: .*{mode}-graders\.yaml"):
            run.fit()
    assert run.steps == []  # nothing trained with a reward worker missing


@pytest.fixture(scope="module")
def dead_worker(ray_session: None, model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    return broken_reward_worker(model_dir, tmp_path_factory.mktemp("broken") / "absent-graders.yaml")


def test_v0_ends_the_step_with_the_error_of_a_worker_that_cannot_start(
    dead_worker: Any, model_dir: Path, tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    from ray.exceptions import ActorDiedError
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

    graders = graders_yaml(tmp_path, judge_server.base_url)
    config = agent_config(
        model_dir,
        [
            "trainer.use_v1=false",
            f"actor_rollout_ref.rollout.n={N}",
            "actor_rollout_ref.rollout.agent.default_agent_loop=single_turn_agent",
            "reward.reward_manager.name=openjudge",
            f"+reward.openjudge.config={graders}",
        ],
    )

    async def steps() -> None:
        handles = [LocalRewardHandle(RewardLoopWorker(config)), dead_worker]
        worker = agent_loop_worker(config, ScriptedServer(answers()), handles)
        for _ in range(20):  # each trajectory goes to a random worker
            await worker.generate_sequences(dataset_batch([Question("Be brief.", "Weather?", "sunny")], n=N))

    with pytest.raises(ActorDiedError, match=r"absent-graders\.yaml"):
        asyncio.run(steps())


@pytest.mark.parametrize("trainer", EXPERIMENTAL)
def test_experimental_trainers_end_with_the_error_of_a_worker_that_cannot_start(
    dead_worker: Any, model_dir: Path, tmp_path: Path, judge_server: JudgeServerProcess, trainer: str
) -> None:
    from ray.exceptions import ActorDiedError

    graders = graders_yaml(tmp_path, judge_server.base_url)
    with (
        experimental_run(trainer, model_dir, graders, extra_handles=[dead_worker]) as run,
        pytest.raises(ActorDiedError, match=r"absent-graders\.yaml"),
    ):
        run.batches(20)  # each trajectory goes to a random worker
