"""The HTTP floor against a real local server: aiohttp on asyncio, httpx under trio.

respx cannot intercept aiohttp, so these tests use the session's test judge server and
assert on what it saw.
"""

from __future__ import annotations

import asyncio
import logging
import time
from types import MappingProxyType

import anyio
import pytest

from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import ChatResponse
from openjudge.models.policy import ProviderLimits, ProviderPolicy, RetryPolicy
from openjudge.providers import _json
from openjudge.providers._http import AiohttpClient, HttpxClient
from openjudge.providers.openai import OpenAIChatModel
from openjudge.testing.judge_server import DEFAULT_MODEL, JudgeServerProcess

pytestmark = pytest.mark.anyio


def policy(*, attempts: int = 3, timeout_s: float = 5.0, concurrency: int = 8) -> ProviderPolicy:
    return ProviderPolicy(
        timeout_s=timeout_s,
        retry=RetryPolicy(max_attempts=attempts, initial_backoff_s=0.01, max_backoff_s=0.02),
        limits=ProviderLimits(max_concurrency=concurrency),
    )


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


async def test_aiohttp_pool_keep_alive_and_faults_classified(judge_server: JudgeServerProcess) -> None:
    before = judge_server.stats()  # connections other tests left open count from here
    model = OpenAIChatModel(DEFAULT_MODEL, base_url=judge_server.base_url, policy=policy(concurrency=4))
    client = model.transport._clients.get()  # the running loop's client
    assert isinstance(client, AiohttpClient)
    assert client._session.connector is not None and client._session.connector.limit == 4

    async with anyio.create_task_group() as tg:
        for i in range(40):
            tg.start_soon(model.achat, ask(f"sample {i} #oj:score=2"))
    stats = judge_server.stats()
    assert stats.by_outcome["200"] == 40 and stats.peak_in_flight <= before.in_flight + 4
    # 40 requests over at most 4 kept-alive connections
    assert stats.max_concurrent_connections <= before.open_connections + 4

    healed = await model.achat(ask("a #oj:status=429,retry_after_s=0.2,times=1"))
    assert healed.usage.requests == 2
    reset = await model.achat(ask("b #oj:reset,times=1"))
    assert reset.usage.requests == 2
    with pytest.raises(ChatModelError) as info:
        await model.achat(ask("c #oj:status=401"))
    assert info.value.status_code == 401 and not info.value.retryable and info.value.requests == 1
    with pytest.raises(ChatModelError) as info:
        await model.achat(ask("d #oj:status=503"))
    assert info.value.status_code == 503 and info.value.retryable and info.value.requests == 3
    await model.aclose()


async def test_aiohttp_attempt_timeout_covers_a_hang(judge_server: JudgeServerProcess) -> None:
    model = OpenAIChatModel(
        DEFAULT_MODEL, base_url=judge_server.base_url, policy=policy(attempts=2, timeout_s=0.3)
    )
    started = time.monotonic()
    with pytest.raises(ChatModelError) as info:
        await model.achat(ask("#oj:hang"))
    assert info.value.kind == "timeout" and info.value.requests == 2
    assert 0.6 <= time.monotonic() - started < 5.0
    healed = await model.achat(ask("#oj:hang,times=1"))
    assert healed.usage.requests == 2
    await model.aclose()


async def test_a_request_timeout_is_the_requests_own_inside_a_callers_timeout(
    judge_server: JudgeServerProcess,
) -> None:
    """The client times each request on the calling task's timer; an outer scope is untouched."""
    model = OpenAIChatModel(
        DEFAULT_MODEL, base_url=judge_server.base_url, policy=policy(attempts=1, timeout_s=0.2)
    )
    task = asyncio.current_task()
    assert task is not None
    async with asyncio.timeout(5):
        with pytest.raises(ChatModelError) as info:
            await model.achat(ask("#oj:hang"))
        assert info.value.kind == "timeout" and task.cancelling() == 0
        answered = await model.achat(ask("fine #oj:score=3"))
    assert answered.content and task.cancelling() == 0
    client = model.transport._clients.get()
    assert isinstance(client, AiohttpClient) and list(client._timers._timers) == [task]

    async def one_more() -> None:
        await model.achat(ask("again #oj:score=3"))

    await asyncio.ensure_future(one_more())
    await asyncio.sleep(0)  # the finished task's done callbacks run
    assert list(client._timers._timers) == [task]  # and its timer is gone
    await model.aclose()
    assert client._timers._timers == {}


