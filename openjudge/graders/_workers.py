"""Pure functions in worker processes that are killed when they overrun: hard CPU budgets for graders.

A thread cannot be stopped, and work that holds the GIL inside one C call (a huge
integer power, a backtracking regular expression) stalls the event loop, every timeout
and Ctrl-C with it. :class:`WorkerPool` runs such work in separate interpreter processes
and SIGKILLs a worker whose call overruns its budget (or whose caller is cancelled:
``runner.timeout_s``, Ctrl-C), then starts a fresh one on the next call.

Functions are named ``"package.module:function"`` and take and return JSON values.
Workers start with the grader's ``sys.path``, import ``preload`` modules once, and then
serve calls one at a time. A worker dies with the grading process (``PR_SET_PDEATHSIG`` on
Linux, and end of input everywhere).

Whose time is whose. A call's ``timeout_s`` is its own compute: its clock starts when a
worker starts it. Waiting for a free worker (the pool admits ``max_workers`` calls at once,
first come first served; the others wait: that is the pool's backpressure) and starting a
worker (after a kill, or the first time) are charged to no call: they run under
:func:`~openjudge.models._timeouts.untimed`, so a runner's per-pair timeout does not count
them either (the run's deadline still does). A batch of calls sent to a worker in one
round trip would keep this by timing each item from the moment the worker starts it.

A worker is a fresh ``python -I`` running :mod:`openjudge.graders._worker_process` by path,
not :mod:`multiprocessing`: a forked child would inherit the event loop's threads and
locks, and a spawned one re-imports the parent's ``__main__`` (a training script) first.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
import subprocess
import sys
import threading
import weakref
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from pydantic import JsonValue

from openjudge.models._loop_local import LoopLocal
from openjudge.models._timeouts import untimed

__all__ = ["WorkFailed", "WorkTimeout", "WorkerPool"]

_HEADER = struct.Struct(">I")
_MAX_FRAME = 256 * 1024 * 1024
_WORKER = str(Path(__file__).with_name("_worker_process.py"))
"""The worker's code: a script of the standard library only, run by path (see its docstring)."""


class WorkTimeout(TimeoutError):
    """A call overran its budget; its worker was killed."""


class WorkFailed(RuntimeError):
    """A worker could not start, died, or the function raised (the message says which)."""


class _Worker:
    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    def _send(self, message: dict[str, object]) -> None:
        assert self.process.stdin is not None
        data = json.dumps(message).encode()
        self.process.stdin.write(_HEADER.pack(len(data)) + data)
        self.process.stdin.flush()

    def _receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        header = self.process.stdout.read(4)
        if len(header) < 4:
            raise WorkFailed(f"the worker process ended (exit status {self.process.poll()})")
        size = _HEADER.unpack(header)[0]
        if size > _MAX_FRAME:
            raise WorkFailed("the worker sent an oversized reply")
        reply = json.loads(self.process.stdout.read(size))
        if not isinstance(reply, dict):
            raise WorkFailed("the worker sent a malformed reply")
        return reply

    def handshake(self, preload: tuple[str, ...], memory_bytes: int | None) -> None:
        """Blocking: send the set-up message and wait until the worker has imported ``preload``."""
        try:
            hello = {
                "sys_path": sys.path,
                "preload": list(preload),
                "parent": os.getpid(),
                "memory_bytes": memory_bytes,
            }
            self._send(hello)
            self._receive()
        except (OSError, ValueError) as exc:
            raise WorkFailed(f"the worker process did not start: {exc}") from exc

    def call(self, request: dict[str, object]) -> dict[str, Any]:
        """Blocking: one request and its reply."""
        try:
            self._send(request)
            return self._receive()
        except (OSError, ValueError) as exc:
            raise WorkFailed(f"the worker process failed: {exc}") from exc

    def kill(self) -> None:
        """SIGKILL the worker (a thread blocked on its pipes then sees end of file)."""
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError, ValueError):
                if stream is not None:
                    stream.close()


def _kill_all(workers: list[_Worker]) -> None:
    while workers:
        workers.pop().kill()


