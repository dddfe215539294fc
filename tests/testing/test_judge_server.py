"""The local OpenAI-compatible judge server: replies, directives, stats and the process variant."""

from __future__ import annotations

import asyncio
import json
import math
import os
import time
from collections.abc import AsyncIterator, Callable
from typing import Literal

import httpx
import openai
import pytest
from pydantic import BaseModel, Field

from openjudge.testing._schema_instance import schema_instance
from openjudge.testing.judge_server import JudgeServer, JudgeServerProcess, JudgeServerStats, main

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def server() -> AsyncIterator[JudgeServer]:
    async with JudgeServer(model="served-judge") as srv:
        yield srv


@pytest.fixture
async def client(server: JudgeServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0) as oai:
        yield oai


class Criterion(BaseModel):
    name: str
    points: int = Field(ge=1, le=5)
    weight: int = Field(ge=1, le=5)


class Verdict(BaseModel):
    reason: str
    score: int = Field(ge=1, le=5)
    criteria: list[Criterion] = Field(min_length=1, max_length=3)
    label: Literal["pass", "fail"]
    note: str | None = None
    confident: bool


async def ask(client: openai.AsyncOpenAI, text: str, *, history: int = 0) -> str:
    messages: list[openai.types.chat.ChatCompletionMessageParam] = [
        {"role": "system", "content": "You are a judge."},
        {"role": "user", "content": text},
    ]
    for i in range(history):  # a re-ask: the bad answer and a correction follow the first user message
        messages.append({"role": "assistant", "content": f"bad answer {i}"})
        messages.append({"role": "user", "content": "Reply with valid JSON."})
    response = await client.chat.completions.create(model="judge", messages=messages)
    content = response.choices[0].message.content
    assert content is not None
    return content


async def until(condition: Callable[[], bool], timeout_s: float = 2.0) -> None:
    """Poll a server-side condition that a client-side action makes true soon after."""
    for _ in range(int(timeout_s / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    assert condition()


# --- replies ---------------------------------------------------------------------------------------


async def test_json_schema_reply_validates_nested_defs(client: openai.AsyncOpenAI) -> None:
    schema = Verdict.model_json_schema()
    assert "$defs" in schema  # the nested model is a $ref, as pydantic emits it
    response = await client.chat.completions.create(
        model="my-judge",
        messages=[{"role": "user", "content": "grade this #oj:score=5"}],
        response_format={"type": "json_schema", "json_schema": {"name": "Verdict", "schema": schema}},
    )
    choice = response.choices[0]
    assert response.model == "my-judge"
    assert choice.finish_reason == "stop"
    assert choice.message.content is not None
    verdict = Verdict.model_validate_json(choice.message.content)
    assert verdict.score == 5
    assert verdict.label == "pass"
    assert verdict.note == "ok"  # anyOf: the first non-null branch
    assert verdict.confident is True
    assert [(c.name, c.points, c.weight) for c in verdict.criteria] == [("ok", 3, 3), ("ok", 3, 3)]


async def test_json_object_with_schema_and_default_score(server: JudgeServer) -> None:
    schema = {
        "type": "object",
        "properties": {
            "score": {"type": "number", "minimum": 0, "maximum": 1},
            "explanation": {"type": "string"},
        },
    }
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "judge me"}]}],
        "response_format": {"type": "json_object", "schema": schema},
    }
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        response = await http.post("/chat/completions", json=body)
    assert response.status_code == 200
    content = json.loads(response.json()["choices"][0]["message"]["content"])
    # The default score 3 is clamped into the schema's bounds; an asked-for score is not.
    assert content == {"score": 1, "explanation": "The response is acceptable."}


async def test_no_schema_reply_and_usage(client: openai.AsyncOpenAI) -> None:
    messages: list[openai.types.chat.ChatCompletionMessageParam] = [
        {"role": "system", "content": "s" * 40},
        {"role": "user", "content": "u" * 21},
    ]
    response = await client.chat.completions.create(model="judge-x", messages=messages)
    content = response.choices[0].message.content
    assert content == '{"reason": "ok", "score": 3}'
    assert response.object == "chat.completion"
    assert response.id.startswith("chatcmpl-")
    assert abs(response.created - time.time()) < 60
    assert response.usage is not None
    assert response.usage.prompt_tokens == 61 // 4
    assert response.usage.completion_tokens == len(content) // 4
    assert response.usage.total_tokens == 61 // 4 + len(content) // 4


