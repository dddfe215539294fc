"""Rule graders comparing tool calls with reference calls.

``tool_call_precision_recall_match.ToolCallPrecisionRecallMatchGrader`` and
``tool_call_step_sequence_match.ToolCallStepSequenceMatchGrader``.
"""
