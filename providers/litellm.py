"""Every litellm route as a chat model: ``openai/``, ``hosted_vllm/``, ``azure/``, ``anthropic/``, ...

litellm is optional (``pip install 'openjudge-graders[litellm]'``) and imported only when a
model is built: the import costs seconds, and it would fetch a cost map over the
network unless ``LITELLM_LOCAL_MODEL_COST_MAP`` is set, which :func:`load_litellm`
does first. litellm's own retry layers are off on every call (``num_retries=0,
max_retries=0``; litellm caches SDK clients by their arguments, so they are always
the same): the core's bounded policy is the only retry loop.

litellm is asyncio-only; the model reports a clear error under other backends.
litellm owns its HTTP clients (cached per event loop); this model does not close them.
"""

from __future__ import annotations

import asyncio
import difflib
import importlib
import logging
import os
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from pydantic import SecretStr

from openjudge.models.base_chat_model import BaseChatModel, ChatRequest
from openjudge.models.chat_model import ChatResponse, ModelCapabilities, Sampling, StructuredOutputMode
from openjudge.models.errors import ChatModelError
from openjudge.models.policy import ProviderPolicy
from providers._litellm_errors import classify_litellm_exception, redact
from providers.completion import parse_completion
from providers.structured import response_format_for

__all__ = ["LITELLM_EXTRA_HINT", "LiteLLMChatModel", "load_litellm", "read_model_response"]

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


def _secret(value: str | SecretStr | None) -> SecretStr | None:
    if value is None or isinstance(value, SecretStr):
        return value
    return SecretStr(value)


class LiteLLMChatModel(BaseChatModel):
    """A chat model reached through ``litellm.acompletion``.

    Args:
        model: A litellm route and model, e.g. ``"hosted_vllm/Qwen/Qwen3-8B"``.
        api_key: Key for the route; ``None`` lets litellm read the route's usual
            environment variable (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ...).
        base_url: Server URL (an alias of ``api_base``; config files pass ``base_url``).
        api_base: Server URL, e.g. ``http://host:8000/v1`` for vLLM.
        api_version: API version (Azure).
        temperature, top_p, max_tokens, seed: Default sampling for every call.
        timeout: Per-attempt timeout in seconds.
        max_retries: Retries after the first attempt (``None`` keeps the policy's).
        max_concurrency, rpm, tpm: Provider limits (see :class:`ProviderLimits`).
        structured_output: How to ask for JSON (``json_schema``, ``json_object`` or ``prompt``).
        logprobs: Whether the route returns token logprobs.
        extra_body: Extra request fields for every call (merged into the body by litellm).
        extra_headers: Extra HTTP headers for every call.
        drop_params: Let litellm drop sampling fields a route does not support (e.g.
            ``seed`` on ``anthropic/``) instead of failing every call with a 400.
        policy: A full policy; when given, ``timeout``/``max_retries``/limits are ignored.

    Raises:
        ImportError: litellm is not installed (the message names the extra).
        ValueError: litellm cannot route ``model``, or ``base_url`` and ``api_base`` differ.
    """

    def __init__(
        self,
        model: str,
        api_key: str | SecretStr | None = None,
        base_url: str | None = None,
        *,
        api_base: str | None = None,
        api_version: str | None = None,
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
        extra_headers: Mapping[str, str] | None = None,
        drop_params: bool = True,
        policy: ProviderPolicy | None = None,
    ) -> None:
        if base_url is not None and api_base is not None and base_url != api_base:
            raise ValueError(f"base_url={base_url!r} and api_base={api_base!r} differ; pass only one")
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
        base = api_base or base_url
        self.api_base: str | None = base.rstrip("/") if base else None
        self.api_version = api_version
        self._api_key = _secret(api_key)
        self._extra_headers = dict(extra_headers) if extra_headers else None
        self._drop_params = drop_params
        self._litellm = load_litellm()
        self.route = _route_of(self._litellm, model, self.api_base)
        """The litellm provider name (``openai``, ``hosted_vllm``, ``azure``, ...)."""
        self._where = f"litellm {model!r}" + (f" at {self.api_base}" if self.api_base else "")

    def _request_kwargs(self, request: ChatRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in request.messages],  # litellm may edit them in place
            "timeout": self.policy.timeout_s,
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
        s = request.sampling
        if s.temperature is not None:
            kwargs["temperature"] = s.temperature
        if s.top_p is not None:
            kwargs["top_p"] = s.top_p
        if s.max_tokens is not None:
            kwargs["max_tokens"] = s.max_tokens
        if s.seed is not None:
            kwargs["seed"] = s.seed
        if s.stop:
            kwargs["stop"] = list(s.stop)
        if request.top_logprobs:
            kwargs["logprobs"] = True
            kwargs["top_logprobs"] = request.top_logprobs
        if request.output is not None:
            kwargs["response_format"] = response_format_for(
                request.output, self.capabilities.structured_output
            )
        if s.extra_body:
            kwargs["extra_body"] = dict(s.extra_body)
        if self._extra_headers:
            kwargs["extra_headers"] = dict(self._extra_headers)
        return kwargs

    async def _attempt(self, request: ChatRequest) -> ChatResponse:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise ChatModelError(
                f"{self._where}: litellm runs only on asyncio; use the asyncio backend "
                "(or OpenAIChatModel for an OpenAI-compatible server under trio)",
                error_type="UnsupportedBackend",
            ) from None
        try:
            response = await self._litellm.acompletion(**self._request_kwargs(request))
        except Exception as exc:
            error = self._classify(exc)
            logger.debug("%s failed: %s", self._where, error.message)
            raise error from exc
        return read_model_response(response, where=self._where, model=self.model)

    def _classify(self, exc: Exception) -> ChatModelError:
        """Our error for a litellm exception (subclasses refine messages, e.g. Azure's 404)."""
        return redact(classify_litellm_exception(exc, where=self._where), self._secrets())

    def _secrets(self) -> tuple[str, ...]:
        return (self._api_key.get_secret_value(),) if self._api_key is not None else ()

    def __repr__(self) -> str:
        base = f", api_base={self.api_base!r}" if self.api_base else ""
        return f"{type(self).__name__}(model={self.model!r}{base})"
