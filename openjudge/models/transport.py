"""What a backend implements: one attempt, request in, response or classified error out.

The core composes everything else around a transport (see
:class:`~openjudge.models.engine.CallEngine` and
:class:`~openjudge.models.chat_client.ChatClient`): retries, limits, timeouts, usage,
in-flight deduplication and the judge cache. A transport never retries, never sleeps
and never counts; it makes one attempt and reports what happened:

* a response, or
* a :class:`~openjudge.models._errors.ChatModelError` whose ``retryable``,
  ``status_code`` and ``retry_after_s`` tell the engine what to do next.

An HTTP endpoint, a reward-model endpoint and an in-process model are all transports.
A local backend needs only ``model_name``, ``connection_key``, ``enforces_timeout = False``,
``attempt`` and ``aclose`` (plus ``endpoint`` and ``wire_body`` to be cacheable).
"""

from __future__ import annotations

from typing import Protocol, TypeVar, runtime_checkable

from openjudge.models.chat_model import ChatRequest, ChatResponse

__all__ = ["ChatTransport", "Transport"]

RequestT = TypeVar("RequestT", contravariant=True)
ResponseT = TypeVar("ResponseT", covariant=True)


@runtime_checkable
class Transport(Protocol[RequestT, ResponseT]):
    """One backend, one attempt at a time.

    Attributes:
        model_name: The model name the backend serves (``""`` until known, e.g. discovered).
        connection_key: Endpoint + model + a fingerprint of the key (never the key):
            limits are shared by every transport with the same connection key.
        enforces_timeout: Whether ``attempt`` itself bounds every wait by ``timeout_s``
            (an HTTP client's connect/read timeouts). If not, the engine wraps each
            attempt in a timeout scope.
    """

    @property
    def model_name(self) -> str: ...

    @property
    def connection_key(self) -> str: ...

    @property
    def enforces_timeout(self) -> bool: ...

    async def attempt(self, request: RequestT, timeout_s: float) -> ResponseT:
        """Make exactly one attempt. Raise :class:`~openjudge.models.ChatModelError` on failure."""
        ...

    async def aclose(self) -> None:
        """Release what the transport holds in the running event loop (clients, sockets)."""
        ...


@runtime_checkable
class ChatTransport(Transport[ChatRequest, ChatResponse], Protocol):
    """A chat backend that can say what it would send, so replies can be cached by it.

    Attributes:
        endpoint: Where requests go, shown to users and part of cache keys: a URL
            without credentials, or a name such as ``local:<model path>``.
    """

    @property
    def endpoint(self) -> str: ...

    def wire_body(self, request: ChatRequest) -> bytes | None:
        """The exact body an attempt would send, or ``None`` if it cannot be known yet.

        Two transports that send the same body to the same ``endpoint`` share cache
        entries, whatever their kind; anything that changes the reply must be in it.
        """
        ...
