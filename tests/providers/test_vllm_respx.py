"""The vLLM provider: vLLM's request fields and model discovery, HTTP mocked with respx."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest
import respx
from pydantic import ValidationError

from openjudge.graders.llm_grader import LLMGrader
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import Sampling
from openjudge.providers.vllm import VLLMChatModel, VLLMServerInfo
from openjudge.results import GraderScore
from tests.providers._support import completion, fast_policy

pytestmark = pytest.mark.anyio

BASE = "http://vllm.test:8000/v1"
CHAT = f"{BASE}/chat/completions"
MODELS = f"{BASE}/models"
MESSAGES = [{"role": "user", "content": "hi"}]


def models_body(*cards: tuple[str, int | None]) -> dict[str, Any]:
    data = [
        {
            "id": name,
            "object": "model",
            "owned_by": "vllm",
            "root": f"/weights/{name}",
            "max_model_len": length,
        }
        for name, length in cards
    ]
    return {"object": "list", "data": data}


def vllm(**kwargs: Any) -> VLLMChatModel:
    kwargs.setdefault("policy", fast_policy())
    kwargs.setdefault("http_client_factory", httpx.AsyncClient)  # respx intercepts httpx (not aiohttp)
    return VLLMChatModel(kwargs.pop("model", "Qwen/Qwen3-8B"), base_url=BASE, **kwargs)


def sent(route: respx.Route) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(route.calls.last.request.content)
    return body


@respx.mock
async def test_structured_outputs_and_chat_template_kwargs_travel_in_the_body() -> None:
    chat = respx.post(CHAT).mock(
        return_value=httpx.Response(200, json=completion('{"reason": "ok", "score": 4}'))
    )
    m = vllm(chat_template_kwargs={"enable_thinking": False}, sampling=Sampling(temperature=0.0))
    result = await LLMGrader(m, name="q", template="Rate: {response}", score_range=(1, 5)).aevaluate(
        response="x"
    )
    assert isinstance(result, GraderScore) and result.score == 4.0
    body = sent(chat)
    assert "response_format" not in body
    schema = body["structured_outputs"]["json"]
    assert schema["additionalProperties"] is False and set(schema["required"]) == {"reason", "score"}
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert body["model"] == "Qwen/Qwen3-8B" and body["temperature"] == 0.0


@respx.mock
async def test_response_format_option_and_extra_body_precedence() -> None:
    chat = respx.post(CHAT).mock(
        return_value=httpx.Response(200, json=completion('{"reason": "ok", "score": 2}'))
    )
    m = vllm(
        schema_field="response_format",
        chat_template_kwargs={"enable_thinking": False},
        sampling=Sampling(extra_body={"chat_template_kwargs": {"enable_thinking": True}, "top_k": 1}),
    )
    await LLMGrader(m, template="{response}").aevaluate(response="x")
    body = sent(chat)
    assert body["response_format"]["type"] == "json_schema" and "structured_outputs" not in body
    assert body["chat_template_kwargs"] == {"enable_thinking": True}  # an explicit extra_body wins
    assert body["top_k"] == 1


@respx.mock
async def test_score_token_logprobs() -> None:
    chat = respx.post(CHAT).mock(return_value=httpx.Response(200, json=completion("3")))
    await vllm(score_token_ids=[16, 17, 18, 19, 20]).achat(MESSAGES, top_logprobs=5)
    body = sent(chat)
    assert body["logprobs"] is True
    assert body["logprob_token_ids"] == [16, 17, 18, 19, 20] and body["top_logprobs"] == 5
    await vllm().achat(MESSAGES, top_logprobs=50)
    assert sent(chat)["top_logprobs"] == 20 and "logprob_token_ids" not in sent(chat)  # vLLM's --max-logprobs
    assert vllm(max_logprobs=5).capabilities.max_top_logprobs == 5


@respx.mock
async def test_discover_reads_served_models_and_context_length() -> None:
    route = respx.get(MODELS).mock(
        return_value=httpx.Response(200, json=models_body(("Qwen/Qwen3-8B", 32768), ("judge-lora", None)))
    )
    info = await VLLMChatModel.discover("http://vllm.test:8000/", api_key="vk")
    assert isinstance(info, VLLMServerInfo)
    assert (info.model, info.max_model_len, info.base_url) == ("Qwen/Qwen3-8B", 32768, BASE)
    assert [c.id for c in info.models] == ["Qwen/Qwen3-8B", "judge-lora"]
    assert info.card("judge-lora") is not None and info.card("missing") is None
    assert route.calls.last.request.headers["authorization"] == "Bearer vk"
    with pytest.raises(ValidationError, match="frozen"):
        info.base_url = "x"  # type: ignore[misc]

    m = await VLLMChatModel.from_server(
        BASE, sampling=Sampling(temperature=0.0), http_client_factory=httpx.AsyncClient
    )
    assert m.model_name == "Qwen/Qwen3-8B" and m.server_info == info and m.sampling.temperature == 0.0
    assert (await VLLMChatModel.from_server(BASE, model="judge-lora")).model_name == "judge-lora"
    with pytest.raises(ValueError, match="serves 'Qwen/Qwen3-8B', 'judge-lora'"):
        await VLLMChatModel.from_server(BASE, model="Qwen/Qwen3-32B")


@respx.mock
async def test_without_a_model_the_first_call_discovers_it_once() -> None:
    models = respx.get(MODELS).mock(
        return_value=httpx.Response(200, json=models_body(("served-judge", 8192)))
    )
    chat = respx.post(CHAT).mock(return_value=httpx.Response(200, json=completion("ok")))
    m = VLLMChatModel(base_url=BASE, policy=fast_policy(), http_client_factory=httpx.AsyncClient)
    assert m.model_name == "" and m.server_info is None

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(m.achat, MESSAGES)
    assert models.call_count == 1 and chat.call_count == 5
    assert m.model_name == "served-judge" and sent(chat)["model"] == "served-judge"
    assert m.server_info is not None and m.server_info.max_model_len == 8192


@pytest.mark.parametrize(
    ("outcome", "retryable"),
    [
        (httpx.Response(503, json={}), True),
        (httpx.Response(401, json={}), False),
        (httpx.ConnectError("refused"), True),
        (httpx.Response(200, json={"object": "list", "data": []}), False),
        (httpx.Response(200, text="<html>"), False),
    ],
)
@respx.mock
async def test_discovery_failures_are_classified(
    outcome: httpx.Response | Exception, retryable: bool
) -> None:
    respx.get(MODELS).mock(side_effect=[outcome])
    with pytest.raises(ChatModelError) as info:
        await VLLMChatModel.discover(BASE)
    assert info.value.retryable is retryable
    assert BASE in info.value.message


@respx.mock
async def test_keys_never_fall_back_to_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret")
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    chat = respx.post(CHAT).mock(return_value=httpx.Response(200, json=completion("ok")))
    await vllm().achat(MESSAGES)
    assert "authorization" not in chat.calls.last.request.headers  # no key: no header at all
    monkeypatch.setenv("VLLM_API_KEY", "vllm-key")
    await vllm().achat(MESSAGES)
    assert chat.calls.last.request.headers["authorization"] == "Bearer vllm-key"


def test_construction_checks() -> None:
    assert VLLMChatModel("m", base_url="http://h:8000").base_url == "http://h:8000/v1"
    assert VLLMChatModel("m", base_url="http://h:8000/v1/").server_url == "http://h:8000"
    with pytest.raises(ValueError, match="base_url="):
        VLLMChatModel("m")
    with pytest.raises(ValueError, match="http"):
        VLLMChatModel("m", base_url="h:8000")
    for ids in ([], list(range(129)), [-1], list(range(21))):
        with pytest.raises(ValueError, match="score_token_ids"):
            VLLMChatModel("m", base_url=BASE, score_token_ids=ids)
    with pytest.raises(ValueError, match="schema_field"):
        VLLMChatModel("m", base_url=BASE, schema_field="guided_json")  # type: ignore[arg-type]
