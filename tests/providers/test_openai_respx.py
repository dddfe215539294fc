"""The OpenAI-compatible provider over the real openai client, HTTP mocked with respx."""

from __future__ import annotations

import json
import math
import time
from typing import Any

import httpx
import pytest
import respx

from openjudge.graders.llm_grader import LLMGrader
from openjudge.models._errors import ChatModelError
from openjudge.models.policy import ProviderLimits, ProviderPolicy, RetryPolicy
from openjudge.providers._errors import parse_retry_after
from openjudge.providers.openai import OpenAIChatModel
from openjudge.results import GraderError, GraderScore
from tests.providers._support import completion

pytestmark = pytest.mark.anyio

BASE = "http://judge.test/v1"
MESSAGES = [{"role": "user", "content": "hi"}]


def model(**kwargs: Any) -> OpenAIChatModel:
    policy = ProviderPolicy(
        timeout_s=kwargs.pop("timeout_s", 5.0),
        retry=RetryPolicy(max_attempts=kwargs.pop("attempts", 3), initial_backoff_s=0.01, max_backoff_s=0.02),
        limits=ProviderLimits(max_concurrency=8),
    )
    return OpenAIChatModel(
        "judge",
        api_key="sk-secret-value",
        base_url=BASE,
        policy=policy,
        http_client_factory=httpx.AsyncClient,  # respx intercepts httpx (not aiohttp)
        **kwargs,
    )


@respx.mock
async def test_usage_logprobs_and_request_body() -> None:
    top = [
        {"token": t, "logprob": math.log(p), "bytes": None} for t, p in (("4", 0.6), ("5", 0.3), ("3", 0.1))
    ]
    route = respx.post(f"{BASE}/chat/completions").mock(
        return_value=httpx.Response(
            200,
            json=completion(
                "4", logprobs=[{"token": "4", "logprob": math.log(0.6), "bytes": None, "top_logprobs": top}]
            ),
        )
    )
    m = OpenAIChatModel(
        "judge",
        api_key="sk-secret-value",
        base_url=BASE,
        temperature=0.0,
        seed=7,
        max_tokens=5,
        http_client_factory=httpx.AsyncClient,
    )
    response = await m.achat(MESSAGES, top_logprobs=3)
    assert response.content == "4"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens, response.usage.requests) == (
        11,
        3,
        1,
    )
    assert response.finish_reason == "stop" and response.model == "judge-1"
    [token] = response.logprobs
    probs = {t: math.exp(lp) for t, lp in token.top}
    expected = sum(int(t) * p for t, p in probs.items()) / sum(probs.values())
    assert expected == pytest.approx(4.2)  # 4*.6 + 5*.3 + 3*.1
    body = json.loads(route.calls.last.request.content)
    assert body["temperature"] == 0.0 and body["seed"] == 7 and body["max_tokens"] == 5
    assert body["logprobs"] is True and body["top_logprobs"] == 3
    assert route.calls.last.request.headers["authorization"] == "Bearer sk-secret-value"
    assert "sk-secret-value" not in repr(m)
    assert m.usage.requests == 1


@respx.mock
async def test_grader_sends_strict_json_schema_and_reads_verdict() -> None:
    route = respx.post(f"{BASE}/chat/completions").mock(
        return_value=httpx.Response(200, json=completion('{"reason": "good", "score": 5}'))
    )
    grader = LLMGrader(model(), name="q", template="Rate: {response}", score_range=(1, 5))
    result = await grader.aevaluate(response="an answer")
    assert isinstance(result, GraderScore) and result.score == 5.0
    assert result.usage is not None and result.usage.prompt_tokens == 11
    fmt = json.loads(route.calls.last.request.content)["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert schema["additionalProperties"] is False and schema["required"] == ["reason", "score"]


@respx.mock
async def test_json_object_mode_sends_schema_inline() -> None:
    route = respx.post(f"{BASE}/chat/completions").mock(
        return_value=httpx.Response(200, json=completion('{"reason": "ok", "score": 2}'))
    )
    grader = LLMGrader(model(structured_output="json_object"), template="{response}", score_range=(1, 5))
    assert isinstance(await grader.aevaluate(response="x"), GraderScore)
    fmt = json.loads(route.calls.last.request.content)["response_format"]
    score = fmt["schema"]["properties"]["score"]
    assert fmt["type"] == "json_object" and score["type"] == "integer" and score["enum"] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503])