async def test_usage_is_at_least_one_token(client: openai.AsyncOpenAI) -> None:
    response = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=1
    )
    assert response.choices[0].message.content == "3"  # a one-token budget gets the bare score
    assert response.usage is not None
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (1, 1)


async def test_logprobs_with_top_logprobs(client: openai.AsyncOpenAI) -> None:
    response = await client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "rate #oj:score=4"}],
        logprobs=True,
        top_logprobs=3,
    )
    choice = response.choices[0]
    assert choice.logprobs is not None
    assert choice.logprobs.content is not None
    tokens = choice.logprobs.content
    assert "".join(t.token for t in tokens) == choice.message.content == '{"reason": "ok", "score": 4}'
    score_token = next(t for t in tokens if t.token == "4")
    assert math.isclose(math.exp(score_token.logprob), 0.6)
    top = {t.token: math.exp(t.logprob) for t in score_token.top_logprobs}
    assert top == pytest.approx({"4": 0.6, "3": 0.15, "5": 0.15})
    assert [t.token for t in score_token.top_logprobs] == ["4", "3", "5"]
    for other in tokens:
        if other is not score_token:
            assert other.logprob == 0.0
            assert [t.token for t in other.top_logprobs] == [other.token]


async def test_logprobs_all_five_digits_sum_below_one(client: openai.AsyncOpenAI) -> None:
    response = await client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "#oj:score=1"}],
        logprobs=True,
        top_logprobs=8,
        max_tokens=1,
    )
    logprobs = response.choices[0].logprobs
    assert logprobs is not None
    assert logprobs.content is not None
    [token] = logprobs.content
    probs = {t.token: math.exp(t.logprob) for t in token.top_logprobs}
    assert probs == pytest.approx({"1": 0.6, "2": 0.15, "3": 0.04, "4": 0.01, "5": 0.005})
    assert sum(probs.values()) <= 1.0


async def test_logprobs_without_top_logprobs(client: openai.AsyncOpenAI) -> None:
    response = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}], logprobs=True
    )
    logprobs = response.choices[0].logprobs
    assert logprobs is not None
    assert logprobs.content is not None
    assert [t.token for t in logprobs.content] == ['{"reason": "ok", "score": ', "3", "}"]
    assert all(t.top_logprobs == [] for t in logprobs.content)


async def test_models_endpoint(client: openai.AsyncOpenAI) -> None:
    page = await client.models.list()
    assert [m.id for m in page.data] == ["served-judge"]
    assert page.data[0].owned_by == "openjudge-test"
    assert (page.data[0].model_extra or {})["max_model_len"] == 4096


# --- fault directives -------------------------------------------------------------------------------


async def test_status_429_with_retry_after_and_times(client: openai.AsyncOpenAI, server: JudgeServer) -> None:
    text = "sample A #oj:status=429,retry_after_s=0.2,times=1"
    with pytest.raises(openai.RateLimitError) as caught:
        await ask(client, text)
    assert caught.value.status_code == 429
    assert caught.value.response.headers["retry-after"] == "0.2"
    assert caught.value.body == {
        "message": "injected HTTP 429 from a #oj: directive",
        "type": "rate_limit_error",
        "param": None,
        "code": "rate_limit_exceeded",
    }
    assert json.loads(await ask(client, text))["score"] == 3  # the budget of one failure is spent
    # A different sample has its own budget; a re-ask of sample A shares A's.
    with pytest.raises(openai.RateLimitError):
        await ask(client, "sample B #oj:status=429,retry_after_s=0.2,times=1")
    assert json.loads(await ask(client, text, history=1))["score"] == 3
    stats = server.stats()
    assert stats.chat_requests == 4
    assert stats.by_outcome["429"] == 2
    assert stats.by_outcome["200"] == 2


