"""One member of a group, and what group graders read of the whole group.

A member's sample is built by the integration's one row builder
(:func:`openjudge.integrations.verl.samples.sample_from_agent_output`), so group graders and the
pointwise graders of the group YAML see the same fields as the reward managers' graders
(``prompt``, ``prompt_text``, ``prompt_messages``, ``response``, ``messages``, lengths,
``num_turns``, ``turn_scores``, ``tool_rewards``, ``ground_truth``, ...).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from openjudge.integrations.scoring._keys import ExtraValue
from openjudge.integrations.verl._functions import RewardSample

__all__ = ["POINTWISE_FIELD", "SHARED_FIELDS", "Member", "group_sample", "member_sample", "reward_sample"]

POINTWISE_FIELD = "pointwise"
"""The member sample field holding the reward loop's reward."""

# Fields every member of a group shares (they come from the same dataset row).
SHARED_FIELDS = (
    "prompt",
    "prompt_text",
    "prompt_messages",
    "ground_truth",
    "data_source",
    "extra_info",
    "uid",
)


@dataclass(frozen=True, slots=True)
class Member:
    """A trajectory ready to be judged with its group.

    Attributes:
        session_id: Its session in the group (0..n-1).
        sample: What graders see of it.
        pointwise: The reward loop's ``reward_score`` (``None``: not run, or it failed).
        pointwise_extra: The reward loop's ``reward_extra_info``.
        pointwise_failed: The reward loop flagged its reward as a fallback.
    """

    session_id: int
    sample: RewardSample
    pointwise: float | None = None
    pointwise_extra: Mapping[str, ExtraValue] | None = None
    pointwise_failed: bool = False


def member_sample(member: Member) -> dict[str, JsonValue]:
    """The member's grader sample plus ``pointwise`` (unless the reward loop failed it)."""
    sample = member.sample.grader_sample()
    if member.pointwise is not None and not member.pointwise_failed:
        sample[POINTWISE_FIELD] = member.pointwise
    return sample


def group_sample(members: Sequence[Member]) -> dict[str, JsonValue]:
    """What group graders' mappers read: the shared fields, ``query`` (= ``prompt``),
    ``responses`` (one per member, in session order) and ``members`` (their samples)."""
    samples = [member_sample(m) for m in members]
    shared: dict[str, JsonValue] = {k: samples[0][k] for k in SHARED_FIELDS if k in samples[0]}
    shared["query"] = members[0].sample.prompt
    shared["responses"] = [m.sample.response for m in members]
    shared["members"] = list(samples)
    return shared


def reward_sample(member: Member, index: int) -> RewardSample:
    """The member's :class:`RewardSample` as the ``index``-th of its one-group batch."""
    return dataclasses.replace(member.sample, original_index=index, group_index=0)
