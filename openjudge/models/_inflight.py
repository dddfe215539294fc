"""Identical deterministic calls in flight at once are made once.

The first caller of a key leads; callers of the same key that arrive while it runs
follow and receive its outcome (a follower spends no request: its usage is zero). If
the leader is cancelled, a follower takes over.
"""

from __future__ import annotations

import anyio

from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import ChatResponse
from openjudge.results import TokenUsage

__all__ = ["Flight"]

_ZERO = TokenUsage(0, 0, 0)


class Flight:
    """One call in progress; followers wait for its outcome."""

    __slots__ = ("_done", "_error", "_response")

    def __init__(self) -> None:
        self._done = anyio.Event()
        self._response: ChatResponse | None = None
        self._error: ChatModelError | None = None

    def succeed(self, response: ChatResponse) -> None:
        self._response = response

    def fail(self, error: ChatModelError) -> None:
        self._error = error

    def release(self) -> None:
        self._done.set()

    async def wait(self) -> ChatResponse | None:
        """The shared outcome, or None if the leader gave up (was cancelled).

        Raises:
            ChatModelError: A copy of the leader's error (each follower gets its own).
        """
        await self._done.wait()
        if self._error is not None:
            err = self._error
            copy = ChatModelError(
                err.message,
                kind=err.kind,
                retryable=err.retryable,
                status_code=err.status_code,
                retry_after_s=err.retry_after_s,
                error_type=err.error_type,
            )
            raise copy
        if self._response is None:
            return None
        return self._response._replace(usage=_ZERO)
