"""Helpers shared by the provider tests (litellm transport switch, fast policies, reply bodies)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from openjudge.models.policy import ProviderLimits, ProviderPolicy, RetryPolicy
from tests._fixtures.extras import need_litellm


@contextmanager
def litellm_on_httpx() -> Iterator[None]:
    """Route litellm through httpx (so respx sees its requests), restoring the setting after.

    litellm's default aiohttp transport bypasses respx. Its client cache is keyed by event
    loop id, which a new test loop may reuse, so it is flushed on both sides. Without the
    litellm extra, the test skips here.
    """
    litellm = need_litellm()
    saved = litellm.disable_aiohttp_transport
    litellm.disable_aiohttp_transport = True  # type: ignore[attr-defined]  # a litellm module global
    litellm.in_memory_llm_clients_cache.flush_cache()
    try:
        yield
    finally:
        litellm.disable_aiohttp_transport = saved  # type: ignore[attr-defined]  # as above
        litellm.in_memory_llm_clients_cache.flush_cache()


def fast_policy(attempts: int = 3, timeout_s: float = 5.0) -> ProviderPolicy:
    """A policy with millisecond backoffs, for retry tests."""
    return ProviderPolicy(
        timeout_s=timeout_s,
        retry=RetryPolicy(max_attempts=attempts, initial_backoff_s=0.01, max_backoff_s=0.02),
        limits=ProviderLimits(max_concurrency=8),
    )


def completion(
    content: str,
    *,
    model: str = "judge-1",
    logprobs: list[dict[str, Any]] | None = None,
    finish: str = "stop",
) -> dict[str, Any]:
    """A chat.completion body."""
    choice: dict[str, Any] = {
        "index": 0,
        "finish_reason": finish,
        "message": {"role": "assistant", "content": content},
    }
    if logprobs is not None:
        choice["logprobs"] = {"content": logprobs}
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [choice],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
    }
