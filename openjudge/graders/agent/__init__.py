"""Graders for agent trajectories (OpenAI-format message lists with tool calls).

Rule graders, each importable from its own module (this package imports nothing):

* ``action.action_loop.ActionLoopDetectionGrader``: repeated actions.
* ``observation.observation_information_gain.ObservationInformationGainGrader``: redundant observations.
* ``tool.tool_call_precision_recall_match.ToolCallPrecisionRecallMatchGrader``: calls vs reference calls.
* ``tool.tool_call_step_sequence_match.ToolCallStepSequenceMatchGrader``: call order vs reference order.
* ``trajectory.trajectory_step_efficiency.TrajectoryStepEfficiencyGrader``: redundant steps.

Shared parsing lives in :mod:`openjudge.graders.agent._trajectory_parsing`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openjudge._lazy import lazy_exports

# Lazy: the seed's paths (``action.action_loop``, ...) import this package first, and a
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
