"""A grader whose score is a reward model's output (any :class:`RewardModel`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import JsonValue

from openjudge.graders.base_grader import BaseGrader, InvalidInputError, grader_boundary
from openjudge.models._errors import ChatModelError
from openjudge.models.reward_model import Reward, RewardModel
from openjudge.results import GraderError, GraderScore, ScoreRange, TokenUsage

__all__ = ["RewardModelGrader"]


class RewardModelGrader(BaseGrader):
    """A grader whose score is a reward model's raw output.

    Args:
        reward_model: The reward model (shared by every grader that uses it), e.g.
            ``openjudge.providers.vllm_reward.VLLMRewardModel``.
        name: Result name (default ``reward_model``).
        score_range: The declared range of the reward, if known; a reward outside it is
            a ``parse_error`` unless ``clip_to_range``.
        clip_to_range: Clip rewards into ``score_range`` instead of failing.
    """

    default_name = "reward_model"

    def __init__(
        self,
        reward_model: RewardModel,
        name: str = "",
        description: str = "",
        *,
        score_range: ScoreRange | tuple[float, float] | None = None,
        clip_to_range: bool = False,
    ) -> None:
        super().__init__(name=name, description=description, score_range=score_range)
        if not isinstance(reward_model, RewardModel):
            raise TypeError(
                f"{self.name}: reward_model must be a reward model (an object with ascore(), e.g. "
                f"VLLMRewardModel(...)), got {type(reward_model).__name__}"
            )
        if clip_to_range and self.score_range is None:
            raise ValueError(f"{self.name}: clip_to_range needs a score_range")
        self.reward_model = reward_model
        self.clip_to_range = clip_to_range

    @grader_boundary
    async def aevaluate(
        self,
        *,
        response: str,
        prompt: str | None = None,
        messages: Sequence[Mapping[str, Any]] | None = None,
    ) -> GraderScore | GraderError:
        """Score ``response`` (optionally after ``prompt`` or a conversation in ``messages``)."""
        if not isinstance(response, str):
            raise InvalidInputError(f"input 'response' must be a string, got {type(response).__name__}")
        try:
            reward = await self.reward_model.ascore(response, prompt=prompt, messages=messages)
        except ChatModelError as exc:
            return GraderError(
                name=self.name,
                kind=exc.kind,
                message=exc.message,
                error_type=exc.error_type,
                usage=TokenUsage(0, 0, exc.requests),
            )
        return self._result(reward)

    def _result(self, reward: Reward) -> GraderScore | GraderError:
        value, score_range = reward.value, self.score_range
        metadata: dict[str, JsonValue] = {"raw_reward": value, "model": reward.model}
        if len(reward.values) > 1:
            metadata["values"] = list(reward.values)
        if score_range is not None and not score_range.contains(value):
            if not self.clip_to_range:
                return GraderError(
                    name=self.name,
                    kind="parse_error",
                    message=f"reward {value:g} is outside the declared score_range "
                    f"[{score_range.low:g}, {score_range.high:g}]; widen it or set clip_to_range=True",
                    error_type="OutOfRange",
                    usage=reward.usage,
                    latency_s=reward.latency_s,
                )
            value = min(score_range.high, max(score_range.low, value))
        return GraderScore(
            name=self.name,
            score=value,
            reason=f"reward model {reward.model}",
            metadata=metadata,
            score_range=score_range,
            usage=reward.usage,
            latency_s=reward.latency_s,
        )
