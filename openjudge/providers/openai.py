"""OpenAI and any OpenAI-compatible server (vLLM, SGLang, llama.cpp, proxies).

:class:`OpenAIChatModel` is the face OpenJudge's guide uses: it keeps the flat keywords of
OpenJudge's ``OpenAIChatModel`` (``temperature=``, ``max_concurrency=``, ...) and also
takes ``sampling=`` and ``policy=`` objects. It composes an
:class:`~openjudge.providers._openai_compatible.OpenAICompatibleTransport` with the core's engine.

Keys: ``OPENAI_API_KEY`` is sent only to OpenAI's own endpoint, or to the
``OPENAI_BASE_URL`` the same environment names. A ``base_url`` passed explicitly
gets only the ``api_key`` passed with it, or no key at all.
"""

from __future__ import annotations

import os
import urllib.parse
from typing import Any

from pydantic import SecretStr

from openjudge.models._limits import ConnectionLimits
from openjudge.models._secrets import as_secret
from openjudge.models.cache import JudgeCache
from openjudge.models.chat_client import ChatClient
from openjudge.models.chat_model import ModelCapabilities, Sampling, StructuredOutputMode
from openjudge.models.policy import ProviderLimits, ProviderPolicy, RetryPolicy
from openjudge.providers._http import HttpClientFactory
from openjudge.providers._openai_compatible import OpenAICompatibleTransport

__all__ = ["OPENAI_BASE_URL", "OpenAIChatModel", "flat_policy", "flat_sampling"]

OPENAI_BASE_URL = "https://api.openai.com/v1"


def _is_openai(url: str) -> bool:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme == "https" and parts.hostname == "api.openai.com"


def flat_sampling(
    sampling: Sampling | None, *, where: str, extra_body: dict[str, Any] | None = None, **flat: Any
) -> Sampling:
    """``sampling``, or the one the flat keywords describe; giving both is an error."""
    given = {k: v for k, v in flat.items() if v is not None}
    if sampling is not None:
        if given or extra_body:
            raise ValueError(f"{where}: pass either sampling=Sampling(...) or {', '.join(given)}, not both")
        return sampling
    return Sampling(**given, extra_body=extra_body)


def flat_policy(
    policy: ProviderPolicy | None,
    *,
    where: str,
    timeout_s: float | None,
    max_retries: int | None,
    max_concurrency: int | None,
    rpm: float | None,
    tpm: float | None,
) -> ProviderPolicy:
    """``policy``, or the one the flat keywords describe; giving both is an error.

    ``max_retries`` counts retries after the first attempt.
    """
    flat = {
        "timeout_s": timeout_s,
        "max_retries": max_retries,
        "max_concurrency": max_concurrency,
        "rpm": rpm,
        "tpm": tpm,
    }
    given = [k for k, v in flat.items() if v is not None]
    if policy is not None:
        if given:
            raise ValueError(
                f"{where}: pass either policy=ProviderPolicy(...) or {', '.join(given)}, not both"
            )
        return policy
    default = ProviderPolicy()
    return ProviderPolicy(
        timeout_s=timeout_s if timeout_s is not None else default.timeout_s,
        retry=RetryPolicy(max_attempts=max_retries + 1) if max_retries is not None else default.retry,
        # Only what was given: an unset max_concurrency stays a default, which a runner asking
        # for more warns about (openjudge.runner._concurrency).
        limits=ProviderLimits(
            **{
                k: v
                for k, v in (("max_concurrency", max_concurrency), ("rpm", rpm), ("tpm", tpm))
                if v is not None
            }
        ),
    )


