"""Translate SDK exceptions into :class:`ChatModelError`, by status code.

Classes differ between SDKs (litellm maps a connection error to a 500 and an Azure
500 to a bare ``APIError``), so the decision reads ``status_code`` and falls back to
the exception's family only for errors that carry no status.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping

import openai

from openjudge.models.errors import ChatModelError, is_retryable_status

__all__ = ["classify_exception", "parse_retry_after"]


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


def _headers_of(exc: BaseException) -> Mapping[str, str] | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is not None and hasattr(headers, "get") and headers.get("retry-after") is not None:
        return {k.lower(): str(v) for k, v in headers.items()}
    extra = getattr(exc, "litellm_response_headers", None)  # litellm keeps them here on most routes
    if isinstance(extra, Mapping):
        return {str(k).lower(): str(v) for k, v in extra.items()}
    if headers is not None and hasattr(headers, "items"):
        return {k.lower(): str(v) for k, v in headers.items()}
    return None


def classify_exception(exc: Exception, *, where: str) -> ChatModelError:
    """The :class:`ChatModelError` for an SDK exception raised while calling ``where``."""
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    if isinstance(exc, openai.APITimeoutError) or status == 408:
        return ChatModelError(f"{where}: request timed out", kind="timeout", retryable=True, error_type=name)
    if isinstance(status, int) and not isinstance(exc, openai.APIConnectionError):
        detail = getattr(exc, "message", None) or str(exc)
        return ChatModelError(
            f"{where}: HTTP {status}: {detail}",
            kind="provider_error",
            retryable=is_retryable_status(status),
            status_code=status,
            retry_after=parse_retry_after(_headers_of(exc)) if status == 429 or status >= 500 else None,
            error_type=name,
        )
    if isinstance(exc, openai.APIConnectionError):
        return ChatModelError(f"{where}: connection failed: {exc}", retryable=True, error_type=name)
    return ChatModelError(f"{where}: {name}: {exc}", retryable=False, error_type=name)
