"""Every litellm route as a chat model: ``openai/``, ``hosted_vllm/``, ``azure/``, ``anthropic/``, ...

litellm is optional (``pip install 'openjudge-graders[litellm]'``) and imported only when a
model is built: the import costs seconds, and it would fetch a cost map over the
network unless ``LITELLM_LOCAL_MODEL_COST_MAP`` is set, which :func:`load_litellm`
does first. litellm's own retry layers are off on every call (``num_retries=0,
max_retries=0``; litellm caches SDK clients by their arguments, so they are always
the same): the core's bounded policy is the only retry loop.

litellm is asyncio-only; the model reports a clear error under other backends.
litellm owns its HTTP clients (cached per event loop); this model does not close them.

Keys: without ``api_key``, litellm reads the route's usual variable (``OPENAI_API_KEY``,
``ANTHROPIC_API_KEY``, ...) only when no ``base_url`` is given. A server named by
``base_url`` gets the ``api_key`` given with it, or the placeholder ``"EMPTY"`` (the
SDKs under litellm refuse to send no key), never a key from the environment.
"""

from __future__ import annotations

import asyncio
import difflib
import importlib
import logging
import os
import urllib.parse
from collections.abc import Mapping
from types import ModuleType
from typing import Any, ClassVar

from pydantic import SecretStr

from openjudge.models._errors import ChatModelError
from openjudge.models._limits import ConnectionLimits
from openjudge.models._secrets import as_secret, fingerprint, redact, safe_url
from openjudge.models.cache import JudgeCache
from openjudge.models.chat_client import ChatClient
from openjudge.models.chat_model import (
    ChatRequest,
    ChatResponse,
    ModelCapabilities,
    Sampling,
    StructuredOutputMode,
)
from openjudge.models.policy import ProviderPolicy
from openjudge.providers import _json
from openjudge.providers._completion import add_sampling_fields, parse_completion
from openjudge.providers._litellm_errors import classify_litellm_exception, with_message
from openjudge.providers._negotiation import (
    FOUND_PER_SERVER,
    MODES,
    StructuredOutputChoice,
    StructuredOutputNegotiation,
)
from openjudge.providers._structured import response_format_for

__all__ = [
    "LITELLM_EXTRA_HINT",
    "LiteLLMChatModel",
    "LiteLLMTransport",
    "load_litellm",
    "read_model_response",
]

logger = logging.getLogger(__name__)

LITELLM_EXTRA_HINT = "pip install 'openjudge-graders[litellm]'"
_ROUTE_EXAMPLES = (
    "'openai/gpt-4o-mini', 'hosted_vllm/Qwen/Qwen3-8B', 'azure/<deployment>', 'anthropic/<model>'"
)


