"""WorkerPool: work in processes that are killed when they overrun, reused when they do not."""

from __future__ import annotations

import os
import pickle
import time

import anyio
import pytest

from openjudge.graders._workers import WorkerPool, WorkFailed, WorkTimeout
from openjudge.graders.function_grader import FunctionGrader
from openjudge.results import GraderScore
from openjudge.runner import GradingRunner

from .code._support import is_running

pytestmark = pytest.mark.anyio

SLOW = "tests.graders.slow_functions"


async def test_results_come_back_and_workers_are_reused() -> None:
    pool = WorkerPool(max_workers=1, preload=(SLOW,))
    first = await pool.call(f"{SLOW}:pid", [], timeout_s=30)
    second = await pool.call(f"{SLOW}:pid", [], timeout_s=30)
    assert isinstance(first, int) and first == second != os.getpid()
    pool.close()
    await anyio.sleep(0.1)
    assert not is_running(first)


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_an_overrun_is_killed_within_its_budget() -> None:
    pool = WorkerPool(max_workers=1, preload=(SLOW,))
    before = await pool.call(f"{SLOW}:pid", [], timeout_s=30)
    start = time.monotonic()
    with pytest.raises(WorkTimeout, match=r"huge_power did not finish within 0\.5 s"):
        await pool.call(f"{SLOW}:huge_power", [9], timeout_s=0.5)  # 9 ** 10**9: hours of one C call
    assert time.monotonic() - start < 0.5 + 2.0
    assert not is_running(int(str(before)))
    after = await pool.call(f"{SLOW}:pid", [], timeout_s=30)  # a fresh worker
    assert after != before
    pool.close()


async def test_cancelling_the_caller_kills_the_worker() -> None:
    pool = WorkerPool(max_workers=1, preload=(SLOW,))
    worker = await pool.call(f"{SLOW}:pid", [], timeout_s=30)
    with anyio.move_on_after(0.5) as scope:
        await pool.call(f"{SLOW}:spin", [60], timeout_s=120)
    assert scope.cancelled_caught
    await anyio.sleep(0.1)
    assert not is_running(int(str(worker)))
    pool.close()


async def test_failures_are_reported() -> None:
    pool = WorkerPool(max_workers=1, preload=(SLOW,), memory_mb=300)
    with pytest.raises(WorkFailed, match="ValueError: no"):
        await pool.call(f"{SLOW}:fail", ["no"], timeout_s=30)
    with pytest.raises(WorkFailed, match="MemoryError"):
        await pool.call(f"{SLOW}:allocate", [1024], timeout_s=30)
    with pytest.raises(WorkFailed, match="ModuleNotFoundError"):
        await pool.call("no_such_module:f", [], timeout_s=30)
    assert await pool.call(f"{SLOW}:allocate", [1], timeout_s=30) == 1024 * 1024
    pool.close()


async def test_concurrent_calls_share_the_workers() -> None:
    pool = WorkerPool(max_workers=2, preload=(SLOW,))
    pids: list[object] = []

    async def one() -> None:
        pids.append(await pool.call(f"{SLOW}:spin", [0.2], timeout_s=30))

    async with anyio.create_task_group() as tg:
        for _ in range(6):
            tg.start_soon(one)
    assert len(pids) == 6 and len(set(pids)) <= 2
    pool.close()


def test_pickles_as_its_settings() -> None:
    pool = WorkerPool(max_workers=3, preload=("json",), memory_mb=64)
    copy = pickle.loads(pickle.dumps(pool))
    assert (copy.max_workers, copy.preload, copy.memory_mb) == (3, ("json",), 64)
    with pytest.raises(ValueError, match="max_workers"):
        WorkerPool(max_workers=0)


# -- whose time is whose: a call's budget is its own compute ----------------------------------


async def test_waiting_for_a_worker_is_not_charged_to_the_call() -> None:
    pool = WorkerPool(max_workers=1, preload=(SLOW,))
    await pool.call(f"{SLOW}:pid", [], timeout_s=30)  # started
    results: dict[str, object] = {}

    async def run(name: str, duration_s: float, budget: float) -> None:
        results[name] = await pool.call(f"{SLOW}:spin", [duration_s], timeout_s=budget)

    async with anyio.create_task_group() as group:
        group.start_soon(run, "first", 0.6, 5.0)
        await anyio.sleep(0.05)
        group.start_soon(run, "second", 0.05, 0.4)  # waits ~0.6 s for the worker: longer than its budget
    assert set(results) == {"first", "second"}
    pool.close()


async def test_starting_a_worker_is_not_charged_to_the_call() -> None:
    pool = WorkerPool(max_workers=1, preload=(SLOW, "tests.graders.slow_start"))
    assert isinstance(await pool.call(f"{SLOW}:pid", [], timeout_s=0.3), int)  # startup takes 0.6 s
    with pytest.raises(WorkTimeout):
        await pool.call(f"{SLOW}:spin", [5], timeout_s=0.2)  # killed: the next call starts a worker
    assert isinstance(await pool.call(f"{SLOW}:pid", [], timeout_s=0.3), int)
    pool.close()


async def test_a_runner_does_not_time_out_a_pair_that_only_waits_for_a_worker() -> None:
    """The runner's per-pair timeout counts the pair's own work, not its queueing (``untimed``)."""
    pool = WorkerPool(max_workers=1, preload=(SLOW,))

    async def spin(duration_s: float) -> float:
        await pool.call(f"{SLOW}:spin", [duration_s], timeout_s=5)
        return 1.0

    runner = GradingRunner({"spin": FunctionGrader(spin)}, show_progress=False, timeout_s=0.5)
    results = await runner.arun([{"duration_s": 0.3} for _ in range(5)])  # 1.5 s of work, one at a time
    assert [r.score if isinstance(r, GraderScore) else r for r in results["spin"]] == [1.0] * 5
    deadline = GradingRunner(
        {"spin": FunctionGrader(spin)}, show_progress=False, timeout_s=0.5, deadline_s=0.8
    )
    late = await deadline.arun([{"duration_s": 0.3} for _ in range(5)])  # the run's deadline still holds
    kinds = [r.score if isinstance(r, GraderScore) else getattr(r, "kind", r) for r in late["spin"]]
    assert kinds[:2] == [1.0, 1.0] and kinds[-1] == "timeout"
    pool.close()
