"""From a grader's judgements to named statistics, and from those to a report.

:func:`statistics` defines each metric once, over labelled items (the bootstrap unit), so
the report and the paired comparison of two configs compute exactly the same thing.
Verdicts and scores are those of the first repeat in the order stored; the other
repeats only feed the self-consistency metric, so figures do not depend on ``K``.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from openjudge.metaeval._headline import headline_statistics
from openjudge.metaeval._items import PairwiseSet, PointwiseSet
from openjudge.metaeval._readings import readings
from openjudge.metaeval._report import (
    Agreement,
    BenchmarkFigure,
    Consistency,
    Cost,
    DataSummary,
    Estimate,
    GraderReport,
    LengthBias,
    MetaEvalReport,
    PositionBias,
)
from openjudge.metaeval._runs import GraderRun, MetaEvalRun
from openjudge.metaeval._scales import label_scale as _label_scale
from openjudge.metaeval._scales import on_label_scale
from openjudge.metaeval._stats import Correlation, Floats, Ints, Ratio, Statistic, intervals
from openjudge.metaeval._verdicts import NONE, TIE, A, B

__all__ = ["statistics", "summarize"]

_CODES = {"A": A, "B": B, "tie": TIE}
_NAMES = {A: "A", B: "B", TIE: "tie"}
_MAX_POINTS = 400
_MAX_LABEL_VALUES = 20


def _pair_labels(data: PairwiseSet) -> Ints:
    return np.array([_CODES[item.label] for item in data.items], dtype=np.int64)


def _lengths(texts: list[str]) -> Floats:
    return np.array([len(t) for t in texts], dtype=np.float64)


def _changed(values: Floats) -> tuple[Floats, np.ndarray]:
    """Per item, whether its valid values (NaN = none) differ across repeats, and which have two or more."""
    valid = ~np.isnan(values)
    low = np.where(valid, values, np.inf).min(axis=0)
    high = np.where(valid, values, -np.inf).max(axis=0)
    return (high - low > 1e-9).astype(np.float64), valid.sum(axis=0) >= 2


def _correlation(x: Floats, y: Floats, unit: Ints, units: int, method: str) -> Correlation:
    keep = ~(np.isnan(x) | np.isnan(y))
    return Correlation(x[keep], y[keep], unit[keep], units, "spearman" if method == "spearman" else "kendall")


def _pair_statistics(run: GraderRun, data: PairwiseSet) -> dict[str, Statistic]:
    assert run.verdict is not None and run.preference is not None
    n = len(data.items)
    labels = _pair_labels(data)
    first = run.verdict[0, 0]
    valid = first != NONE
    stats: dict[str, Statistic] = {
        "pairwise_accuracy": Ratio.mean((first == labels).astype(np.float64), valid & (labels != TIE)),
        "tie_rate": Ratio.mean((first == TIE).astype(np.float64), valid),
    }
    if (labels == TIE).any():
        stats["three_way_agreement"] = Ratio.mean((first == labels).astype(np.float64), valid)
    if run.kind == "pair" and run.swapped:
        second = run.verdict[0, 1]
        both = valid & (second != NONE)
        stats["flip_rate"] = Ratio.mean((first != second).astype(np.float64), both)
        # Shown first: response_a in the stored order, response_b in the swapped one.
        wins = (first == A).astype(np.float64) + (second == B)
        decisive = (valid & (first != TIE)).astype(np.float64) + ((second != NONE) & (second != TIE))
        stats["first_position_win_rate"] = Ratio(wins, decisive)
    if run.judge_flip is not None and not np.isnan(run.judge_flip).all():
        reported = ~np.isnan(run.judge_flip)
        stats["judge_flip_rate"] = Ratio.mean(np.nan_to_num(run.judge_flip), reported)
    if run.judge_decisive is not None and run.judge_first_wins is not None and run.judge_decisive.any():
        stats["judge_first_position_win_rate"] = Ratio(run.judge_first_wins, run.judge_decisive)
    len_a = _lengths([item.response_a for item in data.items])
    len_b = _lengths([item.response_b for item in data.items])
    longer = np.where(len_a > len_b, A, B)
    eligible = valid & (len_a != len_b) & ((labels == TIE) | (labels != longer))
    stats["longer_wins_rate"] = Ratio.mean((first == longer).astype(np.float64), eligible)
    units = np.arange(n)
    if run.kind == "pair":
        stats["length_score_spearman"] = _correlation(
            len_a - len_b, run.preference[0, 0], units, n, "spearman"
        )
    else:
        assert run.oriented is not None
        stats["length_score_spearman"] = _correlation(
            np.concatenate([len_a, len_b]),
            np.concatenate([run.oriented[0, 0], run.oriented[0, 1]]),
            np.concatenate([units, units]),
            n,
            "spearman",
        )
    if run.repeats > 1:
        shown = np.where(run.verdict[:, 0] == NONE, np.nan, run.verdict[:, 0].astype(np.float64))
        changed, repeated = _changed(shown)
        stats["verdict_change_rate"] = Ratio.mean(changed, repeated)
    return stats


def _point_statistics(
    run: GraderRun, data: PointwiseSet, scale: tuple[float, float] | None = None
) -> tuple[dict[str, Statistic], str | None]:
    """The metrics of a grader of scored responses, and a note when its scale differs from the labels'."""
    assert run.score is not None and run.oriented is not None
    n = len(data.items)
    labels = np.array([item.label for item in data.items], dtype=np.float64)
    score = run.score[0, 0]
    oriented = run.oriented[0, 0]
    valid = ~np.isnan(score)
    units = np.arange(n)
    # Rank correlations on the normalised score: scale-free, and right-signed for "lower is better".
    stats: dict[str, Statistic] = {
        "spearman": _correlation(oriented, labels, units, n, "spearman"),
        "kendall": _correlation(oriented, labels, units, n, "kendall"),
    }
    comparable = on_label_scale(
        run.name, score, oriented, run.score_range, labels, _label_scale(labels, scale)
    )
    if comparable.scores is not None:
        gap = np.abs(np.nan_to_num(comparable.scores) - labels)
        stats["exact"] = Ratio.mean((gap <= 1e-9).astype(np.float64), valid)
        stats["within_one"] = Ratio.mean((gap <= 1 + 1e-9).astype(np.float64), valid)
    stats["length_score_spearman"] = _correlation(
        _lengths([item.response for item in data.items]), oriented, units, n, "spearman"
    )
    if run.repeats > 1:
        changed, repeated = _changed(run.score[:, 0])
        stats["verdict_change_rate"] = Ratio.mean(changed, repeated)
    return stats, comparable.note


