"""What the training command configures for group judging: ``+reward.openjudge_group.<option>``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from integrations._shared import plain_options, validation_problems
from integrations.verl.settings import SettingsError

__all__ = ["WHERE", "Fallback", "GroupSettings", "read_group_settings"]

WHERE = "reward.openjudge_group"


class Fallback(BaseModel):
    """``on_failure: {fallback: <value>}``: a failed group's members get this reward, flagged."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fallback: float

    @field_validator("fallback")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("fallback must be a finite number")
        return value


class GroupSettings(BaseModel):
    """Options of the group stage, read from ``config.reward.openjudge_group``.

    Attributes:
        config: The group graders YAML: group graders, optionally pointwise graders (run
            per member, e.g. ``provided_score`` on the ``pointwise`` field), aggregators.
            Not needed when ``reward.custom_reward_function`` is a
            ``BaseOpenJudgeRewardFunction``.
        aggregate: The aggregator whose score is the reward (default: the YAML's first,
            else ``mean``: the equal-weight mean of every grader).
        pointwise: Score each trajectory through VERL's reward loop first, as without
            group judging (``reward.reward_manager``); its reward is the member sample's
            ``pointwise`` field. ``false``: only the group YAML's graders score.
        wait_timeout_s: Seconds a group waits for its members after the first one
            finished; then it is judged with the members that are there, and later ones
            are failed members.
        judge_timeout_s: Seconds each group grader may take, retries included (default:
            the YAML's ``runner.timeout_s``).
        on_member_failure: A member whose comparisons failed: ``neutral`` (the mean reward
            of the group's other members, so its GRPO advantage is zero; flagged) or
            ``drop`` (its trajectory is dropped).
        on_failure: A group where no member could be scored: ``drop`` (every trajectory
            is dropped) or ``{fallback: <value>}`` (that reward, flagged). Default: the
            per-sample ``reward.openjudge.on_failure`` when set, else ``drop``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    config: str | None = Field(default=None, min_length=1)
    aggregate: str | None = None
    pointwise: bool = True
    wait_timeout_s: float = Field(default=600.0, gt=0)
    judge_timeout_s: float | None = Field(default=None, gt=0)
    on_member_failure: Literal["neutral", "drop"] = "neutral"
    on_failure: Literal["drop"] | Fallback | None = None


def _on_failure(value: object) -> object:
    """``fallback: 0.0`` also written as ``{fallback: 0.0}``; a bare number means a fallback."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return {"fallback": value}
    return value


def read_group_settings(options: object, per_sample_on_failure: object = None) -> GroupSettings:
    """Validate the group options (a mapping or an OmegaConf node; ``None``: all defaults).

    Args:
        options: ``config.reward.openjudge_group``.
        per_sample_on_failure: ``config.reward.openjudge.on_failure``, inherited when the
            group options do not set ``on_failure``.

    Raises:
        SettingsError: An invalid option (the message names it and the fix).
    """
    raw = plain_options(options)
    data: dict[str, object] = {}
    if isinstance(raw, Mapping):
        data = {str(k): v for k, v in raw.items()}
    elif raw is not None:
        raise SettingsError(f"{WHERE} must be a mapping of options, got {type(raw).__name__}")
    if data.get("on_failure") is None and per_sample_on_failure is not None:
        inherited = _on_failure(plain_options(per_sample_on_failure))
        if inherited == "drop" or (isinstance(inherited, Mapping) and set(inherited) == {"fallback"}):
            data["on_failure"] = inherited
    if "on_failure" in data:
        data["on_failure"] = _on_failure(data["on_failure"])
    try:
        return GroupSettings.model_validate(data)
    except ValidationError as exc:
        raise SettingsError(
            validation_problems(exc, WHERE)
            + " (on_failure takes drop or {fallback: <value>}; on_member_failure takes neutral or drop)"
        ) from None
