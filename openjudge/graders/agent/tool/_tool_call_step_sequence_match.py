"""How well the order of an agent's tool calls follows a reference order.

With ``P`` the predicted sequence of call keys (tool names, or names plus canonical
arguments when ``match_arguments`` is set), ``R`` the reference sequence and ``L`` the
length of their longest common subsequence::

    score = 2·L / (|P| + |R|)          (1.0 when both are empty)

This is the harmonic mean of ``L/|P|`` (how much of what was done was on the reference
path, in order) and ``L/|R|`` (how much of the reference path was followed, in order).
It is 1.0 exactly when the sequences are equal; a missing, extra or out-of-order step
lowers it. (This is this SDK's rule grader, not OpenJudge's per-step F1 algorithm.)
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import JsonValue

from openjudge.graders.agent._results import UNIT_RANGE
from openjudge.graders.agent._trajectory_parsing import Message
from openjudge.graders.agent.tool._tool_calls import ToolCallSpec, normalize_calls, predicted_calls
from openjudge.graders.base_grader import BaseGrader, grader_boundary
from openjudge.results import GraderError, GraderScore

__all__ = ["ToolCallStepSequenceMatchGrader", "lcs_length"]


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of ``a`` and ``b``.

    Bit-parallel (Allison–Dix / Hyyrö): one integer holds a row of the dynamic program as
    bits, so the cost is O(|a| · |b| / 64) machine words rather than |a| · |b| steps in Python.
    """
    if not a or not b:
        return 0
    positions: dict[str, int] = {}
    for j, item in enumerate(b):
        positions[item] = positions.get(item, 0) | (1 << j)
    full = (1 << len(b)) - 1
    row = full
    for item in a:
        matches = row & positions.get(item, 0)
        row = ((row + matches) | (row - matches)) & full
    return len(b) - row.bit_count()


class ToolCallStepSequenceMatchGrader(BaseGrader):
    """Score the order of the tool calls made against a reference order, in [0, 1].

    The formula is in the module docstring. Give the predicted calls either as
    ``tool_calls`` or as a trajectory in ``messages`` (every assistant tool call counts,
    in order, answered or not), never both. ``reference_tool_calls`` may also be a list
    of steps (lists of parallel calls), as in OpenJudge; steps are flattened in order.

    Metadata: ``lcs_length``, ``sequence_precision`` (``L/|P|``), ``sequence_recall``
    (``L/|R|``), ``predicted_sequence``, ``reference_sequence`` (the keys compared) and
    ``match_arguments``.

    Args:
        match_arguments: Compare calls by name and canonical arguments, not name only.
        name: Result name.
    """

    default_name = "tool_call_step_sequence_match"
    default_score_range = UNIT_RANGE

    def __init__(self, match_arguments: bool = False, *, name: str = "") -> None:
        super().__init__(name=name, description="Order of tool calls against a reference order")
        self.match_arguments = bool(match_arguments)

    @grader_boundary
    async def aevaluate(
        self,
        *,
        reference_tool_calls: Sequence[ToolCallSpec | Sequence[ToolCallSpec]],
        tool_calls: Sequence[ToolCallSpec] | None = None,
        messages: Sequence[Message] | None = None,
    ) -> GraderScore | GraderError:
        """Grade one sequence of calls.

        Args:
            reference_tool_calls: The expected calls in order (or a list of steps).
            tool_calls: The calls made, in order (give this or ``messages``).
            messages: An OpenAI-format trajectory to read the calls from.
        """
        predicted = [call.key(self.match_arguments) for call in predicted_calls(tool_calls, messages)]
        reference = [
            call.key(self.match_arguments)
            for call in normalize_calls(reference_tool_calls, "reference_tool_calls", allow_steps=True)
        ]
        common = lcs_length(predicted, reference)
        total = len(predicted) + len(reference)
        score = 2 * common / total if total else 1.0
        precision = common / len(predicted) if predicted else float(not reference)
        recall = common / len(reference) if reference else float(not predicted)
        metadata: dict[str, JsonValue] = {
            "lcs_length": common,
            "sequence_precision": precision,
            "sequence_recall": recall,
            "predicted_sequence": list[JsonValue](predicted),
            "reference_sequence": list[JsonValue](reference),
            "match_arguments": self.match_arguments,
        }
        return GraderScore(
            name=self.name,
            score=score,
            reason=(
                f"Tool call sequence match: {score:.3f} (longest common subsequence {common} of "
                f"{len(predicted)} predicted and {len(reference)} reference steps)"
            ),
            metadata=metadata,
            score_range=self.score_range,
        )
