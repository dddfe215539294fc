"""A dynamic batcher: concurrent async calls share forward passes on one worker thread.

Callers on any event loop (asyncio or trio, any thread) ``await submit(item)``. One
daemon thread takes queued items in arrival order, groups those with the head's key
(e.g. the same sampling settings) up to the current batch limit, and runs them in one
call of ``run_batch``; each caller gets its own result back on its own loop. The event
loop never blocks: it only appends to a queue and waits on an event that the worker
sets through the loop's thread-safe scheduler.

* **Window.** A batch goes when it is full, or when its oldest request has waited
  ``window_s``; requests that queued while a batch ran have waited already and go at once.
* **Cancellation.** A caller cancelled while queued is removed from the queue; one
  cancelled while its batch runs is dropped from the result fan-out. Neither touches
  the others' results.
* **Failures.** ``run_batch`` returns a result or an exception per item; if it raises,
  that batch's callers each get a copy of one error (from ``on_batch_error``) and no other
  batch is affected. A failure for which ``shrink_on`` is true (out of memory) halves
  the batch limit; it grows back by one after every ``regrow_after`` good batches.

Independent of torch and of the chat core.
"""

from __future__ import annotations

import contextlib
import copy
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

import anyio
import anyio.lowlevel

__all__ = ["BatchStats", "DynamicBatcher"]

Q = TypeVar("Q")
R = TypeVar("R")

_State = Literal["queued", "running", "done"]


@dataclass
class BatchStats:
    """Counters of one batcher (read them for tests and benchmarks).

    Attributes:
        batches: Calls of ``run_batch`` (forward passes, or batched ``generate`` calls).
        items: Requests those calls carried.
        failed_batches: Calls that raised.
        largest_batch: The most requests one call carried.
        batch_limit: The current limit (``max_batch_size`` unless backed off).
    """

    batches: int = 0
    items: int = 0
    failed_batches: int = 0
    largest_batch: int = 0
    batch_limit: int = 0


class _Pending(Generic[Q, R]):
    __slots__ = ("arrived", "error", "event", "item", "key", "notify", "result", "state")

    def __init__(self, item: Q, key: Hashable, event: anyio.Event, notify: Callable[[], None]) -> None:
        self.item = item
        self.key = key
        self.arrived = time.monotonic()
        self.event = event
        self.notify = notify
        self.state: _State = "queued"
        self.result: R | None = None
        self.error: BaseException | None = None


def _waker(event: anyio.Event) -> Callable[[], None]:
    """A function any thread may call to set ``event`` on the caller's own event loop."""
    native = anyio.lowlevel.current_token().native_token
    # asyncio's loop has call_soon_threadsafe; trio's token has run_sync_soon.
    schedule: Callable[[Callable[[], None]], object] | None = getattr(native, "call_soon_threadsafe", None)
    if schedule is None:
        schedule = native.run_sync_soon  # type: ignore[attr-defined]  # a trio.lowlevel.TrioToken

    def wake() -> None:
        with contextlib.suppress(RuntimeError):  # the caller's loop has closed: nobody waits any more
            schedule(event.set)

    return wake


