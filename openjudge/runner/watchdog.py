"""Per-pair timeouts for a whole run from one timer task (asyncio only).

``asyncio.timeout`` costs about 9 µs per use here (a timer handle, a heap push and a
cancel per pair), which was half of the runner's own cost per pair. Workers instead
publish their current pair's deadline on a :class:`PairClock`; one watchdog task
wakes every ``interval`` seconds and cancels a worker whose pair is overdue, and the
worker turns that cancellation into a timeout result. Deadlines are met within one
interval (a tenth of the timeout, capped at half a second).

The cancellation protocol mirrors ``asyncio.timeout``: the worker records how many
cancellations were pending when the pair started and only claims a ``CancelledError``
as its own timeout if ``uncancel()`` brings the count back to that level, so a real
cancellation of the run is never swallowed.
"""

from __future__ import annotations

import asyncio

__all__ = ["PairClock", "Watchdog", "watchdog_interval"]


def watchdog_interval(timeout: float | None, deadline: float | None) -> float:
    """How often to check: a tenth of the shortest limit, between 10 ms and 0.5 s."""
    limits = [t for t in (timeout, deadline) if t is not None]
    return min(0.5, max(0.01, min(limits) / 10.0)) if limits else 0.5


class PairClock:
    """One worker's current pair: its deadline and whether the watchdog fired on it."""

    __slots__ = ("deadline", "fired", "task", "time")

    def __init__(self, task: asyncio.Task[object]) -> None:
        self.task = task
        self.time = asyncio.get_running_loop().time
        self.deadline: float | None = None
        self.fired = False


class Watchdog:
    """Cancels workers whose current pair ran past its deadline."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.clocks: list[PairClock] = []

    def register(self) -> PairClock:
        """A clock for the calling task (call from the worker itself)."""
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("Watchdog.register must be called from a task")
        clock = PairClock(task)
        self.clocks.append(clock)
        return clock

    async def run(self) -> None:
        """Check every ``interval`` until cancelled."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.interval)
            now = loop.time()
            for clock in self.clocks:
                deadline = clock.deadline
                if deadline is not None and not clock.fired and now >= deadline:
                    clock.fired = True
                    clock.task.cancel()
