"""The test judge server's HTTP/1.1: one ``asyncio.Protocol`` per client connection.

Requests are parsed in order and answered one at a time (keep-alive, ``Content-Length``
bodies; chunked request bodies are refused with a 501). What a request gets is the
state's business (:meth:`JudgeState.handle`); the connection sends it now or later,
or aborts with a TCP reset. Hand-written rather than ``aiohttp.web`` for its CPU per
request and its faults (see :mod:`openjudge.testing.judge_server`).
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import logging
import socket
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from openjudge.testing._judge_replies import dumps, error_body

if TYPE_CHECKING:
    from openjudge.testing._judge_state import JudgeState

__all__ = ["HttpConnection"]

logger = logging.getLogger("openjudge.testing.judge_server")

_MAX_HEAD: Final = 64 * 1024
_MAX_BODY: Final = 32 * 1024 * 1024
_PHRASES: Final = {s.value: s.phrase.encode() for s in http.HTTPStatus}


class HttpConnection(asyncio.Protocol):
    """One client connection: parses requests in order, answers one at a time."""

    def __init__(self, state: JudgeState) -> None:
        self._state = state
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._buf = bytearray()
        self._busy = False
        self._draining = False
        self._keep_alive = True
        self._chat = False
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        state = self._state
        state.connections.add(self)
        state.max_connections = max(state.max_connections, len(state.connections))

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._end_chat()
        self._state.connections.discard(self)

    def data_received(self, data: bytes) -> None:
        self._buf += data
        if not self._busy and not self._draining:
            self._drain()

    def _drain(self) -> None:
        self._draining = True
        try:
            while not self._busy and self._transport is not None and self._buf:
                request = self._next_request()
                if request is None:
                    return
                self._busy = True
                try:
                    self._state.handle(self, *request)
                except Exception:
                    logger.exception("judge server failed on %s %s", request[0], request[1])
                    self._keep_alive = False
                    self.send_error(500, "internal error in the test judge server")
        finally:
            self._draining = False

    def _next_request(self) -> tuple[str, str, bytes] | None:
        buf = self._buf
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            if len(buf) > _MAX_HEAD:
                self._protocol_error(431, "request head too large")
            return None
        head = bytes(buf[: end + 2])
        line_end = head.find(b"\r\n")
        parts = head[:line_end].split(b" ")
        if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
            self._protocol_error(400, "malformed request line")
            return None
        fields = head[line_end:].lower()
        length = 0
        if (i := fields.find(b"\r\ncontent-length:")) >= 0:
            value = fields[i + 17 : fields.find(b"\r\n", i + 2)].strip()
            if not value.isdigit() or int(value) > _MAX_BODY:
                self._protocol_error(400, "bad content-length")
                return None
            length = int(value)
        if b"\r\ntransfer-encoding:" in fields:
            self._protocol_error(501, "chunked request bodies are not supported")
            return None
        total = end + 4 + length
        if len(buf) < total:
            return None
        body = bytes(buf[end + 4 : total])
        del buf[:total]
        connection = b""
        if (i := fields.find(b"\r\nconnection:")) >= 0:
            connection = fields[i + 13 : fields.find(b"\r\n", i + 2)].strip()
        self._keep_alive = connection != b"close" if parts[2] == b"HTTP/1.1" else connection == b"keep-alive"
        return parts[0].decode("latin-1"), parts[1].split(b"?", 1)[0].decode("latin-1"), body

    def _protocol_error(self, status: int, message: str) -> None:
        self._keep_alive = False
        self._buf.clear()
        self.send_error(status, message)

    def start_chat(self) -> None:
        state = self._state
        self._chat = True
        state.in_flight += 1
        state.peak_in_flight = max(state.peak_in_flight, state.in_flight)

    def _end_chat(self) -> None:
        if self._chat:
            self._chat = False
            self._state.in_flight -= 1

    def later(self, delay_s: float, action: Callable[[], None]) -> None:
        if delay_s <= 0:
            action()
        else:
            self._timer = self._loop.call_later(delay_s, self._fire, action)

    def _fire(self, action: Callable[[], None]) -> None:
        self._timer = None
        action()

    def send_json(self, status: int, value: object) -> None:
        self.send(status, dumps(value), b"")

    def send_error(self, status: int, message: str) -> None:
        self.send(status, error_body(status, message), b"")

    def send(self, status: int, body: bytes, extra_headers: bytes) -> None:
        transport = self._transport
        self._end_chat()
        if transport is None:
            return
        head = b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n%s%s\r\n" % (
            status,
            _PHRASES.get(status, b"Error"),
            len(body),
            extra_headers,
            b"" if self._keep_alive else b"connection: close\r\n",
        )
        transport.write(head + body)
        if not self._keep_alive:
            transport.close()
            return
        self._busy = False
        if self._buf and not self._draining:
            self._drain()

    def abort(self, *, rst: bool = False) -> None:
        """Close the connection without a response; ``rst`` makes the client see a TCP reset."""
        if self._transport is not None:
            sock = self._transport.get_extra_info("socket")
            if rst and sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self._transport.abort()
