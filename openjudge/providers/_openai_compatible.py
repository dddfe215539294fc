"""The transport for OpenAI's chat-completions wire format, over any OpenAI-compatible server.

The request body is built here in wire form and posted as bytes through the HTTP floor
(:mod:`openjudge.providers._http`: aiohttp on asyncio, httpx elsewhere); the reply is read by the
strict reader of :mod:`openjudge.providers._completion`. The same bytes are the judge cache's key.
When ``structured_output`` is not set, the mode the server takes is found on first use
(:mod:`openjudge.providers._negotiation`) and the key is the body the strongest mode would
send, marked as found per server: it does not change with what the server was found to take.

Credentials: the key goes in ``Authorization: Bearer``; a ``user:pass@`` in the URL
becomes ``Authorization: Basic`` and is removed from the URL everything else shows.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from pydantic import SecretStr

from openjudge.models._secrets import fingerprint, redact, safe_url, split_url_credentials
from openjudge.models.chat_model import ChatRequest, ChatResponse, OutputSpec, StructuredOutputMode
from openjudge.providers import _json
from openjudge.providers._completion import add_sampling_fields, parse_completion
from openjudge.providers._http import HttpClientFactory, LoopClients, json_reply
from openjudge.providers._negotiation import (
    FOUND_PER_SERVER,
    MODES,
    StructuredOutputChoice,
    StructuredOutputNegotiation,
)
from openjudge.providers._structured import response_format_for

__all__ = ["OpenAICompatibleTransport"]


class OpenAICompatibleTransport:
    """One attempt at ``POST {base_url}/chat/completions``.

    Args:
        model: Model name sent in every request.
        base_url: Server URL ending in ``/v1`` (may carry ``user:pass@`` for basic auth).
        api_key: Bearer key, or ``None`` to send no ``Authorization`` header.
        structured_output: How to ask for JSON (``json_schema``, ``json_object`` or ``prompt``);
            ``None`` finds what the server takes on first use.
        max_connections: Connection pool size (the provider's concurrency).
        organization: ``OpenAI-Organization`` header.
        http_client_factory: Builds an ``httpx.AsyncClient``; forces the httpx path (tests).

    Raises:
        ValueError: Both an API key and URL credentials were given.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: SecretStr | None,
        structured_output: StructuredOutputMode | None,
        max_connections: int,
        organization: str | None = None,
        http_client_factory: HttpClientFactory | None = None,
    ) -> None:
        url, user, password = split_url_credentials(base_url.strip().rstrip("/"))
        key = api_key.get_secret_value() if api_key is not None else None
        headers = {"content-type": "application/json", "accept": "application/json"}
        if key:
            if user is not None:
                raise ValueError(
                    f"{safe_url(base_url)}: give either an api_key or credentials in the URL (user:pass@), not both"
                )
            headers["authorization"] = f"Bearer {key}"
        elif user is not None:
            token = base64.b64encode(f"{user}:{password or ''}".encode()).decode("ascii")
            headers["authorization"] = f"Basic {token}"
        if organization:
            headers["openai-organization"] = organization
        self.base_url = url
        """The server URL without credentials."""
        self._url = f"{url}/chat/completions"
        self._endpoint = safe_url(self._url)
        self._model_name = model
        self._where = f"{safe_url(url)} model {model!r}"
        self._headers = headers
        pair = f"{user}:{password}" if user is not None and password else None
        auth = headers.get("authorization")
        basic = auth.removeprefix("Basic ") if auth is not None and auth.startswith("Basic ") else None
        # Longest first: a secret that contains another is replaced whole.
        self._secrets = tuple(
            sorted((s for s in (auth, pair, basic, key, password) if s), key=len, reverse=True)
        )
        self._connection_key = f"{self._endpoint}|{model}|{fingerprint(key or password)}"
        self._clients = LoopClients(max_connections, http_client_factory)
        self._structured = StructuredOutputNegotiation(
            structured_output, key=lambda: f"{self._endpoint}|{self._model_name}", where=lambda: self._where
        )

    @property
    def model_name(self) -> str:
        return self._model_name

    def set_model_name(self, model: str) -> None:
        """Name the model (after discovery); the connection key keeps the configured name."""
        self._model_name = model
        self._where = f"{safe_url(self.base_url)} model {model!r}"

    @property
    def endpoint(self) -> str:
        return self._endpoint

    @property
    def structured_output(self) -> StructuredOutputMode | None:
        """The mode as set (``None``: found per server on first use; see :attr:`structured_output_choice`)."""
        return self._structured.setting

    @property
    def structured_output_choice(self) -> StructuredOutputChoice | None:
        """The mode in use at this endpoint and how it was chosen (``None`` until a call found it)."""
        return self._structured.choice

    @property
    def connection_key(self) -> str:
        return self._connection_key

    @property
    def enforces_timeout(self) -> bool:
        return True  # every request carries a total timeout (connect + read)

    @property
    def where(self) -> str:
        """How errors name this endpoint (no credentials)."""
        return self._where

    def redact(self, text: str) -> str:
        """``text`` without this transport's secrets or anything credential-shaped."""
        return redact(text, self._secrets)

    def params(self, request: ChatRequest, mode: StructuredOutputMode | None = None) -> dict[str, Any]:
        """The request body as a dict, asking for JSON in ``mode`` (default: the mode in use now).

        Subclasses add their server's fields.
        """
        mode = mode or self._structured.mode()
        params: dict[str, Any] = {"model": self._model_name, "messages": request.messages}
        add_sampling_fields(params, request)
        if request.output is not None and mode != "prompt":
            params["response_format"] = self.response_format(request.output, mode)
        extra_body = request.sampling.extra_body
        if extra_body:
            params.update(extra_body)  # provider-specific fields travel at the top level
        return params

    def response_format(self, output: OutputSpec, mode: StructuredOutputMode) -> Mapping[str, Any]:
        return response_format_for(output, mode)

    def wire_body(self, request: ChatRequest) -> bytes | None:
        if request.output is None or self._structured.setting is not None:
            return _json.dumps(self.params(request))
        # Found per server: the key must not depend on what the server was found to take.
        return _json.dumps({**self.params(request, MODES[0]), FOUND_PER_SERVER: True})

    async def attempt(self, request: ChatRequest, timeout_s: float) -> ChatResponse:
        if request.output is None:
            return await self._send(request, timeout_s, "prompt")
        return await self._structured.send(lambda mode: self._send(request, timeout_s, mode))

    async def _send(self, request: ChatRequest, timeout_s: float, mode: StructuredOutputMode) -> ChatResponse:
        where = self._where
        body = _json.dumps(self.params(request, mode))
        reply = await self._clients.get().send("POST", self._url, body, self._headers, timeout_s, where)
        # A 2xx that is not JSON (a proxy's error page) may well be fine on the next attempt.
        data = json_reply(reply, where=where, secrets=self._secrets, malformed_retryable=True)
        return parse_completion(data, where=where, model=self._model_name)

    async def aclose(self) -> None:
        await self._clients.aclose()
