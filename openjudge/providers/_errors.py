"""Classify HTTP outcomes into :class:`ChatModelError`, by status code.

One table for every HTTP transport (aiohttp, httpx) and endpoint (chat, pooling,
model discovery): connection failures, timeouts, 408, 409, 429 and 5xx retry;
Retry-After (or ``retry-after-ms``) is read on 429 and 5xx; other statuses are
final. Every message is redacted (:func:`openjudge.models._secrets.redact`), so a
server that echoes the key in its error body does not put it in a result.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Iterable, Mapping

from openjudge.models._errors import ChatModelError, is_retryable_status
from openjudge.models._secrets import redact

__all__ = ["connection_error", "error_detail", "parse_retry_after", "status_error", "timeout_error"]

_DETAIL_CHARS = 300


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    if not headers:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def error_detail(body: bytes) -> str:
    """The server's error message from an error body (OpenAI's ``error.message`` shape or text)."""
    try:
        data = json.loads(body)
    except ValueError:
        return body[:_DETAIL_CHARS].decode("utf-8", errors="replace")
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else error if isinstance(error, str) else None
    if message is None and isinstance(data, dict):
        message = data.get("message") or data.get("detail")
    return str(message)[:_DETAIL_CHARS] if message is not None else ""


def status_error(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    where: str,
    secrets: Iterable[str] = (),
    error_type: str = "HTTPStatusError",
) -> ChatModelError:
    """The error for a non-success HTTP status."""
    detail = redact(error_detail(body), secrets)
    message = f"{where}: HTTP {status}" + (f": {detail}" if detail else "")
    if status == 408:
        return ChatModelError(message, kind="timeout", retryable=True, status_code=408, error_type=error_type)
    retryable = is_retryable_status(status)
    return ChatModelError(
        message,
        retryable=retryable,
        status_code=status,
        retry_after_s=parse_retry_after(headers) if status == 429 or status >= 500 else None,
        error_type=error_type,
    )


def timeout_error(where: str, timeout_s: float, error_type: str = "Timeout") -> ChatModelError:
    """The error for an attempt that got no (complete) answer in time."""
    return ChatModelError(
        f"{where}: no response within {timeout_s:g}s", kind="timeout", retryable=True, error_type=error_type
    )


def connection_error(where: str, exc: BaseException, secrets: Iterable[str] = ()) -> ChatModelError:
    """The error for a connection that failed, was reset or closed mid-reply."""
    detail = redact(str(exc) or type(exc).__name__, secrets)
    return ChatModelError(
        f"{where}: connection failed: {detail}", retryable=True, error_type=type(exc).__name__
    )
