"""The runner's per-worker section timer: one lazily moved timer, asyncio.timeout's semantics."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from openjudge.models._timeouts import TaskTimers, section_timer, untimed

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


async def test_task_timers_keep_one_timer_per_task_and_forget_it_when_the_task_ends() -> None:
    timers = TaskTimers(asyncio.get_running_loop())

    async def worker() -> None:
        for _ in range(3):
            section = timers.limit(5)
            assert section is not None
            with section:
                await asyncio.sleep(0)

    task = asyncio.ensure_future(worker())
    await asyncio.sleep(0.01)
    assert task.done() and list(timers._timers) == []  # forgotten, its armed timer cancelled
    own = timers.limit(5)
    assert own is not None and list(timers._timers) == [asyncio.current_task()]
    with own:
        pass
    assert timers.limit(5) is own  # the same timer for every section of this task
    timers.close()
    assert timers._timers == {} and own._handle is None


async def test_a_task_timer_nests_inside_another_owners_timeout() -> None:
    """The inner section times out as its own; the outer scope carries on undisturbed."""
    timers = TaskTimers(asyncio.get_running_loop())
    async with asyncio.timeout(5):
        section = timers.limit(0.05)
        assert section is not None
        with pytest.raises(TimeoutError), section:
            await asyncio.sleep(1)
        await asyncio.sleep(0.01)  # not cancelled again by anyone
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    outer = section_timer()
    inner = timers.limit(5)
    assert inner is not None
    with pytest.raises(TimeoutError), outer.limit(0.05), inner:  # the outer owner's expiry is the outer's
        await asyncio.sleep(1)
    assert inner._expired is False  # the inner section did not claim the cancellation
    assert task.cancelling() == 0
    outer.close()
    timers.close()


def test_task_timers_need_an_asyncio_task() -> None:
    loop = asyncio.new_event_loop()
    try:
        assert (
            TaskTimers(loop).limit(1) is None
        )  # no task of the loop: the caller times the section otherwise
    finally:
        loop.close()


# -- untimed: waiting for a shared resource is not the section's time ----------------------------


async def test_untimed_waits_do_not_count_against_the_section() -> None:
    timer = section_timer()
    with timer.limit(0.2):
        with untimed():
            await asyncio.sleep(0.4)  # queued behind others: the clock is stopped
        await asyncio.sleep(0.1)  # its own time: within 0.2

    async def queued_then_slow() -> None:
        with untimed():
            await asyncio.sleep(0.1)
        await asyncio.sleep(1)  # its own 0.2 s run out

    started = asyncio.get_running_loop().time()
    with pytest.raises(TimeoutError), timer.limit(0.2):
        await queued_then_slow()
    assert 0.28 <= asyncio.get_running_loop().time() - started < 0.8
    timer.close()


async def test_the_latest_bound_holds_while_paused() -> None:
    timer = section_timer()
    started = asyncio.get_running_loop().time()
    with pytest.raises(TimeoutError), timer.limit(10, started + 0.2), untimed():
        await asyncio.sleep(2)
    assert asyncio.get_running_loop().time() - started < 0.8
    timer.close()


async def test_concurrent_untimed_waits_pause_the_section_until_the_last_one_ends() -> None:
    async def wait(duration_s: float) -> None:
        with untimed():
            await anyio.sleep(duration_s)

    timer = section_timer()
    with timer.limit(0.2):
        async with anyio.create_task_group() as group:  # child tasks share the section's timer
            group.start_soon(wait, 0.3)
            group.start_soon(wait, 0.5)

    async def waits_and_works() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(wait, 0.1)
            group.start_soon(anyio.sleep, 1.0)  # not untimed: the section's own time

    with pytest.raises(TimeoutError), timer.limit(0.2):
        await waits_and_works()
    timer.close()


async def test_untimed_outside_a_section_changes_nothing() -> None:
    timer = section_timer()
    with untimed():
        await asyncio.sleep(0.01)
    with pytest.raises(TimeoutError), timer.limit(0.05):
        await asyncio.sleep(1)
    timer.close()


def test_untimed_under_trio() -> None:
    async def main() -> None:
        timer = section_timer()
        with timer.limit(0.2):
            with untimed():
                await anyio.sleep(0.4)
            await anyio.sleep(0.1)
        with pytest.raises(TimeoutError), timer.limit(10, anyio.current_time() + 0.1), untimed():
            await anyio.sleep(1)
        timer.close()

    anyio.run(main, backend="trio")
