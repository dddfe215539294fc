"""OpenAI and any OpenAI-compatible server (vLLM, SGLang, llama.cpp, proxies)."""

from __future__ import annotations

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
    TokenLogprob,
)
from openjudge.models.errors import ChatModelError
from openjudge.models.loop_local import LoopLocal
from openjudge.models.policy import ProviderLimits, ProviderPolicy, RetryPolicy
from openjudge.models.usage import TokenUsage
from providers._errors import classify_exception
from providers.structured import response_format_for

__all__ = ["OpenAIChatModel"]

HttpClientFactory = Callable[[], httpx.AsyncClient]


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
        http_client_factory: Builds the ``httpx.AsyncClient`` per event loop (tests inject transports).
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
        http_client_factory: HttpClientFactory | None = None,
    ) -> None:
        if policy is None:
            retry = RetryPolicy() if max_retries is None else RetryPolicy(max_attempts=max_retries + 1)
            policy = ProviderPolicy(
                timeout_s=timeout,
                retry=retry,
                limits=ProviderLimits(max_concurrency=max_concurrency, rpm=rpm, tpm=tpm),
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
        self._clients: LoopLocal[openai.AsyncOpenAI] = LoopLocal(self._new_client)
        self._where = f"{self.base_url or 'api.openai.com'} model {model!r}"

    def _new_client(self) -> openai.AsyncOpenAI:
        limit = max(self.policy.limits.max_concurrency, 100)
        http_client = (
            self._http_client_factory()
            if self._http_client_factory is not None
            else openai.DefaultAsyncHttpxClient(
                limits=httpx.Limits(max_connections=limit, max_keepalive_connections=limit),
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
            params["extra_body"] = dict(s.extra_body)
        return params

    def _response_format(self, output: OutputSpec) -> dict[str, Any]:
        return response_format_for(output, self.capabilities.structured_output)

    async def _attempt(self, request: ChatRequest) -> ChatResponse:
        client = self._clients.get()
        try:
            completion = await client.chat.completions.create(**self._request_params(request))
        except openai.OpenAIError as exc:
            raise classify_exception(exc, where=self._where) from exc
        if not completion.choices:
            raise ChatModelError(f"{self._where}: the response has no choices", retryable=True)
        choice = completion.choices[0]
        message = choice.message
        if message.refusal:
            raise ChatModelError(f"{self._where}: the model refused: {message.refusal}", kind="refused")
        logprobs: tuple[TokenLogprob, ...] = ()
        if choice.logprobs is not None and choice.logprobs.content:
            logprobs = tuple(
                TokenLogprob(
                    token=t.token,
                    logprob=t.logprob,
                    top=tuple((alt.token, alt.logprob) for alt in t.top_logprobs),
                )
                for t in choice.logprobs.content
            )
        usage = completion.usage
        return ChatResponse(
            content=message.content or "",
            usage=TokenUsage(
                prompt_tokens=usage.prompt_tokens if usage else 0,
                completion_tokens=usage.completion_tokens if usage else 0,
                requests=1,
            ),
            finish_reason=choice.finish_reason,
            logprobs=logprobs,
            model=completion.model,
        )

    async def aclose(self) -> None:
        """Close the client of the running loop (others close with their loops)."""
        await self._clients.get().close()
