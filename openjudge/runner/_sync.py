"""A synchronous facade: one long-lived event loop on a helper thread.

Works from plain scripts, from inside a running loop (Jupyter, Ray async actors; the
calling thread blocks for the call) and from many threads at once, without
nest_asyncio. Clients created inside the portal's loop stay valid between calls.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import TypeVar, TypeVarTuple, Unpack

from anyio.from_thread import BlockingPortal, start_blocking_portal

__all__ = ["SyncPortal"]

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


def _stop(cm: AbstractContextManager[BlockingPortal]) -> None:
    cm.__exit__(None, None, None)


class SyncPortal:
    """Runs coroutine functions to completion on a dedicated event-loop thread.

    The thread starts on first use and stops on :meth:`close` (or when the object is
    garbage collected).
    """

    def __init__(self, backend: str = "asyncio") -> None:
        self._backend = backend
        self._lock = threading.Lock()
        self._portal: BlockingPortal | None = None
        self._finalizer: weakref.finalize[..., SyncPortal] | None = None

    def _ensure(self) -> BlockingPortal:
        with self._lock:
            if self._portal is None:
                cm = start_blocking_portal(self._backend)
                self._portal = cm.__enter__()
                self._finalizer = weakref.finalize(self, _stop, cm)
            return self._portal

    def call(self, fn: Callable[[Unpack[Ts]], Awaitable[T]], *args: *Ts) -> T:
        """Run ``await fn(*args)`` on the portal's loop and return its result."""
        return self._ensure().call(fn, *args)

    def close(self) -> None:
        with self._lock:
            if self._finalizer is not None:
                self._finalizer()
            self._portal = None
            self._finalizer = None

    def __enter__(self) -> SyncPortal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
