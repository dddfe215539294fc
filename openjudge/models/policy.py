"""What a provider declares about retries, timeouts and limits."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ProviderLimits", "ProviderPolicy", "RetryPolicy"]


class RetryPolicy(BaseModel):
    """Bounded retries: by attempts and by time, both always.

    Attributes:
        max_attempts: Attempts per call, the first included.
        max_elapsed_s: No new attempt starts after this many seconds since the first.
        initial_backoff_s: First backoff (doubles per retry, with full jitter).
        max_backoff_s: Backoff cap.
        max_retry_after_s: Cap on a server's Retry-After; larger values are clipped.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_attempts: int = Field(default=4, ge=1, le=20)
    max_elapsed_s: float = Field(default=120.0, gt=0)
    initial_backoff_s: float = Field(default=0.25, ge=0)
    max_backoff_s: float = Field(default=8.0, ge=0)
    max_retry_after_s: float = Field(default=60.0, ge=0)


class ProviderLimits(BaseModel):
    """Per-provider limits, shared by every grader that uses the provider.

    Attributes:
        max_concurrency: Requests in flight at once (held per attempt, not during backoff).
        rpm: Requests per minute, or ``None`` for no limit.
        tpm: Tokens per minute (prompt estimate + max_tokens, settled with real usage).
        adaptive: Halve the concurrency on a 429 and grow it back by one per
            window of successes (AIMD), never above ``max_concurrency``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_concurrency: int = Field(default=64, ge=1)
    rpm: float | None = Field(default=None, gt=0)
    tpm: float | None = Field(default=None, gt=0)
    adaptive: bool = True


class ProviderPolicy(BaseModel):
    """Everything the core enforces around a provider's calls.

    Attributes:
        timeout_s: Per-attempt timeout (connect + read), far below the SDK's 600 s default.
        retry: The retry policy.
        limits: Concurrency and rate limits.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout_s: float = Field(default=60.0, gt=0)
    retry: RetryPolicy = RetryPolicy()
    limits: ProviderLimits = ProviderLimits()