async def test_status_without_times_always_fails(client: openai.AsyncOpenAI, server: JudgeServer) -> None:
    for _ in range(3):
        with pytest.raises(openai.InternalServerError) as caught:
            await ask(client, "#oj:status=503")
        assert caught.value.status_code == 503
        assert "retry-after" not in caught.value.response.headers
        assert isinstance(caught.value.body, dict)
        assert caught.value.body["type"] == "server_error"
        assert caught.value.body["code"] == "service_unavailable"
    assert server.stats().by_outcome["503"] == 3


async def test_fault_directives_fire_in_order(client: openai.AsyncOpenAI) -> None:
    text = "#oj:status=500,times=1 then #oj:status=429,times=2 and #oj:score=2"
    with pytest.raises(openai.InternalServerError):
        await ask(client, text)
    for _ in range(2):
        with pytest.raises(openai.RateLimitError):
            await ask(client, text)
    assert json.loads(await ask(client, text)) == {"reason": "ok", "score": 2}


async def test_reset_closes_the_connection(client: openai.AsyncOpenAI, server: JudgeServer) -> None:
    with pytest.raises(openai.APIConnectionError):
        await ask(client, "#oj:reset,times=1")
    assert json.loads(await ask(client, "#oj:reset,times=1"))["score"] == 3
    stats = server.stats()
    assert (stats.by_outcome["reset"], stats.by_outcome["200"], stats.in_flight) == (1, 1, 0)


async def test_hang_times_out_then_server_stops_cleanly() -> None:
    tasks_before = asyncio.all_tasks()
    body = {"model": "m", "messages": [{"role": "user", "content": "#oj:hang"}]}
    async with JudgeServer() as srv, httpx.AsyncClient(base_url=srv.base_url, timeout=0.3) as http:
        started = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            await http.post("/chat/completions", json=body)
        assert time.monotonic() - started >= 0.3
        await until(lambda: srv.stats().in_flight == 0)  # the client gave up and closed its connection
        # A second hung request is still waiting when the server stops.
        patient = httpx.AsyncClient(base_url=srv.base_url, timeout=5)
        pending = asyncio.ensure_future(patient.post("/chat/completions", json=body))
        await until(lambda: srv.stats().in_flight == 1)
        assert srv.stats().by_outcome["hang"] == 2
    with pytest.raises(httpx.TransportError):
        await pending
    await patient.aclose()
    assert srv.stats().in_flight == 0
    assert srv.stats().open_connections == 0
    assert asyncio.all_tasks() == tasks_before


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("prose", "The answer looks fine. Score: 3"),
        ("fenced", '```json\n{"reason": "ok", "score": 3}\n```'),
        ("missing_score", '{"reason": "ok"}'),
        ("out_of_range", '{"reason": "ok", "score": 42}'),
        ("truncated", '{"reason": "ok'),
        ("nonnumeric", '{"reason": "ok", "score": "high"}'),
    ],
)
async def test_malformed_replies_then_recovery(client: openai.AsyncOpenAI, mode: str, expected: str) -> None:
    text = f"answer #oj:reply={mode},times=1"
    assert await ask(client, text) == expected
    assert await ask(client, text, history=1) == '{"reason": "ok", "score": 3}'


async def test_malformed_reply_with_schema(client: openai.AsyncOpenAI) -> None:
    schema = Verdict.model_json_schema()
    response = await client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "#oj:reply=out_of_range"}],
        response_format={"type": "json_schema", "json_schema": {"name": "Verdict", "schema": schema}},
    )
    content = response.choices[0].message.content
    assert content is not None
    assert json.loads(content)["score"] == 42
    assert set(json.loads(content)) == set(Verdict.model_fields)


async def test_invalid_directive_is_a_400(client: openai.AsyncOpenAI, server: JudgeServer) -> None:
    with pytest.raises(openai.BadRequestError, match="unknown directive key 'stauts'"):
        await ask(client, "#oj:stauts=429")
    with pytest.raises(openai.BadRequestError, match="status must be an HTTP error code"):
        await ask(client, "#oj:status=200")
    with pytest.raises(openai.BadRequestError, match="reply must be one of"):
        await ask(client, "#oj:reply=poetry")
    assert server.stats().by_outcome["400"] == 3


