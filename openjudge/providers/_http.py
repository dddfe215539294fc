"""The HTTP floor under every HTTP transport: send bytes, get status, headers and bytes.

Two clients behind one small interface (:class:`HttpClient`):

* :class:`AiohttpClient` on asyncio: an ``aiohttp.ClientSession`` whose connection pool
  is sized to the provider's concurrency, with keep-alive and a per-request timeout
  covering connect and read (timed on the calling task's lazy timer). It costs a fraction
  of httpx's CPU per request.
* :class:`HttpxClient` where aiohttp cannot serve: other backends (trio) and tests
  that inject an ``httpx.AsyncClient`` (respx or a mock transport).

Both raise :class:`ChatModelError` (timeout or connection failure, retryable) for a
request that got no complete answer; :func:`json_reply` classifies what did arrive.
:class:`LoopClients` keeps one client per running event loop and, on asyncio, closes
it when the loop shuts down (``asyncio.run`` cancels a small keeper task).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple, Protocol

import aiohttp
import httpx

from openjudge.models._errors import ChatModelError
from openjudge.models._loop_local import LoopLocal
from openjudge.models._timeouts import TaskTimers
from openjudge.providers import _json
from openjudge.providers._errors import connection_error, status_error, timeout_error

__all__ = [
    "AiohttpClient",
    "HttpClient",
    "HttpClientFactory",
    "HttpReply",
    "HttpxClient",
    "LoopClients",
    "json_reply",
]

HttpClientFactory = Callable[[], httpx.AsyncClient]
"""Builds an ``httpx.AsyncClient`` (tests inject transports this way); forces the httpx path."""


class HttpReply(NamedTuple):
    """A complete HTTP response (a named tuple: one is built per request, at a third of a
    frozen dataclass's cost)."""

    status: int
    headers: Mapping[str, str]
    body: bytes


def json_reply(reply: HttpReply, *, where: str, secrets: Iterable[str], malformed_retryable: bool) -> Any:
    """The decoded body of a 2xx reply.

    Raises:
        ChatModelError: Another status (classified by :func:`~openjudge.providers._errors.status_error`),
            or a body that is not JSON (``MalformedResponse``; retryable as the caller says).
    """
    if not 200 <= reply.status < 300:
        raise status_error(reply.status, reply.headers, reply.body, where=where, secrets=secrets)
    try:
        return _json.loads(reply.body)
    except ValueError:
        raise ChatModelError(
            f"{where}: the response is not JSON",
            retryable=malformed_retryable,
            error_type="MalformedResponse",
        ) from None


class HttpClient(Protocol):
    """Sends one request; raises :class:`ChatModelError` if no complete response arrives."""

    async def send(
        self,
        method: str,
        url: str,
        body: bytes | None,
        headers: Mapping[str, str],
        timeout_s: float,
        where: str,
    ) -> HttpReply: ...

    async def aclose(self) -> None: ...


_UNLIMITED = aiohttp.ClientTimeout()
"""No aiohttp timer: the request is a section of the calling task's timer instead."""
_UNTIMED = contextlib.nullcontext()


class AiohttpClient:
    """One ``aiohttp.ClientSession`` (must be created inside the running asyncio loop).

    Each request's timeout (connect, send and read) is one section of the calling task's
    lazy timer (:class:`~openjudge.models._timeouts.TaskTimers`), not aiohttp's per-request
    timeout, which arms and cancels a timer per request: when it fires, both cancel the
    task and report a :class:`TimeoutError`.

    Args:
        max_connections: The pool size: the provider's concurrency (never exceeded, as
            the provider's limiter holds a slot per request).
    """

    def __init__(self, max_connections: int) -> None:
        connector = aiohttp.TCPConnector(limit=max_connections, limit_per_host=0, ttl_dns_cache=300)
        self._session = aiohttp.ClientSession(connector=connector, raise_for_status=False, timeout=_UNLIMITED)
        self._timers = TaskTimers(asyncio.get_running_loop())
        self._timeouts: dict[float, aiohttp.ClientTimeout] = {}

    def _timeout(self, timeout_s: float) -> aiohttp.ClientTimeout:
        """aiohttp's own timeout, for a request made outside an asyncio task."""
        timeout = self._timeouts.get(timeout_s)
        if timeout is None:
            timeout = self._timeouts[timeout_s] = aiohttp.ClientTimeout(total=timeout_s)
        return timeout

    async def send(
        self,
        method: str,
        url: str,
        body: bytes | None,
        headers: Mapping[str, str],
        timeout_s: float,
        where: str,
    ) -> HttpReply:
        section = self._timers.limit(timeout_s)
        # Outside a task of its loop there is no task timer: aiohttp times the request itself.
        limits = _UNLIMITED if section is not None else self._timeout(timeout_s)
        try:
            with section or _UNTIMED:
                async with self._session.request(
                    method, url, data=body, headers=headers, timeout=limits
                ) as response:
                    return HttpReply(response.status, response.headers, await response.read())
        except TimeoutError:
            raise timeout_error(where, timeout_s) from None
        except (aiohttp.ClientError, OSError) as exc:
            # Refused, reset, closed mid-reply (ClientPayloadError), DNS: another attempt may work.
            raise connection_error(where, exc) from None

    async def aclose(self) -> None:
        self._timers.close()
        await self._session.close()


class HttpxClient:
    """Several ``httpx.AsyncClient`` used in turn, each with a small connection pool.

    httpx's pool does work proportional to its open connections on every request (one
    pool of 512 connections cost about 20 ms of CPU per request); spreading the same
    connections over pools of ``per_client`` keeps that cost flat.
    """

    def __init__(
        self, max_connections: int, *, factory: HttpClientFactory | None = None, per_client: int = 4
    ) -> None:
        if factory is not None:
            self._clients = [factory()]
        else:
            count = max(1, math.ceil(max_connections / per_client))
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=per_client)
            self._clients = [httpx.AsyncClient(limits=limits) for _ in range(count)]
        self._next = 0

    async def send(
        self,
        method: str,
        url: str,
        body: bytes | None,
        headers: Mapping[str, str],
        timeout_s: float,
        where: str,
    ) -> HttpReply:
        client = self._clients[self._next]
        self._next = (self._next + 1) % len(self._clients)
        try:
            response = await client.request(method, url, content=body, headers=headers, timeout=timeout_s)
        except httpx.TimeoutException:
            raise timeout_error(where, timeout_s) from None
        except httpx.TransportError as exc:
            raise connection_error(where, exc) from None
        return HttpReply(response.status_code, response.headers, response.content)

    async def aclose(self) -> None:
        for client in self._clients:
            await client.aclose()


