"""What the training command configures for group judging: ``+reward.openjudge_group.<option>``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from openjudge.integrations.verl._settings import FallbackPolicy, option_mapping, validated

__all__ = ["WHERE", "GroupSettings", "read_group_settings"]

WHERE = "reward.openjudge_group"


class GroupSettings(FallbackPolicy):
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
            is dropped) or ``fallback`` (``fallback_score``, flagged), as the per-sample
            ``reward.openjudge.on_failure``, which it inherits when not set here
            (default ``drop``).
        fallback_score: The reward under ``on_failure=fallback`` (required there).
    """

    config: str | None = Field(default=None, min_length=1)
    aggregate: str | None = None
    pointwise: bool = True
    wait_timeout_s: float = Field(default=600.0, gt=0)
    judge_timeout_s: float | None = Field(default=None, gt=0)
    on_member_failure: Literal["neutral", "drop"] = "neutral"


def read_group_settings(options: object, per_sample: object = None) -> GroupSettings:
    """Validate the group options (a mapping or an OmegaConf node; ``None``: all defaults).

    Args:
        options: ``config.reward.openjudge_group``.
        per_sample: ``config.reward.openjudge``; its ``on_failure`` and ``fallback_score``
            apply when the group options do not set ``on_failure``.

    Raises:
        SettingsError: An invalid option (the message names it and the fix).
    """
    data = option_mapping(options, WHERE)
    inherited = option_mapping(per_sample, "reward.openjudge")
    if "on_failure" not in data and inherited.get("on_failure") is not None:
        data["on_failure"] = inherited["on_failure"]
        if inherited.get("fallback_score") is not None and "fallback_score" not in data:
            data["fallback_score"] = inherited["fallback_score"]
    return validated(GroupSettings, data, WHERE)
