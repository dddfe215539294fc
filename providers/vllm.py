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
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import anyio
import httpx
from pydantic import BaseModel, ConfigDict, JsonValue, SecretStr

from openjudge.models.base_chat_model import ChatRequest
from openjudge.models.chat_model import ChatResponse, ModelCapabilities, OutputSpec, StructuredOutputMode
from openjudge.models.errors import ChatModelError, is_retryable_status
from openjudge.models.loop_local import LoopLocal
from openjudge.models.policy import ProviderPolicy
from providers.openai import HttpClientFactory, OpenAIChatModel
from providers.structured import strict_schema

__all__ = ["MAX_LOGPROB_TOKEN_IDS", "VLLMChatModel", "VLLMModelCard", "VLLMServerInfo", "normalize_base_url"]

MAX_LOGPROB_TOKEN_IDS = 128
"""vLLM's cap on ``logprob_token_ids`` per request."""

SchemaField = Literal["structured_outputs", "response_format"]


class VLLMModelCard(BaseModel):
    """One entry of ``GET /v1/models``.

    Attributes:
        id: The name to send as ``model`` (``--served-model-name``).
        root: The weights it serves (for a LoRA adapter, the adapter path).
        parent: The base model of a LoRA adapter.
        max_model_len: Context length in tokens, prompt and completion together.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    root: str | None = None
    parent: str | None = None
    max_model_len: int | None = None


class VLLMServerInfo(BaseModel):
    """What a vLLM server serves, as discovered from ``GET /v1/models``.

    Attributes:
        base_url: The server's OpenAI base URL (ending in ``/v1``).
        models: Every served model; vLLM lists base models before LoRA adapters.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str
    models: tuple[VLLMModelCard, ...]

    @property
    def model(self) -> str:
        """The default model: the first served one."""
        return self.models[0].id

    @property
    def max_model_len(self) -> int | None:
        """The default model's context length."""
        return self.models[0].max_model_len

    def card(self, model: str) -> VLLMModelCard | None:
        return next((c for c in self.models if c.id == model), None)


def normalize_base_url(base_url: str) -> str:
    """``base_url`` without a trailing slash; a bare server root gets ``/v1``."""
    url = base_url.strip().rstrip("/")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(
            f"vLLM base_url {base_url!r} must be an http(s) URL, e.g. 'http://localhost:8000/v1'"
        )
    return url if parts.path else f"{url}/v1"


def _read_models(data: object, base_url: str) -> VLLMServerInfo:
    entries = data.get("data") if isinstance(data, Mapping) else None
    if not isinstance(entries, list):
        raise ChatModelError(
            f"vLLM at {base_url}: GET /models did not return a model list", error_type="MalformedResponse"
        )
    cards: list[VLLMModelCard] = []
    for entry in entries:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("id"), str):
            continue
        length = entry.get("max_model_len")
        cards.append(
            VLLMModelCard(
                id=entry["id"],
                root=entry["root"] if isinstance(entry.get("root"), str) else None,
                parent=entry["parent"] if isinstance(entry.get("parent"), str) else None,
                max_model_len=length if isinstance(length, int) and not isinstance(length, bool) else None,
            )
        )
    if not cards:
        raise ChatModelError(f"vLLM at {base_url}: the server serves no models", error_type="NoModels")
    return VLLMServerInfo(base_url=base_url, models=tuple(cards))


async def _fetch_models(
    client: httpx.AsyncClient, base_url: str, api_key: SecretStr | None, timeout_s: float
) -> VLLMServerInfo:
    headers = {"authorization": f"Bearer {api_key.get_secret_value()}"} if api_key is not None else {}
    where = f"vLLM at {base_url}"
    try:
        response = await client.get(f"{base_url}/models", headers=headers, timeout=timeout_s)
    except httpx.TimeoutException:
        raise ChatModelError(
            f"{where}: GET /models timed out", kind="timeout", retryable=True, error_type="Timeout"
        ) from None
    except httpx.TransportError as exc:
        raise ChatModelError(
            f"{where}: connection failed: {exc}", retryable=True, error_type=type(exc).__name__
        ) from None
    if response.status_code != 200:
        raise ChatModelError(
            f"{where}: GET /models returned HTTP {response.status_code}",
            retryable=is_retryable_status(response.status_code),
            status_code=response.status_code,
            error_type="HTTPStatusError",
        )
    try:
        data = response.json()
    except ValueError:
        raise ChatModelError(f"{where}: GET /models is not JSON", error_type="MalformedResponse") from None
    return _read_models(data, base_url)


@functools.lru_cache(maxsize=256)
def _structured_outputs(output: OutputSpec) -> dict[str, Any]:
    return {"json": strict_schema(output.schema)}


def _key(api_key: str | SecretStr | None) -> SecretStr:
    if api_key is None:
        # Never fall back to OPENAI_API_KEY: that key must not be sent to a self-hosted server.
        api_key = os.environ.get("VLLM_API_KEY") or "EMPTY"
    return api_key if isinstance(api_key, SecretStr) else SecretStr(api_key)


