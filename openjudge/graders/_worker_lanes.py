"""The lanes of a :class:`~openjudge.graders._workers.WorkerPool`: a queue of calls, and one
thread per worker that feeds it (see the pool's module docstring for the rules they keep).

:class:`Lanes` holds what the lanes of one pool share (the queue, the idle lanes, the
settings) and no reference to the pool, so that a pool no longer used is collected and its
finalizer closes them. A :class:`Lane` takes the next call, writes it to its worker, writes
the call after it too while the worker computes (:data:`WINDOW`), starts each call's clock
when the worker starts it, and kills the worker when the clock runs out; calls behind a
killed call go back to the head of the queue. Callers learn of a start and an end through
:class:`Job` events, set in the caller's own event loop.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import anyio
from pydantic import JsonValue

from openjudge.graders._worker_pipe import WorkerProcess, WorkFailed, WorkTimeout
from openjudge.models._loop_local import running_loop

__all__ = ["PIPELINED_BYTES", "WINDOW", "Job", "Lane", "Lanes"]

WINDOW = 2
"""Calls a worker holds at once: the one it computes and the next, already in its pipe."""
PIPELINED_BYTES = 8 * 1024
"""Largest call (framed) written to a busy worker's pipe, below what an empty pipe holds (64 KiB
on Linux, 16 KiB on macOS): the write returns at once, so the lane stays free to time and
kill the call the worker computes. A larger call waits for an idle worker, which reads it."""


class Job:
    """One call: its request, its budget, and how its lane tells its caller what happened."""

    __slots__ = (
        "abandoned",
        "done",
        "failure",
        "function",
        "notify",
        "request",
        "started",
        "timeout_s",
        "value",
    )

    def __init__(self, function: str, request: bytes, timeout_s: float) -> None:
        self.function = function
        self.request = request
        self.timeout_s = timeout_s
        self.notify = _notifier()
        self.started = anyio.Event()
        self.done = anyio.Event()
        self.value: JsonValue = None
        self.failure: Exception | None = None
        self.abandoned = False  # the caller is gone (cancelled): nobody waits for it


def _notifier() -> Callable[[Callable[[], None]], object]:
    """How another thread schedules a callback in the running event loop without waiting for it."""
    native: Any = running_loop()
    if isinstance(native, asyncio.AbstractEventLoop):
        return native.call_soon_threadsafe
    schedule: Callable[[Callable[[], None]], object] = native.run_sync_soon  # trio's TrioToken
    return schedule


def _tell(job: Job, *events: anyio.Event) -> None:
    """Set ``events`` of ``job`` in its caller's event loop (from a lane thread)."""

    def set_all() -> None:
        for event in events:
            event.set()

    with contextlib.suppress(RuntimeError):  # that loop has ended: nobody waits any more
        job.notify(set_all)


class Lanes:
    """What a pool's lanes share: the queue, the idle lanes, the settings (module docstring)."""

    def __init__(
        self, *, max_workers: int, preload: tuple[str, ...], memory_mb: int | None, startup_timeout_s: float
    ) -> None:
        self.max_workers = max_workers
        self.preload = preload
        self.memory_mb = memory_mb
        self.startup_timeout_s = startup_timeout_s
        self.pid = os.getpid()
        # Reentrant: the pool's finalizer closes the lanes, and may run in a thread holding this lock.
        self.lock = threading.RLock()
        self.queue: collections.deque[Job] = collections.deque()
        self.lanes: list[Lane] = []
        self.idle: list[Lane] = []  # most recently idle last: its worker is the warmest
        self.waking = 0  # idle lanes told to take a call that have not yet taken it
        self.closed = False

    def submit(self, job: Job) -> None:
        with self.lock:
            if self.closed:
                raise WorkFailed("the worker pool is closed")
            self.queue.append(job)
            self._wake(1)

    def _wake(self, calls: int) -> None:
        for _ in range(calls):
            if self.idle:
                self.waking += 1
                self.idle.pop().wakeup.notify()
            elif len(self.lanes) < self.max_workers:
                self.lanes.append(Lane(self))

    def take(self, lane: Lane) -> Job | None:
        """Blocking: the next call still wanted for ``lane``; None once the pool is closed."""
        with self.lock:
            while True:
                while self.queue and self.queue[0].abandoned:
                    self.queue.popleft()
                if self.closed:
                    return None
                if self.queue:
                    return self.queue.popleft()
                self.idle.append(lane)
                lane.wakeup.wait()
                if lane in self.idle:  # woken by close(), not by a call
                    self.idle.remove(lane)
                else:
                    self.waking -= 1

    def take_next(self, limit: int) -> Job | None:
        """A call to pipe behind a busy worker's: only when no idle worker could start it now,
        and of at most ``limit`` bytes (a larger one stays first in line)."""
        with self.lock:
            while self.queue and self.queue[0].abandoned:
                self.queue.popleft()
            if self.closed or not self.queue or self.idle or self.waking:
                return None
            if len(self.queue[0].request) > limit:
                return None
            return self.queue.popleft()

    def requeue(self, jobs: list[Job]) -> None:
        """Calls a killed worker had not started: first in line again."""
        with self.lock:
            if not self.closed:
                self.queue.extendleft(reversed(jobs))
                self._wake(len(jobs))
                return
        for job in jobs:
            _fail(job, WorkFailed("the worker pool was closed"))

    def close(self) -> None:
        with self.lock:
            self.closed = True
            waiting = list(self.queue)
            self.queue.clear()
            for lane in self.lanes:
                lane.wakeup.notify()
        for job in waiting:
            _fail(job, WorkFailed("the worker pool was closed"))
        for lane in list(self.lanes):
            lane.stop()


