"""Aggregators: combine one sample's per-grader results into one result.

Scores are put on a common scale first: a grader that declares its range contributes
its normalised score (0 worst, 1 best). A grader without a range has no such scale, so
:class:`~openjudge.runner.grading_runner.GradingRunner` refuses a built-in aggregator that
would mix it with others (:func:`mixed_graders`); alone, it contributes its raw score.
An error in any input makes the aggregate an error too, unless ``on_error="skip"``.

With routing (``GraderConfig(when=...)``, a graders field), an aggregator is called with the
results of the graders that apply to the sample only: a grader absent from ``results`` does
not apply, and is left out (a weighted mean is over the graders that apply, weights
renormalised; a gate on a grader that does not apply is not checked). The runner does
not call an aggregator none of whose inputs applies: its result is
:class:`~openjudge.results.NotApplicable`. An aggregator may take an earlier aggregator's
result as an input by naming it in its weights or gates (a group of graders with its own
aggregator, mixed into a reward), and :class:`RoutedAggregator` applies one only to the
samples matching a condition.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from openjudge.results import GraderError, GraderResult, GraderScore, ScoreRange
from openjudge.runner._routing import Condition, When

__all__ = [
    "Aggregator",
    "AggregatorLike",
    "GateAggregator",
    "MinAggregator",
    "RoutedAggregator",
    "WeightedMeanAggregator",
    "WeightedSumAggregator",
    "aggregator_inputs",
    "mixed_graders",
]

_UNIT = ScoreRange(low=0.0, high=1.0)


@runtime_checkable
class Aggregator(Protocol):
    """Combines one sample's results (grader name -> result) into one result."""

    name: str

    def __call__(self, results: Mapping[str, GraderResult]) -> GraderResult: ...


AggregatorLike: TypeAlias = Aggregator | Callable[[Mapping[str, GraderResult]], GraderResult]


def _first_error(name: str, results: Mapping[str, GraderResult], keys: list[str]) -> GraderError | None:
    """The first failed input of ``keys`` (absent ones do not apply to the sample), as the aggregate's error."""
    for key in keys:
        r = results.get(key)
        if r is None:
            continue
        if isinstance(r, GraderError):
            return GraderError(
                name=name,
                kind=r.kind,
                message=f"input grader {key!r} failed: {r.message}",
                error_type=r.error_type,
            )
        if not isinstance(r, GraderScore):
            return GraderError(
                name=name, kind="invalid_input", message=f"grader {key!r} did not return a score"
            )
    return None


class WeightedMeanAggregator:
    """Weighted mean of (normalised) scores, over the graders that apply to the sample.

    Args:
        name: Result name.
        weights: Weight per grader name; graders not listed are left out. ``None``: all, equal.
            A listed grader absent from the results does not apply to the sample: the
            weights of the others are renormalised.
        on_error: ``"error"``: any failed input fails the aggregate. ``"skip"``: average the
            rest (weights renormalised); fails only if nothing is left.
    """

    def __init__(
        self,
        name: str = "weighted_mean",
        weights: Mapping[str, float] | None = None,
        *,
        on_error: Literal["error", "skip"] = "error",
    ) -> None:
        if weights is not None and any(w < 0 for w in weights.values()):
            raise ValueError("aggregator weights must be >= 0")
        self.name = name
        self.weights = dict(weights) if weights is not None else None
        self.on_error = on_error

    def __call__(self, results: Mapping[str, GraderResult]) -> GraderResult:
        weights = self.weights if self.weights is not None else dict.fromkeys(results, 1.0)
        keys = [key for key in weights if key in results]  # the others do not apply to this sample
        if self.on_error == "error":
            failed = _first_error(self.name, results, keys)
            if failed is not None:
                return failed
        total = 0.0
        weight_sum = 0.0
        for key in keys:
            r = results.get(key)
            if isinstance(r, GraderScore):
                total += weights[key] * r.normalized_score
                weight_sum += weights[key]
        if weight_sum == 0:
            return GraderError(name=self.name, kind="invalid_input", message="no scored input to aggregate")
        all_unit = all(
            isinstance(r, GraderScore) and r.score_range is not None for k in keys if (r := results.get(k))
        )
        return GraderScore(
            name=self.name,
            score=total / weight_sum,
            reason=f"weighted mean of {len(keys)} graders",
            score_range=_UNIT if all_unit else None,
        )