async def test_directive_stops_at_delimiters(client: openai.AsyncOpenAI) -> None:
    assert json.loads(await ask(client, "<response>#oj:score=5</response>"))["score"] == 5
    assert json.loads(await ask(client, '{"text": "#oj:score=2.5"}'))["score"] == 2.5


async def test_latency_default_override_and_runtime_change(
    client: openai.AsyncOpenAI, server: JudgeServer
) -> None:
    server.set_latency(0.25)
    started = time.monotonic()
    await ask(client, "slow")
    assert time.monotonic() - started >= 0.25
    started = time.monotonic()
    await ask(client, "fast #oj:latency_s=0")
    assert time.monotonic() - started < 0.25  # the 0.25 s default latency was overridden
    started = time.monotonic()
    with pytest.raises(openai.RateLimitError):  # faults fire at once unless given a latency
        await ask(client, "#oj:status=429")
    assert time.monotonic() - started < 0.25  # errors skip the default latency
    assert server.stats().latency_s == 0.25
    server.set_latency(0.0)


# --- stats, config and HTTP details -----------------------------------------------------------------


async def test_peak_in_flight_under_50_concurrent_requests_and_reset() -> None:
    async with JudgeServer(latency_s=0.1) as srv:
        limits = httpx.Limits(max_connections=64)
        async with httpx.AsyncClient(base_url=srv.base_url, limits=limits, timeout=10) as http:

            async def one(i: int) -> int:
                body = {"model": "m", "messages": [{"role": "user", "content": f"sample {i}"}]}
                response = await http.post("/chat/completions", json=body)
                return response.status_code

            started = time.monotonic()
            codes = await asyncio.gather(*(one(i) for i in range(50)))
            elapsed = time.monotonic() - started
        assert codes == [200] * 50
        assert elapsed < 4.0  # served concurrently: one after another would take 5 s
        stats = srv.stats()
        assert (stats.chat_requests, stats.peak_in_flight, stats.in_flight) == (50, 50, 0)
        assert stats.max_concurrent_connections == 50
        assert stats.by_outcome == {"200": 50, "reset": 0, "hang": 0}
        await until(lambda: srv.stats().open_connections == 0)  # the client closed its pool
        srv.reset_stats()
        assert srv.stats() == JudgeServerStats(
            chat_requests=0,
            by_outcome={"200": 0, "reset": 0, "hang": 0},
            in_flight=0,
            peak_in_flight=0,
            open_connections=0,
            max_concurrent_connections=0,
            latency_s=0.1,
            jitter_s=0.0,
        )


async def test_stats_and_config_endpoints(server: JudgeServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        await http.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "a"}]})
        stats = (await http.get("/stats")).json()
        assert stats["chat_requests"] == 1
        assert stats["by_outcome"]["200"] == 1
        config = await http.post("/config", json={"latency_s": 0.05, "jitter_s": 0.01})
        assert config.status_code == 200
        assert (config.json()["latency_s"], config.json()["jitter_s"]) == (0.05, 0.01)
        bad = await http.post("/config", json={"latency_s": -1})
        assert bad.status_code == 400
        assert bad.json()["error"]["type"] == "invalid_request_error"
        reset = (await http.post("/stats/reset")).json()
        assert (reset["chat_requests"], reset["by_outcome"]["200"]) == (0, 0)
        assert (await http.get("/nope")).status_code == 404
        assert (await http.get("/v1/chat/completions")).status_code == 405
    assert server.stats().latency_s == 0.05


async def test_reset_stats_can_forget_fault_budgets(client: openai.AsyncOpenAI, server: JudgeServer) -> None:
    with pytest.raises(openai.InternalServerError):
        await ask(client, "#oj:status=500,times=1")
    server.reset_stats()
    await ask(client, "#oj:status=500,times=1")  # stats reset keeps the budget spent
    server.reset_stats(faults=True)
    with pytest.raises(openai.InternalServerError):
        await ask(client, "#oj:status=500,times=1")


