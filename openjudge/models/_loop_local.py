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

__all__ = ["LoopLocal", "running_loop"]

T = TypeVar("T")


def running_loop() -> object:
    """The running event loop: the asyncio loop, or the native token of another backend (trio).

    ``asyncio.get_running_loop`` is a C call, much cheaper than anyio's backend lookup;
    only outside asyncio does it raise and the lookup run.
    """
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return anyio.lowlevel.current_token().native_token


class LoopLocal(Generic[T]):
    """A value per running event loop, made by ``factory`` on first use in that loop."""

    __slots__ = ("_factory", "_last", "_lock", "_values")

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._values: weakref.WeakKeyDictionary[object, T] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        # The last loop asked for and its value: almost every call comes from the same loop, and
        # this check is several times cheaper than a WeakKeyDictionary lookup (a new weakref each).
        # Gate: python -m bench.runner ratios (framework CPU per judge call <= 0.10x raw aiohttp's).
        self._last: tuple[weakref.ref[object], T] | None = None

    def get(self) -> T:
        """The value for the running loop (must be called from inside one)."""
        key = running_loop()
        last = self._last
        if last is not None and last[0]() is key:
            return last[1]
        with self._lock:
            value = self._values.get(key)
            if value is None:
                value = self._factory()
                self._values[key] = value
            self._last = (weakref.ref(key, self._forget), value)
            return value

    def _forget(self, ref: weakref.ref[object]) -> None:
        """The loop of ``_last`` is gone: do not keep its value alive."""
        last = self._last
        if last is not None and last[0] is ref:
            self._last = None

    def pop(self) -> T | None:
        """Forget the running loop's value and return it (``None`` if there was none)."""
        key = running_loop()
        with self._lock:
            self._last = None
            return self._values.pop(key, None)

    def values(self) -> list[T]:
        """Values of every loop still alive."""
        with self._lock:
            return list(self._values.values())
