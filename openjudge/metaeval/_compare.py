"""Comparison mode: two judge configs on the same labelled items, "is my new prompt better?".

Both runs judge the same items, so the comparison is paired: each bootstrap resample
draws items once and computes a metric for both configs on them; the interval of the
difference (candidate minus baseline) comes from those paired differences, which is far
tighter than comparing two independent intervals. Only items both configs judged count.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from openjudge.metaeval._metrics import statistics
from openjudge.metaeval._report import Estimate
from openjudge.metaeval._runs import GraderRun, MetaEvalRun
from openjudge.metaeval._stats import Interval, difference_interval

__all__ = ["COMPARED_METRICS", "ComparisonReport", "GraderComparison", "MetricDifference", "compare_runs"]

COMPARED_METRICS: dict[str, bool] = {
    "pairwise_accuracy": True,
    "three_way_agreement": True,
    "spearman": True,
    "kendall": True,
    "exact": True,
    "within_one": True,
    "flip_rate": False,
    "longer_wins_rate": False,
    "verdict_change_rate": False,
}
"""The metrics compared, and whether higher is better."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MetricDifference(_Model):
    """One metric for both configs on the items both judged.

    Attributes:
        metric: The metric's field name in the report.
        higher_is_better: Its direction.
        baseline: The baseline on the shared items.
        candidate: The candidate on the shared items.
        difference: Candidate minus baseline, with its paired-bootstrap interval.
        verdict: ``candidate better`` or ``candidate worse`` when the interval excludes 0,
            else ``no clear difference`` (``-`` without an interval).
    """

    metric: str
    higher_is_better: bool
    baseline: Estimate
    candidate: Estimate
    difference: Estimate
    verdict: str


class GraderComparison(_Model):
    """The compared metrics of one grader of each config."""

    baseline_grader: str
    candidate_grader: str
    differences: list[MetricDifference]


class ComparisonReport(_Model):
    """A paired comparison of two configs.

    Attributes:
        baseline: The baseline's label (its config file).
        candidate: The candidate's label.
        bootstrap: Resamples behind each interval.
        seed: The resampling seed.
        graders: One comparison per pair of graders.
    """

    baseline: str
    candidate: str
    bootstrap: int
    seed: int
    graders: list[GraderComparison]


def _estimate(found: Interval) -> Estimate:
    return Estimate(value=found.value, low=found.low, high=found.high, n=found.n)


def _verdict(difference: Interval, higher_is_better: bool) -> str:
    if difference.low is None or difference.high is None:
        return "-"
    if difference.low > 0:
        return "candidate better" if higher_is_better else "candidate worse"
    if difference.high < 0:
        return "candidate worse" if higher_is_better else "candidate better"
    return "no clear difference"


def _pairs(baseline: MetaEvalRun, candidate: MetaEvalRun) -> list[tuple[GraderRun, GraderRun]]:
    by_name = {g.name: g for g in candidate.graders}
    shared = [(g, by_name[g.name]) for g in baseline.graders if g.name in by_name]
    if not shared and len(baseline.graders) == 1 and len(candidate.graders) == 1:
        return [(baseline.graders[0], candidate.graders[0])]
    return shared


def compare_runs(
    baseline: MetaEvalRun,
    candidate: MetaEvalRun,
    *,
    graders: Sequence[tuple[str, str]] | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
) -> ComparisonReport:
    """Compare two runs on the same labelled items.

    Args:
        baseline: The current config's run.
        candidate: The new config's run.
        graders: ``(baseline grader, candidate grader)`` pairs to compare; default: the
            graders with the same name in both, or the only grader of each.
        bootstrap: Resamples.
        seed: Resampling seed.

    Raises:
        ValueError: The runs are not over the same items, or a named grader is missing.
    """
    ids_a = [item.id for item in baseline.data.items]
    ids_b = [item.id for item in candidate.data.items]
    if ids_a != ids_b:
        raise ValueError("the two runs must judge the same labelled items in the same order")
    if graders is None:
        pairs = _pairs(baseline, candidate)
    else:
        found_a = {g.name: g for g in baseline.graders}
        found_b = {g.name: g for g in candidate.graders}
        missing = [a for a, _ in graders if a not in found_a] + [b for _, b in graders if b not in found_b]
        if missing:
            raise ValueError(f"no grader named {missing[0]!r} in the runs")
        pairs = [(found_a[a], found_b[b]) for a, b in graders]
    compared: list[GraderComparison] = []
    for grader_a, grader_b in pairs:
        stats_a, stats_b = statistics(baseline, grader_a), statistics(candidate, grader_b)
        differences = []
        for metric, higher_is_better in COMPARED_METRICS.items():
            if metric not in stats_a or metric not in stats_b:
                continue
            a, b, diff = difference_interval(stats_a[metric], stats_b[metric], resamples=bootstrap, seed=seed)
            differences.append(
                MetricDifference(
                    metric=metric,
                    higher_is_better=higher_is_better,
                    baseline=_estimate(a),
                    candidate=_estimate(b),
                    difference=_estimate(diff),
                    verdict=_verdict(diff, higher_is_better),
                )
            )
        compared.append(
            GraderComparison(
                baseline_grader=grader_a.name, candidate_grader=grader_b.name, differences=differences
            )
        )
    return ComparisonReport(
        baseline=baseline.label or "baseline",
        candidate=candidate.label or "candidate",
        bootstrap=bootstrap,
        seed=seed,
        graders=compared,
    )
