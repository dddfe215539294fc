"""VERL integration: reward managers, an async ``compute_score``, and OpenJudge's VERL-guide API.

Importing this package does not import VERL or torch; the reward managers load them
when first used (``from openjudge.integrations.verl import OpenJudgeRewardManager``).

- :class:`OpenJudgeRewardManager`: the reward-loop manager of VERL 0.7.1+ (``run_single``),
  also callable on a whole batch (``manager(data, return_dict=True)``), as in OpenJudge's VERL guide.
- :class:`OpenJudgeLegacyRewardManager`: the batch manager of VERL 0.4.1 to 0.7.0.
- :func:`compute_score`: an async reward function for VERL's own ``naive`` manager.
- :class:`RewardSample`, :class:`RewardResult`, :class:`BaseOpenJudgeRewardFunction`: the
  grouped reward-function API of OpenJudge's VERL guide.
- :class:`OpenJudgeVerlSettings`: the ``+reward.openjudge.*`` options (those of the
  reward scorer every adapter shares, :mod:`openjudge.integrations.scoring`), including the
  failure policy (``on_failure``: dropped where VERL can drop, else neutral in its group;
  breaker, ``max_failure_rate``; :mod:`openjudge.integrations.scoring._guard`), kept for the
  whole run in one ledger (:mod:`openjudge.integrations.verl._ledger`) whatever VERL's
  trainer mode (:mod:`openjudge.integrations.verl._modes`).

Also: ``openjudge.integrations.verl.agent_loop`` (the ``openjudge_tool_agent`` loop that hands tool
trajectories to the graders), ``openjudge.integrations.verl._hosted_judge`` (``kind: verl``
providers: the judge VERL serves), ``openjudge.integrations.verl.samples`` (what graders see of a
trajectory, on every path), ``openjudge.integrations.verl._keys`` (the ``reward_extra_info`` keys and
the names they reserve), ``openjudge.integrations.verl.sampler`` (failure counts in V1 training
metrics), ``openjudge.integrations.verl.lifecycle`` (closing at exit), ``openjudge.integrations.verl._gc_freeze``
(keeping full garbage collections off the worker's event loop, when asked) and
``openjudge.integrations.verl.group`` (group judging).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openjudge._lazy import lazy_exports
from openjudge.errors import SettingsError as SettingsError
from openjudge.integrations.scoring._keys import ExtraValue as ExtraValue
from openjudge.integrations.verl._functions import BaseOpenJudgeRewardFunction as BaseOpenJudgeRewardFunction
from openjudge.integrations.verl._functions import RewardResult as RewardResult
from openjudge.integrations.verl._functions import RewardSample as RewardSample
from openjudge.integrations.verl._settings import OpenJudgeVerlSettings as OpenJudgeVerlSettings

if TYPE_CHECKING or not lazy_exports(globals()):
    from openjudge.integrations.verl._reward_loop import OpenJudgeRewardManager as OpenJudgeRewardManager

    # Lazy too: it builds on the shared scorer (openjudge.integrations.scoring), which reads
    # this package's settings and keys.
    from openjudge.integrations.verl._score_function import compute_score as compute_score
    from openjudge.integrations.verl.legacy import (
        OpenJudgeLegacyRewardManager as OpenJudgeLegacyRewardManager,
    )

__all__ = [
    "BaseOpenJudgeRewardFunction",
    "ExtraValue",
    "OpenJudgeLegacyRewardManager",
    "OpenJudgeRewardManager",
    "OpenJudgeVerlSettings",
    "RewardResult",
    "RewardSample",
    "SettingsError",
    "compute_score",
]
