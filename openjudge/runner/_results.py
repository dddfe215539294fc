"""What the runner returns: results per grader, or per sample when streaming."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from openjudge.results import RowResult, TokenUsage

__all__ = ["RunnerResult", "SampleResult"]


class RunnerResult(dict[str, list[RowResult]]):
    """Results per grader (and per aggregator) name, in dataset order.

    A grader that does not apply to a sample (routing) has a
    :class:`~openjudge.results.NotApplicable` in that sample's place.

    Attributes:
        usage: Token usage summed per grader name.
    """

    usage: dict[str, TokenUsage]

    def __init__(self) -> None:
        super().__init__()
        self.usage = {}

    def __repr__(self) -> str:
        # Bounded: Python 3.11's asyncio.run formats the main task's result (a SIGINT
        # handler check), and a full repr of a large run cost more than grading it.
        columns = ", ".join(
            f"{name!r}: [{', '.join(map(repr, results[:_SHOWN]))}"
            f"{f', ... {len(results) - _SHOWN:,} more' if len(results) > _SHOWN else ''}]"
            for name, results in self.items()
        )
        return f"{type(self).__name__}({{{columns}}})"


_SHOWN = 3


@dataclass(frozen=True, slots=True)
class SampleResult:
    """One sample's results, as :meth:`~openjudge.runner.GradingRunner.astream` delivers them.

    Attributes:
        index: Position of the sample in the input.
        sample: The sample itself.
        results: Grader name -> result (:class:`~openjudge.results.NotApplicable` where
            routing leaves the grader out).
        aggregates: Aggregator name -> result (likewise).
    """

    index: int
    sample: Any
    results: Mapping[str, RowResult]
    aggregates: Mapping[str, RowResult] = field(default_factory=dict)