@respx.mock
async def test_retryable_statuses_are_retried_once_per_attempt(status: int) -> None:
    route = respx.post(f"{BASE}/chat/completions").mock(
        side_effect=[
            httpx.Response(status, json={"error": {"message": "busy"}}),
            httpx.Response(200, json=completion("ok")),
        ]
    )
    response = await model().achat(MESSAGES)
    assert response.content == "ok"
    assert route.call_count == 2  # the SDK's own retries are off: one HTTP request per attempt
    assert response.usage.requests == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
@respx.mock
async def test_final_statuses_are_not_retried(status: int) -> None:
    route = respx.post(f"{BASE}/chat/completions").mock(
        return_value=httpx.Response(status, json={"error": {"message": "nope"}})
    )
    with pytest.raises(ChatModelError) as info:
        await model().achat(MESSAGES)
    assert route.call_count == 1
    assert info.value.status_code == status and not info.value.retryable
    assert f"HTTP {status}" in info.value.message
    assert "sk-secret-value" not in info.value.message


@respx.mock
async def test_connection_errors_and_timeouts_are_retried() -> None:
    route = respx.post(f"{BASE}/chat/completions").mock(
        side_effect=[
            httpx.ConnectError("refused"),
            httpx.ReadTimeout("slow"),
            httpx.Response(200, json=completion("ok")),
        ]
    )
    assert (await model().achat(MESSAGES)).content == "ok"
    assert route.call_count == 3


@respx.mock
async def test_retry_after_header_is_honoured_and_capped() -> None:
    route = respx.post(f"{BASE}/chat/completions").mock(
        side_effect=[
            httpx.Response(429, headers={"retry-after": "0.4"}, json={}),
            httpx.Response(200, json=completion("ok")),
        ]
    )
    started = time.monotonic()
    await model().achat(MESSAGES)
    assert 0.4 <= time.monotonic() - started < 2.5  # waited the Retry-After, not a backoff guess
    assert route.call_count == 2


@respx.mock
async def test_exhausted_retries_surface_the_last_error() -> None:
    route = respx.post(f"{BASE}/chat/completions").mock(return_value=httpx.Response(503, json={}))
    grader = LLMGrader(model(attempts=3), template="{response}")
    result = await grader.aevaluate(response="x")
    assert (
        isinstance(result, GraderError) and result.kind == "provider_error" and "HTTP 503" in result.message
    )
    assert route.call_count == 3


@respx.mock
async def test_refusal_and_content_filter() -> None:
    refusal = completion("")
    refusal["choices"][0]["message"]["refusal"] = "I can't help with that."
    respx.post(f"{BASE}/chat/completions").mock(
        side_effect=[
            httpx.Response(200, json=refusal),
            httpx.Response(200, json=completion("", finish="content_filter")),
        ]
    )
    grader = LLMGrader(model(), template="{response}")
    first = await grader.aevaluate(response="x")
    second = await grader.aevaluate(response="x")
    # The provider reports both as refusals; a pointwise judge refusing the response is the
    # response's failure (the blame rule): the bottom score, with the cause kept.
    for result in (first, second):
        assert isinstance(result, GraderScore) and result.score == 0.0
        assert result.metadata["blame"] == "response" and result.metadata["cause"] == "judge_refused"
    assert "I can't help with that." in first.reason


def test_retry_after_parsing() -> None:
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after(None) is None


def test_env_defaults_and_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env.test/v1")
    m = OpenAIChatModel(model="judge", temperature=0.0)
    assert m.base_url == "http://env.test/v1" and m.sampling.temperature == 0.0
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL")
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAIChatModel(model="judge")
    assert OpenAIChatModel(model="judge", base_url="http://local/v1").base_url == "http://local/v1"
