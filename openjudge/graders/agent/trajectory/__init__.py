"""Trajectory-level agent graders.

:class:`~openjudge.graders.TrajectoryStepEfficiencyGrader` (rule, :mod:`._trajectory_step_efficiency`)
and :class:`~openjudge.graders.TrajectoryComprehensiveGrader` (LLM judge; its module,
:mod:`.trajectory_comprehensive`, keeps the import path of OpenJudge's guide).
"""
