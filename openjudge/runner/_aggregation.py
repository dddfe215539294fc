"""A runner's aggregators bound to its graders: what each reads, and each sample's aggregates.

Aggregators run in order, each over the results it reads (:func:`aggregator_inputs`): graders,
and earlier aggregates it names in its weights or gates. With routing, only the inputs that
apply to the sample are passed; an aggregate none of whose inputs applies, or a
:class:`RoutedAggregator` whose condition does not hold, is
:class:`~openjudge.results.NotApplicable` without being called.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from openjudge.graders.base_grader import error_from_exception
from openjudge.results import GraderMode, GraderResult, NotApplicable, RowResult
from openjudge.runner._grader_config import GraderConfig
from openjudge.runner.aggregators import (
    AggregatorLike,
    GateAggregator,
    MinAggregator,
    RoutedAggregator,
    WeightedMeanAggregator,
    aggregator_inputs,
    mixed_graders,
)

__all__ = ["Aggregation", "named_aggregators"]

_BUILT_IN = (RoutedAggregator, WeightedMeanAggregator, MinAggregator, GateAggregator)


def named_aggregators(
    aggregators: AggregatorLike | Sequence[AggregatorLike] | None, graders: Mapping[str, object]
) -> dict[str, AggregatorLike]:
    """Aggregators by result name (``name``, else ``__name__``, else the class name).

    Raises:
        ValueError: A name used by a grader or by another aggregator.
    """
    if aggregators is None:
        items: list[AggregatorLike] = []
    elif isinstance(aggregators, Sequence):
        items = list(aggregators)
    else:
        items = [aggregators]
    named: dict[str, AggregatorLike] = {}
    for agg in items:
        name = getattr(agg, "name", None) or getattr(agg, "__name__", None) or type(agg).__name__
        if name in graders or name in named:
            raise ValueError(f"aggregator name {name!r} is already used by a grader or another aggregator")
        named[name] = agg
    return named


class Aggregation:
    """The aggregators of a runner, checked against its graders.

    Args:
        aggregators: By result name, in order (:func:`named_aggregators`).
        graders: The runner's graders.
        routed: Whether the runner routes graders (some results may be ``NotApplicable``).

    Raises:
        ValueError: An aggregator mixes a grader without a score range with others, or a
            built-in one reads a name that is neither a grader nor an aggregator before it.
    """

    def __init__(
        self, aggregators: Mapping[str, AggregatorLike], graders: Mapping[str, GraderConfig], *, routed: bool
    ) -> None:
        self.aggregators = dict(aggregators)
        _check_scales(self.aggregators, graders)
        names = list(graders)
        self.inputs: dict[str, list[str]] = {}
        """Aggregator name -> the results it reads."""
        for name, agg in self.aggregators.items():
            inputs = aggregator_inputs(agg, names)
            unknown = [k for k in inputs if k not in graders and k not in self.inputs]
            if unknown and isinstance(agg, _BUILT_IN):
                raise ValueError(
                    f"aggregator {name!r} reads {unknown[0]!r}, which is neither a grader nor an "
                    f"aggregator before it (graders: {', '.join(names)}; "
                    f"aggregators before it: {', '.join(self.inputs) or 'none'})"
                )
            self.inputs[name] = inputs
        # The usual case: nothing routed, every aggregator reads graders only. Each is then
        # called with the sample's results as they are.
        self._plain = not routed and all(
            not isinstance(agg, RoutedAggregator) and all(k in graders for k in self.inputs[name])
            for name, agg in self.aggregators.items()
        )

    def chain(self, name: str) -> list[AggregatorLike]:
        """Aggregator ``name`` and the earlier aggregators it reads (directly or not), in order.

        Raises:
            KeyError: No aggregator of that name.
        """
        if name not in self.aggregators:
            raise KeyError(name)
        needed = {name}
        for agg_name in reversed(list(self.aggregators)):
            if agg_name in needed:
                needed.update(k for k in self.inputs[agg_name] if k in self.aggregators)
        return [agg for agg_name, agg in self.aggregators.items() if agg_name in needed]

    def apply(self, results: Mapping[str, RowResult], sample: Any) -> dict[str, RowResult]:
        """Every aggregate of one sample (an aggregator that raises gives its error)."""
        out: dict[str, RowResult] = {}
        if self._plain:  # nothing routed, so ``results`` holds grader results only
            plain: Mapping[str, Any] = results
            for name, agg in self.aggregators.items():
                try:
                    out[name] = agg(plain)
                except Exception as exc:
                    out[name] = error_from_exception(name, exc)
            return out
        available: dict[str, RowResult] = dict(results)
        for name, agg in self.aggregators.items():
            out[name] = available[name] = self._one(name, agg, available, sample)
        return out

    def _one(
        self, name: str, agg: AggregatorLike, available: Mapping[str, RowResult], sample: Any
    ) -> RowResult:
        """One aggregate over the inputs that apply; not applicable when none of them does."""
        try:
            if isinstance(agg, RoutedAggregator) and (why := agg.when.mismatch(sample)) is not None:
                return NotApplicable(name=name, reason=why)
            inputs: dict[str, GraderResult] = {}
            left_out = False
            for key in self.inputs[name]:
                r = available.get(key)
                if isinstance(r, NotApplicable):
                    left_out = True
                elif r is not None:
                    inputs[key] = r
            if left_out and not inputs:
                return NotApplicable(name=name, reason="none of its inputs applies to this sample")
            return agg(inputs)
        except Exception as exc:
            return error_from_exception(name, exc)


def _check_scales(aggregators: Mapping[str, AggregatorLike], graders: Mapping[str, GraderConfig]) -> None:
    """Refuse an aggregator that would mix raw scores of unknown range with others."""
    for name, agg in aggregators.items():
        mixed = [g for g in mixed_graders(agg, list(graders)) if g in graders]
        if len(mixed) < 2:
            continue
        for key in mixed:
            grader = graders[key].grader
            if grader.mode is GraderMode.POINTWISE and grader.score_range is None:
                raise ValueError(
                    f"aggregator {name!r} mixes grader {key!r}, which declares no score range, with "
                    "other graders: its raw scores cannot be put on their 0-1 scale. Give it one "
                    f"(e.g. score_range=(1, 5)), or leave {key!r} out of the aggregator's weights"
                )