def load_litellm() -> ModuleType:
    """Import litellm (once) without letting it reach the network at import.

    Raises:
        ImportError: litellm is not installed; the message names the extra.
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        module = importlib.import_module("litellm")
    except ImportError as exc:
        raise ImportError(f"the litellm provider needs litellm: {LITELLM_EXTRA_HINT}") from exc
    # litellm prints "Give Feedback / Get Help" banners to stdout on every error; a library
    # must not write to stdout, and the error itself reaches the caller as a ChatModelError.
    module.suppress_debug_info = True  # type: ignore[attr-defined]  # a module global of litellm
    return module


_NO_KEY = "EMPTY"
# Request arguments that do not change the reply (or are secret): left out of cache keys.
_NOT_IN_KEY = frozenset({"api_key", "timeout", "num_retries", "max_retries", "extra_headers"})


def _is_openai(url: str) -> bool:
    return urllib.parse.urlsplit(url).hostname == "api.openai.com"


def _route_of(litellm: ModuleType, model: str, api_base: str | None) -> str:
    """The litellm provider serving ``model``, or a ValueError that says how to fix it."""
    try:
        _name, provider, _key, _base = litellm.get_llm_provider(model=model, api_base=api_base)
    except Exception as exc:
        known = sorted(str(getattr(p, "value", p)) for p in litellm.provider_list)
        prefix = model.split("/", 1)[0]
        close = difflib.get_close_matches(prefix, known, n=3)
        hint = f" Did you mean {', '.join(repr(c + '/') for c in close)}?" if close else ""
        raise ValueError(
            f"litellm cannot route model {model!r} ({type(exc).__name__}).{hint} "
            f"Write the route first, e.g. {_ROUTE_EXAMPLES}."
        ) from None
    return str(provider)


def read_model_response(response: object, *, where: str, model: str) -> ChatResponse:
    """Our :class:`ChatResponse` for what ``litellm.acompletion`` returned.

    litellm's return type is ``Any`` to mypy; the reply is dumped to plain JSON data and
    read by the same strict reader as the OpenAI provider's. litellm keeps ``refusal``
    under ``provider_specific_fields``; it is lifted back so refusals are reported.
    """
    dump = getattr(response, "model_dump", None)
    data = dump(warnings=False) if callable(dump) else None
    if not isinstance(data, dict):
        raise ChatModelError(
            f"{where}: litellm returned {type(response).__name__}, not a chat completion",
            error_type="MalformedResponse",
        )
    choices = data.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict) and not message.get("refusal"):
            extra = message.get("provider_specific_fields")
            refusal = extra.get("refusal") if isinstance(extra, dict) else None
            if isinstance(refusal, str) and refusal:
                message["refusal"] = refusal
    return parse_completion(data, where=where, model=model)


class LiteLLMTransport:
    """One ``litellm.acompletion`` call per attempt.

    litellm enforces ``timeout`` on its HTTP request; the engine also wraps each attempt
    in a timeout scope, as litellm's own work around the request is not bounded by it.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: SecretStr | None,
        api_base: str | None,
        api_version: str | None,
        structured_output: StructuredOutputMode | None,
        extra_headers: Mapping[str, str] | None,
        drop_params: bool,
    ) -> None:
        self._model_name = model
        self.api_base = api_base.rstrip("/") if api_base else None
        self.api_version = api_version
        if api_key is None and self.api_base is not None and not _is_openai(self.api_base):
            api_key = SecretStr(_NO_KEY)  # never let litellm send an environment key to a named server
        self._api_key = api_key
        self._extra_headers = dict(extra_headers) if extra_headers else None
        self._drop_params = drop_params
        self._litellm = load_litellm()
        self.route = _route_of(self._litellm, model, self.api_base)
        """The litellm provider name (``openai``, ``hosted_vllm``, ``azure``, ...)."""
        shown = safe_url(self.api_base)
        self._where = f"litellm {model!r}" + (f" at {shown}" if shown else "")
        self._endpoint = f"litellm:{self.route}" + (f"@{shown}" if shown else "")
        key = api_key.get_secret_value() if api_key is not None else None
        self._secrets = tuple(s for s in (key, *(self._extra_headers or {}).values()) if s and s != _NO_KEY)
        self._connection_key = f"{self._endpoint}|{model}|{fingerprint(key)}"
        self._structured = StructuredOutputNegotiation(
            structured_output, key=lambda: f"{self._endpoint}|{self._model_name}", where=lambda: self._where
        )

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def endpoint(self) -> str:
        return self._endpoint

    @property
    def connection_key(self) -> str:
        return self._connection_key

    @property
    def structured_output(self) -> StructuredOutputMode | None:
        """The mode as set (``None``: found per server on first use)."""
        return self._structured.setting

    @property
    def structured_output_choice(self) -> StructuredOutputChoice | None:
        """The mode in use at this endpoint and how it was chosen (``None`` until a call found it)."""
        return self._structured.choice

    @property
    def enforces_timeout(self) -> bool:
        return False

    @property
    def where(self) -> str:
        return self._where

    def kwargs(
        self, request: ChatRequest, timeout_s: float, mode: StructuredOutputMode | None = None
    ) -> dict[str, Any]:
        """The arguments of ``litellm.acompletion`` for one attempt, asking for JSON in ``mode``
        (default: the mode in use now)."""
        mode = mode or self._structured.mode()
        kwargs: dict[str, Any] = {
            "model": self._model_name,
            "messages": [dict(m) for m in request.messages],  # litellm may edit them in place
            "timeout": timeout_s,
            # Both layers off, always with the same values: litellm caches SDK clients per
            # argument set, and a cached client built with retries would keep retrying.
            "num_retries": 0,
            "max_retries": 0,
            "drop_params": self._drop_params,
        }
        if self.api_base is not None:
            kwargs["api_base"] = self.api_base
        if self._api_key is not None:
            kwargs["api_key"] = self._api_key.get_secret_value()
        if self.api_version is not None:
            kwargs["api_version"] = self.api_version
        add_sampling_fields(kwargs, request)
        if request.output is not None and mode != "prompt":
            kwargs["response_format"] = response_format_for(request.output, mode)
        extra_body = request.sampling.extra_body
        if extra_body:
            kwargs["extra_body"] = dict(extra_body)
        if self._extra_headers:
            kwargs["extra_headers"] = dict(self._extra_headers)
        return kwargs

    def wire_body(self, request: ChatRequest) -> bytes | None:
        # litellm builds the HTTP body itself; its arguments decide it, secrets and timeouts aside.
        found_per_server = request.output is not None and self._structured.setting is None
        kwargs = self.kwargs(request, 0.0, MODES[0] if found_per_server else None)
        body = {k: v for k, v in kwargs.items() if k not in _NOT_IN_KEY}
        if found_per_server:  # the key must not depend on what the server was found to take
            body[FOUND_PER_SERVER] = True
        return _json.dumps(body)

    async def attempt(self, request: ChatRequest, timeout_s: float) -> ChatResponse:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise ChatModelError(
                f"{self._where}: litellm runs only on asyncio; use the asyncio backend "
                "(or OpenAIChatModel for an OpenAI-compatible server under trio)",
                error_type="UnsupportedBackend",
            ) from None
        if request.output is None:
            return await self._send(request, timeout_s, "prompt")
        return await self._structured.send(lambda mode: self._send(request, timeout_s, mode))

    async def _send(self, request: ChatRequest, timeout_s: float, mode: StructuredOutputMode) -> ChatResponse:
        try:
            response = await self._litellm.acompletion(**self.kwargs(request, timeout_s, mode))
        except Exception as exc:
            error = self.classify(exc)
            logger.debug("%s failed: %s", self._where, error.message)
            raise error from None
        return read_model_response(response, where=self._where, model=self._model_name)

    def classify(self, exc: Exception) -> ChatModelError:
        """Our error for a litellm exception, with every secret removed from its message."""
        error = classify_litellm_exception(exc, where=self._where)
        return with_message(error, redact(error.message, self._secrets))

    async def aclose(self) -> None:
        """litellm owns its clients (cached per loop); nothing to close here."""


