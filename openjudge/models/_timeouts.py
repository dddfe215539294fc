"""Timeout scopes, cheap on asyncio and correct anywhere.

anyio's cancel scopes cost several times more than ``asyncio.timeout`` per use. On
asyncio we use the native timeout; on other backends (trio) anyio's scope. Both raise
:class:`TimeoutError`. Gate of the lazy timer below: ``python -m bench.runner ratios`` (HTTP <= 1.25x).

:func:`section_timer` serves a task that times many short sections one after another
(a runner worker, one pair after another). ``asyncio.timeout`` arms a timer on entry and
cancels it on exit, about 6 µs per section; :class:`_LazyTimer` keeps one timer armed
across sections and moves it only when it fires early, so a section that ends in time
costs no timer work. Its cancel bookkeeping is ``asyncio.Timeout``'s, step for step, so
timers of different owners nest on one task as ``asyncio.timeout`` scopes do.
:class:`TaskTimers` gives code that times sections in whatever task calls it (an HTTP
client's requests) one such timer per calling task.

:func:`untimed` stops the calling task's section clock (:func:`section_timer`) while the
task waits for a shared resource whose wait is not its own doing: a worker pool's queue, a
killed worker's restart. The runner times each (sample, grader) pair with a section, so a
pair queued behind others' slow work is not timed out for waiting; a hard ``latest`` (the
run's deadline) still holds while paused.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager, AbstractContextManager, contextmanager
from contextvars import ContextVar
from types import TracebackType
from typing import Any, Protocol

import anyio

__all__ = ["SectionTimer", "TaskTimers", "section_timer", "timeout_scope", "untimed"]


class _AnyioTimeout:
    """``anyio.fail_after`` as an async context manager (for non-asyncio backends)."""

    __slots__ = ("_scope", "_timeout_s")

    def __init__(self, timeout_s: float) -> None:
        self._timeout_s = timeout_s
        self._scope: AbstractContextManager[object] | None = None

    async def __aenter__(self) -> None:
        self._scope = anyio.fail_after(self._timeout_s)
        self._scope.__enter__()

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        assert self._scope is not None
        return self._scope.__exit__(*exc_info)


def timeout_scope(timeout_s: float) -> AbstractAsyncContextManager[object]:
    """``async with timeout_scope(s):`` raises :class:`TimeoutError` after ``s`` seconds."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _AnyioTimeout(timeout_s)
    return asyncio.timeout(timeout_s)


class SectionTimer(Protocol):
    """Times one task's sections, one at a time: ``with timer.limit(s):`` raises
    :class:`TimeoutError` after ``s`` seconds. :meth:`close` when the task is done.

    A plain context manager: entering and leaving a section never waits, and an ``async
    with`` would build two coroutines per section for nothing.
    """

    def limit(self, timeout_s: float, latest: float | None = None) -> AbstractContextManager[object]:
        """A section of ``timeout_s`` seconds (never past ``latest``, a time of the loop's clock, even when paused)."""
        ...

    def close(self) -> None: ...


class _Pausable(Protocol):
    def pause(self) -> None: ...

    def resume(self) -> None: ...


_TASK_TIMER: ContextVar[_Pausable | None] = ContextVar("openjudge_section_timer", default=None)
"""The section timer of the task (set by :func:`section_timer`; child tasks inherit it)."""


def section_timer() -> SectionTimer:
    """A :class:`SectionTimer` for the running task (one timer per task on asyncio).

    It is also the task's timer for :func:`untimed`.
    """
    timer: _LazyTimer | _ScopePerSection
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        timer = _ScopePerSection()
    else:
        task = asyncio.current_task()
        assert task is not None, "section_timer() must be called from a task"
        timer = _LazyTimer(loop, task)
    _TASK_TIMER.set(timer)
    return timer


@contextmanager
def untimed() -> Iterator[None]:
    """While inside, the calling task's running section does not count time (see the module docstring).

    Nested and concurrent uses (child tasks of one section) pause it until the last one
    leaves. Outside any section, or in a task without a section timer, it does nothing.
    """
    timer = _TASK_TIMER.get()
    if timer is None:
        yield
        return
    timer.pause()
    try:
        yield
    finally:
        timer.resume()


class _ScopePerSection:
    """Other backends: a fresh anyio cancel scope per section (raising TimeoutError as ``fail_after`` does)."""

    __slots__ = ("_latest", "_paused", "_remaining", "_scope")

    def __init__(self) -> None:
        self._scope: anyio.CancelScope | None = None
        self._latest: float | None = None
        self._paused = 0
        self._remaining: float | None = None

    def limit(self, timeout_s: float, latest: float | None = None) -> _ScopePerSection:
        deadline = anyio.current_time() + timeout_s
        self._scope = anyio.CancelScope(deadline=deadline if latest is None else min(deadline, latest))
        self._latest = latest
        return self

    def __enter__(self) -> None:
        assert self._scope is not None, "enter a section through limit()"
        self._scope.__enter__()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        scope, self._scope = self._scope, None
        self._paused, self._remaining = 0, None
        assert scope is not None
        suppressed = bool(scope.__exit__(exc_type, exc, tb))
        if scope.cancelled_caught and anyio.current_time() >= scope.deadline:
            raise TimeoutError
        return suppressed

    def pause(self) -> None:
        self._paused += 1
        if self._paused == 1 and self._scope is not None:
            self._remaining = self._scope.deadline - anyio.current_time()
            self._scope.deadline = math.inf if self._latest is None else self._latest

    def resume(self) -> None:
        self._paused -= 1
        if self._paused == 0 and self._scope is not None and self._remaining is not None:
            deadline = anyio.current_time() + self._remaining
            self._scope.deadline = deadline if self._latest is None else min(deadline, self._latest)
            self._remaining = None

    def close(self) -> None:
        """Nothing is armed between sections."""


