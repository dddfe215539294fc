"""What the two roles ask of a local model, torch-free so the adapters build them before loading."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["GenerationRequest", "ScoreRequest"]


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    """One chat completion to run.

    Attributes:
        messages: Chat messages (``role``, ``content``), rendered with the chat template.
        max_new_tokens: Tokens to generate at most.
        temperature: 0 for greedy decoding.
        top_p: Nucleus sampling (sampling only).
        seed: Seeds the sampler for this batch (sampling only; the global RNG is restored after).
        stop: Strings that end the generation (cut from the text).
        top_logprobs: Alternatives to return per token; 0 returns no logprobs; -1 returns
            the chosen tokens' logprobs without alternatives.
        json_schema: Constrain the output to this JSON schema (needs llguidance).
    """

    messages: tuple[Mapping[str, Any], ...]
    max_new_tokens: int
    temperature: float = 0.0
    top_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    top_logprobs: int = 0
    json_schema: str | None = None

    def batch_key(self) -> Hashable:
        """Requests with equal keys can share one ``generate`` call."""
        sampling = (self.temperature, self.top_p, self.seed) if self.temperature > 0 else ()
        return (self.max_new_tokens, self.stop, *sampling)


@dataclass(frozen=True, slots=True)
class ScoreRequest:
    """What to score: a conversation (chat template applied) or plain text (no template)."""

    messages: tuple[Mapping[str, Any], ...] | None = None
    text: str | None = None