async def test_keep_alive_pipelining_and_connection_close(server: JudgeServer) -> None:
    def request(text: str, extra: str = "") -> bytes:
        body = json.dumps({"messages": [{"role": "user", "content": text}]}).encode()
        head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
        return head.encode() + body

    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(request("#oj:score=1") + request("#oj:score=2", "Connection: close\r\n"))
    raw = await asyncio.wait_for(reader.read(), 5)  # read() returns at EOF: the server closed
    writer.close()
    first, second = raw.split(b"HTTP/1.1 200 OK\r\n")[1:]
    assert b'\\"score\\": 1' in first
    assert b"connection: close" in second.lower()
    assert b'\\"score\\": 2' in second


async def test_a_thousand_concurrent_connections() -> None:
    async with JudgeServer(latency_s=0.2) as srv:
        body = json.dumps({"messages": [{"role": "user", "content": "x"}]}).encode()
        head = b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(body)

        async def one() -> bytes:
            reader, writer = await asyncio.open_connection("127.0.0.1", srv.port)
            writer.write(head + body)
            status = await reader.readline()
            writer.close()
            return status

        statuses = await asyncio.gather(*(one() for _ in range(1000)))
        assert set(statuses) == {b"HTTP/1.1 200 OK\r\n"}
        stats = srv.stats()
        assert stats.max_concurrent_connections == 1000
        assert stats.peak_in_flight == 1000


# --- process variant and CLI ------------------------------------------------------------------------


def test_process_variant_serves_and_stops() -> None:
    with JudgeServerProcess(latency_s=0.01, model="proc-judge") as proc:
        pid = proc.pid
        assert proc.returncode is None
        assert proc.base_url == f"http://127.0.0.1:{proc.port}/v1"
        with openai.OpenAI(base_url=proc.base_url, api_key="x", max_retries=0) as oai:
            response = oai.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "#oj:score=4"}]
            )
            assert response.choices[0].message.content == '{"reason": "ok", "score": 4}'
            assert [m.id for m in oai.models.list().data] == ["proc-judge"]
        stats = proc.stats()
        assert (stats.chat_requests, stats.by_outcome["200"], stats.latency_s) == (1, 1, 0.01)
        proc.set_latency(0.5, jitter_s=0.0)
        proc.reset_stats()
        assert proc.stats().latency_s == 0.5
        assert proc.stats().chat_requests == 0
    assert proc.returncode == 0  # SIGTERM is a clean shutdown
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_cli_refuses_non_loopback_hosts(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--host", "0.0.0.0"])
    assert caught.value.code == 2
    assert "refusing to listen on non-loopback host '0.0.0.0'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="non-loopback"):
        JudgeServer(host="10.1.2.3")


# --- the schema instance generator ------------------------------------------------------------------


def test_schema_instance_choices() -> None:
    schema: dict[str, object] = {
        "type": "object",
        "properties": {
            "kind": {"const": "judge"},
            "level": {"enum": ["low", "high"]},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "count": {"type": "integer", "exclusiveMinimum": 0},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 1}, "minItems": 3},
            "one": {"type": "array", "items": {"type": "boolean"}, "maxItems": 1},
            "maybe": {"type": ["null", "integer"], "minimum": 10, "maximum": 20},
            "merged": {
                "allOf": [{"$ref": "#/$defs/A"}, {"properties": {"b": {"type": "string", "minLength": 4}}}]
            },
            "tree": {"$ref": "#/$defs/Node"},
        },
        "$defs": {
            "A": {"type": "object", "properties": {"a": {"type": "integer"}}},
            "Node": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
            },
        },
    }
    value = schema_instance(schema, score=3)
    assert isinstance(value, dict)
    assert {k: v for k, v in value.items() if k != "tree"} == {
        "kind": "judge",
        "level": "low",
        "ratio": 0.5,
        "count": 1,
        "tags": ["o", "o", "o"],
        "one": [True],
        "maybe": 15,
        "merged": {"a": 1, "b": "okxx"},
    }
    assert json.dumps(value["tree"]).count("children") == 7  # arrays stop growing at schema depth 6


def test_schema_instance_score_is_verbatim_unless_clamped() -> None:
    schema: dict[str, object] = {
        "type": "object",
        "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}},
    }
    assert schema_instance(schema, score=9) == {"score": 9}
    assert schema_instance(schema, score=9, clamp=True) == {"score": 5}
    with pytest.raises(ValueError, match="unresolvable"):
        schema_instance({"$ref": "#/$defs/Missing"}, score=1)
