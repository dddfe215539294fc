"""A backend of one's own, written against the public names only (``openjudge.models``)."""

from __future__ import annotations

import json

import pytest

from openjudge.graders import LLMGrader
from openjudge.models import (
    ChatClient,
    ChatModelError,
    ChatRequest,
    ChatResponse,
    ChatTransport,
    ModelCapabilities,
    ProviderPolicy,
    RetryPolicy,
)
from openjudge.results import GraderError, GraderScore, TokenUsage

pytestmark = pytest.mark.anyio


class EchoBackend:
    """Fails with the given statuses, then replies with a verdict of 4."""

    def __init__(self, *failures: int) -> None:
        self.failures = list(failures)
        self.attempts = 0

    model_name = "echo-1"
    connection_key = "echo://local|echo-1"
    endpoint = "echo://local"
    enforces_timeout = False

    async def attempt(self, request: ChatRequest, timeout_s: float) -> ChatResponse:
        self.attempts += 1
        if self.failures:
            status = self.failures.pop(0)
            raise ChatModelError(f"HTTP {status}", status_code=status, retryable=status >= 500)
        verdict = {"score": 4, "reason": f"{len(request.messages)} messages"}
        return ChatResponse(json.dumps(verdict), usage=TokenUsage(10, 5, 1), model=self.model_name)

    def wire_body(self, request: ChatRequest) -> bytes | None:
        return None

    async def aclose(self) -> None:
        return None


def client(backend: EchoBackend) -> ChatClient:
    retry = RetryPolicy(max_attempts=3, initial_backoff_s=0.0, max_backoff_s=0.0)
    capabilities = ModelCapabilities(structured_output="prompt", logprobs=False)
    return ChatClient(backend, policy=ProviderPolicy(retry=retry), capabilities=capabilities)


async def test_a_transport_of_ones_own_grades_through_the_engine_with_retries() -> None:
    backend = EchoBackend(503)
    assert isinstance(backend, ChatTransport)
    grader = LLMGrader(client(backend), name="echo", template="{response}", score_range=(1, 5))
    result = await grader.aevaluate(response="The sky is blue.")
    assert isinstance(result, GraderScore)
    assert (result.score, result.reason, backend.attempts) == (4.0, "2 messages", 2)
    assert result.usage is not None and result.usage.requests == 2


async def test_a_final_status_becomes_a_provider_error_without_a_retry() -> None:
    backend = EchoBackend(401)
    grader = LLMGrader(client(backend), name="echo", template="{response}", score_range=(1, 5))
    result = await grader.aevaluate(response="The sky is blue.")
    assert isinstance(result, GraderError)
    assert (result.kind, result.message, backend.attempts) == ("provider_error", "HTTP 401", 1)
