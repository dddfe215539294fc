"""Graders for agent trajectories (OpenAI-format message lists with tool calls).

Each is exported by :mod:`openjudge.graders` (``from openjudge.graders import
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
