"""Scripted judges for the comparison graders: they read the prompt and reply with JSON."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

import anyio

from openjudge.models.chat_model import ChatRequest
from openjudge.testing.function_model import FunctionChatModel


def field(request: ChatRequest, name: str) -> str:
    """The value the grader inserted between ``<name>`` tags in the (first) user message."""
    user = next(m["content"] for m in request.messages if m["role"] == "user")
    assert isinstance(user, str)
    return user.split(f"<{name}>\n", 1)[1].split(f"\n</{name}>", 1)[0]


def verdict(winner: str, reason: str = "because") -> str:
    return json.dumps({"reason": reason, "winner": winner})


def ranking(*ids: str, reason: str = "ranked") -> str:
    return json.dumps({"reason": reason, "ranking": list(ids)})


class Recorder:
    """A FunctionChatModel around ``decide(request) -> reply`` that records every request."""

    def __init__(self, decide: Callable[[ChatRequest], str], *, delay_s: float = 0.0) -> None:
        self.requests: list[ChatRequest] = []
        self.active = 0
        self.peak = 0
        self._decide = decide
        self._delay_s = delay_s
        self.model = FunctionChatModel(self._reply_async if delay_s else self._reply)

    def _reply(self, request: ChatRequest) -> str:
        self.requests.append(request)
        return self._decide(request)

    async def _reply_async(self, request: ChatRequest) -> str:
        self.requests.append(request)
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            await anyio.sleep(self._delay_s)
        finally:
            self.active -= 1
        return self._decide(request)


def by_quality(quality: Mapping[str, float]) -> Callable[[ChatRequest], str]:
    """A consistent judge: the response with the higher quality wins, equal qualities tie."""

    def decide(request: ChatRequest) -> str:
        a, b = quality[field(request, "response_a")], quality[field(request, "response_b")]
        return verdict("A" if a > b else "B" if b > a else "tie")

    return decide


def always(winner: str) -> Callable[[ChatRequest], str]:
    """A judge that ignores the content (``"A"``: always prefers the first position)."""
    return lambda request: verdict(winner)
