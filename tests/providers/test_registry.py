"""Model strings resolve through one explicit table of lazy factories."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from openjudge.models._limits import ConnectionLimits
from openjudge.models.chat_model import Sampling
from openjudge.models.policy import ProviderPolicy
from openjudge.providers._azure import AzureChatModel
from openjudge.providers._litellm import LiteLLMChatModel
from openjudge.providers._registry import (
    PROVIDER_FACTORIES,
    ModelSpec,
    load_factory,
    parse_model_spec,
    resolve_model,
)
from openjudge.providers.openai import OpenAIChatModel
from openjudge.providers.vllm import VLLMChatModel
from tests._fixtures.extras import need_litellm


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("openai:gpt-4o-mini", ModelSpec("openai", "gpt-4o-mini")),
        ("vllm:Qwen/Qwen3-8B@http://host:8000/v1", ModelSpec("vllm", "Qwen/Qwen3-8B", "http://host:8000/v1")),
        ("vllm:@https://host/v1", ModelSpec("vllm", None, "https://host/v1")),
        ("azure:my-deployment", ModelSpec("azure", "my-deployment")),
        ("litellm:anthropic/claude-sonnet-4-5", ModelSpec("litellm", "anthropic/claude-sonnet-4-5")),
        ("litellm:vertex_ai/claude@20240620", ModelSpec("litellm", "vertex_ai/claude@20240620")),
        (" OpenAI:gpt-4o ", ModelSpec("openai", "gpt-4o")),
    ],
)
def test_parse(spec: str, parsed: ModelSpec) -> None:
    assert parse_model_spec(spec) == parsed


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("opneai:gpt-4o", r"unknown provider kind 'opneai'.*Did you mean 'openai'"),
        ("vlm:Qwen/Qwen3-8B", r"Did you mean 'vllm'"),
        ("anthropic:claude", r"unknown provider kind 'anthropic'.*'litellm:<route>/<model>'"),
        ("gpt-4o-mini", r"needs a provider kind.*'openai:gpt-4o-mini'"),
        ("openai/gpt-4o:mini", r"needs a provider kind"),
        ("openai:", r"names no model"),
        ("azure:@https://res.openai.azure.com", r"names no model"),
    ],
)
def test_bad_strings_say_how_to_fix_them(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_model_spec(spec)


def test_resolve_builds_each_kind_with_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = ProviderPolicy(timeout_s=3.0)
    openai_model = resolve_model(
        "openai:gpt-4o-mini", api_key="sk-x", sampling=Sampling(temperature=0.0), policy=policy
    )
    assert isinstance(openai_model, OpenAIChatModel) and openai_model.model_name == "gpt-4o-mini"
    assert openai_model.sampling.temperature == 0.0 and openai_model.policy.timeout_s == 3.0

    served = resolve_model("vllm:Qwen/Qwen3-8B@http://host:8000/v1", sampling=Sampling(seed=1))
    assert isinstance(served, VLLMChatModel) and served.base_url == "http://host:8000/v1"
    assert (served.model_name, served.sampling.seed) == ("Qwen/Qwen3-8B", 1)
    discovering = resolve_model("vllm:@http://host:8000/v1")
    assert isinstance(discovering, VLLMChatModel) and discovering.model_name == ""

    need_litellm()  # azure and litellm models load litellm when built
    monkeypatch.setenv("AZURE_API_KEY", "az-key")
    azure = resolve_model("azure:my-deployment", base_url="https://res.openai.azure.com")
    assert isinstance(azure, AzureChatModel) and azure.deployment == "my-deployment"

    routed = resolve_model("litellm:hosted_vllm/Qwen/Qwen3-8B@http://host:8000/v1")
    assert isinstance(routed, LiteLLMChatModel) and routed.route == "hosted_vllm"
    assert routed.api_base == "http://host:8000/v1"

    with pytest.raises(ValueError, match="names base_url"):
        resolve_model("vllm:m@http://a/v1", base_url="http://b/v1")
    with pytest.raises(TypeError):
        resolve_model("openai:gpt-4o", api_key="k", no_such_option=1)


def test_table_is_explicit_and_lazy() -> None:
    assert dict(PROVIDER_FACTORIES) == {
        "openai": "openjudge.providers.openai:OpenAIChatModel",
        "vllm": "openjudge.providers.vllm:VLLMChatModel",
        "azure": "openjudge.providers._azure:AzureChatModel",
        "litellm": "openjudge.providers._litellm:LiteLLMChatModel",
        "transformers": "openjudge.providers.transformers:TransformersChatModel",
    }
    assert load_factory("vllm") is VLLMChatModel
    with pytest.raises(ValueError, match="Did you mean 'azure'"):
        load_factory("azuer")
    with pytest.raises(TypeError):
        PROVIDER_FACTORIES["x"] = "y"  # type: ignore[index]


@pytest.mark.parametrize(
    ("kind", "model", "base_url"),
    [
        ("openai", "gpt-4o-mini", None),
        ("vllm", "Qwen/Qwen3-8B", "http://host:8000/v1"),
        ("azure", "my-deployment", "https://res.openai.azure.com"),
        ("litellm", "hosted_vllm/Qwen/Qwen3-8B", "http://host:8000/v1"),
    ],
)
def test_every_factory_takes_the_config_keywords(kind: str, model: str, base_url: str | None) -> None:
    if kind in ("azure", "litellm"):
        need_litellm()
    # Exactly what openjudge.config._build.build_provider passes.
    built = load_factory(kind)(
        model,
        api_key=SecretStr("k"),
        base_url=base_url,
        sampling=Sampling(temperature=0.0, max_tokens=64, seed=0),
        structured_output="json_object",
        policy=ProviderPolicy(timeout_s=7.0),
        limits=ConnectionLimits(),
        cache=None,
    )
    assert built.policy.timeout_s == 7.0 and built.sampling.max_tokens == 64
    assert built.capabilities.structured_output == "json_object"