def statistics(run: MetaEvalRun, grader: GraderRun) -> dict[str, Statistic]:
    """Every metric that applies to the grader, by its field name in the report, over items."""
    if isinstance(run.data, PairwiseSet):
        return _pair_statistics(grader, run.data)
    return _point_statistics(grader, run.data)[0]


def _headlines(run: MetaEvalRun, grader: GraderRun) -> dict[str, tuple[BenchmarkFigure, Ratio]]:
    """The benchmark's own figures (:mod:`._headline`), as report entries to fill and statistics."""
    if not isinstance(run.data, PairwiseSet) or grader.verdict is None:
        return {}
    # A single grader scores each response alone: its verdict is the same in either order.
    swapped = grader.swapped or grader.kind == "single"
    found = headline_statistics(run.data.format, grader.verdict, _pair_labels(run.data), swapped=swapped)
    blank = Estimate(value=None, low=None, high=None, n=0)
    out = {}
    for key, (h, ratio) in found.items():
        figure = BenchmarkFigure(
            key=key,
            benchmark=h.benchmark,
            name=h.name,
            rule=h.rule,
            estimate=blank,
            count=float(ratio.num.sum()),
            total=float(ratio.den.sum()),
        )
        out[key] = (figure, ratio)
    return out


def _points(run: MetaEvalRun, grader: GraderRun) -> list[tuple[float, float]]:
    data = run.data
    if isinstance(data, PairwiseSet):
        len_a = _lengths([i.response_a for i in data.items])
        len_b = _lengths([i.response_b for i in data.items])
        if grader.kind == "pair":
            assert grader.preference is not None
            x, y = len_a - len_b, grader.preference[0, 0]
        else:
            assert grader.oriented is not None
            x = np.concatenate([len_a, len_b])
            y = np.concatenate([grader.oriented[0, 0], grader.oriented[0, 1]])
    else:
        assert grader.oriented is not None
        x, y = _lengths([i.response for i in data.items]), grader.oriented[0, 0]
    keep = np.flatnonzero(~np.isnan(y))
    if keep.size > _MAX_POINTS:
        keep = keep[np.linspace(0, keep.size - 1, _MAX_POINTS).round().astype(np.int64)]
    return [(float(x[k]), float(y[k])) for k in keep]


def _confusion(run: MetaEvalRun, grader: GraderRun) -> dict[str, dict[str, int]] | None:
    if not isinstance(run.data, PairwiseSet) or grader.verdict is None:
        return None
    table = {label: dict.fromkeys(("A", "B", "tie"), 0) for label in ("A", "B", "tie")}
    for label, verdict in zip(_pair_labels(run.data), grader.verdict[0, 0], strict=True):
        if verdict != NONE:
            table[_NAMES[int(label)]][_NAMES[int(verdict)]] += 1
    return table


def _per_1k(total: float, judgements: int) -> float | None:
    return total / judgements * 1000 if judgements else None


