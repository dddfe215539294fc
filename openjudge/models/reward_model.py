"""The reward-model protocol: a model that scores a response in one forward pass.

A reward model (a sequence classifier such as Skywork-Reward, or a token/process
reward model) returns a number for a response, with nothing to generate or parse.
Backends implement :class:`RewardModel` (vLLM's ``/classify`` and ``/pooling``
endpoints in ``openjudge.providers.vllm_reward``, an in-process model in another provider);
:class:`~openjudge.graders.reward_model.RewardModelGrader` turns any of them into a grader.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from openjudge.results import TokenUsage

__all__ = ["Reward", "RewardModel"]


@dataclass(frozen=True, slots=True)
class Reward:
    """One reward-model score.

    Attributes:
        value: The reward (the model's output at its label, reduced over tokens if per-token).
        values: The row it came from (per label), or per-token values for token models.
        model: The model that scored.
        usage: Prompt tokens and requests spent.
        latency_s: Wall time of the call, retries included.
    """

    value: float
    values: tuple[float, ...]
    model: str
    usage: TokenUsage
    latency_s: float


@runtime_checkable
class RewardModel(Protocol):
    """Scores a response, optionally after a prompt or a conversation.

    Implementations own their client and limits and raise
    :class:`~openjudge.models._errors.ChatModelError` when a call finally fails (and
    :class:`~openjudge.graders.base_grader.InvalidInputError` for both ``prompt`` and
    ``messages``).
    """

    @property
    def model_name(self) -> str | None: ...

    async def ascore(
        self,
        response: str,
        *,
        prompt: str | None = None,
        messages: Sequence[Mapping[str, Any]] | None = None,
    ) -> Reward: ...
