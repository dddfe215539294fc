"""Group-aware judging in VERL 0.9's reward loop: listwise, pairwise and tournament rewards
over whole GRPO groups.

Enable it on the training command (VERL 0.9.x, V1 trainer)::

    +actor_rollout_ref.rollout.agent.agent_loop_manager_class=openjudge.integrations.verl.group.OpenJudgeAgentLoopManager
    +reward.openjudge_group.config=/abs/path/group.yaml

- :class:`OpenJudgeAgentLoopManager`: the agent-loop manager to name in that override.
- :class:`OpenJudgeAgentLoopWorker`: its worker, which meets each group's members.
- :class:`GroupSettings`: the ``+reward.openjudge_group.*`` options.
- :class:`GraderGroupJudge`: the graders of a group YAML judging one group;
  :class:`Member`: a trajectory ready to be judged with its group.
- :class:`GroupVerdict`: what a judgement gives, each member's outcome a
  :class:`MemberReward` (its reward and ``reward_extra_info``) or a :class:`MemberDropped`.

Importing this package does not import VERL; the two classes load it (and check
``verl>=0.9,<0.10``) when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openjudge._lazy import lazy_exports
from openjudge.errors import GroupJudgingError as GroupJudgingError
from openjudge.integrations.verl.group._settings import GroupSettings as GroupSettings

if TYPE_CHECKING or not lazy_exports(globals()):
    from openjudge.integrations.verl.group._manager import (
        OpenJudgeAgentLoopManager as OpenJudgeAgentLoopManager,
    )
    from openjudge.integrations.verl.group._verdict import GroupVerdict as GroupVerdict
    from openjudge.integrations.verl.group._verdict import MemberDropped as MemberDropped
    from openjudge.integrations.verl.group._verdict import MemberReward as MemberReward
    from openjudge.integrations.verl.group._worker import OpenJudgeAgentLoopWorker as OpenJudgeAgentLoopWorker
    from openjudge.integrations.verl.group.judges import GraderGroupJudge as GraderGroupJudge
    from openjudge.integrations.verl.group.members import Member as Member

__all__ = [
    "GraderGroupJudge",
    "GroupJudgingError",
    "GroupSettings",
    "GroupVerdict",
    "Member",
    "MemberDropped",
    "MemberReward",
    "OpenJudgeAgentLoopManager",
    "OpenJudgeAgentLoopWorker",
]