class WorkerPool:
    """Up to ``max_workers`` worker processes per event loop (see the module docstring).

    Safe to share between concurrent calls, event loops and threads; pickles as its
    settings (a copy starts its own workers).

    Args:
        max_workers: Calls running at once per event loop (others wait their turn, untimed).
        preload: Modules each worker imports before its first call (e.g. ``"sympy"``).
        memory_mb: Address-space limit of each worker after preloading (None: none);
            a call that needs more fails inside the function with ``MemoryError``.
        startup_timeout_s: How long a new worker may take to start and preload.
    """

    def __init__(
        self,
        *,
        max_workers: int = 2,
        preload: tuple[str, ...] = (),
        memory_mb: int | None = None,
        startup_timeout_s: float = 120.0,
    ) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        self.max_workers = max_workers
        self.preload = preload
        self.memory_mb = memory_mb
        self.startup_timeout_s = startup_timeout_s
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._limiters = LoopLocal(lambda: anyio.CapacityLimiter(max_workers))
        # The pool's own threads (twice its workers: a killed call's thread may linger until
        # it reads the end of its pipe): a busy shared thread pool would otherwise delay a
        # call's start inside its budget.
        self._threads = LoopLocal(lambda: anyio.CapacityLimiter(2 * max_workers))
        self._finalizer = weakref.finalize(self, _kill_all, self._idle)

    def __getstate__(self) -> dict[str, object]:
        return {
            "max_workers": self.max_workers,
            "preload": self.preload,
            "memory_mb": self.memory_mb,
            "startup_timeout_s": self.startup_timeout_s,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]  # re-running the constructor is the point

    def close(self) -> None:
        """Kill the idle workers (busy ones are killed when their call ends)."""
        with self._lock:
            _kill_all(self._idle)

    def _take_idle(self) -> _Worker | None:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.process.poll() is None:
                    return worker
        return None

    async def _start(self) -> _Worker:
        try:
            # Started from the event loop thread on purpose: PR_SET_PDEATHSIG fires when the
            # creating *thread* ends, and a worker thread of anyio may end at any time.
            process = subprocess.Popen(  # noqa: ASYNC220
                [sys.executable, "-I", _WORKER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C in a terminal goes to the grader, which kills workers itself
            )
        except OSError as exc:
            raise WorkFailed(f"could not start a worker process: {exc}") from exc
        worker = _Worker(process)
        ready = False
        try:
            with anyio.move_on_after(self.startup_timeout_s):
                memory = None if self.memory_mb is None else self.memory_mb * 1024 * 1024
                await anyio.to_thread.run_sync(
                    worker.handshake,
                    self.preload,
                    memory,
                    abandon_on_cancel=True,
                    limiter=self._threads.get(),
                )
                ready = True
        finally:
            if not ready:
                worker.kill()
        if not ready:
            raise WorkFailed(f"a worker process did not start within {self.startup_timeout_s:g} s")
        return worker

    async def call(self, function: str, args: list[JsonValue], *, timeout_s: float) -> JsonValue:
        """``function(*args)`` in a worker, killed after ``timeout_s`` seconds of its own time.

        The time spent waiting for a worker, or for one to start, is not counted (see the
        module docstring).

        Raises:
            WorkTimeout: The call overran ``timeout_s``.
            WorkFailed: The worker could not start or died, or the function raised.
        """
        limiter = self._limiters.get()
        with untimed():  # queueing behind other calls, and a worker's start, are no caller's time
            await limiter.acquire()
            try:
                worker = self._take_idle() or await self._start()
            except BaseException:
                limiter.release()
                raise
        finished = False
        try:
            with anyio.move_on_after(timeout_s):
                request: dict[str, object] = {"function": function, "args": args}
                reply = await anyio.to_thread.run_sync(
                    worker.call, request, abandon_on_cancel=True, limiter=self._threads.get()
                )
                finished = True
        finally:
            if finished:
                with self._lock:
                    self._idle.append(worker)
            else:
                worker.kill()  # overran or cancelled: the only way to stop it
            limiter.release()
        if not finished:
            raise WorkTimeout(f"{function.rpartition(':')[2]} did not finish within {timeout_s:g} s")
        if reply.get("ok") is not True:
            raise WorkFailed(str(reply.get("error", "the function failed")))
        value: JsonValue = reply.get("value")
        return value