async def test_a_slow_drip_is_bounded_by_the_attempt_timeout() -> None:
    """A server that sends its headers at once and then one byte every 50 ms."""
    body = b'{"choices": [{"message": {"content": "ok"}}]}'

    async def drip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n")
        writer.write(b"content-length: %d\r\n\r\n" % len(body))
        try:
            for byte in body:
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(0.05)
        except (ConnectionError, OSError):
            pass
        writer.close()

    server = await asyncio.start_server(drip, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        model = OpenAIChatModel(
            "judge", base_url=f"http://127.0.0.1:{port}/v1", policy=policy(attempts=1, timeout_s=0.5)
        )
        started = time.monotonic()
        with pytest.raises(ChatModelError) as info:
            await model.achat(ask("hi"))
        assert info.value.kind == "timeout" and time.monotonic() - started < 2.0  # the drip needs 2.4 s
        await model.aclose()
    finally:
        server.close()


async def test_a_refused_connection_is_retryable() -> None:
    with anyio.fail_after(10):
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        await listener.aclose()  # nothing listens there now
        model = OpenAIChatModel("judge", base_url=f"http://127.0.0.1:{port}/v1", policy=policy(attempts=2))
        with pytest.raises(ChatModelError) as info:
            await model.achat(ask("hi"))
    assert info.value.retryable and info.value.requests == 2 and "connection failed" in info.value.message


def test_trio_rides_httpx_and_gets_the_same_reply(judge_server: JudgeServerProcess) -> None:
    model = OpenAIChatModel(DEFAULT_MODEL, base_url=judge_server.base_url, policy=policy())

    async def one() -> tuple[ChatResponse, type]:
        response = await model.achat(ask("same question #oj:score=5"))
        return response, type(model.transport._clients.get())

    on_trio, trio_client = anyio.run(one, backend="trio")
    on_asyncio, asyncio_client = asyncio.run(one())
    assert (trio_client, asyncio_client) == (HttpxClient, AiohttpClient)
    assert on_trio.content == on_asyncio.content and on_trio.usage == on_asyncio.usage
    assert on_trio.model == DEFAULT_MODEL and on_trio.usage.requests == 1


def test_the_session_closes_with_its_loop(
    judge_server: JudgeServerProcess, caplog: pytest.LogCaptureFixture
) -> None:
    model = OpenAIChatModel(DEFAULT_MODEL, base_url=judge_server.base_url, policy=policy())
    sessions = []

    async def one() -> None:
        await model.achat(ask("hi"))
        client = model.transport._clients.get()
        assert isinstance(client, AiohttpClient)
        sessions.append(client._session)

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        asyncio.run(one())
        asyncio.run(one())  # a new loop gets a new session; the first closed with its loop
    assert len(sessions) == 2 and sessions[0] is not sessions[1]
    assert all(s.closed for s in sessions)
    assert "Unclosed" not in caplog.text


def test_json_bodies() -> None:
    view = MappingProxyType({"role": "user", "content": "é"})
    assert _json.dumps({"messages": [view], "stop": ("a",), "seed": 2**70}) == (
        '{"messages":[{"role":"user","content":"é"}],"stop":["a"],"seed":1180591620717411303424}'.encode()
    )
    assert _json.loads(b'{"probs": [NaN]}')["probs"][0] != 0  # Python servers emit NaN; read, not rejected
    with pytest.raises(ValueError, match="Expecting value"):
        _json.loads(b"<html>")
