"""A timeout scope, cheap on asyncio and correct anywhere.

anyio's cancel scopes cost several times more than ``asyncio.timeout`` per use. On
asyncio we use the native timeout; on other backends (trio) anyio's scope. Both raise
:class:`TimeoutError`.
"""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any

import anyio

__all__ = ["timeout_scope"]


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
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _AnyioTimeout(seconds)
    return asyncio.timeout(seconds)
