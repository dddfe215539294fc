"""vLLM's OpenAI-compatible server, with the fields vLLM adds.

* Structured output through vLLM's ``structured_outputs`` request field
  (``{"json": schema}``; the ``guided_*`` fields were removed in vLLM 0.12), or the
  standard ``response_format`` json_schema (``schema_field="response_format"``).
* ``chat_template_kwargs`` on every request, e.g. ``{"enable_thinking": False}``.
* Score-token logprobs: ``score_token_ids`` sends ``logprob_token_ids`` so the server
  returns exactly those tokens' logprobs (top_logprobs is capped at ``--max-logprobs``,
  20 by default).
* Discovery of the served model and its ``max_model_len`` from ``GET /v1/models``:
  :meth:`VLLMChatModel.discover`, :meth:`VLLMChatModel.from_server`, or no ``model``
  at all (the first call discovers it).

vLLM never answers 429 (excess requests queue in its scheduler), so the client-side
limits and timeouts of the policy are the only back-pressure.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import anyio
import httpx
from pydantic import JsonValue, SecretStr

from openjudge.models._limits import ConnectionLimits
from openjudge.models._loop_local import LoopLocal
from openjudge.models._secrets import as_secret
from openjudge.models.cache import JudgeCache
from openjudge.models.chat_client import ChatClient
from openjudge.models.chat_model import (
    ChatRequest,
    ChatResponse,
    ModelCapabilities,
    OutputSpec,
    Sampling,
    StructuredOutputMode,
)
from openjudge.models.policy import ProviderPolicy
from openjudge.providers._http import HttpClientFactory
from openjudge.providers._openai_compatible import OpenAICompatibleTransport
from openjudge.providers._structured import strict_schema
from openjudge.providers._vllm_models import VLLMModelCard, VLLMServerInfo, fetch_models, normalize_base_url

__all__ = [
    "MAX_LOGPROB_TOKEN_IDS",
    "VLLMChatModel",
    "VLLMModelCard",
    "VLLMServerInfo",
    "VLLMTransport",
    "normalize_base_url",
    "vllm_api_key",
]

MAX_LOGPROB_TOKEN_IDS = 128
"""vLLM's cap on ``logprob_token_ids`` per request."""

SchemaField = Literal["structured_outputs", "response_format"]


@functools.lru_cache(maxsize=256)
def _structured_outputs(output: OutputSpec) -> dict[str, Any]:
    return {"json": strict_schema(output.schema)}


def vllm_api_key(api_key: str | SecretStr | None) -> SecretStr | None:
    """The key for a vLLM server: the one given, else ``VLLM_API_KEY``, else none.

    Never ``OPENAI_API_KEY``: that key must not be sent to a self-hosted server.
    """
    if api_key is None:
        api_key = os.environ.get("VLLM_API_KEY") or None
    return as_secret(api_key)


