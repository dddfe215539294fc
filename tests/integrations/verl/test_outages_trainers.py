"""A judge outage in each trainer mode, through VERL 0.9.1's own trainer loop and workers.

Each test runs VERL's ``fit()`` of the mode's trainer, its ``AgentLoopWorkerTQ`` (V1) or
``AgentLoopWorker`` (V0), its ``RewardLoopWorker`` and our reward manager and replay
buffer against a judge over HTTP; ``trainer_rig`` says precisely which parts are
scripted (the rollout server, TransferQueue, the GPU stages, weight sync) and why.

* Judge down for the whole run (a closed port): the run ends with
  :class:`FailureRateExceeded`, whose message names the judge (endpoint, model) and the
  counts, after ``failure_window`` samples plus those already in flight (the stated bound).
* Judge down for a while (its first calls answer 503): training goes on, and the
  failures are counted in the step's metrics (``training/openjudge/run/failed``; VERL's own
  ``training/rollout_failure/evicted_samples`` in the async modes).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from verl import DataProto

from openjudge.integrations.scoring._guard import FailureRateExceeded
from openjudge.integrations.verl._ledger import driver_view
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
from tests.integrations.verl.trainer_rig import BATCH, WINDOW, N, answers, dead_url, graders_yaml, verl_run

pytestmark = pytest.mark.slow  # real VERL managers and trainers (seconds per test)

V1_MODES = ["sync", "colocate_async", "separate_async"]
STOP_BOUND_S = 30.0
"""Wall time from the start of fit() to the stop, on a loaded 2-core machine (typically ~1 s)."""


@pytest.fixture
def store() -> Iterator[fake_tq.Store]:
    with fake_tq.installed() as s:
        yield s


def in_flight_bound(mode: str) -> int:
    """Samples scored at most before the stop: the window, plus every prompt already submitted
    (the step's batch, and in the async modes the warm-up batch) times rollout.n."""
    warmup = 0 if mode == "sync" else BATCH
    return WINDOW + (BATCH + warmup) * N


@pytest.mark.parametrize("mode", V1_MODES)
def test_v1_judge_down_for_the_whole_run_stops_it_naming_the_judge(
    store: fake_tq.Store, model_dir: Path, tmp_path: Path, mode: str
) -> None:
    url = dead_url()
    with verl_run(mode, model_dir, graders_yaml(tmp_path, url)) as run:
        started = time.monotonic()
        with pytest.raises(FailureRateExceeded) as stop:
            run.fit()
        elapsed = time.monotonic() - started
        _, counts = driver_view()
    message = str(stop.value)
    assert f"judge [{url}, model 'test-judge']" in message, message
    assert "samples failed" in message and ("provider_error" in message or "circuit_open" in message)
    assert run.steps == []  # no step trained on a failed judgement
    assert WINDOW // 2 <= counts["failed"] == counts["samples"] <= in_flight_bound(mode)
    assert run.manager.prompts * N <= in_flight_bound(mode) + N  # no regenerate loop
    assert elapsed < STOP_BOUND_S


@pytest.mark.parametrize("mode", V1_MODES)
def test_v1_judge_down_for_a_while_trains_on_and_counts_the_failures(
    store: fake_tq.Store, model_dir: Path, tmp_path: Path, judge_server: JudgeServerProcess, mode: str
) -> None:
    graders = graders_yaml(tmp_path, judge_server.base_url, fail_first=3, tag=f"while-{mode}")
    with verl_run(mode, model_dir, graders, "+reward.openjudge.breaker_failures=0") as run:
        run.fit()
    assert len(run.steps) == 3  # every step trained
    last = run.steps[-1]
    assert last["training/openjudge/run/failed"] == 3.0  # failures reach the ledger at once
    # Scored samples' outcomes are sent in batches (within 50 ms) when the ledger is Ray's: a lower bound.
    assert last["training/openjudge/run/samples"] >= 3.0 + 1
    if mode == "sync":  # the sync trainer trains a group around its dropped members
        assert sum(s.get("training/openjudge/groups_with_dropped", 0.0) for s in run.steps) >= 1.0
    else:  # the async trainers evict such groups and generate them again: VERL's own count
        assert sum(s.get("training/rollout_failure/evicted_samples", 0) for s in run.steps) >= 2


def v0_steps(model_dir: Path, graders: Path, steps: int, *overrides: str) -> list[DataProto]:
    """The V0 trainer's rollout of ``steps`` steps: VERL's ``AgentLoopWorker.generate_sequences``
    (what ``AgentLoopManager`` calls on each worker, and ``RayPPOTrainer.fit`` once per step),
    its trajectories scored by VERL's ``RewardLoopWorker``. An exception here ends ``fit()``."""
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

    config = agent_config(
        model_dir,
        [
            "trainer.use_v1=false",
            f"actor_rollout_ref.rollout.n={N}",
            "actor_rollout_ref.rollout.agent.default_agent_loop=single_turn_agent",
            "reward.reward_manager.name=openjudge",
            f"+reward.openjudge.config={graders}",
            f"+reward.openjudge.failure_window={WINDOW}",
            *overrides,
        ],
    )

    async def rollout() -> list[DataProto]:
        reward = RewardLoopWorker(config)
        worker = agent_loop_worker(config, ScriptedServer(answers()), [LocalRewardHandle(reward)])
        batch = [Question("Be brief.", "What is the weather?", "sunny")] * BATCH
        return [await worker.generate_sequences(dataset_batch(batch, n=N)) for _ in range(steps)]

    return asyncio.run(rollout())


def test_v0_judge_down_for_the_whole_run_stops_it_naming_the_judge(model_dir: Path, tmp_path: Path) -> None:
    url = dead_url()
    with pytest.raises(FailureRateExceeded) as stop:
        v0_steps(model_dir, graders_yaml(tmp_path, url), steps=10)
    assert f"judge [{url}, model 'test-judge']" in str(stop.value)
    _, counts = driver_view()
    assert counts["failed"] == counts["samples"] <= WINDOW + BATCH * N  # the window, plus one step in flight


def test_v0_judge_down_for_a_while_trains_on_and_counts_the_failures(
    model_dir: Path, tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    graders = graders_yaml(tmp_path, judge_server.base_url, fail_first=3, tag="while-v0")
    outs = v0_steps(model_dir, graders, 3, "+reward.openjudge.breaker_failures=0")  # no exception
    flags = [f for out in outs for f in out.non_tensor_batch["openjudge/failed"].tolist()]
    assert len(flags) == 3 * BATCH * N and sum(flags) == 3.0  # each failed sample flagged, neutral
    _, counts = driver_view()
    # Failures reach the ledger at once; scored outcomes in batches (within 50 ms on a worker's
    # live loop; this test's loops end with asyncio.run), so under Ray "samples" is a lower bound.
    assert (counts["failed"], counts["blocked"]) == (3, 0)
    assert 3 <= counts["samples"] <= 3 * BATCH * N
