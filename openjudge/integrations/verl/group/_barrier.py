"""Where the members of a GRPO group meet: one barrier per ``uid``, in one worker process.

VERL 0.9's V1 agent-loop worker runs the ``n`` sessions of a prompt as tasks on its own
event loop (``AgentLoopWorkerTQ._run_prompt``), so the members of a group meet here with
no cross-process coordination. Each member *arrives* when its trajectory is ready to be
scored, or *leaves* if its session ended without arriving (generation raised, it was
dropped, or it was cancelled). The group is judged once, when every member arrived or
left, or ``wait_timeout_s`` of *rollout time* after the first arrival, with the
members that are there; a member arriving after that is *late*.

Rollout time (:class:`RolloutClock`) stops while the worker's rollout does: VERL's
``colocate_async`` trainer aborts and pauses generation for every training step, and a
step longer than the wait would otherwise make every sibling still generating late.
The clock treats any stretch of more than ``idle_s`` (30 s) in which no session of the
worker started, ended or arrived as a pause, and does not count it. Beyond rollout
time the wait is bounded in one of two ways:

* with ``max_pauses`` (``colocate_async`` with VERL's ``max_off_policy_threshold``): by
  pauses, that is training steps. A group may span up to that many policy versions
  before VERL evicts it as stale, whatever each step lasts, so its wait ends once rollout
  paused more often than that since its first member arrived;
* otherwise by wall time: four times ``wait_timeout_s``, whatever happens.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Generic, TypeVar

__all__ = ["GroupBarrier", "RolloutClock"]

WALL_CAP = 4.0
"""A group waits at most this many times ``wait_timeout_s`` of wall time."""


class RolloutClock:
    """Seconds during which a worker's rollout makes progress (pauses longer than ``idle_s`` do not count).

    Args:
        idle_s: A stretch without any :meth:`tick` longer than this is a pause.
        clock: Monotonic seconds (tests pass a fake clock).
    """

    def __init__(self, idle_s: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.idle_s = idle_s
        self._clock = clock
        self._last = clock()
        self._paused = 0.0
        self.pauses = 0
        """Pauses that ended so far (each a stretch of more than ``idle_s`` without a tick)."""

    def tick(self) -> None:
        """Rollout made progress now (a session started, ended or arrived)."""
        now = self._clock()
        gap = now - self._last - self.idle_s
        if gap > 0:
            self._paused += gap
            self.pauses += 1
        self._last = now

    def now(self) -> float:
        """Rollout time: wall time minus the pauses so far (the current one included)."""
        wall = self._clock()
        return wall - self._paused - max(0.0, wall - self._last - self.idle_s)

    def wall(self) -> float:
        return self._clock()


M = TypeVar("M")
R = TypeVar("R")


class GroupBarrier(Generic[M, R]):
    """The meeting point of one group's ``expected`` members.

    Args:
        uid: The group's uid (for messages).
        expected: Number of sessions of the group.
        wait_timeout_s: Seconds after the first arrival before the group is judged
            with whoever is there.
        judge: Called once with ``{session_id: member}`` of the members that arrived in
            time; returns the group's verdict.
        clock: The worker's rollout clock (default: wall time, never paused).
        max_pauses: Judge whoever is there once rollout paused more often than this since
            the first arrival (``colocate_async``: VERL's ``max_off_policy_threshold``),
            instead of after a wall time of four times ``wait_timeout_s``.
    """

    def __init__(
        self,
        uid: str,
        expected: int,
        wait_timeout_s: float,
        judge: Callable[[Mapping[int, M]], Awaitable[R]],
        clock: RolloutClock | None = None,
        max_pauses: int | None = None,
    ) -> None:
        if expected < 1:
            raise ValueError(f"group {uid}: expected at least one member, got {expected}")
        self.uid = uid
        self.expected = expected
        self.wait_timeout_s = wait_timeout_s
        self._judge = judge
        self.arrived: dict[int, M] = {}
        self.left: set[int] = set()
        self._complete = asyncio.Event()
        self._clock = clock if clock is not None else RolloutClock(idle_s=float("inf"))
        self._deadline: float | None = None
        self._wall_deadline: float | None = None
        self._max_pauses = max_pauses
        self._pauses_at_first = 0
        self._verdict: asyncio.Task[R] | None = None
        self._judged_ids: frozenset[int] = frozenset()

    @property
    def judged(self) -> bool:
        """Whether the judgement has started (later arrivals are late)."""
        return self._verdict is not None

    def _update(self) -> None:
        if len(self.arrived) + len(self.left) >= self.expected:
            self._complete.set()

    def arrive(self, session_id: int, member: M) -> None:
        """Register a member that is ready to be judged."""
        if session_id in self.arrived or session_id in self.left:
            raise ValueError(f"group {self.uid}: session {session_id} arrived twice")
        self._clock.tick()
        if self._deadline is None:
            self._deadline = self._clock.now() + self.wait_timeout_s
            bounded_by_pauses = self._max_pauses is not None
            self._wall_deadline = (
                math.inf if bounded_by_pauses else self._clock.wall() + WALL_CAP * self.wait_timeout_s
            )
            self._pauses_at_first = self._clock.pauses
        if not self.judged and self._stale():  # the group outlived VERL's staleness bound: judge it as it is
            self._start_judging()
        if not self.judged:
            self.arrived[session_id] = member
        self._update()

    def leave(self, session_id: int) -> None:
        """A session ended without arriving; a no-op for one that arrived."""
        if session_id not in self.arrived:
            self.left.add(session_id)
            self._update()

    def _stale(self) -> bool:
        """More training steps passed since the first arrival than the group may span."""
        return self._max_pauses is not None and self._clock.pauses - self._pauses_at_first > self._max_pauses

    async def verdict(self, session_id: int) -> tuple[R, bool]:
        """Wait for the group's verdict; also say whether this member was part of it.

        A member that arrived after the group was judged gets the verdict and ``False``.
        """
        while not self.judged and not self._complete.is_set():
            assert self._deadline is not None and self._wall_deadline is not None, "verdict() before arrive()"
            remaining = min(self._deadline - self._clock.now(), self._wall_deadline - self._clock.wall())
            if remaining <= 0 or self._stale():
                break  # judge whoever is there
            if self._max_pauses is not None:  # notice the pauses as they end
                remaining = min(remaining, self._clock.idle_s)
            with contextlib.suppress(TimeoutError):  # rollout time may have paused meanwhile: check again
                await asyncio.wait_for(self._complete.wait(), remaining)
        self._start_judging()
        assert self._verdict is not None
        # shield: a cancelled member must not cancel its siblings' judgement.
        verdict = await asyncio.shield(self._verdict)
        return verdict, session_id in self._judged_ids

    def _start_judging(self) -> None:
        """Judge the members that arrived, once (later arrivals are late)."""
        if self._verdict is None:
            self._judged_ids = frozenset(self.arrived)
            self._verdict = asyncio.ensure_future(self._judge(dict(self.arrived)))
