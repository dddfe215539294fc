"""TRL integration: openjudge graders as ``GRPOTrainer`` reward functions.

Importing this package imports neither TRL nor torch: the reward functions are plain
async callables that TRL (0.27 and later) awaits.

- :class:`OpenJudgeRewards`: a set of reward functions over one graders config, one per
  grader (:meth:`~OpenJudgeRewards.per_grader`) or one aggregate
  (:meth:`~OpenJudgeRewards.aggregate`), sharing one concurrency limit.
- :class:`OpenJudgeReward`: one reward function (its ``__name__`` is what TRL logs).
- :class:`OpenJudgeTRLSettings`: the options, validated.
- :func:`samples_from_batch`: how TRL's arguments become samples for the graders.
"""

from __future__ import annotations

from openjudge.integrations.trl._function import OpenJudgeReward as OpenJudgeReward
from openjudge.integrations.trl._rewards import OpenJudgeRewards as OpenJudgeRewards
from openjudge.integrations.trl._samples import samples_from_batch as samples_from_batch
from openjudge.integrations.trl._settings import OpenJudgeTRLSettings as OpenJudgeTRLSettings

__all__ = ["OpenJudgeReward", "OpenJudgeRewards", "OpenJudgeTRLSettings", "samples_from_batch"]