WeightedSumAggregator = WeightedMeanAggregator
"""OpenJudge's name for the weight-normalised mean."""


class MinAggregator:
    """The lowest (normalised) score: a sample is as good as its worst dimension (of those that apply)."""

    def __init__(self, name: str = "min") -> None:
        self.name = name

    def __call__(self, results: Mapping[str, GraderResult]) -> GraderResult:
        failed = _first_error(self.name, results, list(results))
        if failed is not None:
            return failed
        scores = [r.normalized_score for r in results.values() if isinstance(r, GraderScore)]
        if not scores:
            return GraderError(name=self.name, kind="invalid_input", message="no scored input to aggregate")
        return GraderScore(name=self.name, score=min(scores), reason="minimum score")


class GateAggregator:
    """Apply gates, then an inner aggregator.

    Each gate names a grader and the (normalised) score it must reach; if any gate
    fails the result is ``fail_score``. Example: "format must pass, then average". A gate
    whose grader does not apply to the sample (absent from the results) is not checked.

    Args:
        gates: Grader name -> minimum normalised score.
        then: The aggregator used when every gate passes.
        fail_score: The score of a sample that fails a gate.
    """

    def __init__(
        self,
        gates: Mapping[str, float],
        then: Aggregator,
        *,
        name: str = "gated",
        fail_score: float = 0.0,
    ) -> None:
        self.name = name
        self.gates = dict(gates)
        self.then = then
        self.fail_score = fail_score

    def __call__(self, results: Mapping[str, GraderResult]) -> GraderResult:
        failed = _first_error(self.name, results, list(self.gates))
        if failed is not None:
            return failed
        for key, minimum in self.gates.items():
            r = results.get(key)
            if isinstance(r, GraderScore) and r.normalized_score < minimum:
                return GraderScore(
                    name=self.name,
                    score=self.fail_score,
                    reason=f"gate {key!r} failed: {r.normalized_score:g} < {minimum:g}",
                )
        inner = self.then(results)
        if isinstance(inner, GraderScore):
            return inner.model_copy(update={"name": self.name})
        return inner


class RoutedAggregator:
    """An aggregator that applies only to the samples matching ``when``.

    Elsewhere the runner gives :class:`~openjudge.results.NotApplicable` for it without
    calling it: a group of graders with its aggregator, for one kind of row, e.g.
    ``RoutedAggregator(GateAggregator({"compiles": 1.0}, inner, name="code"), {"task": "code"})``.

    Args:
        inner: The aggregator.
        when: The condition, as for :class:`~openjudge.runner.GraderConfig` ``when``.

    Raises:
        ValueError: A malformed condition.
    """

    def __init__(self, inner: AggregatorLike, when: Condition) -> None:
        self.inner = inner
        self.name: str = (
            getattr(inner, "name", None) or getattr(inner, "__name__", None) or type(inner).__name__
        )
        self.when = When(when)

    def __call__(self, results: Mapping[str, GraderResult]) -> GraderResult:
        return self.inner(results)


def mixed_graders(aggregator: AggregatorLike, graders: list[str]) -> list[str]:
    """The graders (of ``graders``) whose scores a built-in aggregator puts on one scale.

    Names of earlier aggregators that it takes as inputs are included. Custom aggregators
    (any other callable) are not inspected: an empty list.
    """
    if isinstance(aggregator, RoutedAggregator):
        return mixed_graders(aggregator.inner, graders)
    if isinstance(aggregator, WeightedMeanAggregator):
        return list(aggregator.weights) if aggregator.weights is not None else list(graders)
    if isinstance(aggregator, MinAggregator):
        return list(graders)
    if isinstance(aggregator, GateAggregator):
        return [*dict.fromkeys([*aggregator.gates, *mixed_graders(aggregator.then, graders)])]
    return []


def aggregator_inputs(aggregator: AggregatorLike, graders: list[str]) -> list[str]:
    """The results an aggregator reads: a built-in's graders (and earlier aggregates) by
    :func:`mixed_graders`; every grader of ``graders`` for an aggregator of your own."""
    if isinstance(aggregator, RoutedAggregator):
        return aggregator_inputs(aggregator.inner, graders)
    if isinstance(aggregator, WeightedMeanAggregator | MinAggregator | GateAggregator):
        return mixed_graders(aggregator, graders)
    return list(graders)
