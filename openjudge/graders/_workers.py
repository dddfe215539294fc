"""Pure functions in worker processes that are killed when they overrun: hard CPU budgets for graders.

A thread cannot be stopped, and work that holds the GIL inside one C call (a huge
integer power, a backtracking regular expression) stalls the event loop, every timeout
and Ctrl-C with it. :class:`WorkerPool` runs such work in separate interpreter processes
and SIGKILLs a worker whose call overruns its budget (or whose caller is cancelled:
``runner.timeout_s``, Ctrl-C), then starts a fresh one for the next call.

Functions are named ``"package.module:function"`` and take and return JSON values.
Workers start with the grader's ``sys.path``, import ``preload`` modules once, and then
serve calls one at a time. A worker dies with the grading process (``PR_SET_PDEATHSIG`` on
Linux, and end of input everywhere).

How calls reach the workers (:mod:`._worker_lanes`). Each worker has a *lane*: a thread
of the pool that owns the worker's pipes (:mod:`._worker_pipe`). Calls wait in one queue
per pool, first come first served: that queue is the pool's backpressure, and
``max_workers`` calls run at once, from every event loop and thread of the process. A
free lane takes the next call and, while the worker computes it, already writes the call
after it into the worker's pipe, so a worker never waits for a round trip through the
event loop between two calls (a large call is sent only to an idle worker, so that a
write to a busy worker's pipe never waits: the lane must stay free to time the call the
worker computes).

Whose time is whose. A call's ``timeout_s`` is its own compute: its clock starts when its
worker starts it, which the lane knows exactly (the worker takes a call as soon as it has
answered the one before, or when the lane sends it to an idle worker), and the lane kills
the worker when the clock runs out. Waiting in the queue or in a worker's pipe, and
starting a worker (the first time, or after a kill), are charged to no call: the caller
waits for its start under :func:`~openjudge.models._timeouts.untimed`, so a runner's
per-pair timeout does not count them either (the run's deadline still does). When a
worker is killed, the call behind it in its pipe had not started: it goes back to the
head of the queue.

A worker is a fresh ``python -I`` running :mod:`openjudge.graders._worker_process` by path,
not :mod:`multiprocessing`: a forked child would inherit the event loop's threads and
locks, and a spawned one re-imports the parent's ``__main__`` (a training script) first.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any

from pydantic import JsonValue

from openjudge.graders._worker_lanes import Job, Lanes
from openjudge.graders._worker_pipe import WorkFailed as WorkFailed
from openjudge.graders._worker_pipe import WorkTimeout as WorkTimeout
from openjudge.graders._worker_pipe import frame
from openjudge.models._timeouts import untimed

__all__ = ["WorkFailed", "WorkTimeout", "WorkerPool", "default_workers"]

_MAX_DEFAULT_WORKERS = 8
"""A machine often runs several grading processes, each with its own pools (VERL starts 8
reward workers per node): one worker per lanes in each would oversubscribe the cores."""


def default_workers() -> int:
    """The default size of a pool: one worker per lanes this process may run on, at most 8."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, _MAX_DEFAULT_WORKERS))


def _close(lanes: Lanes | None) -> None:
    if lanes is not None:
        lanes.close()


class WorkerPool:
    """Up to ``max_workers`` worker processes, shared by every event loop and thread that calls
    it (see the module docstring).

    Pickles as its settings (a copy starts its own workers), and so does a copy made after
    ``fork`` (the lanes are threads of the process that started them).

    Args:
        max_workers: Calls running at once (others wait their turn, untimed); by default
            one per lanes this process may run on, at most 8 (:func:`default_workers`).
        preload: Modules each worker imports before its first call (e.g. ``"sympy"``).
        memory_mb: Address-space limit of each worker after preloading (None: none);
            a call that needs more fails inside the function with ``MemoryError``.
        startup_timeout_s: How long a new worker may take to start and preload.
    """

    def __init__(
        self,
        *,
        max_workers: int | None = None,
        preload: tuple[str, ...] = (),
        memory_mb: int | None = None,
        startup_timeout_s: float = 120.0,
    ) -> None:
        if max_workers is None:
            max_workers = default_workers()
        if max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        self.max_workers = max_workers
        self.preload = preload
        self.memory_mb = memory_mb
        self.startup_timeout_s = startup_timeout_s
        self._lock = threading.Lock()
        self._current: Lanes | None = None
        self._finalizer = weakref.finalize(self, _close, None)

    def __getstate__(self) -> dict[str, object]:
        return {
            "max_workers": self.max_workers,
            "preload": self.preload,
            "memory_mb": self.memory_mb,
            "startup_timeout_s": self.startup_timeout_s,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]  # re-running the constructor is the point

    def _lanes(self) -> Lanes:
        lanes = self._current
        if lanes is not None and lanes.pid == os.getpid() and not lanes.closed:
            return lanes
        with self._lock:
            lanes = self._current
            if lanes is None or lanes.pid != os.getpid() or lanes.closed:
                lanes = Lanes(
                    max_workers=self.max_workers,
                    preload=self.preload,
                    memory_mb=self.memory_mb,
                    startup_timeout_s=self.startup_timeout_s,
                )
                self._current = lanes
                self._finalizer.detach()
                self._finalizer = weakref.finalize(self, _close, lanes)
            return lanes

    def close(self) -> None:
        """Kill the workers; calls still waiting fail with :class:`WorkFailed`. The next call
        starts workers again."""
        with self._lock:
            lanes, self._current = self._current, None
        if lanes is not None and lanes.pid == os.getpid():
            lanes.close()

    async def call(self, function: str, args: list[JsonValue], *, timeout_s: float) -> JsonValue:
        """``function(*args)`` in a worker, killed after ``timeout_s`` seconds of its own time.

        The time spent waiting for a worker, or for one to start, is not counted (see the
        module docstring).

        Raises:
            WorkTimeout: The call overran ``timeout_s``.
            WorkFailed: The worker could not start or died, or the function raised.
        """
        job = Job(function, frame({"function": function, "args": args}), timeout_s)
        lanes = self._lanes()
        lanes.submit(job)
        finished = False
        try:
            with untimed():  # queueing behind other calls, and a worker's start, are no caller's time
                await job.started.wait()
            await job.done.wait()
            finished = True
        finally:
            if not finished:  # cancelled: a worker computing this call is killed, a queued call dropped
                job.abandoned = True
                for lane in list(lanes.lanes):
                    lane.abandon(job)
        if job.failure is not None:
            raise job.failure
        return job.value
