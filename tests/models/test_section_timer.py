"""The runner's per-worker section timer: one lazily moved timer, asyncio.timeout's semantics."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from openjudge.models._timeouts import section_timer

pytestmark = pytest.mark.anyio


async def test_a_section_after_one_that_ended_in_time_gets_its_own_full_deadline() -> None:
    timer = section_timer()
    with timer.limit(0.2):
        await asyncio.sleep(0.15)  # ends in time; the timer stays armed for t=0.2
    started = asyncio.get_running_loop().time()
    with pytest.raises(TimeoutError), timer.limit(0.2):
        await asyncio.sleep(1)  # the timer fires at t=0.2, finds this deadline later, re-arms
    assert 0.18 <= asyncio.get_running_loop().time() - started < 0.5
    timer.close()


async def test_an_earlier_deadline_re_arms_the_timer() -> None:
    timer = section_timer()
    with timer.limit(10):
        pass
    started = asyncio.get_running_loop().time()
    with pytest.raises(TimeoutError), timer.limit(0.05):
        await asyncio.sleep(1)
    assert asyncio.get_running_loop().time() - started < 0.5
    timer.close()


async def test_firing_between_sections_cancels_nothing() -> None:
    timer = section_timer()
    with timer.limit(0.05):
        pass
    await asyncio.sleep(0.1)  # the timer fires now, with no section running
    with timer.limit(0.2):
        await asyncio.sleep(0.05)
    assert asyncio.current_task() is not None and asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]
    timer.close()


async def test_an_outer_cancellation_is_not_turned_into_a_timeout() -> None:
    async def section() -> None:
        timer = section_timer()
        with timer.limit(0.05):
            await asyncio.sleep(1)

    task = asyncio.ensure_future(section())
    await asyncio.sleep(0.04)
    loop_time = asyncio.get_running_loop().time()
    while asyncio.get_running_loop().time() - loop_time < 0.02:  # both cancels land in one step
        pass
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_trio_takes_a_scope_per_section() -> None:
    async def main() -> None:
        timer = section_timer()
        with timer.limit(1):
            await anyio.sleep(0.001)
        with pytest.raises(TimeoutError), timer.limit(0.05):
            await anyio.sleep(1)
        timer.close()

    anyio.run(main, backend="trio")