class LiteLLMChatModel(ChatClient):
    """A chat model reached through ``litellm.acompletion``.

    Args:
        model: A litellm route and model, e.g. ``"hosted_vllm/Qwen/Qwen3-8B"``.
        api_key: Key for the route. Without one, litellm reads the route's usual
            environment variable, unless a ``base_url`` is given (then no key is sent).
        base_url: Server URL (an alias of ``api_base``; config files pass ``base_url``).
        api_base: Server URL, e.g. ``http://host:8000/v1`` for vLLM.
        api_version: API version (Azure).
        sampling: Default sampling for every call (``extra_body`` is merged by litellm).
        policy: Timeouts, retries and limits.
        structured_output: How to ask for JSON (``json_schema``, ``json_object`` or ``prompt``);
            unset, the first call finds what the route takes.
        logprobs: Whether the route returns token logprobs.
        extra_headers: Extra HTTP headers for every call (their values are treated as secrets).
        drop_params: Let litellm drop sampling fields a route does not support (e.g.
            ``seed`` on ``anthropic/``) instead of failing every call with a 400.
        limits, cache: As for :class:`~openjudge.providers.openai.OpenAIChatModel`.

    Raises:
        ImportError: litellm is not installed (the message names the extra).
        ValueError: litellm cannot route ``model``, or ``base_url`` and ``api_base`` differ.
    """

    transport: LiteLLMTransport
    transport_type: ClassVar[type[LiteLLMTransport]] = LiteLLMTransport
    """The transport this model builds (subclasses refine error messages, e.g. Azure's 404)."""

    def __init__(
        self,
        model: str,
        api_key: str | SecretStr | None = None,
        base_url: str | None = None,
        *,
        api_base: str | None = None,
        api_version: str | None = None,
        sampling: Sampling | None = None,
        policy: ProviderPolicy | None = None,
        structured_output: StructuredOutputMode | None = None,
        logprobs: bool = True,
        extra_headers: Mapping[str, str] | None = None,
        drop_params: bool = True,
        limits: ConnectionLimits | None = None,
        cache: JudgeCache | None = None,
    ) -> None:
        if not model:
            raise ValueError("model must be a non-empty litellm route and model, e.g. 'openai/gpt-4o-mini'")
        if base_url is not None and api_base is not None and base_url != api_base:
            raise ValueError(
                f"base_url={safe_url(base_url)!r} and api_base={safe_url(api_base)!r} differ; pass only one"
            )
        transport = self.transport_type(
            model,
            api_key=as_secret(api_key),
            api_base=api_base or base_url,
            api_version=api_version,
            structured_output=structured_output,
            extra_headers=extra_headers,
            drop_params=drop_params,
        )
        super().__init__(
            transport,
            policy=policy,
            sampling=sampling,
            capabilities=ModelCapabilities(
                structured_output=structured_output or "json_schema", logprobs=logprobs
            ),
            cache=cache,
            limits=limits,
        )

    @property
    def api_base(self) -> str | None:
        return self.transport.api_base

    @property
    def api_version(self) -> str | None:
        return self.transport.api_version

    @property
    def route(self) -> str:
        """The litellm provider name (``openai``, ``hosted_vllm``, ``azure``, ...)."""
        return self.transport.route

    def __repr__(self) -> str:
        base = f", api_base={safe_url(self.api_base)!r}" if self.api_base else ""
        return f"{type(self).__name__}(model={self.model_name!r}{base})"
