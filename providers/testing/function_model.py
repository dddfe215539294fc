"""An in-process chat model backed by a Python function, for tests and docs."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TypeAlias

from openjudge.models.base_chat_model import BaseChatModel, ChatRequest
from openjudge.models.chat_model import ChatResponse, ModelCapabilities, Sampling
from openjudge.models.policy import ProviderPolicy
from openjudge.models.usage import TokenUsage

__all__ = ["FunctionChatModel", "ReplyFunction"]

Reply: TypeAlias = str | ChatResponse
ReplyFunction: TypeAlias = Callable[[ChatRequest], Reply | Awaitable[Reply]]


def _prompt_tokens(request: ChatRequest) -> int:
    """About four characters per token, as the test server counts them."""
    chars = sum(len(c) for m in request.messages if isinstance(c := m.get("content"), str))
    return max(1, chars // 4)


class FunctionChatModel(BaseChatModel):
    """A chat model whose every attempt calls ``reply(request)``.

    The function returns the assistant's text (or a full :class:`ChatResponse`), or
    raises :class:`~openjudge.models.errors.ChatModelError` to simulate a provider
    failure. Retries, limits and timeouts apply exactly as for a network provider.

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
    ) -> None:
        super().__init__(model, policy=policy, sampling=sampling, capabilities=capabilities)
        self._reply = reply
        # A sync reply cannot be interrupted by a timeout scope anyway; only async ones need it.
        self.guards_own_timeout = not inspect.iscoroutinefunction(reply)

    async def _attempt(self, request: ChatRequest) -> ChatResponse:
        out = self._reply(request)
        if inspect.isawaitable(out):
            out = await out
        if isinstance(out, ChatResponse):
            return out
        return ChatResponse(
            content=out,
            usage=TokenUsage(_prompt_tokens(request), max(1, len(out) // 4), 1),
            finish_reason="stop",
            model=self.model,
        )
