"""The dynamic batcher on its own: batching, keys, cancellation, failures, back-off, loops."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import anyio
import pytest

from openjudge.providers.transformers._batcher import DynamicBatcher
from tests.providers.transformers.helpers import until


class Recorder:
    """A run_batch that doubles numbers and records each batch (optionally gated by an event)."""

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.batches: list[list[int]] = []
        self.gate = gate
        self.started = threading.Event()

    def __call__(self, items: Sequence[int]) -> list[int | BaseException]:
        self.started.set()
        if self.gate is not None:
            assert self.gate.wait(10)
        self.batches.append(list(items))
        return [ValueError(f"bad {i}") if i < 0 else 2 * i for i in items]


@pytest.mark.anyio
async def test_concurrent_calls_fill_batches_of_the_maximum_size() -> None:
    run = Recorder()
    batcher = DynamicBatcher(run, max_batch_size=16, window_s=30.0)  # only full batches go
    results: dict[int, int] = {}

    async def call(i: int) -> None:
        results[i] = await batcher.submit(i)

    async with anyio.create_task_group() as tg:
        for i in range(64):
            tg.start_soon(call, i)
    assert results == {i: 2 * i for i in range(64)}
    assert [len(b) for b in run.batches] == [16, 16, 16, 16]
    assert sorted(i for b in run.batches for i in b) == list(range(64))
    assert (batcher.stats.batches, batcher.stats.items, batcher.stats.largest_batch) == (4, 64, 16)
    batcher.close()


@pytest.mark.anyio
async def test_a_lone_request_goes_after_the_window() -> None:
    run = Recorder()
    batcher = DynamicBatcher(run, max_batch_size=16, window_s=0.01)
    assert await batcher.submit(21) == 42
    assert run.batches == [[21]]
    batcher.close()


@pytest.mark.anyio
async def test_requests_with_different_keys_never_share_a_batch() -> None:
    run = Recorder()
    batcher = DynamicBatcher(run, max_batch_size=4, window_s=30.0, key=lambda i: i % 2)
    async with anyio.create_task_group() as tg:
        for i in range(8):
            tg.start_soon(batcher.submit, i)
    assert sorted(sorted(b) for b in run.batches) == [[0, 2, 4, 6], [1, 3, 5, 7]]
    batcher.close()


@pytest.mark.anyio
async def test_a_per_item_error_reaches_only_its_caller() -> None:
    batcher = DynamicBatcher(Recorder(), max_batch_size=3, window_s=30.0)
    outcomes: dict[int, object] = {}

    async def call(i: int) -> None:
        try:
            outcomes[i] = await batcher.submit(i)
        except ValueError as exc:
            outcomes[i] = str(exc)

    async with anyio.create_task_group() as tg:
        for i in (1, -1, 2):
            tg.start_soon(call, i)
    assert outcomes == {1: 2, -1: "bad -1", 2: 4}
    batcher.close()


@pytest.mark.anyio
async def test_a_caller_cancelled_while_queued_leaves_the_queue() -> None:
    gate = threading.Event()
    run = Recorder(gate)
    batcher = DynamicBatcher(run, max_batch_size=1, window_s=0.0)
    results: dict[int, int] = {}

    async def call(i: int) -> None:
        results[i] = await batcher.submit(i)

    async with anyio.create_task_group() as tg:
        tg.start_soon(call, 1)
        await anyio.to_thread.run_sync(run.started.wait, 10)  # batch [1] runs, held by the gate
        tg.start_soon(call, 2)
        with anyio.move_on_after(0.05):
            await batcher.submit(99)  # queued behind the held batch, then cancelled
        assert batcher.queued == 1  # 99 left the queue; 2 is still waiting
        gate.set()
    assert results == {1: 2, 2: 4}
    assert run.batches == [[1], [2]]
    batcher.close()


@pytest.mark.anyio
async def test_a_caller_cancelled_while_its_batch_runs_does_not_poison_it() -> None:
    gate = threading.Event()
    run = Recorder(gate)
    batcher = DynamicBatcher(run, max_batch_size=4, window_s=30.0)
    results: dict[int, int] = {}
    doomed = anyio.CancelScope()

    async def call(i: int) -> None:
        results[i] = await batcher.submit(i)

    async def cancellable(i: int) -> None:
        with doomed:
            await call(i)

    async with anyio.create_task_group() as tg:
        for i in range(3):
            tg.start_soon(call, i)
        tg.start_soon(cancellable, 3)
        await anyio.to_thread.run_sync(run.started.wait, 10)  # the batch of 4 is running
        doomed.cancel()
        await anyio.sleep(0.02)
        gate.set()
    assert [sorted(b) for b in run.batches] == [[0, 1, 2, 3]]
    assert results == {0: 0, 1: 2, 2: 4}  # the cancelled caller got nothing; the others are intact
    assert doomed.cancelled_caught
    batcher.close()


class OutOfMemoryError(RuntimeError):
    """Named as torch names its OOM error."""


@pytest.mark.anyio
async def test_a_failed_batch_fails_only_its_callers_and_shrinks_the_limit() -> None:
    calls: list[list[int]] = []

    def run(items: Sequence[int]) -> list[int | BaseException]:
        calls.append(list(items))
        if len(calls) == 1:
            raise OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return [2 * i for i in items]

    batcher = DynamicBatcher(
        run,
        max_batch_size=8,
        window_s=30.0,
        shrink_on=lambda exc: "out of memory" in str(exc),
        on_batch_error=lambda exc, size: RuntimeError(f"batch of {size} failed: {exc}"),
        regrow_after=2,
    )
    outcomes: dict[int, object] = {}

    async def call(i: int) -> None:
        try:
            outcomes[i] = await batcher.submit(i)
        except RuntimeError as exc:
            outcomes[i] = str(exc)

    async with anyio.create_task_group() as tg:
        for i in range(8):
            tg.start_soon(call, i)
    assert all(
        v == "batch of 8 failed: CUDA out of memory. Tried to allocate 2.00 GiB" for v in outcomes.values()
    )
    assert batcher.batch_limit == 4 and batcher.stats.failed_batches == 1
    async with anyio.create_task_group() as tg:
        for i in range(8):
            tg.start_soon(call, i)
    assert outcomes == {i: 2 * i for i in range(8)}
    assert [len(c) for c in calls[1:3]] == [4, 4]  # backed off
    assert batcher.batch_limit == 5  # two good batches in a row grow it by one
    batcher.close()


@pytest.mark.anyio
async def test_the_event_loop_keeps_ticking_while_a_batch_runs() -> None:
    gate = threading.Event()
    run = Recorder(gate)
    batcher = DynamicBatcher(run, max_batch_size=2, window_s=0.0)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0.005)

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        async with anyio.create_task_group() as calls:
            calls.start_soon(batcher.submit, 1)
            await anyio.to_thread.run_sync(run.started.wait, 10)
            before = ticks
            await until(lambda: ticks >= before + 5)  # the batch is still held: the loop is not blocked
            assert not gate.is_set()
            gate.set()
        tg.cancel_scope.cancel()
    assert run.batches == [[1]]
    batcher.close()


def test_callers_on_several_event_loops_share_one_batcher() -> None:
    batcher = DynamicBatcher(Recorder(), max_batch_size=4, window_s=0.01)

    async def many(offset: int) -> list[int]:
        out = [0] * 4

        async def one(i: int) -> None:
            out[i] = await batcher.submit(offset + i)

        async with anyio.create_task_group() as tg:
            for i in range(4):
                tg.start_soon(one, i)
        return out

    assert anyio.run(many, 0) == [0, 2, 4, 6]
    assert anyio.run(many, 10, backend="trio") == [20, 22, 24, 26]
    batcher.close()


@pytest.mark.anyio
async def test_closing_fails_queued_callers_and_refuses_new_ones() -> None:
    gate = threading.Event()
    run = Recorder(gate)
    batcher = DynamicBatcher(run, max_batch_size=1, window_s=0.0)
    outcomes: dict[int, object] = {}

    async def call(i: int) -> None:
        try:
            outcomes[i] = await batcher.submit(i)
        except RuntimeError as exc:
            outcomes[i] = str(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(call, 1)
        await anyio.to_thread.run_sync(run.started.wait, 10)
        tg.start_soon(call, 2)
        await anyio.sleep(0.02)
        threading.Thread(target=batcher.close).start()
        await anyio.sleep(0.02)
        gate.set()
    assert outcomes == {1: 2, 2: "the local model was closed before this request ran"}
    with pytest.raises(RuntimeError, match="closed"):
        await batcher.submit(3)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="max_batch_size"):
        DynamicBatcher(Recorder(), max_batch_size=0, window_s=0.0)
    with pytest.raises(ValueError, match="window_s"):
        DynamicBatcher(Recorder(), max_batch_size=1, window_s=-1.0)