class VLLMChatModel(OpenAIChatModel):
    """A model served by ``vllm serve`` (OpenAI-compatible, plus vLLM's request fields).

    Args:
        model: The served model name; ``None`` discovers it on the first call (the first
            model of ``GET /v1/models``).
        api_key: The server's ``--api-key``; defaults to ``VLLM_API_KEY``, else ``"EMPTY"``.
        base_url: The server's OpenAI URL, e.g. ``http://localhost:8000/v1`` (a bare root
            gets ``/v1``).
        structured_output: The JSON strength to ask for (``json_schema`` by default).
        schema_field: Where a JSON schema goes: vLLM's ``structured_outputs`` field
            (``{"json": schema}``) or the standard ``response_format``.
        chat_template_kwargs: Sent with every request, e.g. ``{"enable_thinking": False}``
            for Qwen3 judges (``extra_body`` may override it).
        score_token_ids: Vocabulary ids of the score tokens (e.g. the ids of "1".."5"):
            when logprobs are requested, the server returns exactly these.
        max_logprobs: The server's ``--max-logprobs`` (top_logprobs is capped to it).
        Others: as :class:`~providers.openai.OpenAIChatModel`.
    """

    def __init__(
        self,
        model: str | None = None,
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
        schema_field: SchemaField = "structured_outputs",
        chat_template_kwargs: Mapping[str, JsonValue] | None = None,
        score_token_ids: Sequence[int] | None = None,
        max_logprobs: int = 20,
        logprobs: bool = True,
        extra_body: dict[str, Any] | None = None,
        policy: ProviderPolicy | None = None,
        connections_per_client: int = 4,
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
        super().__init__(
            model or "(discovered on first call)",
            api_key=_key(api_key),
            base_url=normalize_base_url(base_url),
            temperature=temperature,
            top_p=top_p,
            max_tokens=max_tokens,
            seed=seed,
            timeout=timeout,
            max_retries=max_retries,
            max_concurrency=max_concurrency,
            rpm=rpm,
            tpm=tpm,
            structured_output=structured_output,
            logprobs=logprobs,
            extra_body=extra_body,
            policy=policy,
            connections_per_client=connections_per_client,
            http_client_factory=http_client_factory,
        )
        self._capabilities = ModelCapabilities(
            structured_output=structured_output, logprobs=logprobs, max_top_logprobs=max_logprobs
        )
        self.schema_field: SchemaField = schema_field
        self.chat_template_kwargs = dict(chat_template_kwargs) if chat_template_kwargs else None
        self.score_token_ids = ids or None
        self.server_info: VLLMServerInfo | None = None
        """Filled by discovery (:meth:`from_server`, or the first call without ``model``)."""
        self._discovery_locks: LoopLocal[anyio.Lock] = LoopLocal(anyio.Lock)
        if model is None:
            self._model = ""

    @property
    def server_url(self) -> str:
        """The server root (``base_url`` without ``/v1``), where ``/classify`` and ``/pooling`` live."""
        return str(self.base_url).removesuffix("/v1")

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
            return await _fetch_models(http_client, url, _key(api_key), timeout_s)
        async with httpx.AsyncClient() as client:
            return await _fetch_models(client, url, _key(api_key), timeout_s)

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
        info = await cls.discover(base_url, api_key=api_key, timeout_s=float(kwargs.get("timeout", 10.0)))
        if model is not None and info.card(model) is None:
            served = ", ".join(repr(c.id) for c in info.models)
            raise ValueError(f"vLLM at {info.base_url} does not serve {model!r}; it serves {served}")
        instance = cls(model or info.model, api_key=api_key, base_url=base_url, **kwargs)
        instance.server_info = info
        return instance

    async def _ensure_model(self) -> None:
        async with self._discovery_locks.get():
            if self._model:
                return
            factory = self._http_client_factory
            client = factory() if factory is not None else httpx.AsyncClient()
            async with client:
                info = await _fetch_models(client, str(self.base_url), self._api_key, self.policy.timeout_s)
            self.server_info = info
            self._model = info.model
            self._where = f"{self.base_url} model {info.model!r}"

    async def _attempt(self, request: ChatRequest) -> ChatResponse:
        if not self._model:
            await self._ensure_model()
        return await super()._attempt(request)

    def _request_params(self, request: ChatRequest) -> dict[str, Any]:
        params = super()._request_params(request)
        if (
            request.output is not None
            and self.schema_field == "structured_outputs"
            and self.capabilities.structured_output == "json_schema"
        ):
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
                params["top_logprobs"] = min(request.top_logprobs, self.capabilities.max_top_logprobs)
        return params

    def __repr__(self) -> str:
        return f"VLLMChatModel(model={self._model!r}, base_url={self.base_url!r})"
