"""Run a coroutine function under a timeout, cheaply on asyncio and correctly anywhere.

anyio's cancel scopes cost several times more than ``asyncio.timeout`` per use, and a
judge call needs two (the runner's per-pair timeout and the provider's per-attempt
one). On asyncio we use the native timeout; on other backends (trio) anyio's scope.
Both raise :class:`TimeoutError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any, TypeVar, TypeVarTuple

import anyio

__all__ = ["call_with_timeout", "timeout_scope"]

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


class _AnyioTimeout:
    """``anyio.fail_after`` as an async context manager (for non-asyncio backends)."""

    __slots__ = ("_scope", "_seconds")

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self._scope: AbstractContextManager[object] | None = None

    async def __aenter__(self) -> None:
        self._scope = anyio.fail_after(self._seconds)
        self._scope.__enter__()

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        assert self._scope is not None
        return self._scope.__exit__(*exc_info)


def timeout_scope(seconds: float) -> AbstractAsyncContextManager[object]:
    """``async with timeout_scope(s):`` raises :class:`TimeoutError` after ``s`` seconds."""
    if asyncio._get_running_loop() is not None:
        return asyncio.timeout(seconds)
    return _AnyioTimeout(seconds)


async def call_with_timeout(seconds: float, fn: Callable[[*Ts], Awaitable[T]], *args: *Ts) -> T:
    """``await fn(*args)``, raising :class:`TimeoutError` after ``seconds``."""
    if asyncio._get_running_loop() is not None:
        async with asyncio.timeout(seconds):
            return await fn(*args)
    with anyio.fail_after(seconds):
        return await fn(*args)
