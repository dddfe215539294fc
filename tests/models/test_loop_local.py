"""LoopLocal: one value per running loop, and none kept alive once its loop is gone."""

from __future__ import annotations

import asyncio
import gc
import weakref

from openjudge.models._loop_local import LoopLocal


class _Value:
    pass


def test_one_value_per_loop_and_the_same_within_a_loop() -> None:
    local: LoopLocal[_Value] = LoopLocal(_Value)

    async def twice() -> tuple[_Value, _Value]:
        return local.get(), local.get()

    first_a, first_b = asyncio.run(twice())
    second_a, second_b = asyncio.run(twice())
    assert first_a is first_b
    assert second_a is second_b
    assert first_a is not second_a


def test_a_dead_loops_value_is_released() -> None:
    local: LoopLocal[_Value] = LoopLocal(_Value)

    async def make() -> weakref.ref[_Value]:
        return weakref.ref(local.get())

    ref = asyncio.run(make())
    gc.collect()
    assert ref() is None
    assert local.values() == []


def test_pop_forgets_the_running_loops_value() -> None:
    local: LoopLocal[_Value] = LoopLocal(_Value)

    async def cycle() -> tuple[_Value, _Value | None, _Value]:
        value = local.get()
        popped = local.pop()
        return value, popped, local.get()

    value, popped, fresh = asyncio.run(cycle())
    assert popped is value
    assert fresh is not value
