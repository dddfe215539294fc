"""Token usage of judge calls, summed per call, grader and provider."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TokenUsage"]


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens spent by one or more chat calls.

    A plain frozen dataclass (not a pydantic model): it is built several times per
    judge call, and pydantic construction costs were measurable there.

    Attributes:
        prompt_tokens: Tokens sent to the model.
        completion_tokens: Tokens the model produced.
        requests: HTTP requests made (retries and re-asks included).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.requests + other.requests,
        )
