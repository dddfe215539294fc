"""Which HTTP statuses are worth another attempt, for the exception a failed chat call raises.

Providers translate their SDK's exceptions into :class:`~openjudge.errors.ChatModelError`
(defined with the whole exception tree in :mod:`openjudge.errors`), classified by HTTP
status code (not by exception class), so the core's retry policy and the grader's error
kinds work the same for every backend.
"""

from __future__ import annotations

from openjudge.errors import ChatModelError

__all__ = ["REFUSED_MARK", "RETRYABLE_STATUS", "ChatModelError", "is_retryable_status"]

RETRYABLE_STATUS = frozenset({408, 409, 429})

REFUSED_MARK = "[refused by the judge]"
"""In a :class:`ChatModelError`'s message: the judge is up and refused this request (a
structured-output mode it does not take, a request VERL's router hid behind a 500), so
failure guards never count it as an outage."""


def is_retryable_status(status: int) -> bool:
    """408, 409, 429 and every 5xx are worth retrying; other statuses are final."""
    return status in RETRYABLE_STATUS or status >= 500