class VLLMTransport(OpenAICompatibleTransport):
    """The OpenAI-compatible transport plus vLLM's request fields and model discovery."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: SecretStr | None,
        structured_output: StructuredOutputMode | None,
        max_connections: int,
        schema_field: SchemaField,
        chat_template_kwargs: Mapping[str, JsonValue] | None,
        score_token_ids: tuple[int, ...] | None,
        max_logprobs: int,
        http_client_factory: HttpClientFactory | None,
    ) -> None:
        super().__init__(
            model,
            base_url=base_url,
            api_key=api_key,
            structured_output=structured_output,
            max_connections=max_connections,
            http_client_factory=http_client_factory,
        )
        self.schema_field: SchemaField = schema_field
        self.chat_template_kwargs = dict(chat_template_kwargs) if chat_template_kwargs else None
        self.score_token_ids = score_token_ids
        self.max_logprobs = max_logprobs
        self.server_info: VLLMServerInfo | None = None
        self._api_key = api_key
        self._http_client_factory = http_client_factory
        self._discovery_locks: LoopLocal[anyio.Lock] = LoopLocal(anyio.Lock)

    def params(self, request: ChatRequest, mode: StructuredOutputMode | None = None) -> dict[str, Any]:
        mode = mode or self._structured.mode()
        params = super().params(request, mode)
        if request.output is not None and self.schema_field == "structured_outputs" and mode == "json_schema":
            params.pop("response_format", None)
            params.setdefault("structured_outputs", _structured_outputs(request.output))
        if self.chat_template_kwargs is not None:
            params.setdefault("chat_template_kwargs", self.chat_template_kwargs)
        if request.top_logprobs:
            if self.score_token_ids is not None:
                # vLLM requires top_logprobs (its `logprobs` count) to equal the number of ids.
                params["logprob_token_ids"] = list(self.score_token_ids)
                params["top_logprobs"] = len(self.score_token_ids)
            else:
                params["top_logprobs"] = min(request.top_logprobs, self.max_logprobs)
        return params

    def wire_body(self, request: ChatRequest) -> bytes | None:
        # Until the served model is known the body is not, so the reply is not cacheable yet.
        return super().wire_body(request) if self.model_name else None

    async def attempt(self, request: ChatRequest, timeout_s: float) -> ChatResponse:
        if not self.model_name:
            await self._discover(timeout_s)
        return await super().attempt(request, timeout_s)

    async def _discover(self, timeout_s: float) -> None:
        async with self._discovery_locks.get():
            if self.model_name:
                return
            factory = self._http_client_factory
            client = factory() if factory is not None else httpx.AsyncClient()
            async with client:
                info = await fetch_models(client, self.base_url, self._api_key, timeout_s)
            self.server_info = info
            self.set_model_name(info.model)


class VLLMChatModel(ChatClient):
    """A model served by ``vllm serve`` (OpenAI-compatible, plus vLLM's request fields).

    Args:
        model: The served model name; ``None`` discovers it on the first call (the first
            model of ``GET /v1/models``).
        api_key: The server's ``--api-key``; defaults to ``VLLM_API_KEY``, else no key.
        base_url: The server's OpenAI URL, e.g. ``http://localhost:8000/v1`` (a bare root
            gets ``/v1``).
        sampling: Default sampling (``extra_body`` carries any other request field).
        policy: Timeouts, retries and limits (vLLM never answers 429: these are the only
            back-pressure).
        structured_output: The JSON strength to ask for; unset, the first call finds what
            the server takes (``json_schema`` on vLLM).
        schema_field: Where a JSON schema goes: vLLM's ``structured_outputs`` field
            (``{"json": schema}``) or the standard ``response_format``.
        chat_template_kwargs: Sent with every request, e.g. ``{"enable_thinking": False}``
            for Qwen3 judges (``sampling.extra_body`` may override it).
        score_token_ids: Vocabulary ids of the score tokens (e.g. the ids of "1".."5"):
            when logprobs are requested, the server returns exactly these.
        max_logprobs: The server's ``--max-logprobs`` (top_logprobs is capped to it).
        logprobs: Whether to use logprobs at all.
        limits, cache, http_client_factory: As for :class:`~openjudge.providers.openai.OpenAIChatModel`.
    """

    transport: VLLMTransport

    def __init__(
        self,
        model: str | None = None,
        api_key: str | SecretStr | None = None,
        base_url: str | None = None,
        *,
        sampling: Sampling | None = None,
        policy: ProviderPolicy | None = None,
        structured_output: StructuredOutputMode | None = None,
        schema_field: SchemaField = "structured_outputs",
        chat_template_kwargs: Mapping[str, JsonValue] | None = None,
        score_token_ids: Sequence[int] | None = None,
        max_logprobs: int = 20,
        logprobs: bool = True,
        limits: ConnectionLimits | None = None,
        cache: JudgeCache | None = None,
        http_client_factory: HttpClientFactory | None = None,
    ) -> None:
        if base_url is None:
            raise ValueError("VLLMChatModel needs the server URL: base_url='http://localhost:8000/v1'")
        if schema_field not in ("structured_outputs", "response_format"):
            raise ValueError(
                f"schema_field must be 'structured_outputs' or 'response_format', got {schema_field!r}"
            )
        ids = tuple(score_token_ids) if score_token_ids is not None else ()
        if score_token_ids is not None and not 1 <= len(ids) <= MAX_LOGPROB_TOKEN_IDS:
            raise ValueError(f"score_token_ids needs 1 to {MAX_LOGPROB_TOKEN_IDS} token ids, got {len(ids)}")
        if any(isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in ids):
            raise ValueError(f"score_token_ids must be non-negative integer token ids, got {list(ids)}")
        if max_logprobs < 0:
            raise ValueError(f"max_logprobs must be >= 0, got {max_logprobs}")
        if len(ids) > max_logprobs:
            raise ValueError(
                f"score_token_ids has {len(ids)} ids but the server returns at most max_logprobs="
                f"{max_logprobs} per token; start vLLM with a larger --max-logprobs and pass max_logprobs"
            )
        policy = policy or ProviderPolicy()
        transport = VLLMTransport(
            model or "",
            base_url=normalize_base_url(base_url),
            api_key=vllm_api_key(api_key),
            structured_output=structured_output,
            max_connections=policy.limits.max_concurrency,
            schema_field=schema_field,
            chat_template_kwargs=chat_template_kwargs,
            score_token_ids=ids or None,
            max_logprobs=max_logprobs,
            http_client_factory=http_client_factory,
        )
        super().__init__(
            transport,
            policy=policy,
            sampling=sampling,
            capabilities=ModelCapabilities(
                structured_output=structured_output or "json_schema",
                logprobs=logprobs,
                max_top_logprobs=max_logprobs,
            ),
            cache=cache,
            limits=limits,
        )

    @property
    def base_url(self) -> str:
        """The server's OpenAI URL (without credentials)."""
        return self.transport.base_url

    @property
    def server_url(self) -> str:
        """The server root (``base_url`` without ``/v1``), where ``/classify`` and ``/pooling`` live."""
        return self.base_url.removesuffix("/v1")

    @property
    def server_info(self) -> VLLMServerInfo | None:
        """Filled by discovery (:meth:`from_server`, or the first call without ``model``)."""
        return self.transport.server_info

    @property
    def schema_field(self) -> SchemaField:
        return self.transport.schema_field

    @property
    def chat_template_kwargs(self) -> dict[str, JsonValue] | None:
        return self.transport.chat_template_kwargs

    @property
    def score_token_ids(self) -> tuple[int, ...] | None:
        return self.transport.score_token_ids

    @classmethod
    async def discover(
        cls,
        base_url: str,
        *,
        api_key: str | SecretStr | None = None,
        timeout_s: float = 10.0,
        http_client: httpx.AsyncClient | None = None,
    ) -> VLLMServerInfo:
        """The models a vLLM server serves (``GET {base_url}/models``).

        Raises:
            ChatModelError: The server could not be reached or answered badly
                (``retryable`` says whether trying again may help).
        """
        url = normalize_base_url(base_url)
        if http_client is not None:
            return await fetch_models(http_client, url, vllm_api_key(api_key), timeout_s)
        async with httpx.AsyncClient() as client:
            return await fetch_models(client, url, vllm_api_key(api_key), timeout_s)

    @classmethod
    async def from_server(
        cls,
        base_url: str,
        *,
        model: str | None = None,
        api_key: str | SecretStr | None = None,
        **kwargs: Any,
    ) -> VLLMChatModel:
        """A model for what the server serves: ``model`` if given (checked), else its first model.

        Other keyword arguments go to the constructor.

        Raises:
            ChatModelError: Discovery failed.
            ValueError: ``model`` is not served there (the message lists what is).
        """
        policy = kwargs.get("policy")
        timeout_s = policy.timeout_s if isinstance(policy, ProviderPolicy) else 10.0
        info = await cls.discover(base_url, api_key=api_key, timeout_s=timeout_s)
        if model is not None and info.card(model) is None:
            served = ", ".join(repr(c.id) for c in info.models)
            raise ValueError(f"vLLM at {info.base_url} does not serve {model!r}; it serves {served}")
        instance = cls(model or info.model, api_key=api_key, base_url=base_url, **kwargs)
        instance.transport.server_info = info
        return instance

    def __repr__(self) -> str:
        return f"VLLMChatModel(model={self.model_name!r}, base_url={self.base_url!r})"
