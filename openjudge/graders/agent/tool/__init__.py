"""Rule graders comparing tool calls with reference calls.

:class:`~openjudge.graders.ToolCallPrecisionRecallMatchGrader` (:mod:`._tool_call_precision_recall_match`)
and :class:`~openjudge.graders.ToolCallStepSequenceMatchGrader` (:mod:`._tool_call_step_sequence_match`),
over the tool calls :mod:`._tool_calls` reads from a trajectory.
"""
