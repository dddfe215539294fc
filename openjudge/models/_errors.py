"""The one exception a chat model raises for a failed call.

Providers translate their SDK's exceptions into :class:`ChatModelError`, classified by
HTTP status code (not by exception class), so the core's retry policy and the
grader's error kinds work the same for every backend.
"""

from __future__ import annotations

from openjudge.results import ErrorKind

__all__ = ["RETRYABLE_STATUS", "ChatModelError", "is_retryable_status"]

RETRYABLE_STATUS = frozenset({408, 409, 429})


def is_retryable_status(status: int) -> bool:
    """408, 409, 429 and every 5xx are worth retrying; other statuses are final."""
    return status in RETRYABLE_STATUS or status >= 500


class ChatModelError(Exception):
    """A chat call failed.

    Attributes:
        kind: The grader error kind this maps to (``provider_error``, ``timeout``, ...).
        retryable: Whether another attempt may succeed.
        status_code: HTTP status, when there was a response.
        retry_after: Seconds the server asked us to wait, when it said so.
        error_type: Name of the underlying exception class.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: ErrorKind = "provider_error",
        retryable: bool = False,
        status_code: int | None = None,
        retry_after: float | None = None,
        error_type: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind: ErrorKind = kind
        self.retryable = retryable
        self.status_code = status_code
        self.retry_after = retry_after
        self.error_type = error_type or type(self).__name__
        self.requests = 0
        """HTTP requests the failed call made (set by the chat model that gave up)."""

    def __reduce__(self) -> tuple[object, ...]:
        # Keyword-only constructor arguments: rebuild through a helper so the error pickles
        # across Ray workers and process pools.
        return (
            _rebuild,
            (self.message, self.kind, self.retryable, self.status_code, self.retry_after, self.error_type),
        )

    def __str__(self) -> str:
        return self.message


def _rebuild(
    message: str,
    kind: ErrorKind,
    retryable: bool,
    status_code: int | None,
    retry_after: float | None,
    error_type: str,
) -> ChatModelError:
    return ChatModelError(
        message,
        kind=kind,
        retryable=retryable,
        status_code=status_code,
        retry_after=retry_after,
        error_type=error_type,
    )
