"""Where the members of a GRPO group meet: one barrier per ``uid``, in one worker process.

VERL 0.9's V1 agent-loop worker runs the ``n`` sessions of a prompt as tasks on its own
event loop (``AgentLoopWorkerTQ._run_prompt``), so the members of a group meet here with
no cross-process coordination. Each member *arrives* when its trajectory is ready to be
scored, or *leaves* if its session ended without arriving (generation raised, it was
dropped, or it was cancelled). The group is judged once, when every member arrived or
left, or ``wait_timeout_s`` after the first arrival, with the members that are there;
a member arriving after that is *late*.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Generic, TypeVar

__all__ = ["GroupBarrier"]

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
    """

    def __init__(
        self,
        uid: str,
        expected: int,
        wait_timeout_s: float,
        judge: Callable[[Mapping[int, M]], Awaitable[R]],
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
        self._deadline: float | None = None
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
        if self._deadline is None:
            self._deadline = asyncio.get_running_loop().time() + self.wait_timeout_s
        if not self.judged:
            self.arrived[session_id] = member
        self._update()

    def leave(self, session_id: int) -> None:
        """A session ended without arriving; a no-op for one that arrived."""
        if session_id not in self.arrived:
            self.left.add(session_id)
            self._update()

    async def verdict(self, session_id: int) -> tuple[R, bool]:
        """Wait for the group's verdict; also say whether this member was part of it.

        A member that arrived after the group was judged gets the verdict and ``False``.
        """
        if not self.judged and not self._complete.is_set():
            assert self._deadline is not None, "verdict() before arrive()"
            remaining = self._deadline - asyncio.get_running_loop().time()
            with contextlib.suppress(TimeoutError):  # then judge whoever is there
                await asyncio.wait_for(self._complete.wait(), max(remaining, 0.0))
        if self._verdict is None:
            self._judged_ids = frozenset(self.arrived)
            self._verdict = asyncio.ensure_future(self._judge(dict(self.arrived)))
        # shield: a cancelled member must not cancel its siblings' judgement.
        verdict = await asyncio.shield(self._verdict)
        return verdict, session_id in self._judged_ids