async def _close_at_shutdown(client: HttpClient) -> None:
    """Wait until the loop shuts down (``asyncio.run`` cancels every task), then close ``client``.

    A loop closed without cancelling its tasks just drops this coroutine (no await may
    run then); its client is reclaimed with it.
    """
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await client.aclose()
        raise


class LoopClients:
    """One :class:`HttpClient` per running event loop: aiohttp on asyncio, httpx elsewhere.

    Args:
        max_connections: Pool size (the provider's concurrency).
        factory: An ``httpx.AsyncClient`` factory; when given, httpx is used everywhere.
    """

    def __init__(self, max_connections: int, factory: HttpClientFactory | None = None) -> None:
        self._max_connections = max_connections
        self._factory = factory
        self._clients: LoopLocal[tuple[HttpClient, asyncio.Task[None] | None]] = LoopLocal(self._new)

    def _new(self) -> tuple[HttpClient, asyncio.Task[None] | None]:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return HttpxClient(self._max_connections, factory=self._factory), None
        client: HttpClient
        if self._factory is not None:
            client = HttpxClient(self._max_connections, factory=self._factory)
        else:
            client = AiohttpClient(self._max_connections)
        return client, loop.create_task(_close_at_shutdown(client))

    def get(self) -> HttpClient:
        """The client of the running loop (created on first use)."""
        return self._clients.get()[0]

    async def aclose(self) -> None:
        """Close the running loop's client (a later request opens a new one)."""
        entry = self._clients.pop()
        if entry is not None:
            client, keeper = entry
            if keeper is not None:
                keeper.cancel()
            await client.aclose()
