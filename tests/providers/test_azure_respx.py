"""Azure OpenAI through litellm: field checks, URL shape, api-key header, retries, 404s that name the field."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
import respx

from openjudge.graders.llm_grader import LLMGrader
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import Sampling
from openjudge.providers._azure import DEFAULT_AZURE_API_VERSION, AzureChatModel
from openjudge.results import GraderError
from tests.providers._support import completion, fast_policy, litellm_on_httpx

pytestmark = pytest.mark.anyio

ENDPOINT = "https://my-res.openai.azure.com"
URL = f"{ENDPOINT}/openai/deployments/judge-dep/chat/completions"
KEY = "az-secret-key"
MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture(autouse=True)
def _httpx_transport(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("AZURE_API_KEY", "AZURE_OPENAI_API_KEY", "AZURE_API_BASE", "AZURE_OPENAI_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    for name in ("AZURE_API_VERSION", "OPENAI_API_VERSION"):
        monkeypatch.delenv(name, raising=False)
    with litellm_on_httpx():
        yield


def azure(**kwargs: object) -> AzureChatModel:
    kwargs.setdefault("policy", fast_policy())
    kwargs.setdefault("api_base", ENDPOINT + "/")
    return AzureChatModel("judge-dep", api_key=KEY, **kwargs)  # type: ignore[arg-type]


@respx.mock
async def test_url_shape_api_key_header_and_body() -> None:
    api = respx.post(url__startswith=URL).mock(return_value=httpx.Response(200, json=completion("ok")))
    m = azure(api_version="2024-08-01-preview", sampling=Sampling(temperature=0.0))
    response = await m.achat(MESSAGES, top_logprobs=2)
    assert response.content == "ok" and api.call_count == 1
    request = api.calls.last.request
    assert str(request.url) == f"{URL}?api-version=2024-08-01-preview"
    assert request.headers["api-key"] == KEY and "authorization" not in request.headers
    body = json.loads(request.content)
    assert body["model"] == "judge-dep" and body["temperature"] == 0.0 and body["top_logprobs"] == 2
    assert KEY not in repr(m) and repr(m).startswith("AzureChatModel(deployment='judge-dep'")


@pytest.mark.parametrize(
    ("outcome", "requests"),
    [
        (httpx.Response(429, headers={"retry-after": "0"}, json={"error": {"message": "busy"}}), 2),
        (httpx.Response(500, json={"error": {"message": "boom"}}), 2),  # a bare litellm.APIError
        (httpx.Response(503, json={"error": {"message": "down"}}), 2),
        (httpx.ConnectError("refused"), 2),
    ],
)
@respx.mock
async def test_retryable_failures_are_retried_once_per_attempt(
    outcome: httpx.Response | Exception, requests: int
) -> None:
    api = respx.post(url__startswith=URL)
    api.side_effect = [outcome, httpx.Response(200, json=completion("ok"))]
    response = await azure().achat(MESSAGES)
    assert response.content == "ok"
    assert api.call_count == requests and response.usage.requests == 2


@respx.mock
async def test_auth_errors_are_final() -> None:
    api = respx.post(url__startswith=URL).mock(
        return_value=httpx.Response(401, json={"error": {"code": "401", "message": "Access denied"}})
    )
    with pytest.raises(ChatModelError) as info:
        await azure().achat(MESSAGES)
    assert api.call_count == 1 and info.value.status_code == 401 and not info.value.retryable
    assert KEY not in info.value.message


@respx.mock
async def test_404_for_a_missing_deployment_names_the_deployment() -> None:
    api = respx.post(url__startswith=URL).mock(
        return_value=httpx.Response(
            404,
            json={
                "error": {
                    "code": "DeploymentNotFound",
                    "message": "The API deployment for this resource does not exist.",
                }
            },
        )
    )
    grader = LLMGrader(azure(), name="q", template="Rate: {response}")
    result = await grader.aevaluate(response="x")
    assert isinstance(result, GraderError) and result.kind == "provider_error"
    assert "`deployment`" in result.message and "'judge-dep'" in result.message
    assert "Not Found" not in result.message
    assert api.call_count == 1  # not retried


@respx.mock
async def test_404_resource_not_found_names_the_api_version() -> None:
    respx.post(url__startswith=URL).mock(
        return_value=httpx.Response(404, json={"error": {"code": "404", "message": "Resource not found"}})
    )
    with pytest.raises(ChatModelError) as info:
        await azure(api_version="2031-01-01").achat(MESSAGES)
    message = info.value.message
    assert info.value.status_code == 404 and not info.value.retryable
    assert "`api_version`" in message and "'2031-01-01'" in message and DEFAULT_AZURE_API_VERSION in message


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"deployment": "my deployment"}, "deployment"),
        ({"deployment": "models/gpt-4o"}, "deployment"),
        ({"api_base": "http://my-res.openai.azure.com"}, "https://"),
        ({"api_base": "https://my-res.openai.azure.com/openai/deployments/x"}, "without a path"),
        ({"api_version": "2024-13-01"}, "YYYY-MM-DD"),
        ({"api_version": "latest"}, "YYYY-MM-DD"),
    ],
)
def test_malformed_fields_are_rejected_early(kwargs: dict[str, str], field: str) -> None:
    args = {"deployment": "judge-dep", "api_key": KEY, "api_base": ENDPOINT, **kwargs}
    with pytest.raises(ValueError, match=field):
        AzureChatModel(**args)  # type: ignore[arg-type]


def test_custom_domains_and_env_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    m = AzureChatModel("judge-dep", api_key=KEY, base_url="https://llm.example.com/")
    assert (m.api_base, m.api_version, m.model_name) == (
        "https://llm.example.com",
        DEFAULT_AZURE_API_VERSION,
        "azure/judge-dep",
    )
    with pytest.raises(ValueError, match="AZURE_API_BASE"):
        AzureChatModel("judge-dep", api_key=KEY)
    monkeypatch.setenv("AZURE_API_BASE", ENDPOINT)
    with pytest.raises(ValueError, match="AZURE_API_KEY"):
        AzureChatModel("judge-dep")
    monkeypatch.setenv("AZURE_API_KEY", KEY)
    monkeypatch.setenv("AZURE_API_VERSION", "2025-01-01-preview")
    m = AzureChatModel("judge-dep")
    assert (m.api_base, m.api_version) == (ENDPOINT, "2025-01-01-preview")
