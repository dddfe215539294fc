"""The meta-eval HTML report: a self-contained page, or a section to embed in another.

:func:`metaeval_section` renders one report (agreement with interval bars, position bias,
length bias with a length-vs-score scatter per grader, every metric in a table, failures
and cost); :func:`write_html` writes a page with inline CSS of one report, or of two and
their comparison. Elements tests and tools can find: ``class="chart intervals"
data-metric="<field>"`` and ``class="chart scatter" data-grader="<name>"``. Everything
taken from the data is HTML-escaped; there are no scripts and no external resources.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape
from pathlib import Path

from openjudge.jobs._html import page, table, table_row, write_page
from openjudge.jobs._summary import format_number
from openjudge.metaeval._charts import IntervalRow, interval_chart_svg, scatter_svg
from openjudge.metaeval._compare import ComparisonReport
from openjudge.metaeval._console import METRIC_LABELS, format_estimate, has_costs
from openjudge.metaeval._readings import percent
from openjudge.metaeval._report import Estimate, GraderReport, MetaEvalReport

__all__ = ["metaeval_section", "render_html", "write_html"]

Getter = Callable[[GraderReport], Estimate | None]

_AGREEMENT_PAIRS: tuple[tuple[str, Getter], ...] = (
    ("pairwise_accuracy", lambda g: g.agreement.pairwise_accuracy),
    ("three_way_agreement", lambda g: g.agreement.three_way_agreement),
)
_AGREEMENT_POINTS: tuple[tuple[str, Getter], ...] = (
    ("exact", lambda g: g.agreement.exact),
    ("within_one", lambda g: g.agreement.within_one),
)
_CORRELATIONS: tuple[tuple[str, Getter], ...] = (
    ("spearman", lambda g: g.agreement.spearman),
    ("kendall", lambda g: g.agreement.kendall),
)
_POSITION: tuple[tuple[str, Getter], ...] = (
    ("flip_rate", lambda g: g.position.flip_rate),
    ("judge_flip_rate", lambda g: g.position.judge_flip_rate),
)
_FIRST: tuple[tuple[str, Getter], ...] = (
    ("first_position_win_rate", lambda g: g.position.first_position_win_rate),
    ("judge_first_position_win_rate", lambda g: g.position.judge_first_position_win_rate),
)
_TABLE: tuple[tuple[str, Getter], ...] = (
    *_AGREEMENT_PAIRS,
    ("tie_rate", lambda g: g.agreement.tie_rate),
    *_CORRELATIONS,
    *_AGREEMENT_POINTS,
    *_POSITION,
    *_FIRST,
    ("longer_wins_rate", lambda g: g.length.longer_wins_rate),
    ("length_score_spearman", lambda g: g.length.length_score_spearman),
    ("verdict_change_rate", lambda g: g.consistency.verdict_change_rate),
)


def _card(metric: str, body: str, *, title: str) -> str:
    return f'<div class="card chart intervals" data-metric="{escape(metric)}"><h3>{escape(title)}</h3>{body}</div>'


def _interval_cards(
    graders: Sequence[GraderReport],
    metrics: Sequence[tuple[str, Getter]],
    *,
    low: float,
    high: float,
    reference: float | None = None,
) -> str:
    cards = []
    for key, get in metrics:
        rows = [IntervalRow(g.name, e.value, e.low, e.high) for g in graders if (e := get(g)) is not None]
        if rows:
            chart = interval_chart_svg(
                rows, low=low, high=high, x_label=METRIC_LABELS[key], reference=reference
            )
            cards.append(_card(key, chart, title=METRIC_LABELS[key]))
    return "".join(cards)


def _scatter_cards(graders: Sequence[GraderReport]) -> str:
    cards = []
    for g in graders:
        if not g.length.points:
            continue
        pair = g.kind == "pair"
        chart = scatter_svg(
            g.length.points,
            x_label="length of first minus second (characters)" if pair else "response length (characters)",
            y_label="P(first is better)" if pair else "normalised score",
        )
        rho = format_estimate(g.length.length_score_spearman)
        cards.append(
            f'<div class="card chart scatter" data-grader="{escape(g.name)}"><h3>{escape(g.name)}</h3>'
            f'<p class="facts">Spearman {escape(rho)} · {len(g.length.points)} points shown</p>{chart}</div>'
        )
    return "".join(cards)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], *, cls: str) -> str:
    """A scrollable table whose first column is text and the others numbers."""
    kinds = ("", *["num"] * (len(header) - 1))
    return f'<div class="scroll">{table(header, kinds, (table_row(r, kinds) for r in rows), cls=cls)}</div>'


def _metrics_table(graders: Sequence[GraderReport]) -> str:
    rows = []
    for key, get in _TABLE:
        cells = [get(g) for g in graders]
        if any(c is not None for c in cells):
            rows.append([METRIC_LABELS[key], *(format_estimate(c) for c in cells)])
    return _table(["metric", *(g.name for g in graders)], rows, cls="metrics")


def _cost_table(graders: Sequence[GraderReport]) -> str:
    rows = [
        [
            g.name,
            format_number(g.cost.judgements),
            format_number(sum(g.cost.failures.values())),
            ", ".join(f"{k} {v}" for k, v in g.cost.failures.items()) or "-",
            format_number(g.cost.requests),
            format_number(g.cost.tokens_per_1k),
            format_number(g.cost.cost_per_1k),
            format_number(g.cost.wall_s_per_1k),
        ]
        for g in graders
    ]
    header = [
        "grader",
        "judgements",
        "failed",
        "by kind",
        "requests",
        "tokens / 1k",
        "cost / 1k",
        "wall s / 1k",
    ]
    html = _table(header, rows, cls="cost")
    examples = [
        f"<li><b>{escape(g.name)}</b> {escape(kind)}: {escape(message[:300])}</li>"
        for g in graders
        for kind, message in g.cost.failure_examples.items()
    ]
    if examples:
        html += f'<ul class="failures">{"".join(examples)}</ul>'
    return html


def _readings_section(graders: Sequence[GraderReport]) -> str:
    blocks = []
    for g in graders:
        notes = "".join(f'<li class="note">{escape(n)}</li>' for n in g.notes)
        said = "".join(f"<li>{escape(r)}</li>" for r in g.readings)
        blocks.append(
            f'<div class="card"><h3>{escape(g.name)}</h3><ul class="facts">{notes}{said}</ul></div>'
        )
    return f'<div class="grid">{"".join(blocks)}</div>'


def _benchmark_table(graders: Sequence[GraderReport]) -> str:
    rows = [
        [
            g.name,
            f"{f.benchmark} {f.name}",
            "-" if f.estimate.value is None else percent(f.estimate, digits=2),
            f"{f.count:g} / {f.total:g}",
            f.rule,
        ]
        for g in graders
        for f in g.benchmark
    ]
    if not rows:
        return ""
    return _table(["grader", "figure", "value (%)", "count", "the benchmark's rule"], rows, cls="benchmark")


def _comparison_section(comparison: ComparisonReport) -> str:
    rows: list[IntervalRow] = []
    table: list[list[str]] = []
    for g in comparison.graders:
        name = (
            g.baseline_grader
            if g.baseline_grader == g.candidate_grader
            else f"{g.baseline_grader}/{g.candidate_grader}"
        )
        for d in g.differences:
            rows.append(
                IntervalRow(
                    f"{name} · {METRIC_LABELS[d.metric]}",
                    d.difference.value,
                    d.difference.low,
                    d.difference.high,
                )
            )
            table.append(
                [
                    f"{name} · {METRIC_LABELS[d.metric]}",
                    format_estimate(d.baseline),
                    format_estimate(d.candidate),
                    format_estimate(d.difference, signed=True),
                    format_number(d.difference.n),
                    d.verdict,
                ]
            )
    if not rows:
        return '<p class="empty">No grader to compare.</p>'
    reach = max((abs(v) for r in rows for v in (r.value, r.low, r.high) if v is not None), default=0.0)
    reach = max(0.05, min(2.0, reach * 1.1))
    chart = interval_chart_svg(
        rows, low=-reach, high=reach, x_label="candidate minus baseline", reference=0.0, width=760
    )
    head = (
        f'<p class="facts">{escape(comparison.candidate)} minus {escape(comparison.baseline)}: paired '
        f"bootstrap over the items both judged ({comparison.bootstrap} resamples).</p>"
    )
    header = ["metric", "baseline", "candidate", "difference", "n", "verdict"]
    return (
        head
        + _card("comparison", chart, title="Differences (candidate minus baseline)")
        + _table(header, table, cls="comparison")
    )


def metaeval_section(report: MetaEvalReport) -> str:
    """One report's HTML (``<section>`` elements), for this page or another one."""
    graders = report.graders
    pairs = report.data.kind == "pairwise"
    if pairs:
        # 0.5 is a coin's pairwise accuracy; three classes have no such line.
        agreement = _interval_cards(graders, _AGREEMENT_PAIRS[:1], low=0.0, high=1.0, reference=0.5)
        agreement += _interval_cards(graders, _AGREEMENT_PAIRS[1:], low=0.0, high=1.0)
    else:
        agreement = _interval_cards(graders, _CORRELATIONS, low=-1.0, high=1.0, reference=0.0)
        agreement += _interval_cards(graders, _AGREEMENT_POINTS, low=0.0, high=1.0)
    position = _interval_cards(graders, _POSITION, low=0.0, high=1.0) + _interval_cards(
        graders, _FIRST, low=0.0, high=1.0, reference=0.5
    )
    longer = _interval_cards(
        graders,
        (("longer_wins_rate", lambda g: g.length.longer_wins_rate),),
        low=0.0,
        high=1.0,
        reference=0.5,
    )
    sections = [
        f"<section><h2>In plain words</h2>{_readings_section(graders) if graders else _EMPTY}</section>",
    ]
    published = _benchmark_table(graders)
    if published:
        sections.append(f"<section><h2>The benchmark's own figures</h2>{published}</section>")
    sections.append(
        f'<section><h2>Agreement with the labels</h2><div class="grid">{agreement or _EMPTY}</div></section>'
    )
    if pairs:
        sections.append(
            f'<section><h2>Position bias</h2><div class="grid">{position or _NO_SWAP}</div></section>'
        )
    sections.append(
        f'<section><h2>Length bias</h2><div class="grid">{longer}{_scatter_cards(graders) or _EMPTY}</div></section>'
    )
    sections.append(
        f"<section><h2>All metrics</h2>{_metrics_table(graders) if graders else _EMPTY}</section>"
    )
    title = "Failures and cost" if has_costs(report) else "Failures (recorded: no tokens, cost or time)"
    sections.append(f"<section><h2>{title}</h2>{_cost_table(graders) if graders else _EMPTY}</section>")
    return "\n".join(sections)


