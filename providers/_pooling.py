"""The core's retry/limit engine around one vLLM pooling endpoint (``/classify``, ``/pooling``).

Private to :mod:`providers.vllm_reward`. A :class:`BaseChatModel` subclass carries the
pooling request in place of chat messages, so reward calls get the same timeouts,
bounded retries, Retry-After, concurrency/RPM limits and usage accounting as judges.
"""

from __future__ import annotations

import json
import math
from typing import Literal

import httpx
from pydantic import SecretStr

from openjudge.models.base_chat_model import BaseChatModel, ChatRequest
from openjudge.models.chat_model import ChatResponse
from openjudge.models.errors import ChatModelError, is_retryable_status
from openjudge.models.loop_local import LoopLocal
from openjudge.models.policy import ProviderPolicy
from openjudge.models.usage import TokenUsage
from providers._errors import parse_retry_after
from providers.openai import HttpClientFactory

__all__ = ["PoolingTransport", "RewardEndpoint", "TokenReduce"]

RewardEndpoint = Literal["classify", "pooling"]
TokenReduce = Literal["last", "min", "mean"]


def _floats(raw: object) -> tuple[float, ...] | None:
    if not isinstance(raw, list) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in raw
    ):
        return None
    return tuple(float(v) for v in raw)


def _error_detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if message is None and isinstance(body, dict):
        message = body.get("message")
    return str(message)[:300] if message is not None else ""


class PoolingTransport(BaseChatModel):
    """The core's retry/limit engine around one pooling endpoint.

    ``ChatRequest.messages`` holds one element: the JSON body. The reply's ``content``
    is the JSON list of scores for the first input.
    """

    guards_own_timeout = True  # httpx enforces the policy's timeout on every request

    def __init__(
        self,
        url: str,
        model: str,
        api_key: SecretStr,
        *,
        endpoint: RewardEndpoint,
        label_index: int,
        token_reduce: TokenReduce,
        policy: ProviderPolicy,
        http_client_factory: HttpClientFactory | None,
    ) -> None:
        super().__init__(model, policy=policy)
        self._url = url
        self._endpoint = endpoint
        self._label_index = label_index
        self._token_reduce = token_reduce
        self._headers = {"authorization": f"Bearer {api_key.get_secret_value()}"}
        self._factory = http_client_factory
        self._clients: LoopLocal[httpx.AsyncClient] = LoopLocal(self._new_client)

    def _new_client(self) -> httpx.AsyncClient:
        if self._factory is not None:
            return self._factory()
        return httpx.AsyncClient(limits=httpx.Limits(max_connections=None, max_keepalive_connections=32))

    async def _attempt(self, request: ChatRequest) -> ChatResponse:
        client = self._clients.get()
        try:
            response = await client.post(
                self._url,
                json=dict(request.messages[0]),
                headers=self._headers,
                timeout=self.policy.timeout_s,
            )
        except httpx.TimeoutException:
            raise ChatModelError(
                f"{self._url}: request timed out", kind="timeout", retryable=True, error_type="Timeout"
            ) from None
        except httpx.TransportError as exc:
            raise ChatModelError(
                f"{self._url}: connection failed: {exc}", retryable=True, error_type=type(exc).__name__
            ) from None
        status = response.status_code
        if status != 200:
            retryable = is_retryable_status(status)
            raise ChatModelError(
                f"{self._url}: HTTP {status}: {_error_detail(response)}",
                retryable=retryable,
                status_code=status,
                retry_after=parse_retry_after(response.headers) if retryable else None,
                error_type="HTTPStatusError",
            )
        try:
            data = response.json()
        except ValueError:
            raise ChatModelError(
                f"{self._url}: the reply is not JSON", error_type="MalformedResponse"
            ) from None
        values = self._values(data)
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        prompt_tokens = usage.get("prompt_tokens")
        reported = data.get("model")
        return ChatResponse(
            content=json.dumps(values),
            usage=TokenUsage(prompt_tokens if isinstance(prompt_tokens, int) else 0, 0, 1),
            model=reported if isinstance(reported, str) else self.model,
        )

    def _values(self, data: object) -> list[float]:
        """``[value, *values]`` for the first input, or a ChatModelError naming what is wrong."""
        items = data.get("data") if isinstance(data, dict) else None
        first = items[0] if isinstance(items, list) and items and isinstance(items[0], dict) else None
        raw = None if first is None else first.get("probs" if self._endpoint == "classify" else "data")
        row = _floats(raw)
        per_token: tuple[float, ...] | None = None
        if row is None and isinstance(raw, list) and raw:
            rows = [_floats(r) for r in raw]
            if all(r is not None and len(r) > self._label_index for r in rows):
                per_token = tuple(r[self._label_index] for r in rows if r is not None)
        if per_token is not None:
            if self._token_reduce == "last":
                value = per_token[-1]
            elif self._token_reduce == "min":
                value = min(per_token)
            else:
                value = sum(per_token) / len(per_token)
            return [value, *per_token]
        if row is None:
            field = "probs" if self._endpoint == "classify" else "data"
            raise ChatModelError(
                f"{self._url}: the reply has no finite scores in data[0].{field}",
                error_type="MalformedResponse",
            )
        if self._label_index >= len(row):
            raise ChatModelError(
                f"{self._url}: label_index={self._label_index} but the model returns {len(row)} value(s)",
                error_type="LabelIndexError",
            )
        return [row[self._label_index], *row]

    async def aclose(self) -> None:
        await self._clients.get().aclose()
