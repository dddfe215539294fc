"""Run a coroutine function under a timeout, cheaply on asyncio and correctly anywhere.

anyio's cancel scopes cost several times more than ``asyncio.timeout`` per use, and a
judge call needs two (the runner's per-pair timeout and the provider's per-attempt
one). On asyncio we use the native timeout; on other backends (trio) anyio's scope.
Both raise :class:`TimeoutError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar, TypeVarTuple

import anyio

__all__ = ["call_with_timeout"]

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


async def call_with_timeout(seconds: float, fn: Callable[[*Ts], Awaitable[T]], *args: *Ts) -> T:
    """``await fn(*args)``, raising :class:`TimeoutError` after ``seconds``."""
    if asyncio._get_running_loop() is not None:
        async with asyncio.timeout(seconds):
            return await fn(*args)
    with anyio.fail_after(seconds):
        return await fn(*args)