_EMPTY = '<p class="empty">Nothing to show.</p>'
_NO_SWAP = '<p class="empty">Pairs were judged in one order only, or no grader judges pairs.</p>'


def render_html(
    reports: MetaEvalReport | Sequence[MetaEvalReport],
    comparison: ComparisonReport | None = None,
    *,
    title: str = "",
) -> str:
    """A self-contained HTML page of one report, or of two and their comparison."""
    items = [reports] if isinstance(reports, MetaEvalReport) else list(reports)
    if not items:
        raise ValueError("render_html needs at least one report")
    first = items[0]
    data = first.data
    labels = " vs ".join(r.label for r in items if r.label)
    title = title or f"openjudge meta-eval{f': {labels}' if labels else ''}"
    label_counts = " · labels " + ", ".join(f"{k} {v}" for k, v in data.labels.items()) if data.labels else ""
    meta = (
        f"{format_number(data.items)} {'pairs' if data.kind == 'pairwise' else 'scored responses'} from "
        f"{data.source} ({data.format}){label_counts}"
        f" · {first.confidence:.0%} bootstrap intervals over items, {first.bootstrap} resamples"
    )
    body = []
    for report in items:
        skipped = "".join(
            f"<li>{escape(name)}: {escape(why)}</li>" for name, why in report.skipped_graders.items()
        )
        heading = f'<h2 class="config">{escape(report.label)}</h2>' if len(items) > 1 else ""
        notes = f'<ul class="facts">{skipped}</ul>' if skipped else ""
        body.append(f'<div class="report">{heading}{notes}{metaeval_section(report)}</div>')
    if comparison is not None:
        body.append(f"<section><h2>Comparison</h2>{_comparison_section(comparison)}</section>")
    return page(title, meta, "".join(body), css=_CSS)


