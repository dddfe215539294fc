"""An in-process chat model backed by a Python function, for tests and docs."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TypeAlias

from openjudge.models._limits import ConnectionLimits
from openjudge.models.cache import JudgeCache
from openjudge.models.chat_client import ChatClient
from openjudge.models.chat_model import ChatRequest, ChatResponse, ModelCapabilities, Sampling
from openjudge.models.policy import ProviderPolicy
from openjudge.providers import _json
from openjudge.results import TokenUsage

__all__ = ["FunctionChatModel", "FunctionTransport", "ReplyFunction"]

Reply: TypeAlias = str | ChatResponse
ReplyFunction: TypeAlias = Callable[[ChatRequest], Reply | Awaitable[Reply]]


def _prompt_tokens(request: ChatRequest) -> int:
    """About four characters per token, as the test server counts them."""
    return max(1, request.prompt_chars() // 4)


class FunctionTransport:
    """Each attempt calls ``reply(request)``: a local backend in a dozen lines."""

    def __init__(self, reply: ReplyFunction, model: str) -> None:
        self._reply = reply
        self._model_name = model
        # A sync reply cannot be interrupted by a timeout scope anyway; only async ones need it.
        self._sync = not inspect.iscoroutinefunction(reply)

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def endpoint(self) -> str:
        return f"function:{self._model_name}"

    @property
    def connection_key(self) -> str:
        return f"function:{self._model_name}"

    @property
    def enforces_timeout(self) -> bool:
        return self._sync

    def wire_body(self, request: ChatRequest) -> bytes | None:
        return _json.dumps(
            {
                "messages": request.messages,
                "output": request.output.schema_text if request.output is not None else None,
                "sampling": request.sampling.model_dump(mode="json", exclude_none=True),
                "top_logprobs": request.top_logprobs,
            }
        )

    async def attempt(self, request: ChatRequest, timeout_s: float) -> ChatResponse:
        out = self._reply(request)
        if type(out) is not str and inspect.isawaitable(out):
            out = await out
        if isinstance(out, ChatResponse):
            return out
        return ChatResponse(
            content=out,
            usage=TokenUsage(_prompt_tokens(request), max(1, len(out) // 4), 1),
            finish_reason="stop",
            model=self._model_name,
        )

    async def aclose(self) -> None:
        """Nothing to release."""


class FunctionChatModel(ChatClient):
    """A chat model whose every attempt calls ``reply(request)``.

    The function returns the assistant's text (or a full :class:`ChatResponse`), or
    raises :class:`~openjudge.models._errors.ChatModelError` to simulate a provider
    failure. Retries, limits, timeouts and the cache apply exactly as for a network provider.

    Example:
        >>> model = FunctionChatModel(lambda request: '{"reason": "fine", "score": 4}')
    """

    def __init__(
        self,
        reply: ReplyFunction,
        *,
        model: str = "function",
        policy: ProviderPolicy | None = None,
        sampling: Sampling | None = None,
        capabilities: ModelCapabilities | None = None,
        limits: ConnectionLimits | None = None,
        cache: JudgeCache | None = None,
    ) -> None:
        if not model:
            raise ValueError("model must be a non-empty name")
        super().__init__(
            FunctionTransport(reply, model),
            policy=policy,
            sampling=sampling,
            capabilities=capabilities,
            cache=cache,
            limits=limits,
        )
