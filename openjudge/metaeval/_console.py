"""Plain-text tables of a meta-evaluation: metrics as rows, graders as columns."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from openjudge.jobs._summary import format_number
from openjudge.metaeval._compare import ComparisonReport
from openjudge.metaeval._readings import percent
from openjudge.metaeval._report import Estimate, GraderReport, MetaEvalReport

__all__ = [
    "METRIC_LABELS",
    "format_estimate",
    "has_costs",
    "render_comparison",
    "render_readings",
    "render_report",
]

METRIC_LABELS: dict[str, str] = {
    "pairwise_accuracy": "pairwise accuracy",
    "three_way_agreement": "3-way agreement (tie a class)",
    "tie_rate": "tie verdicts",
    "spearman": "Spearman rho",
    "kendall": "Kendall tau-b",
    "exact": "exact agreement",
    "within_one": "within-1 agreement",
    "flip_rate": "flip rate (order swapped)",
    "first_position_win_rate": "first-position win rate",
    "judge_flip_rate": "inner flip rate",
    "judge_first_position_win_rate": "inner first-position wins",
    "longer_wins_rate": "longer wins (tie/shorter labelled)",
    "length_score_spearman": "length-score Spearman",
    "verdict_change_rate": "verdict change rate",
}

_ROWS: tuple[tuple[str, Callable[[GraderReport], Estimate | None]], ...] = (
    ("pairwise_accuracy", lambda g: g.agreement.pairwise_accuracy),
    ("three_way_agreement", lambda g: g.agreement.three_way_agreement),
    ("tie_rate", lambda g: g.agreement.tie_rate),
    ("spearman", lambda g: g.agreement.spearman),
    ("kendall", lambda g: g.agreement.kendall),
    ("exact", lambda g: g.agreement.exact),
    ("within_one", lambda g: g.agreement.within_one),
    ("flip_rate", lambda g: g.position.flip_rate),
    ("first_position_win_rate", lambda g: g.position.first_position_win_rate),
    ("judge_flip_rate", lambda g: g.position.judge_flip_rate),
    ("judge_first_position_win_rate", lambda g: g.position.judge_first_position_win_rate),
    ("longer_wins_rate", lambda g: g.length.longer_wins_rate),
    ("length_score_spearman", lambda g: g.length.length_score_spearman),
    ("verdict_change_rate", lambda g: g.consistency.verdict_change_rate),
)


def _fixed(value: float | None, *, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def format_estimate(estimate: Estimate | None, *, signed: bool = False) -> str:
    """``0.550 [0.501, 0.598]``; ``-`` where undefined; ``[-]`` without an interval."""
    if estimate is None:
        return "-"
    if estimate.value is None:
        return f"- (n={estimate.n})"
    bounds = (
        f"[{_fixed(estimate.low, signed=signed)}, {_fixed(estimate.high, signed=signed)}]"
        if estimate.low is not None and estimate.high is not None
        else "[-]"
    )
    return f"{_fixed(estimate.value, signed=signed)} {bounds}"


def _table(
    header: Sequence[str], rows: Sequence[Sequence[str]], *, left: frozenset[int] = frozenset({0})
) -> list[str]:
    """Aligned lines: the columns in ``left`` left-aligned, the others right-aligned."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.ljust(w) if i in left else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]


def _failures(g: GraderReport) -> str:
    failed = sum(g.cost.failures.values())
    routed = f"; {g.cost.not_applicable} not applicable" if g.cost.not_applicable else ""
    if not failed:
        return "0" + routed
    kinds = ", ".join(f"{kind} {count}" for kind, count in g.cost.failures.items())
    return f"{failed} ({kinds}){routed}"


def _how(report: MetaEvalReport) -> str:
    """How the figures were made: intervals, and (pairs only) the orders judged."""
    line = (
        f"values with {report.confidence:.0%} bootstrap intervals over items ({report.bootstrap} resamples, "
        f"seed {report.seed})"
    )
    if report.data.kind == "pairwise" and any(g.kind == "pair" for g in report.graders):
        # Only pair graders see an order; single graders score each response alone.
        line += f"; pairs judged in {'both orders' if report.swap else 'the stored order only'}"
    if report.recorded is not None:
        line += f"; recorded judgements ({report.recorded}), no judge called"
    return line