def write_html(
    path: Path,
    reports: MetaEvalReport | Sequence[MetaEvalReport],
    comparison: ComparisonReport | None = None,
    *,
    title: str = "",
) -> None:
    """Write :func:`render_html` to ``path`` (replaced atomically)."""
    write_page(path, render_html(reports, comparison, title=title))


_CSS = """
:root { --ink: #1f2933; --muted: #616e7c; --line: #e4e7eb; --bg: #f5f7fa; --card: #fff; --accent: #3b6fd8; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 28px 24px 48px; }
header h1 { margin: 0 0 4px; font-size: 24px; }
.meta, .facts, .empty { color: var(--muted); }
.facts { margin: 0 0 6px; font-size: 12px; }
.facts .note { color: #9a3412; }
section { margin-top: 28px; }
h2 { font-size: 17px; margin: 0 0 10px; padding-bottom: 6px; border-bottom: 1px solid var(--line); }
h3 { font-size: 14px; margin: 0 0 6px; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; background: var(--card); border: 1px solid var(--line); margin-top: 10px;
  font-variant-numeric: tabular-nums; }
th, td { padding: 6px 10px; text-align: left; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { background: #eef2f7; font-weight: 600; font-size: 12px; color: #3e4c59; }
.num { text-align: right; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 16px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; }
ul.failures { font-size: 12px; color: #323f4b; overflow-wrap: anywhere; }
svg { width: 100%; height: auto; display: block; }
svg .gridline { stroke: var(--line); stroke-width: 1; }
svg .axis { stroke: #9aa5b1; stroke-width: 1; }
svg .reference { stroke: #c93a3a; stroke-width: 1; stroke-dasharray: 4 3; }
svg .interval { fill: #a9c1f0; }
svg .value { fill: var(--accent); }
svg .point { fill: var(--accent); fill-opacity: 0.45; }
svg .tick, svg .caption, svg .label { fill: var(--muted); font-size: 12px; }
svg .label { fill: var(--ink); }
"""
