"""Classify litellm's exceptions by what happened, not by their class.

litellm wraps every failure in an ``openai``-derived exception, but the wrapping
loses the distinctions the retry policy needs (measured on litellm 1.106.2):

* a refused or reset connection becomes ``InternalServerError`` with status 500 on
  the ``openai/``, ``hosted_vllm/`` and ``anthropic/`` routes (``APIConnectionError``
  on ``azure/``): retryable, but it is no HTTP 500, so the message says so;
* an Azure HTTP 500 is a bare ``litellm.APIError`` (status 500, no ``response``);
* a client that could not even be built (no credentials) is reported as a 500
  too: retrying cannot help, so it is final;
* Retry-After lives in ``litellm_response_headers`` (``e.response`` is synthetic
  on most routes).

The cause chain (``__cause__``/``__context__``) still holds the original
``httpx``/``openai`` exception, which is what we read, down to the first HTTP
response in it (litellm reconnects once after a connection error, so a status
error may carry an earlier connection error as its context).

``openai`` comes with the ``litellm`` extra (litellm depends on it), not with the core: it
is imported when an exception is classified, which only happens after litellm raised.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import httpx

from openjudge.models._errors import ChatModelError, is_retryable_status
from openjudge.providers._errors import parse_retry_after

__all__ = ["classify_exception", "classify_litellm_exception", "with_message"]

_MAX_CHAIN = 8


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
    """The :class:`ChatModelError` for an ``openai``-SDK-shaped exception raised calling ``where``."""
    import openai  # installed with litellm, whose exceptions derive from openai's

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
            retry_after_s=parse_retry_after(_headers_of(exc)) if status == 429 or status >= 500 else None,
            error_type=name,
        )
    if isinstance(exc, openai.APIConnectionError):
        return ChatModelError(f"{where}: connection failed: {exc}", retryable=True, error_type=name)
    return ChatModelError(f"{where}: {name}: {exc}", retryable=False, error_type=name)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < _MAX_CHAIN:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _is_connection_failure(exc: BaseException) -> bool:
    import openai

    return isinstance(exc, httpx.TransportError | openai.APIConnectionError) and not isinstance(
        exc, httpx.TimeoutException | openai.APITimeoutError
    )


def classify_litellm_exception(exc: Exception, *, where: str) -> ChatModelError:
    """The :class:`ChatModelError` for an exception raised by ``litellm.acompletion``."""
    import openai  # installed with litellm, whose exceptions derive from openai's

    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    causes = list(_chain(exc))[1:]
    if status != 408 and not isinstance(exc, openai.APITimeoutError):
        for cause in causes:
            if isinstance(cause, httpx.HTTPStatusError | openai.APIStatusError):
                break  # the server answered: its status code decides
            if type(cause) is openai.OpenAIError:
                # The SDK refused to build the request (missing credentials and the like):
                # no request was sent, and another attempt would fail the same way.
                return ChatModelError(
                    f"{where}: the request was not sent: {cause}", retryable=False, error_type=name
                )
            if _is_connection_failure(cause):
                return ChatModelError(
                    f"{where}: connection failed ({type(cause).__name__}: {cause})",
                    retryable=True,
                    error_type=name,
                )
    if isinstance(exc, openai.OpenAIError):
        return classify_exception(exc, where=where)
    return ChatModelError(f"{where}: {name}: {exc}", retryable=False, error_type=name)


def with_message(error: ChatModelError, message: str) -> ChatModelError:
    """``error`` with another message (redacted, or made more precise), classified the same."""
    if message == error.message:
        return error
    return ChatModelError(
        message,
        kind=error.kind,
        retryable=error.retryable,
        status_code=error.status_code,
        retry_after_s=error.retry_after_s,
        error_type=error.error_type,
    )