def _head(report: MetaEvalReport) -> list[str]:
    data = report.data
    if data.kind == "pairwise":
        counts = ", ".join(f"{k} {v}" for k, v in data.labels.items())
        what = f"{data.items} pairs ({data.format}{'; labels ' + counts if counts else ''})"
    else:
        scale = report.label_scale
        on = f"; labels on {scale[0]:g}-{scale[1]:g}" if scale is not None else ""
        what = f"{data.items} scored responses ({data.format}{on})"
    head = [
        f"meta-eval{f' of {report.label}' if report.label else ''} on {data.source}: {what}",
        _how(report),
    ]
    if data.skipped:
        head.append(f"{data.skipped} unusable records skipped")
    for name, why in report.skipped_graders.items():
        head.append(f"grader {name!r} not evaluated: {why}")
    for g in report.graders:
        head += [f"note: {note}" for note in g.notes]
    return head


def _benchmark_rows(graders: Sequence[GraderReport]) -> list[list[str]]:
    keys = list(dict.fromkeys(f.key for g in graders for f in g.benchmark))
    rows = []
    for key in keys:
        cells = [next((f for f in g.benchmark if f.key == key), None) for g in graders]
        sample = next(f for f in cells if f is not None)
        rows.append(
            [
                f"{sample.benchmark} {sample.name} (%)",
                *(
                    "-"
                    if f is None or f.estimate.value is None
                    else f"{percent(f.estimate, digits=2).replace(' %', '')} ({f.count:g}/{f.total:g})"
                    for f in cells
                ),
            ]
        )
    return rows


def has_costs(report: MetaEvalReport) -> bool:
    """Whether the judgements' tokens and times are known (a live run, or its saved judgements)."""
    return report.recorded is None or any(g.cost.requests or g.cost.wall_s for g in report.graders)


def render_readings(report: MetaEvalReport) -> str:
    """Each grader's figures in plain sentences."""
    lines: list[str] = []
    for g in report.graders:
        lines.append(f"{g.name}:")
        lines += [f"  - {reading}" for reading in g.readings] or ["  - nothing to read"]
    return "\n".join(lines) + "\n"


def render_report(report: MetaEvalReport) -> str:
    """The report as text: a header, metrics by grader, readings, then failures and cost by grader."""
    head = _head(report)
    if not report.graders:
        return "\n".join([*head, "", "no grader to evaluate"]) + "\n"
    graders = report.graders
    header = ["metric", *(f"{g.name} ({g.kind})" for g in graders)]
    rows = []
    for key, get in _ROWS:
        cells = [get(g) for g in graders]
        if all(c is None for c in cells):
            continue
        label = METRIC_LABELS[key]
        if key == "verdict_change_rate":
            label += f" (K={report.graders[0].consistency.repeats})"
        rows.append([label, *(format_estimate(c) for c in cells)])
    cost_rows = [
        ["judgements", *(format_number(g.cost.judgements) for g in graders)],
        ["failed", *(_failures(g) for g in graders)],
    ]
    costed = has_costs(report)
    if costed:  # a benchmark's recording has no tokens, prices or times
        cost_rows += [
            ["judge requests", *(format_number(g.cost.requests) for g in graders)],
            ["tokens per 1k judgements", *(format_number(g.cost.tokens_per_1k) for g in graders)],
            ["cost per 1k judgements", *(format_number(g.cost.cost_per_1k) for g in graders)],
            ["wall s per 1k judgements", *(format_number(g.cost.wall_s_per_1k) for g in graders)],
        ]
    published = _benchmark_rows(graders)
    parts = [*head, "", *_table(header, rows)]
    if published:
        parts += ["", *_table(["benchmark's own figures", *header[1:]], published)]
    parts += ["", "reading:", render_readings(report).rstrip("\n")]
    parts += ["", *_table(["cost" if costed else "judgements", *header[1:]], cost_rows)]
    return "\n".join(parts) + "\n"


def render_comparison(comparison: ComparisonReport) -> str:
    """Each compared metric: baseline, candidate, their difference with its interval, and a verdict."""
    head = (
        f"comparison: {comparison.candidate} minus {comparison.baseline} "
        f"(paired bootstrap over the items both judged, {comparison.bootstrap} resamples)"
    )
    rows = [
        [
            f"{g.baseline_grader} / {g.candidate_grader}"
            if g.baseline_grader != g.candidate_grader
            else g.baseline_grader,
            METRIC_LABELS[d.metric],
            _fixed(d.baseline.value),
            _fixed(d.candidate.value),
            format_estimate(d.difference, signed=True),
            str(d.difference.n),
            d.verdict,
        ]
        for g in comparison.graders
        for d in g.differences
    ]
    if not rows:
        return head + "\nno grader to compare: give graders the same name in both configs\n"
    header = ["grader", "metric", "baseline", "candidate", "difference", "n", "verdict"]
    return "\n".join([head, "", *_table(header, rows, left=frozenset({0, 1, 6}))]) + "\n"
