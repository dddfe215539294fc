"""The transport of one vLLM pooling endpoint (``/classify``, ``/pooling``).

Private to :mod:`openjudge.providers.vllm_reward`, which wraps it in the core's
:class:`~openjudge.models.engine.CallEngine`, so reward calls get the same timeouts,
bounded retries, Retry-After, concurrency/RPM limits and usage accounting as judges.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import SecretStr

from openjudge.models._errors import ChatModelError
from openjudge.models._secrets import fingerprint, safe_url
from openjudge.providers import _json
from openjudge.providers._http import HttpClientFactory, LoopClients, json_reply
from openjudge.providers._reward import labelled
from openjudge.results import TokenUsage

__all__ = ["PoolingReply", "PoolingTransport", "RewardEndpoint", "TokenReduce"]

RewardEndpoint = Literal["classify", "pooling"]
TokenReduce = Literal["last", "min", "mean"]


def _floats(raw: object) -> tuple[float, ...] | None:
    if not isinstance(raw, list) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in raw
    ):
        return None
    return tuple(float(v) for v in raw)


@dataclass(frozen=True, slots=True)
class PoolingReply:
    """The scores of the first input: ``[value, *row]``, the model and the prompt tokens."""

    scores: tuple[float, ...]
    model: str
    usage: TokenUsage


class PoolingTransport:
    """One ``POST`` of a pooling request (the JSON body) per attempt."""

    def __init__(
        self,
        url: str,
        model: str,
        api_key: SecretStr | None,
        *,
        endpoint: RewardEndpoint,
        label_index: int,
        token_reduce: TokenReduce,
        max_connections: int,
        http_client_factory: HttpClientFactory | None,
    ) -> None:
        self._url = url
        self._model_name = model
        self._endpoint = endpoint
        self._label_index = label_index
        self._token_reduce = token_reduce
        key = api_key.get_secret_value() if api_key is not None else None
        self._headers = {"content-type": "application/json"}
        if key:
            self._headers["authorization"] = f"Bearer {key}"
        self._secrets = (key,) if key else ()
        self._where = safe_url(url)
        self._connection_key = f"{self._where}|{model}|{fingerprint(key)}"
        self._clients = LoopClients(max_connections, http_client_factory)

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def connection_key(self) -> str:
        return self._connection_key

    @property
    def enforces_timeout(self) -> bool:
        return True  # every request carries a total timeout

    async def attempt(self, request: Mapping[str, Any], timeout_s: float) -> PoolingReply:
        where = self._where
        reply = await self._clients.get().send(
            "POST", self._url, _json.dumps(dict(request)), self._headers, timeout_s, where
        )
        data = json_reply(reply, where=where, secrets=self._secrets, malformed_retryable=False)
        scores = self._values(data)
        body: dict[str, Any] = data if isinstance(data, dict) else {}
        usage = body.get("usage")
        prompt_tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        reported = body.get("model")
        return PoolingReply(
            scores,
            reported if isinstance(reported, str) else self._model_name,
            TokenUsage(prompt_tokens if isinstance(prompt_tokens, int) else 0, 0, 1),
        )

    def _values(self, data: object) -> tuple[float, ...]:
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
            return (value, *per_token)
        if row is None:
            field = "probs" if self._endpoint == "classify" else "data"
            raise ChatModelError(
                f"{self._where}: the reply has no finite scores in data[0].{field}",
                error_type="MalformedResponse",
            )
        return labelled(row, self._label_index, where=self._where)

    async def aclose(self) -> None:
        await self._clients.aclose()