def _fail(job: Job, failure: Exception) -> None:
    if not job.abandoned:
        job.failure = failure
    _tell(job, job.started, job.done)


class Lane:
    """A thread that owns one worker: takes calls, pipelines them, times each one and kills on overrun."""

    def __init__(self, shared: Lanes) -> None:
        self.shared = shared
        self.wakeup = threading.Condition(shared.lock)
        self._lock = threading.Lock()
        self._worker: WorkerProcess | None = None
        self._running: Job | None = None  # the call the worker computes now
        threading.Thread(target=self._run, name="openjudge-worker-lane", daemon=True).start()

    def abandon(self, job: Job) -> None:
        """The caller of ``job`` is gone: kill the worker if it is computing that call."""
        with self._lock:
            if self._running is job and self._worker is not None:
                with contextlib.suppress(OSError):
                    self._worker.process.kill()

    def stop(self) -> None:
        with self._lock:
            if self._worker is not None:
                with contextlib.suppress(OSError):
                    self._worker.process.kill()

    def _run(self) -> None:
        try:
            while (job := self.shared.take(self)) is not None:
                self._serve(job)
        finally:
            with self._lock:
                worker, self._worker = self._worker, None
            if worker is not None:
                worker.kill()

    def _ensure_worker(self) -> WorkerProcess:
        with self._lock:
            worker = self._worker
        if worker is not None and worker.process.poll() is None:
            return worker
        shared = self.shared
        worker = WorkerProcess.start(shared.preload, shared.memory_mb, shared.startup_timeout_s)
        with self._lock:
            self._worker = worker
        if shared.closed:
            raise WorkFailed("the worker pool was closed")
        return worker

    def _serve(self, first: Job) -> None:
        """Run ``first``, and the calls that follow it in the queue while it lasts, on this lane's worker."""
        try:
            worker = self._ensure_worker()  # no call has started: nobody's time
            worker.send(first.request)
        except WorkFailed as exc:
            self._lost(first, [], exc)
            return
        window: collections.deque[Job] = collections.deque([first])
        started = self._start(first)
        while window:
            while len(window) < WINDOW and (after := self.shared.take_next(PIPELINED_BYTES)) is not None:
                window.append(after)
                try:
                    worker.send(after.request)
                except WorkFailed as exc:
                    self._lost(window[0], list(window)[1:], exc)
                    return
            job = window[0]
            try:
                reply = worker.receive(started + job.timeout_s)
            except WorkTimeout:
                self._lost(job, list(window)[1:], WorkTimeout(_overran(job)))
                return
            except WorkFailed as exc:
                self._lost(job, list(window)[1:], exc)
                return
            window.popleft()
            if reply.get("ok") is True:
                job.value = reply.get("value")
            else:
                job.failure = WorkFailed(str(reply.get("error", "the function failed")))
            if window:
                started = self._start(window[0])
            else:
                with self._lock:
                    self._running = None
            _tell(job, job.done)

    def _start(self, job: Job) -> float:
        """``job`` is what the worker computes from now on: its clock starts."""
        started = time.monotonic()
        with self._lock:
            self._running = job
            if job.abandoned and self._worker is not None:  # its caller left while it was in the pipe
                with contextlib.suppress(OSError):
                    self._worker.process.kill()
        _tell(job, job.started)
        return started

    def _lost(self, job: Job, behind: list[Job], failure: Exception) -> None:
        """The worker is gone (killed, died or unusable) while computing ``job``: ``job`` fails
        (unless its caller has left), the calls ``behind`` it had not started and queue again."""
        with self._lock:
            worker, self._worker = self._worker, None
            self._running = None
        if worker is not None:
            worker.kill()
        self.shared.requeue(behind)
        _fail(job, failure)


def _overran(job: Job) -> str:
    return f"{job.function.rpartition(':')[2]} did not finish within {job.timeout_s:g} s"
