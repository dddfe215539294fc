"""Objects that must belong to one event loop, created lazily per running loop.

Clients and anyio primitives bind to the loop that first uses them. Keeping one per
loop lets a provider (or a runner) be reused across ``asyncio.run`` calls, trio,
Ray actors and threads without "attached to a different loop" errors.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

import anyio.lowlevel

__all__ = ["LoopLocal"]

T = TypeVar("T")


class LoopLocal(Generic[T]):
    """A value per running event loop, made by ``factory`` on first use in that loop."""

    __slots__ = ("_factory", "_lock", "_values")

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._values: weakref.WeakKeyDictionary[object, T] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(self) -> T:
        """The value for the running loop (must be called from inside one)."""
        # asyncio's C accessor is much cheaper than anyio's backend lookup; trio falls through.
        key: object = asyncio._get_running_loop() or anyio.lowlevel.current_token().native_token
        try:
            return self._values[key]
        except KeyError:
            with self._lock:
                value = self._values.get(key)
                if value is None:
                    value = self._factory()
                    self._values[key] = value
                return value

    def values(self) -> list[T]:
        """Values of every loop still alive."""
        with self._lock:
            return list(self._values.values())
