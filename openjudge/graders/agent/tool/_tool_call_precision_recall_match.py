"""Precision or recall of the tool calls an agent made against reference calls.

Calls are compared as a multiset of keys (the tool name, or the name plus canonical
arguments when ``match_arguments`` is set)::

    true_positives = Σ_key min(count_predicted(key), count_reference(key))
    precision      = true_positives / |predicted|     (1.0 if both lists are empty, else 0.0 if none predicted)
    recall         = true_positives / |reference|     (1.0 if both lists are empty, else 0.0 if no reference)

This is OpenJudge's ``ToolCallPrecisionRecallMatchGrader`` formula; unlike OpenJudge, arguments
that are not JSON are compared as written instead of as ``{}``, and the calls may also be
read from a trajectory (``messages``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import JsonValue

from openjudge.graders.agent._results import UNIT_RANGE
from openjudge.graders.agent._trajectory_parsing import Message
from openjudge.graders.agent.tool._tool_calls import ToolCallSpec, normalize_calls, predicted_calls
from openjudge.graders.base_grader import BaseGrader, grader_boundary
from openjudge.graders.blame import shown
from openjudge.results import GraderError, GraderScore

__all__ = ["MetricType", "ToolCallPrecisionRecallMatchGrader"]

MetricType = Literal["precision", "recall"]


def _cut(keys: Iterable[str]) -> list[JsonValue]:
    """Keys for metadata, each cut to 2,000 characters (a key holds the call's arguments)."""
    return [shown(key, 2000) for key in keys]


def _ratio(hits: int, total: int, other_total: int) -> float:
    if total:
        return hits / total
    return 1.0 if other_total == 0 else 0.0


class ToolCallPrecisionRecallMatchGrader(BaseGrader):
    """Score the predicted tool calls against reference calls by precision or recall, in [0, 1].

    Order does not matter here (see ``ToolCallStepSequenceMatchGrader`` for order).
    Give the predicted calls either as ``tool_calls`` or as a trajectory in ``messages``
    (every assistant tool call counts, answered or not), never both.

    Metadata: ``metric_type``, ``match_arguments``, ``precision``, ``recall``, ``f1``,
    ``true_positives``, ``total_predicted``, ``total_reference``, ``matched_keys`` (in order
    of first prediction), ``missing_keys`` and ``unexpected_keys`` (with repeats),
    ``predicted_tools`` and ``reference_tools`` (``{"name", "arguments"}`` each).

    Args:
        metric_type: ``"recall"`` (share of reference calls that were made) or
            ``"precision"`` (share of made calls that were expected).
        match_arguments: Also require equal arguments (compared as canonical JSON).
        name: Result name.
    """

    default_name = "tool_call_precision_recall_match"
    default_score_range = UNIT_RANGE

    def __init__(
        self, metric_type: MetricType = "recall", match_arguments: bool = False, *, name: str = ""
    ) -> None:
        if metric_type not in ("precision", "recall"):
            raise ValueError(f"metric_type must be 'precision' or 'recall', got {metric_type!r}")
        super().__init__(name=name, description="Tool call precision/recall against reference calls")
        self.metric_type: MetricType = metric_type
        self.match_arguments = bool(match_arguments)

    @grader_boundary
    async def aevaluate(
        self,
        *,
        reference_tool_calls: Sequence[ToolCallSpec],
        tool_calls: Sequence[ToolCallSpec] | None = None,
        messages: Sequence[Message] | None = None,
    ) -> GraderScore | GraderError:
        """Grade one set of predicted calls.

        Args:
            reference_tool_calls: The expected calls.
            tool_calls: The calls made (give this or ``messages``).
            messages: An OpenAI-format trajectory to read the calls from.
        """
        predicted = predicted_calls(tool_calls, messages)
        reference = normalize_calls(reference_tool_calls, "reference_tool_calls")
        predicted_keys = [call.key(self.match_arguments) for call in predicted]
        reference_keys = [call.key(self.match_arguments) for call in reference]
        predicted_counts = Counter(predicted_keys)
        reference_counts = Counter(reference_keys)
        common = predicted_counts & reference_counts
        true_positives = sum(common.values())
        precision = _ratio(true_positives, len(predicted), len(reference))
        recall = _ratio(true_positives, len(reference), len(predicted))
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        score = precision if self.metric_type == "precision" else recall
        denominator = len(predicted) if self.metric_type == "precision" else len(reference)
        mode = "strict (name + arguments)" if self.match_arguments else "loose (name only)"
        metadata: dict[str, JsonValue] = {
            "metric_type": self.metric_type,
            "match_arguments": self.match_arguments,
            "precision": precision,
            "recall": recall,
            "f1": f1,
            "true_positives": true_positives,
            "total_predicted": len(predicted),
            "total_reference": len(reference),
            "matched_keys": _cut(common),
            "missing_keys": _cut((reference_counts - predicted_counts).elements()),
            "unexpected_keys": _cut((predicted_counts - reference_counts).elements()),
            "predicted_tools": [call.to_json() for call in predicted],
            "reference_tools": [call.to_json() for call in reference],
        }
        return GraderScore(
            name=self.name,
            score=score,
            reason=f"Tool call {self.metric_type}: {score:.3f} ({true_positives}/{denominator}) using {mode} matching",
            metadata=metadata,
            score_range=self.score_range,
        )