def _cost(grader: GraderRun) -> Cost:
    usage = grader.usage
    price = grader.price
    cost = (
        usage.prompt_tokens / 1000 * price["prompt_per_1k"]
        + usage.completion_tokens / 1000 * price["completion_per_1k"]
        if price is not None
        else None
    )
    failed = sum(grader.failures.values())
    return Cost(
        judgements=grader.judgements,
        failures=dict(sorted(grader.failures.items())),
        failure_rate=failed / grader.judgements if grader.judgements else None,
        failure_examples=dict(sorted(grader.failure_examples.items())),
        requests=usage.requests,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        cost=cost,
        wall_s=grader.wall_s,
        judge_s=grader.judge_s,
        tokens_per_1k=_per_1k(usage.total_tokens, grader.judgements),
        cost_per_1k=None if cost is None else _per_1k(cost, grader.judgements),
        wall_s_per_1k=_per_1k(grader.wall_s, grader.judgements),
        not_applicable=grader.not_applicable,
    )


def _data_summary(run: MetaEvalRun) -> DataSummary:
    data = run.data
    if isinstance(data, PairwiseSet):
        counts = Counter(item.label for item in data.items)
        labels = {label: counts.get(label, 0) for label in ("A", "B", "tie")}
    else:
        values = Counter(item.label for item in data.items)
        # Scores on a scale (1-5, 1-10) are counted per value; continuous labels are not.
        shown = sorted(values.items()) if len(values) <= _MAX_LABEL_VALUES else []
        labels = {f"{value:g}": count for value, count in shown}
    return DataSummary(
        source=data.source,
        format=data.format,
        kind=data.kind,
        items=len(data.items),
        skipped=len(data.skipped),
        labels=labels,
    )


def summarize(
    run: MetaEvalRun,
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    label_scale: tuple[float, float] | None = None,
) -> MetaEvalReport:
    """The report of a run: every metric with its bootstrap interval (``bootstrap`` resamples).

    Args:
        run: The judgements (:func:`~openjudge.metaeval.collect`, or read back by
            :func:`~openjudge.metaeval.load_recorded`).
        bootstrap: Resamples behind each interval.
        seed: The resampling seed.
        label_scale: Scored responses: the labels' scale (low, high); default, the lowest
            and highest label. A grader on another scale is rescaled onto it (see
            :mod:`._scales`).
    """
    if label_scale is not None and not label_scale[0] < label_scale[1]:
        raise ValueError(f"label_scale must be (low, high) with low < high, got {label_scale}")
    if label_scale is not None and isinstance(run.data, PointwiseSet):
        outside = next((i for i in run.data.items if not label_scale[0] <= i.label <= label_scale[1]), None)
        if outside is not None:
            raise ValueError(
                f"{run.data.source}:{outside.line}: label {outside.label:g} is outside the labels' scale "
                f"{label_scale[0]:g}-{label_scale[1]:g}; give the scale the labels are on"
            )
    graders: list[GraderReport] = []
    for grader in run.graders:
        notes: list[str] = []
        if isinstance(run.data, PairwiseSet):
            wanted = _pair_statistics(grader, run.data)
        else:
            wanted, note = _point_statistics(grader, run.data, label_scale)
            notes += [note] if note else []
        headlines = _headlines(run, grader)
        every = {**wanted, **{key: ratio for key, (_, ratio) in headlines.items()}}
        estimates = intervals(every, resamples=bootstrap, seed=seed)
        found = {name: Estimate.model_validate(e, from_attributes=True) for name, e in estimates.items()}
        figures = [
            figure.model_copy(update={"estimate": found[key]}) for key, (figure, _) in headlines.items()
        ]
        report = GraderReport(
            name=grader.name,
            kind=grader.kind,
            provider=grader.provider,
            items=len(run.data.items),
            agreement=Agreement(
                pairwise_accuracy=found.get("pairwise_accuracy"),
                three_way_agreement=found.get("three_way_agreement"),
                tie_rate=found.get("tie_rate"),
                confusion=_confusion(run, grader),
                spearman=found.get("spearman"),
                kendall=found.get("kendall"),
                exact=found.get("exact"),
                within_one=found.get("within_one"),
            ),
            position=PositionBias(
                flip_rate=found.get("flip_rate"),
                first_position_win_rate=found.get("first_position_win_rate"),
                judge_flip_rate=found.get("judge_flip_rate"),
                judge_first_position_win_rate=found.get("judge_first_position_win_rate"),
            ),
            length=LengthBias(
                longer_wins_rate=found.get("longer_wins_rate"),
                length_score_spearman=found.get("length_score_spearman"),
                points=_points(run, grader),
            ),
            consistency=Consistency(
                repeats=run.repeats, verdict_change_rate=found.get("verdict_change_rate")
            ),
            cost=_cost(grader),
            benchmark=figures,
            notes=notes,
        )
        graders.append(report.model_copy(update={"readings": readings(report)}))
    scale = None
    if isinstance(run.data, PointwiseSet):
        labels = np.array([item.label for item in run.data.items], dtype=np.float64)
        low, high = _label_scale(labels, label_scale)
        scale = (low, high)
    return MetaEvalReport(
        label=run.label,
        data=_data_summary(run),
        graders=graders,
        skipped_graders=dict(run.skipped),
        swap=run.swap,
        bootstrap=bootstrap,
        seed=seed,
        recorded=run.recorded,
        label_scale=scale,
    )