class _LazyTimer:
    """One task's section deadlines on one asyncio timer.

    The timer stays armed when a section ends in time. When it fires, it cancels the task
    if a section is running past its deadline, re-arms for the running section's deadline
    if that is later, and otherwise (no section running) waits for the next one to arm it.
    Entering a section re-arms only if its deadline is earlier than the armed one.
    """

    __slots__ = (
        "_armed_for",
        "_cancelling",
        "_deadline",
        "_expired",
        "_handle",
        "_latest",
        "_loop",
        "_now",
        "_paused",
        "_remaining",
        "_task",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
        self._loop = loop
        # asyncio's own loops tell time with time.monotonic(); calling it directly saves a
        # Python call per section. Other loops (uvloop) keep their own clock.
        self._now: Callable[[], float] = (
            time.monotonic if type(loop).time is asyncio.BaseEventLoop.time else loop.time
        )
        self._task = task
        self._handle: asyncio.TimerHandle | None = None
        self._armed_for = 0.0
        self._deadline: float | None = None
        self._expired = False
        self._cancelling = 0
        self._latest: float | None = None
        self._paused = 0
        self._remaining: float | None = None

    def limit(self, timeout_s: float, latest: float | None = None) -> _LazyTimer:
        deadline = self._now() + timeout_s
        self._deadline = deadline if latest is None or deadline < latest else latest
        self._latest = latest
        return self

    def __enter__(self) -> None:
        deadline = self._deadline
        assert deadline is not None, "enter a section through limit()"
        handle = self._handle
        if handle is None or self._armed_for > deadline:
            if handle is not None:
                handle.cancel()
            self._arm(deadline)
        self._cancelling = self._task.cancelling()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._deadline = None
        self._paused, self._remaining = 0, None
        if self._expired:
            self._expired = False
            # As asyncio.Timeout: ours unless someone else also asked to cancel the task.
            if self._task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:
                raise TimeoutError from exc

    def pause(self) -> None:
        """Stop the running section's clock; only its ``latest`` can still end it (see :func:`untimed`)."""
        self._paused += 1
        if self._paused == 1 and self._deadline is not None:
            self._remaining = self._deadline - self._now()
            self._deadline = self._latest  # None: nothing ends the section while paused

    def resume(self) -> None:
        self._paused -= 1
        if self._paused or self._remaining is None:
            return
        deadline = self._now() + self._remaining
        if self._latest is not None and self._latest < deadline:
            deadline = self._latest
        self._deadline, self._remaining = deadline, None
        handle = self._handle
        if handle is None or self._armed_for > deadline:
            if handle is not None:
                handle.cancel()
            self._arm(deadline)

    def _arm(self, when: float) -> None:
        self._armed_for = when
        self._handle = self._loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._handle = None
        deadline = self._deadline
        if deadline is None:
            return  # between sections: the next one arms the timer
        if deadline > self._armed_for:
            self._arm(deadline)  # armed for an earlier section, which ended in time
            return
        self._expired = True
        self._task.cancel()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


class TaskTimers:
    """One :class:`_LazyTimer` per calling task of one asyncio loop, each closed when its task ends.

    For an owner that times a section in whatever task calls it, such as an HTTP client
    timing each request: a task that makes many requests one after another (a runner worker)
    keeps one timer for all of them. aiohttp's own per-request timeout arms and cancels a
    timer per request, about 400 Python bytecodes of its ~4,800 per request (``python -m
    bench.runner bytecodes``). Bound to its loop, it finds the calling task without asking
    for the running loop (on Python 3.11 that check makes a ``getpid`` system call).
    """

    __slots__ = ("_loop", "_timers")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._timers: dict[asyncio.Task[Any], _LazyTimer] = {}

    def limit(self, timeout_s: float) -> _LazyTimer | None:
        """``with timers.limit(s):`` raises :class:`TimeoutError` after ``s`` seconds in the
        calling task; ``None`` when the caller runs in no task of the loop (time it otherwise)."""
        task = asyncio.current_task(self._loop)
        if task is None:
            return None
        timer = self._timers.get(task)
        if timer is None:
            timer = self._timers[task] = _LazyTimer(self._loop, task)
            task.add_done_callback(self._forget)
        return timer.limit(timeout_s)

    def _forget(self, task: asyncio.Task[Any]) -> None:
        timer = self._timers.pop(task, None)
        if timer is not None:
            timer.close()

    def close(self) -> None:
        """Disarm every timer (the owner is closing; its tasks may live on)."""
        timers, self._timers = self._timers, {}
        for task, timer in timers.items():
            task.remove_done_callback(self._forget)
            timer.close()