class DynamicBatcher(Generic[Q, R]):
    """Collects concurrent calls into batches for one worker thread.

    Args:
        run_batch: Runs one batch on the worker thread: one result or exception per item.
        max_batch_size: The most items per batch.
        window_s: How long a batch's first item waits for company.
        key: Items with different keys never share a batch.
        on_batch_error: The exception each caller of a failed batch receives, from the
            exception ``run_batch`` raised and the batch size.
        shrink_on: Whether a batch failure should halve the batch limit.
        regrow_after: Good batches in a row after which a backed-off limit grows by one.
        name: The worker thread's name.
    """

    def __init__(
        self,
        run_batch: Callable[[Sequence[Q]], Sequence[R | BaseException]],
        *,
        max_batch_size: int,
        window_s: float,
        key: Callable[[Q], Hashable] | None = None,
        on_batch_error: Callable[[BaseException, int], BaseException] | None = None,
        shrink_on: Callable[[BaseException], bool] | None = None,
        regrow_after: int = 8,
        name: str = "openjudge-inference",
    ) -> None:
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        if window_s < 0:
            raise ValueError(f"window_s must be >= 0, got {window_s}")
        self._run_batch = run_batch
        self.max_batch_size = max_batch_size
        self.window_s = window_s
        self._key = key
        self._on_batch_error = on_batch_error
        self._shrink_on = shrink_on
        self._regrow_after = max(1, regrow_after)
        self._name = name
        self._cond = threading.Condition()
        self._queue: list[_Pending[Q, R]] = []
        self._thread: threading.Thread | None = None
        self._closed = False
        self._good_in_a_row = 0
        self.stats = BatchStats(batch_limit=max_batch_size)

    @property
    def batch_limit(self) -> int:
        """The current batch limit (below ``max_batch_size`` after an out-of-memory back-off)."""
        return self.stats.batch_limit

    @property
    def queued(self) -> int:
        """Requests waiting for a batch."""
        with self._cond:
            return len(self._queue)

    async def submit(self, item: Q) -> R:
        """Run ``item`` in the next batch that has room for it and return its result.

        Raises:
            BaseException: What ``run_batch`` returned or raised for this item.
            RuntimeError: The batcher is closed.
        """
        event = anyio.Event()
        pending: _Pending[Q, R] = _Pending(item, self._key(item) if self._key else None, event, _waker(event))
        with self._cond:
            if self._closed:
                raise RuntimeError("the local model was closed; build a new provider to use it again")
            self._queue.append(pending)
            self._cond.notify()
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
                self._thread.start()
        try:
            await event.wait()
        except BaseException:
            with self._cond:
                if pending.state == "queued":
                    self._queue.remove(pending)  # never reaches a batch
                    self._cond.notify()
            raise  # a running item just finishes unobserved; its batch is unaffected
        if pending.error is not None:
            raise pending.error
        return pending.result  # type: ignore[return-value]  # set with state "done" when error is None

    def close(self, timeout_s: float = 10.0) -> None:
        """Stop the worker thread after the running batch; queued callers get an error."""
        with self._cond:
            self._closed = True
            abandoned, self._queue = self._queue, []
            self._cond.notify_all()
            thread = self._thread
        for pending in abandoned:
            pending.error = RuntimeError("the local model was closed before this request ran")
            pending.state = "done"
            pending.notify()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)

    def _work(self) -> None:
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            self._execute(batch)

    def _next_batch(self) -> list[_Pending[Q, R]] | None:
        with self._cond:
            while True:
                if self._closed:
                    return None
                if not self._queue:
                    self._cond.wait()
                    continue
                head = self._queue[0]
                limit = self.stats.batch_limit
                members = [p for p in self._queue if p.key == head.key][:limit]
                wait_s = head.arrived + self.window_s - time.monotonic()
                if len(members) >= limit or wait_s <= 0:
                    chosen = set(map(id, members))
                    self._queue = [p for p in self._queue if id(p) not in chosen]
                    for p in members:
                        p.state = "running"
                    return members
                self._cond.wait(wait_s)  # woken early by a new request or a cancellation

    def _execute(self, batch: list[_Pending[Q, R]]) -> None:
        outcomes: Sequence[R | BaseException]
        try:
            outcomes = self._run_batch([p.item for p in batch])
            if len(outcomes) != len(batch):
                raise RuntimeError(f"run_batch returned {len(outcomes)} results for {len(batch)} requests")
        except Exception as exc:
            self._on_failure(exc, len(batch))
            error = self._batch_error(exc, len(batch))
            # A copy per caller: one exception object raised in several tasks would share a traceback.
            outcomes = [copy.copy(error) for _ in batch]
        else:
            self._on_success(len(batch))
        for pending, outcome in zip(batch, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                pending.error = outcome
            else:
                pending.result = outcome
            pending.state = "done"
            pending.notify()

    def _batch_error(self, exc: Exception, size: int) -> BaseException:
        return self._on_batch_error(exc, size) if self._on_batch_error is not None else exc

    def _on_failure(self, exc: Exception, size: int) -> None:
        stats = self.stats
        stats.batches += 1
        stats.items += size
        stats.failed_batches += 1
        stats.largest_batch = max(stats.largest_batch, size)
        self._good_in_a_row = 0
        if self._shrink_on is not None and self._shrink_on(exc):
            stats.batch_limit = max(1, min(stats.batch_limit, size) // 2)

    def _on_success(self, size: int) -> None:
        stats = self.stats
        stats.batches += 1
        stats.items += size
        stats.largest_batch = max(stats.largest_batch, size)
        if stats.batch_limit < self.max_batch_size:
            self._good_in_a_row += 1
            if self._good_in_a_row >= self._regrow_after:
                self._good_in_a_row = 0
                stats.batch_limit += 1
