"""WorkerPool: work in processes that are killed when they overrun, reused when they do not."""

from __future__ import annotations

import os
import pickle
import time

import anyio
import pytest

from openjudge.graders._workers import WorkerPool, WorkFailed, WorkTimeout

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
