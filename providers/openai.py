"""OpenAI and any OpenAI-compatible server (vLLM, SGLang, llama.cpp, proxies)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import httpx
import openai
from pydantic import SecretStr

from openjudge.models.base_chat_model import BaseChatModel, ChatRequest
from openjudge.models.chat_model import (
    ChatResponse,
    ModelCapabilities,
    OutputSpec,
    Sampling,
    StructuredOutputMode,
)
from openjudge.models.errors import ChatModelError
from openjudge.models.loop_local import LoopLocal
from openjudge.models.policy import ProviderPolicy
from providers._errors import classify_exception
from providers.completion import parse_completion
from providers.structured import response_format_for

__all__ = ["OpenAIChatModel"]

HttpClientFactory = Callable[[], httpx.AsyncClient]


class _ClientShards:
    """Several SDK clients used in turn, each with a small connection pool.

    httpx's pool does work proportional to its open connections on every request; one
    pool holding 512 connections cost about 20 ms of CPU per request here. Spreading
    the same connections over pools of ``connections_per_client`` keeps that cost flat.
    """

    __slots__ = ("_clients", "_next")

    def __init__(self, clients: list[openai.AsyncOpenAI]) -> None:
        self._clients = clients
        self._next = 0

    def pick(self) -> openai.AsyncOpenAI:
        client = self._clients[self._next]
        self._next = (self._next + 1) % len(self._clients)
        return client

    async def aclose(self) -> None:
        for client in self._clients:
            await client.close()


class OpenAIChatModel(BaseChatModel):
    """A chat model served over the OpenAI chat-completions API.

    The SDK's own retries are off (``max_retries=0``): the core's bounded tenacity
    policy is the only retry layer. One client is created per running event loop.

    Args:
        model: Model name on the server.
        api_key: API key; defaults to ``OPENAI_API_KEY``. A custom ``base_url`` without a
            key (a local vLLM, say) sends ``"EMPTY"``.
        base_url: Server URL ending in ``/v1``; defaults to ``OPENAI_BASE_URL``, then OpenAI.
        temperature, top_p, max_tokens, seed: Default sampling for every call.
        timeout: Per-attempt timeout in seconds.
        max_retries: Retries after the first attempt (``None`` keeps the policy's).
        max_concurrency, rpm, tpm: Provider limits (see :class:`ProviderLimits`).
        structured_output: How to ask for JSON (``json_schema``, ``json_object`` or ``prompt``).
        extra_body: Extra request fields for every call (e.g. vLLM's ``chat_template_kwargs``).
        policy: A full policy; when given, ``timeout``/``max_retries``/limits are ignored.
        connections_per_client: Connections per pooled SDK client; the provider opens
            ``ceil(max_concurrency / connections_per_client)`` clients per event loop.
        http_client_factory: Builds each ``httpx.AsyncClient`` (tests inject transports).
    """

    # httpx enforces connect, read, write and pool timeouts of ``policy.timeout_s`` on every
    # request, so no extra timeout scope is needed around an attempt.
    guards_own_timeout = True

    def __init__(
        self,
        model: str,
        api_key: str | SecretStr | None = None,
        base_url: str | None = None,
        *,
        temperature: float | None = None,
        top_p: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        timeout: float = 60.0,
        max_retries: int | None = None,
        max_concurrency: int = 64,
        rpm: float | None = None,
        tpm: float | None = None,
        structured_output: StructuredOutputMode = "json_schema",
        logprobs: bool = True,
        extra_body: dict[str, Any] | None = None,
        organization: str | None = None,
        policy: ProviderPolicy | None = None,
        connections_per_client: int = 4,
        http_client_factory: HttpClientFactory | None = None,
    ) -> None:
        if connections_per_client < 1:
            raise ValueError(f"connections_per_client must be >= 1, got {connections_per_client}")
        if policy is None:
            policy = ProviderPolicy.from_options(
                timeout=timeout, max_retries=max_retries, max_concurrency=max_concurrency, rpm=rpm, tpm=tpm
            )
        super().__init__(
            model,
            policy=policy,
            sampling=Sampling(
                temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed, extra_body=extra_body
            ),
            capabilities=ModelCapabilities(structured_output=structured_output, logprobs=logprobs),
        )
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if key is None:
            if self.base_url is None:
                raise ValueError(
                    "OpenAIChatModel: no API key; pass api_key=... or set OPENAI_API_KEY "
                    "(for a local server also pass base_url=...)"
                )
            key = "EMPTY"
        self._api_key = key if isinstance(key, SecretStr) else SecretStr(key)
        self._organization = organization
        self._http_client_factory = http_client_factory
        self._connections_per_client = connections_per_client
        self._clients: LoopLocal[_ClientShards] = LoopLocal(self._new_clients)
        self._where = f"{self.base_url or 'api.openai.com'} model {model!r}"

    @property
    def cache_identity(self) -> str:
        return f"openai:{self.base_url or 'api.openai.com'}:{self.model}"

    def _new_clients(self) -> _ClientShards:
        per_client = self._connections_per_client
        count = max(1, math.ceil(self.policy.limits.max_concurrency / per_client))
        return _ClientShards([self._new_client(per_client) for _ in range(count)])

    def _new_client(self, connections: int) -> openai.AsyncOpenAI:
        http_client = (
            self._http_client_factory()
            if self._http_client_factory is not None
            else openai.DefaultAsyncHttpxClient(
                # No cap here: the provider's concurrency limit already bounds what is in flight.
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=connections),
            )
        )
        return openai.AsyncOpenAI(
            api_key=self._api_key.get_secret_value(),
            base_url=self.base_url,
            organization=self._organization,
            max_retries=0,
            timeout=httpx.Timeout(self.policy.timeout_s),
            http_client=http_client,
        )

    def _request_params(self, request: ChatRequest) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.model, "messages": request.messages}
        s = request.sampling
        if s.temperature is not None:
            params["temperature"] = s.temperature
        if s.top_p is not None:
            params["top_p"] = s.top_p
        if s.max_tokens is not None:
            params["max_tokens"] = s.max_tokens
        if s.seed is not None:
            params["seed"] = s.seed
        if s.stop:
            params["stop"] = list(s.stop)
        if request.top_logprobs:
            params["logprobs"] = True
            params["top_logprobs"] = request.top_logprobs
        if request.output is not None:
            params["response_format"] = self._response_format(request.output)
        if s.extra_body:
            params.update(s.extra_body)  # provider-specific fields travel at the top level
        return params

    def _response_format(self, output: OutputSpec) -> dict[str, Any]:
        return response_format_for(output, self.capabilities.structured_output)

    async def _attempt(self, request: ChatRequest) -> ChatResponse:
        client = self._clients.get().pick()
        try:
            # The SDK's typed create() re-walks every parameter (the JSON schema included) and
            # builds pydantic models for the reply: most of its CPU per call. The body here is
            # already in wire form, so post it and read the reply ourselves; auth, base URL and
            # the status-error mapping stay the SDK's.
            raw = await client.post(
                "/chat/completions", cast_to=httpx.Response, body=self._request_params(request)
            )
            data = raw.json()
        except openai.OpenAIError as exc:
            raise classify_exception(exc, where=self._where) from exc
        except ValueError as exc:
            raise ChatModelError(f"{self._where}: the response is not JSON ({exc})", retryable=True) from None
        return parse_completion(data, where=self._where, model=self.model)

    async def aclose(self) -> None:
        """Close the clients of the running loop (others close with their loops)."""
        await self._clients.get().aclose()
