"""The litellm provider over the real litellm client, HTTP mocked with respx.

litellm's own retries are off, so every attempt of our policy is exactly one HTTP
request; errors are classified by what happened (litellm reports a refused
connection as an HTTP 500).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import httpx
import pytest
import respx

from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import OutputSpec, Sampling
from openjudge.providers._litellm import LiteLLMChatModel
from tests.providers._support import completion, fast_policy, litellm_on_httpx

pytestmark = pytest.mark.anyio

BASE = "http://judge.test/v1"
URL = f"{BASE}/chat/completions"
KEY = "sk-secret-value"
MESSAGES = [{"role": "user", "content": "hi"}]
ROUTES = ["openai/judge", "hosted_vllm/judge"]


@pytest.fixture(autouse=True)
def _httpx_transport() -> Iterator[None]:
    with litellm_on_httpx():
        yield


def model(route: str = "openai/judge", **kwargs: object) -> LiteLLMChatModel:
    kwargs.setdefault("policy", fast_policy())
    return LiteLLMChatModel(route, api_key=KEY, base_url=BASE, **kwargs)  # type: ignore[arg-type]


def counting(
    *outcomes: httpx.Response | Exception,
) -> tuple[Callable[[httpx.Request], httpx.Response], list[int]]:
    """A respx side effect that plays ``outcomes`` in order (the last repeats) and counts requests."""
    calls = [0]

    def effect(request: httpx.Request) -> httpx.Response:
        outcome = outcomes[min(calls[0], len(outcomes) - 1)]
        calls[0] += 1
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return effect, calls


@pytest.mark.parametrize("route", ROUTES)
@respx.mock
async def test_one_request_carries_the_wire_body(route: str) -> None:
    top = [{"token": t, "logprob": math.log(p), "bytes": None} for t, p in (("4", 0.6), ("5", 0.4))]
    logprobs = [{"token": "4", "logprob": math.log(0.6), "bytes": None, "top_logprobs": top}]
    api = respx.post(URL).mock(return_value=httpx.Response(200, json=completion("4", logprobs=logprobs)))
    m = model(
        route,
        sampling=Sampling(
            temperature=0.0,
            seed=7,
            max_tokens=5,
            extra_body={"chat_template_kwargs": {"enable_thinking": False}},
        ),
    )
    spec = OutputSpec.from_schema("Verdict", {"type": "object", "properties": {"score": {"type": "integer"}}})
    response = await m.achat(MESSAGES, output=spec, top_logprobs=2)

    assert api.call_count == 1
    request = api.calls.last.request
    assert request.headers["authorization"] == f"Bearer {KEY}"
    body = json.loads(request.content)
    assert body["model"] == "judge" and body["messages"] == MESSAGES
    assert (body["temperature"], body["seed"], body["max_tokens"]) == (0.0, 7, 5)
    assert body["logprobs"] is True and body["top_logprobs"] == 2
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["additionalProperties"] is False
    assert body["chat_template_kwargs"] == {"enable_thinking": False}  # extra_body lands at the top level
    assert response.content == "4" and response.model == "judge-1" and response.finish_reason == "stop"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens, response.usage.requests) == (
        11,
        3,
        1,
    )
    [token] = response.logprobs
    assert dict(token.top) == pytest.approx({"4": math.log(0.6), "5": math.log(0.4)})
    assert m.route == route.split("/")[0]
    assert KEY not in repr(m)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("status", [408, 429, 500, 502, 503])
@respx.mock
async def test_retryable_statuses_are_retried_by_our_policy_only(route: str, status: int) -> None:
    effect, calls = counting(
        httpx.Response(status, json={"error": {"message": "busy"}}),
        httpx.Response(200, json=completion("ok")),
    )
    respx.post(URL).mock(side_effect=effect)
    response = await model(route).achat(MESSAGES)
    assert response.content == "ok"
    assert calls[0] == 2 and response.usage.requests == 2  # one HTTP request per attempt


@pytest.mark.parametrize("route", ROUTES)
@respx.mock
async def test_retries_are_bounded_by_the_policy(route: str) -> None:
    effect, calls = counting(httpx.Response(503, json={"error": {"message": "down"}}))
    respx.post(URL).mock(side_effect=effect)
    m = model(route, policy=fast_policy(attempts=3))
    with pytest.raises(ChatModelError) as info:
        await m.achat(MESSAGES)
    assert calls[0] == 3 and info.value.requests == 3  # litellm would add 2-8 more with its retries on
    assert info.value.status_code == 503 and info.value.retryable and info.value.kind == "provider_error"
    assert m.usage.requests == 3


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
@respx.mock
async def test_final_statuses_are_not_retried(route: str, status: int) -> None:
    api = respx.post(URL).mock(
        return_value=httpx.Response(status, json={"error": {"message": f"nope {KEY}"}})
    )
    with pytest.raises(ChatModelError) as info:
        await model(route).achat(MESSAGES)
    assert api.call_count == 1
    assert info.value.status_code == status and not info.value.retryable
    assert f"HTTP {status}" in info.value.message
    assert KEY not in info.value.message and "***" in info.value.message  # a key echoed back is redacted


@pytest.mark.parametrize("route", ROUTES)
@respx.mock
async def test_retry_after_is_honoured(route: str) -> None:
    effect, calls = counting(
        httpx.Response(429, headers={"retry-after": "0.4"}, json={"error": {"message": "slow down"}}),
        httpx.Response(200, json=completion("ok")),
    )
    respx.post(URL).mock(side_effect=effect)
    started = time.monotonic()
    await model(route).achat(MESSAGES)
    assert 0.4 <= time.monotonic() - started < 2.5  # waited the Retry-After, not a backoff guess
    assert calls[0] == 2


@pytest.mark.parametrize("route", ROUTES)
@respx.mock
async def test_retry_after_is_read_from_litellm_headers(route: str) -> None:
    respx.post(URL).mock(return_value=httpx.Response(429, headers={"retry-after": "7"}, json={}))
    with pytest.raises(ChatModelError) as info:
        await model(route, policy=fast_policy(attempts=1)).achat(MESSAGES)
    assert info.value.status_code == 429 and info.value.retry_after_s == 7.0 and info.value.retryable


@respx.mock
async def test_connection_errors_are_retried_not_reported_as_http_500() -> None:
    # The openai/ route goes through the openai SDK (max_retries=0): one request per attempt.
    effect, calls = counting(httpx.ConnectError("refused"), httpx.Response(200, json=completion("ok")))
    respx.post(URL).mock(side_effect=effect)
    assert (await model("openai/judge").achat(MESSAGES)).content == "ok"
    assert calls[0] == 2

    effect, calls = counting(httpx.ConnectError("refused"))
    respx.post(URL).mock(side_effect=effect)
    with pytest.raises(ChatModelError) as info:
        await model("openai/judge", policy=fast_policy(attempts=2)).achat(MESSAGES)
    assert info.value.retryable and info.value.status_code is None  # litellm says 500; it was no response
    assert "connection failed" in info.value.message and info.value.requests == 2


@respx.mock
async def test_hosted_vllm_reconnects_once_inside_an_attempt() -> None:
    # litellm's own httpx handler (hosted_vllm/, anthropic/, ...) retries a failed
    # *connection* once with a fresh client; it cannot be turned off. Responses are
    # never retried by it, so status errors stay at one request per attempt.
    effect, calls = counting(
        httpx.ConnectError("refused"),
        httpx.ConnectError("refused"),
        httpx.Response(200, json=completion("ok")),
    )
    respx.post(URL).mock(side_effect=effect)
    response = await model("hosted_vllm/judge").achat(MESSAGES)
    assert response.content == "ok"
    assert calls[0] == 3 and response.usage.requests == 2


@pytest.mark.parametrize("route", ROUTES)
@respx.mock
async def test_timeouts_are_retryable_timeouts(route: str) -> None:
    effect, calls = counting(httpx.ReadTimeout("slow"), httpx.Response(200, json=completion("ok")))
    respx.post(URL).mock(side_effect=effect)
    assert (await model(route).achat(MESSAGES)).content == "ok"
    assert calls[0] == 2
    respx.post(URL).mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(ChatModelError) as info:
        await model(route, policy=fast_policy(attempts=1)).achat(MESSAGES)
    assert info.value.kind == "timeout" and info.value.retryable


@respx.mock
async def test_missing_credentials_fail_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    api = respx.post("https://api.openai.com/v1/chat/completions").mock(
        return_value=httpx.Response(200, json=completion("ok"))
    )
    m = LiteLLMChatModel("openai/judge", policy=fast_policy(attempts=4))  # OpenAI itself, no key
    with pytest.raises(ChatModelError) as info:
        await m.achat(MESSAGES)
    # litellm reports this as an HTTP 500; no request was sent and retrying cannot help.
    assert api.call_count == 0 and not info.value.retryable and info.value.requests == 1
    assert "not sent" in info.value.message and "api_key" in info.value.message


@pytest.mark.parametrize("route", ROUTES)
@respx.mock
async def test_a_named_server_never_gets_the_environment_key(
    route: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-canary-0001")
    monkeypatch.setenv("HOSTED_VLLM_API_KEY", "sk-env-canary-0002")
    api = respx.post(URL).mock(return_value=httpx.Response(200, json=completion("ok")))
    await LiteLLMChatModel(route, base_url=BASE, policy=fast_policy()).achat(MESSAGES)
    assert api.calls.last.request.headers["authorization"] == "Bearer EMPTY"


@respx.mock
async def test_refusal_is_reported() -> None:
    body = completion("")
    body["choices"][0]["message"]["refusal"] = "I can't help with that."
    respx.post(URL).mock(return_value=httpx.Response(200, json=body))
    with pytest.raises(ChatModelError) as info:
        await model("openai/judge").achat(MESSAGES)
    assert info.value.kind == "refused" and "can't help" in info.value.message


@respx.mock
async def test_anthropic_route_translates_both_ways() -> None:
    api = respx.post("https://api.anthropic.com/v1/messages").mock(
        return_value=httpx.Response(
            200,
            json={
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": [{"type": "text", "text": "fine"}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 9, "output_tokens": 2},
            },
        )
    )
    m = LiteLLMChatModel(
        "anthropic/claude-test", api_key=KEY, sampling=Sampling(seed=0, max_tokens=8), policy=fast_policy()
    )
    response = await m.achat([{"role": "system", "content": "be brief"}, *MESSAGES])
    assert response.content == "fine"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (9, 2)
    request = api.calls.last.request
    assert request.headers["x-api-key"] == KEY
    body = json.loads(request.content)
    assert body["system"][0]["text"] == "be brief" and body["messages"][0]["role"] == "user"
    assert "seed" not in body  # unsupported there: dropped (drop_params) instead of failing every call


def test_unknown_route_gets_did_you_mean() -> None:
    with pytest.raises(ValueError, match=r"Did you mean 'anthropic/'") as info:
        LiteLLMChatModel("anthropc/claude-x")
    assert "hosted_vllm/" in str(info.value)
    with pytest.raises(ValueError, match="differ"):
        LiteLLMChatModel("openai/judge", base_url="http://a/v1", api_base="http://b/v1")


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_trio_gets_a_clear_error() -> None:
    with pytest.raises(ChatModelError, match="only on asyncio") as info:
        await model("openai/judge").achat(MESSAGES)
    assert not info.value.retryable


@pytest.mark.slow  # a fresh interpreter importing litellm (5 s)
def test_litellm_is_imported_only_when_a_model_is_built() -> None:
    # In a fresh interpreter: importing every provider module leaves litellm alone; building
    # a model imports it (blocked here, which also shows the ImportError names the extra).
    code = (
        "import sys\n"
        "import openjudge.providers._litellm, openjudge.providers._azure, openjudge.providers.vllm, openjudge.providers.vllm_reward, openjudge.providers._registry\n"
        "print('litellm' in sys.modules)\n"
        "sys.modules['litellm'] = None\n"
        "try:\n"
        "    openjudge.providers._litellm.LiteLLMChatModel('openai/judge', api_key='k')\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.splitlines() == [
        "False",
        "the litellm provider needs litellm: pip install 'openjudge-graders[litellm]'",
    ]
