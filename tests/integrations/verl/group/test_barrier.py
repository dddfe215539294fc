"""The group barrier on a plain asyncio loop: members arrive, leave, or come late."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest

from openjudge.integrations.verl.group._barrier import GroupBarrier, RolloutClock


class Judge:
    def __init__(self) -> None:
        self.calls: list[list[int]] = []

    async def __call__(self, members: Mapping[int, str]) -> dict[int, str]:
        self.calls.append(sorted(members))
        await asyncio.sleep(0)
        return {k: f"judged {v}" for k, v in members.items()}


async def member(barrier: GroupBarrier[str, dict[int, str]], k: int, delay_s: float) -> tuple[str, bool]:
    await asyncio.sleep(delay_s)
    barrier.arrive(k, f"m{k}")
    verdict, judged = await barrier.verdict(k)
    return verdict.get(k, "late"), judged


def test_every_member_gets_the_one_judgement() -> None:
    judge = Judge()

    async def main() -> list[tuple[str, bool]]:
        barrier: GroupBarrier[str, dict[int, str]] = GroupBarrier("u", 4, 30.0, judge)
        return await asyncio.gather(*(member(barrier, k, 0.01 * (3 - k)) for k in range(4)))

    assert asyncio.run(main()) == [(f"judged m{k}", True) for k in range(4)]
    assert judge.calls == [[0, 1, 2, 3]]


def test_a_member_that_leaves_releases_the_group() -> None:
    judge = Judge()

    async def main() -> list[tuple[str, bool]]:
        barrier: GroupBarrier[str, dict[int, str]] = GroupBarrier("u", 3, 30.0, judge)

        async def failing() -> None:
            await asyncio.sleep(0.02)
            barrier.leave(1)  # its generation raised

        results = await asyncio.gather(member(barrier, 0, 0.0), failing(), member(barrier, 2, 0.01))
        return [results[0], results[2]]

    assert asyncio.run(main()) == [("judged m0", True), ("judged m2", True)]
    assert judge.calls == [[0, 2]]


def test_the_wait_is_bounded_and_a_late_member_is_told() -> None:
    judge = Judge()

    async def main() -> list[tuple[str, bool]]:
        barrier: GroupBarrier[str, dict[int, str]] = GroupBarrier("u", 3, 0.05, judge)
        return list(
            await asyncio.gather(member(barrier, 0, 0.0), member(barrier, 1, 0.0), member(barrier, 2, 0.5))
        )

    assert asyncio.run(main()) == [("judged m0", True), ("judged m1", True), ("late", False)]
    assert judge.calls == [[0, 1]]


def test_cancelling_one_member_does_not_cancel_the_judgement() -> None:
    judge = Judge()

    async def main() -> tuple[str, bool]:
        barrier: GroupBarrier[str, dict[int, str]] = GroupBarrier("u", 2, 30.0, judge)
        first = asyncio.create_task(member(barrier, 0, 0.0))
        second = asyncio.create_task(member(barrier, 1, 0.01))
        await asyncio.sleep(0.005)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        return await second

    assert asyncio.run(main()) == ("judged m1", True)
    assert judge.calls == [[0, 1]]


def test_misuse_is_refused() -> None:
    judge = Judge()
    with pytest.raises(ValueError, match="at least one member"):
        GroupBarrier("u", 0, 1.0, judge)

    async def twice() -> None:
        barrier: GroupBarrier[str, dict[int, str]] = GroupBarrier("u", 2, 1.0, judge)
        barrier.arrive(0, "a")
        barrier.arrive(0, "a")

    with pytest.raises(ValueError, match="session 0 arrived twice"):
        asyncio.run(twice())


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_rollout_clock_does_not_count_pauses() -> None:
    wall = FakeClock()
    clock = RolloutClock(idle_s=30.0, clock=wall)
    wall.t = 10.0
    clock.tick()
    assert clock.now() == 10.0
    wall.t = 1010.0  # a 1,000 s training step: nothing generated, nothing arrived
    assert clock.now() == 40.0  # only the first 30 s of the gap count
    clock.tick()  # rollout resumed
    wall.t = 1020.0
    assert clock.now() == 50.0


def test_a_training_step_longer_than_the_wait_does_not_make_siblings_late() -> None:
    """colocate_async pauses rollout while it trains: the wait is measured in rollout time."""
    wall = FakeClock()
    judge = Judge()

    async def main() -> list[tuple[str, bool]]:
        barrier: GroupBarrier[str, dict[int, str]] = GroupBarrier(
            "u", 2, 600.0, judge, clock=RolloutClock(idle_s=30.0, clock=wall)
        )
        barrier.arrive(0, "m0")
        first = asyncio.ensure_future(barrier.verdict(0))
        await asyncio.sleep(0)
        wall.t = 1000.0  # the step took longer than wait_timeout_s; rollout was paused throughout
        barrier.arrive(1, "m1")  # generation resumed and the sibling finished
        second = await barrier.verdict(1)
        return [(v.get(k, "late"), judged) for k, (v, judged) in enumerate([await first, second])]

    assert asyncio.run(main()) == [("judged m0", True), ("judged m1", True)]
    assert judge.calls == [[0, 1]]
