"""Trajectory-level agent graders.

``trajectory_step_efficiency.TrajectoryStepEfficiencyGrader`` (rule) and
``trajectory_comprehensive.TrajectoryComprehensiveGrader`` (LLM judge).
"""
