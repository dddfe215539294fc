"""Build a config's aggregators, and check that each mixes only graders on a common scale.

An aggregator may read an earlier one by naming it in its weights or gates (a group of
graders with its own aggregator, mixed into a reward): that aggregate's value is on the
0-1 scale when it is a built-in over graders (or aggregates) that all are; ``when`` makes
an aggregator apply only to the rows matching it (:class:`RoutedAggregator`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from openjudge.config._custom import is_import_path, load_class
from openjudge.config._loader import ConfigError
from openjudge.config._locations import Located
from openjudge.config._params import grader_arguments
from openjudge.config._spec import AggregatorSpec, JobConfig
from openjudge.graders.base_grader import BaseGrader
from openjudge.results import GraderMode, GraderResult, ScoreRange
from openjudge.runner.aggregators import (
    Aggregator,
    GateAggregator,
    MinAggregator,
    RoutedAggregator,
    WeightedMeanAggregator,
    mixed_graders,
)

__all__ = ["build_aggregators", "declared_range", "scale_problems"]


class _NamedAggregator:
    """A user's aggregator under the config's name for it (whatever ``name`` it sets itself)."""

    def __init__(self, name: str, inner: Callable[[Mapping[str, GraderResult]], GraderResult]) -> None:
        self.name = name
        self.inner = inner

    def __call__(self, results: Mapping[str, GraderResult]) -> GraderResult:
        return self.inner(results)


def _custom_aggregator(spec: AggregatorSpec, i: int, where: Located, base_dir: Path | None) -> Aggregator:
    cls = load_class(spec.type, base_dir, what="aggregator")
    params, found = grader_arguments(
        cls, spec.params, where, ("aggregators", i, "params"), injected=frozenset({"name"})
    )
    if found:
        raise ConfigError(found)
    name = spec.result_name
    if "name" in inspect.signature(cls).parameters:
        params["name"] = name
    return _NamedAggregator(name, cls(**params))


def _aggregator(spec: AggregatorSpec) -> Aggregator:
    if spec.type == "weighted_mean":
        return WeightedMeanAggregator(spec.name or "weighted_mean", spec.weights, on_error=spec.on_error)
    if spec.type == "min":
        return MinAggregator(spec.name or "min")
    inner = WeightedMeanAggregator(weights=spec.weights, on_error=spec.on_error)
    return GateAggregator(spec.gates or {}, inner, name=spec.name or "gate", fail_score=spec.fail_score)


def _routed(spec: AggregatorSpec, aggregator: Aggregator) -> Aggregator:
    return aggregator if spec.when is None else RoutedAggregator(aggregator, spec.when)


def build_aggregators(
    config: JobConfig, where: Located, imports_from: Path | None
) -> tuple[list[Aggregator], list[str]]:
    """The config's aggregators, in order, and the problems of those that could not be built."""
    aggregators: list[Aggregator] = []
    problems: list[str] = []
    for i, spec in enumerate(config.aggregators):
        if not is_import_path(spec.type):
            aggregators.append(_routed(spec, _aggregator(spec)))
            continue
        try:
            aggregators.append(_routed(spec, _custom_aggregator(spec, i, where, imports_from)))
        except ConfigError as exc:
            problems += exc.problems
        except Exception as exc:  # whatever its constructor raises on bad params
            problems.append(where.at(("aggregators", i), f"cannot build {spec.type!r}: {exc}"))
    return aggregators, problems


def scale_problems(
    config: JobConfig,
    aggregators: Sequence[Aggregator],
    graders: Mapping[str, BaseGrader],
    where: Located,
    *,
    members_scored: bool,
    unbuilt: Mapping[str, tuple[GraderMode, ScoreRange | None]] | None = None,
) -> list[str]:
    """Aggregators may only mix graders whose scores can be put on one 0-1 scale.

    ``aggregators`` are built from ``config.aggregators``, in order. With
    ``members_scored`` (group judging), a listwise grader's group result is split into
    one 0-1 score per member before aggregation, so it mixes like any scored grader.
    """
    problems: list[str] = []
    unit: dict[str, bool] = {}  # aggregate name -> whether its values are on the 0-1 scale
    for i, (agg, built) in enumerate(zip(config.aggregators, aggregators, strict=True)):
        label = f"{agg.type} aggregator {agg.name or agg.type!r}"
        instead = "" if agg.type == "min" else ", or list the graders to mix in 'weights'"
        mixed = mixed_graders(built, list(config.graders))
        unit[agg.result_name] = _on_unit_scale(agg, mixed, graders, unit, unbuilt)
        if agg.type != "gate" and len(mixed) < 2:
            continue  # one grader: nothing to put on a common scale (a gate still reads its gates' scale)
        for name in mixed:
            grader = graders.get(name)
            if name in unit and grader is None:  # an earlier aggregate
                if not unit[name]:
                    problems.append(
                        where.at(
                            ("aggregators", i),
                            f"{label} reads aggregate {name!r}, whose values are not on the 0-1 scale (an "
                            "aggregator of your own, a gate whose fail_score is outside [0, 1], or one that "
                            "reads a grader without a score range): mix graders and built-in aggregates of "
                            "ranged graders only",
                        )
                    )
                continue
            if grader is not None:
                mode, score_range = grader.mode, grader.score_range
            elif unbuilt is not None and name in unbuilt:  # failed to build: judge by what it declares
                mode, score_range = unbuilt[name]
            else:
                continue  # its type is unknown; already reported
            at = (
                ("aggregators", i, "weights", name)
                if agg.weights and name in agg.weights
                else ("aggregators", i)
            )
            if mode is GraderMode.LISTWISE:
                if members_scored:
                    continue
                problems.append(
                    where.at(
                        at,
                        f"{label} cannot use grader {name!r}: it returns ranks, not scores{instead}",
                    )
                )
            elif score_range is None:
                problems.append(
                    where.at(
                        at,
                        f"{label} mixes grader {name!r}, which declares no score range, so its raw scores "
                        f"cannot be put on the 0-1 scale of the others: set graders.{name}.params.score_range "
                        f"(e.g. [1, 5]){instead}",
                    )
                )
    return problems


def _on_unit_scale(
    agg: AggregatorSpec,
    mixed: Sequence[str],
    graders: Mapping[str, BaseGrader],
    unit: Mapping[str, bool],
    unbuilt: Mapping[str, tuple[GraderMode, ScoreRange | None]] | None,
) -> bool:
    """Whether an aggregate's values lie in [0, 1]: a built-in over inputs that all declare a
    range (or are such aggregates), and, for a gate, a ``fail_score`` in [0, 1]."""
    if is_import_path(agg.type) or (agg.type == "gate" and not 0.0 <= agg.fail_score <= 1.0):
        return False
    for name in mixed:
        if name in unit and name not in graders:
            if not unit[name]:
                return False
            continue
        grader = graders.get(name)
        if grader is not None:
            declared = grader.score_range
        elif unbuilt is not None and name in unbuilt:
            declared = unbuilt[name][1]
        else:
            continue  # its type is unknown: already reported
        if declared is None:
            return False
    return True


def declared_range(
    params: Mapping[str, object], cls: type[BaseGrader]
) -> tuple[GraderMode, ScoreRange | None]:
    """A grader's mode and score range as its config declares them, without building it (for
    types whose range is their ``params``', see ``GraderType.range_from_params``)."""
    try:
        declared = ScoreRange.coerce(params.get("score_range"))  # ValueError if malformed
    except ValueError:
        declared = None  # malformed: reported by the parameter check
    return GraderMode.POINTWISE, declared if declared is not None else cls.default_score_range
