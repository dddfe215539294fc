"""Graders for agent trajectories (OpenAI-format message lists with tool calls).

Each is exported here and by :mod:`openjudge.graders` (``from openjudge.graders import
ToolCallPrecisionRecallMatchGrader``):

* :class:`~openjudge.graders.ActionLoopDetectionGrader`: repeated actions (rule).
* :class:`~openjudge.graders.ObservationInformationGainGrader`: redundant observations (rule).
* :class:`~openjudge.graders.ToolCallPrecisionRecallMatchGrader`: calls vs reference calls (rule).
* :class:`~openjudge.graders.ToolCallStepSequenceMatchGrader`: call order vs reference order (rule).
* :class:`~openjudge.graders.TrajectoryStepEfficiencyGrader`: redundant steps (rule).
* :class:`~openjudge.graders.TrajectoryComprehensiveGrader`: the whole trajectory (LLM judge).

The subpackages group them by what they read; three modules keep the import paths of
OpenJudge's guide (``action.action_loop``, ``observation.observation_information_gain``,
``trajectory.trajectory_comprehensive``). Shared parsing: :mod:`._trajectory_parsing`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openjudge._lazy import lazy_exports

# Lazy: OpenJudge's guide paths (``action.action_loop``, ...) import this package first, and a
# rule grader must not load the LLM judge's modules.
if TYPE_CHECKING or not lazy_exports(globals()):
    from openjudge.graders.agent.action.action_loop import (
        ActionLoopDetectionGrader as ActionLoopDetectionGrader,
    )
    from openjudge.graders.agent.observation.observation_information_gain import (
        ObservationInformationGainGrader as ObservationInformationGainGrader,
    )
    from openjudge.graders.agent.tool._tool_call_precision_recall_match import (
        ToolCallPrecisionRecallMatchGrader as ToolCallPrecisionRecallMatchGrader,
    )
    from openjudge.graders.agent.tool._tool_call_step_sequence_match import (
        ToolCallStepSequenceMatchGrader as ToolCallStepSequenceMatchGrader,
    )
    from openjudge.graders.agent.trajectory._trajectory_step_efficiency import (
        TrajectoryStepEfficiencyGrader as TrajectoryStepEfficiencyGrader,
    )
    from openjudge.graders.agent.trajectory.trajectory_comprehensive import (
        TrajectoryComprehensiveGrader as TrajectoryComprehensiveGrader,
    )

__all__ = [
    "ActionLoopDetectionGrader",
    "ObservationInformationGainGrader",
    "ToolCallPrecisionRecallMatchGrader",
    "ToolCallStepSequenceMatchGrader",
    "TrajectoryComprehensiveGrader",
    "TrajectoryStepEfficiencyGrader",
]
