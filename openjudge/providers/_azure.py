"""Azure OpenAI deployments through litellm's ``azure/`` route, with the fields checked early.

A wrong Azure field shows up late and vaguely: a bad deployment name or API version
is a bare "404 Resource not found" at the first call. So the three fields are
validated at construction (``deployment`` is a name, ``api_base`` is the resource
endpoint without a path, ``api_version`` is ``YYYY-MM-DD`` or ``YYYY-MM-DD-preview``),
and a 404 comes back naming the field that is most likely wrong.

Requests go to ``{api_base}/openai/deployments/{deployment}/chat/completions?api-version=...``
with an ``api-key`` header.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Mapping

from pydantic import SecretStr

from openjudge.models._errors import ChatModelError
from openjudge.models._limits import ConnectionLimits
from openjudge.models._secrets import safe_url
from openjudge.models.cache import JudgeCache
from openjudge.models.chat_model import Sampling, StructuredOutputMode
from openjudge.models.policy import ProviderPolicy
from openjudge.providers._litellm import LiteLLMChatModel, LiteLLMTransport
from openjudge.providers._litellm_errors import with_message

__all__ = [
    "DEFAULT_AZURE_API_VERSION",
    "AzureChatModel",
    "AzureTransport",
    "check_api_base",
    "check_api_version",
    "check_deployment",
]

DEFAULT_AZURE_API_VERSION = "2024-10-21"
"""The GA data-plane version used when neither ``api_version`` nor ``AZURE_API_VERSION`` is set."""

_DEPLOYMENT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_API_VERSION_RE = re.compile(r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])(-preview)?$")


def check_deployment(deployment: str) -> str:
    """``deployment`` if it is a valid Azure deployment name, else a ValueError saying why."""
    if not _DEPLOYMENT_RE.fullmatch(deployment):
        raise ValueError(
            f"Azure deployment {deployment!r} is not a deployment name: use the name given to the "
            "deployment in Azure AI Foundry (1-64 letters, digits, '.', '_' or '-'; no '/' or spaces), "
            "e.g. deployment='gpt-4o-mini-judge'"
        )
    return deployment


def check_api_base(api_base: str) -> str:
    """The resource endpoint (``https://<resource>.openai.azure.com`` or a custom https domain).

    Returns it without a trailing slash; raises ValueError naming the problem otherwise.
    """
    parts = urllib.parse.urlsplit(api_base.strip())
    example = "e.g. api_base='https://my-resource.openai.azure.com'"
    if parts.scheme != "https" or not parts.hostname:
        raise ValueError(f"Azure api_base {api_base!r} must be an https:// URL of the resource, {example}")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(
            f"Azure api_base {api_base!r} must be the resource endpoint without a path or query "
            f"(drop {parts.path + ('?' + parts.query if parts.query else '')!r}; the deployment "
            f"and api_version are separate fields), {example}"
        )
    return f"https://{parts.netloc}"


def check_api_version(api_version: str) -> str:
    """``api_version`` if it is ``YYYY-MM-DD`` or ``YYYY-MM-DD-preview``, else a ValueError."""
    if not _API_VERSION_RE.fullmatch(api_version):
        raise ValueError(
            f"Azure api_version {api_version!r} must look like 'YYYY-MM-DD' or 'YYYY-MM-DD-preview', "
            f"e.g. api_version={DEFAULT_AZURE_API_VERSION!r}"
        )
    return api_version


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


class AzureTransport(LiteLLMTransport):
    """litellm's ``azure/`` route, with 404s that name the field most likely wrong."""

    def classify(self, exc: Exception) -> ChatModelError:
        error = super().classify(exc)
        if error.status_code != 404:
            return error
        return with_message(error, self._not_found_message(exc))  # a 404 is final and has no Retry-After

    def _not_found_message(self, exc: Exception) -> str:
        # Azure answers a missing deployment with code "DeploymentNotFound" ("The API deployment
        # for this resource does not exist"), and an unknown api-version with a bare
        # "Resource not found" (code "404").
        deployment = self.model_name.removeprefix("azure/")
        code = getattr(exc, "code", None)
        text = f"{code} {getattr(exc, 'message', '') or exc}".lower()
        where = f"Azure OpenAI at {safe_url(self.api_base)}: HTTP 404 for deployment {deployment!r}"
        if "deploymentnotfound" in text or "deployment" in text:
            return (
                f"{where}: this resource has no deployment named {deployment!r}. Check `deployment`: "
                "it is the name given to the deployment in Azure AI Foundry (Deployments), not the "
                "model name; a deployment created minutes ago may not be ready yet."
            )
        return (
            f"{where} with api_version {self.api_version!r}: the resource did not recognise the "
            "request, most often because of `api_version` (an unsupported or mistyped version; "
            f"{DEFAULT_AZURE_API_VERSION!r} is a GA version). If the version is right, check "
            "`deployment` and that `api_base` is this resource's endpoint."
        )


class AzureChatModel(LiteLLMChatModel):
    """An Azure OpenAI deployment (through litellm's ``azure/`` route).

    Args:
        deployment: The deployment name (not the model name).
        api_key: Key; defaults to ``AZURE_API_KEY`` then ``AZURE_OPENAI_API_KEY``.
        base_url: Resource endpoint (alias of ``api_base``; config files pass ``base_url``).
        api_base: Resource endpoint; defaults to ``AZURE_API_BASE`` then ``AZURE_OPENAI_ENDPOINT``.
        api_version: Defaults to ``AZURE_API_VERSION`` then ``OPENAI_API_VERSION``, then
            :data:`DEFAULT_AZURE_API_VERSION`.
        Others: as :class:`~openjudge.providers._litellm.LiteLLMChatModel`.

    Raises:
        ValueError: A field is missing or malformed (the message names it and shows an example).
    """

    transport_type = AzureTransport

    def __init__(
        self,
        deployment: str,
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
        limits: ConnectionLimits | None = None,
        cache: JudgeCache | None = None,
    ) -> None:
        if base_url is not None and api_base is not None and base_url != api_base:
            raise ValueError(f"base_url={base_url!r} and api_base={api_base!r} differ; pass only one")
        self.deployment = check_deployment(deployment.removeprefix("azure/"))
        endpoint = api_base or base_url or _env("AZURE_API_BASE", "AZURE_OPENAI_ENDPOINT")
        if endpoint is None:
            raise ValueError(
                "AzureChatModel: no endpoint; pass api_base='https://<resource>.openai.azure.com' "
                "or set AZURE_API_BASE"
            )
        key = api_key if api_key is not None else _env("AZURE_API_KEY", "AZURE_OPENAI_API_KEY")
        if key is None:
            raise ValueError("AzureChatModel: no API key; pass api_key=... or set AZURE_API_KEY")
        version = api_version or _env("AZURE_API_VERSION", "OPENAI_API_VERSION") or DEFAULT_AZURE_API_VERSION
        super().__init__(
            f"azure/{self.deployment}",
            api_key=key,
            api_base=check_api_base(endpoint),
            api_version=check_api_version(version),
            sampling=sampling,
            policy=policy,
            structured_output=structured_output,
            logprobs=logprobs,
            extra_headers=extra_headers,
            drop_params=True,
            limits=limits,
            cache=cache,
        )

    def __repr__(self) -> str:
        return (
            f"AzureChatModel(deployment={self.deployment!r}, api_base={self.api_base!r}, "
            f"api_version={self.api_version!r})"
        )
