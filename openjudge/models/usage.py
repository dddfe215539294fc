"""Token usage of judge calls, summed per call, grader and provider."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["TokenUsage"]


class TokenUsage(BaseModel):
    """Tokens spent by one or more chat calls.

    Attributes:
        prompt_tokens: Tokens sent to the model.
        completion_tokens: Tokens the model produced.
        requests: HTTP requests made (retries and re-asks included).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    requests: int = Field(default=0, ge=0)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage.model_construct(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            requests=self.requests + other.requests,
        )