class OpenAIChatModel(ChatClient):
    """A chat model served over the OpenAI chat-completions API.

    The core's bounded retry policy is the only retry layer. HTTP clients are created
    per running event loop (aiohttp on asyncio, httpx under trio).

    Args:
        model: Model name on the server.
        api_key: API key. Without one, OpenAI's endpoint (and ``OPENAI_BASE_URL``) use
            ``OPENAI_API_KEY``; an explicit ``base_url`` gets no key.
        base_url: Server URL ending in ``/v1``; defaults to ``OPENAI_BASE_URL``, then
            OpenAI. ``user:pass@`` in it is sent as basic auth and never shown.
        temperature, top_p, max_tokens, seed, extra_body: Default sampling (or ``sampling=``).
        timeout_s: Per-attempt timeout in seconds (or ``policy=``).
        max_retries: Retries after the first attempt (or ``policy=``).
        max_concurrency, rpm, tpm: Provider limits (or ``policy=``).
        structured_output: How to ask for JSON (``json_schema``, ``json_object`` or ``prompt``).
            Unset, the first call finds what the server takes (llama-cpp-python's server:
            ``json_object``) and every call after uses it; see ``docs/guide.md``.
        logprobs: Whether the server returns token logprobs.
        organization: ``OpenAI-Organization`` header.
        sampling: Default sampling as one object.
        policy: Timeouts, retries and limits as one object.
        limits: Shared limits (providers reaching the same endpoint, model and key share a budget).
        cache: A judge cache for deterministic calls.
        http_client_factory: Builds each ``httpx.AsyncClient`` (tests inject transports;
            forces the httpx path).

    Raises:
        ValueError: No key for OpenAI's endpoint, both ``sampling`` and flat sampling
            keywords (or ``policy`` and flat limits), or a key and URL credentials together.
    """

    transport: OpenAICompatibleTransport

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
        timeout_s: float | None = None,
        max_retries: int | None = None,
        max_concurrency: int | None = None,
        rpm: float | None = None,
        tpm: float | None = None,
        structured_output: StructuredOutputMode | None = None,
        logprobs: bool = True,
        extra_body: dict[str, Any] | None = None,
        organization: str | None = None,
        sampling: Sampling | None = None,
        policy: ProviderPolicy | None = None,
        limits: ConnectionLimits | None = None,
        cache: JudgeCache | None = None,
        http_client_factory: HttpClientFactory | None = None,
    ) -> None:
        if not model:
            raise ValueError("model must be a non-empty model name, e.g. model='gpt-4o-mini'")
        where = f"{type(self).__name__}({model!r})"
        sampling = flat_sampling(
            sampling,
            where=where,
            extra_body=extra_body,
            temperature=temperature,
            top_p=top_p,
            max_tokens=max_tokens,
            seed=seed,
        )
        policy = flat_policy(
            policy,
            where=where,
            timeout_s=timeout_s,
            max_retries=max_retries,
            max_concurrency=max_concurrency,
            rpm=rpm,
            tpm=tpm,
        )
        url, key = self._endpoint_and_key(base_url, as_secret(api_key))
        transport = OpenAICompatibleTransport(
            model,
            base_url=url,
            api_key=key,
            structured_output=structured_output,
            max_connections=policy.limits.max_concurrency,
            organization=organization,
            http_client_factory=http_client_factory,
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
        self.base_url = transport.base_url
        """The server URL (without credentials)."""

    @staticmethod
    def _endpoint_and_key(base_url: str | None, api_key: SecretStr | None) -> tuple[str, SecretStr | None]:
        if base_url is None:
            # Both from the environment (the SDK's convention), or OpenAI itself.
            url = os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
            key = api_key if api_key is not None else as_secret(os.environ.get("OPENAI_API_KEY"))
        elif _is_openai(base_url):
            url, key = (
                base_url,
                api_key if api_key is not None else as_secret(os.environ.get("OPENAI_API_KEY")),
            )
        else:
            return base_url, api_key  # never OPENAI_API_KEY for a server the caller named
        if key is None and _is_openai(url):
            raise ValueError(
                "OpenAIChatModel: no API key for api.openai.com; pass api_key=... or set OPENAI_API_KEY "
                "(for another server pass base_url=...)"
            )
        return url, key
