"""What a vLLM server serves: ``GET /v1/models``, read into typed model cards."""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping

import httpx
from pydantic import BaseModel, ConfigDict, SecretStr

from openjudge.models._errors import ChatModelError, is_retryable_status
from openjudge.models._secrets import redact, safe_url

__all__ = ["VLLMModelCard", "VLLMServerInfo", "fetch_models", "normalize_base_url"]


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
            f"vLLM base_url {safe_url(base_url)!r} must be an http(s) URL, e.g. 'http://localhost:8000/v1'"
        )
    return url if parts.path else f"{url}/v1"


def _read_models(data: object, base_url: str) -> VLLMServerInfo:
    entries = data.get("data") if isinstance(data, Mapping) else None
    if not isinstance(entries, list):
        raise ChatModelError(
            f"vLLM at {safe_url(base_url)}: GET /models did not return a model list",
            error_type="MalformedResponse",
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
        raise ChatModelError(
            f"vLLM at {safe_url(base_url)}: the server serves no models", error_type="NoModels"
        )
    return VLLMServerInfo(base_url=base_url, models=tuple(cards))


async def fetch_models(
    client: httpx.AsyncClient, base_url: str, api_key: SecretStr | None, timeout_s: float
) -> VLLMServerInfo:
    headers = {"authorization": f"Bearer {api_key.get_secret_value()}"} if api_key is not None else {}
    where = f"vLLM at {safe_url(base_url)}"
    try:
        response = await client.get(f"{base_url}/models", headers=headers, timeout=timeout_s)
    except httpx.TimeoutException:
        raise ChatModelError(
            f"{where}: GET /models timed out", kind="timeout", retryable=True, error_type="Timeout"
        ) from None
    except httpx.TransportError as exc:
        secrets = (api_key.get_secret_value(),) if api_key is not None else ()
        raise ChatModelError(
            f"{where}: connection failed: {redact(str(exc), secrets)}",
            retryable=True,
            error_type=type(exc).__name__,
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
