"""Graders for agent trajectories (OpenAI-format message lists with tool calls).

Rule graders, each importable from its own module (this package imports nothing):

* ``action.action_loop.ActionLoopDetectionGrader``: repeated actions.
* ``observation.observation_information_gain.ObservationInformationGainGrader``: redundant observations.
* ``tool.tool_call_precision_recall_match.ToolCallPrecisionRecallMatchGrader``: calls vs reference calls.
* ``tool.tool_call_step_sequence_match.ToolCallStepSequenceMatchGrader``: call order vs reference order.
* ``trajectory.trajectory_step_efficiency.TrajectoryStepEfficiencyGrader``: redundant steps.

Shared parsing lives in :mod:`openjudge.graders.agent._trajectory_parsing`.
"""
