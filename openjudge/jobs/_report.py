"""A self-contained HTML report of a results file.

:func:`write_report` streams the results file once and writes one HTML file with inline CSS
and inline SVG only (no scripts, fonts or images from anywhere), so it opens offline and can
be attached to a ticket. It shows:

* the summary table (as :func:`~openjudge.jobs._summary.render_table`), the aggregates and,
  when routing left graders out of some rows, how many rows each applies to and does not
  (``class="routed"``);
* per grader, a histogram of normalised scores in 20 bins (over [0, 1] when the grader
  declares a score range, else over the observed range), in an element with
  ``class="chart histogram" data-grader="<name>"``; likewise per aggregate
  (``data-aggregate="<name>"``); every y axis is fitted to its tallest bar;
* system errors per grader and kind, with the first message seen and the ids of the failing
  samples (the first 100 per kind), each linked to its row in a table of failed samples
  (``class="failed-row"``, ``id="failed-<n>"``) that gives the sample's message;
* apart from them, the response failures per grader and cause (scores at the bottom of the
  range that the response earned by breaking grading; ``class="failure-row"``), with the
  first reason;
* a histogram of all judge latencies (``class="chart latency"``);
* the ``lowest`` (default 10) lowest-scoring samples per grader by normalised score, with
  the inputs the grader saw when a :class:`SampleSource` is given (read back from the
  dataset by id; cut to 300 characters).

Everything taken from the data is HTML-escaped. Memory: 8 bytes per score, aggregate value
and latency, plus ``lowest`` samples per grader.
"""

from __future__ import annotations

import heapq
import json
import math
from array import array
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from openjudge.jobs._datasets import DEFAULT_MAX_RECORD_BYTES, DatasetFormat, SampleRecord, iter_samples
from openjudge.jobs._html import page, table, table_row, write_page
from openjudge.jobs._moments import RunningMoments
from openjudge.jobs._records import ErrorEntry, NotApplicableEntry, OutcomeLine, ScoreEntry
from openjudge.jobs._results import read_outcomes
from openjudge.jobs._summary import (
    GRADER_COLUMNS,
    Price,
    RunSummary,
    SummaryBuilder,
    format_number,
    grader_row,
    not_applicable_rows,
    percentile,
    response_failure_rows,
    total_row,
)
from openjudge.jobs._svg import bin_counts, histogram_svg

__all__ = ["SampleSource", "write_report"]

_BINS = 20
_LATENCY_BINS = 30
_REASON_CHARS = 300


_INPUT_CHARS = 300
_FAILED_IDS = 100
"""Failing sample ids listed (and linked) per grader and error kind."""


@dataclass(frozen=True, slots=True)
class SampleSource:
    """Where the report finds the inputs of the samples it lists.

    Attributes:
        path: The dataset the results were graded from.
        format: Its format (as for :func:`~openjudge.jobs._datasets.iter_samples`).
        id_field: Its id field.
        inputs: Grader name to the function that maps a sample to that grader's inputs;
            a grader without one is shown the whole sample.
        max_record_bytes: Its cap on a record's size (``data.max_record_bytes``).
    """

    path: Path
    format: DatasetFormat = "auto"
    id_field: str | None = "id"
    inputs: Mapping[str, Callable[[Mapping[str, Any]], Mapping[str, Any]]] = field(default_factory=dict)
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES


@dataclass
class _GraderView:
    scores: array[float] = field(default_factory=lambda: array("d"))
    ranged: bool = True
    lowest: list[tuple[float, int, str, float, str]] = field(default_factory=list)
    inputs: dict[str, str] = field(default_factory=dict)


@dataclass
class _Collector:
    lowest_n: int
    builder: SummaryBuilder
    graders: dict[str, _GraderView] = field(default_factory=dict)
    latencies_s: array[float] = field(default_factory=lambda: array("d"))
    aggregates: dict[str, array[float]] = field(default_factory=dict)
    error_examples: dict[tuple[str, str], str] = field(default_factory=dict)
    failed: dict[tuple[str, str], list[tuple[str, str]]] = field(default_factory=dict)
    """(grader, kind) -> the first failing samples' (id, message)."""
    seq: int = 0

    def add(self, line: OutcomeLine) -> None:
        self.builder.add(line)
        self.seq += 1
        for name, value in line.aggregates.items():
            values = self.aggregates.setdefault(name, array("d"))
            if value is not None and math.isfinite(value):
                values.append(value)
        for name, entry in line.results.items():
            view = self.graders.get(name)
            if view is None:
                view = self.graders[name] = _GraderView()
            if isinstance(entry, NotApplicableEntry):
                continue  # not graded: nothing to plot or list
            if entry.latency_s is not None:
                self.latencies_s.append(entry.latency_s)
            if isinstance(entry, ErrorEntry):
                self.error_examples.setdefault((name, entry.kind), entry.message)
                failed = self.failed.setdefault((name, entry.kind), [])
                if len(failed) < _FAILED_IDS:
                    failed.append((line.id, _cut(entry.message)))
            if not isinstance(entry, ScoreEntry):
                continue
            norm = entry.normalized_score
            view.scores.append(norm)
            if entry.score_range is None:
                view.ranged = False
            # A max-heap (by negation) of the lowest scores; earlier samples win ties.
            lowest = view.lowest
            if len(lowest) < self.lowest_n:
                heapq.heappush(lowest, (-norm, -self.seq, line.id, entry.score, _cut(entry.reason)))
            elif lowest and norm < -lowest[0][0]:
                heapq.heapreplace(lowest, (-norm, -self.seq, line.id, entry.score, _cut(entry.reason)))


def _cut(text: str, limit: int = _REASON_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _show(value: object) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str, separators=(", ", ": "))
    except (RecursionError, ValueError):  # read at a shallower stack than this one
        return "(too deeply nested to show)"
    return _cut(text, _INPUT_CHARS)


def _find_inputs(source: SampleSource, graders: dict[str, _GraderView]) -> None:
    """Read the lowest samples back from the dataset and note what each grader saw."""
    wanted: dict[str, list[str]] = {}
    for name, view in graders.items():
        for _, _, sample_id, _, _ in view.lowest:
            wanted.setdefault(sample_id, []).append(name)
    if not wanted or not source.path.is_file():
        return
    records = iter_samples(
        source.path,
        format=source.format,
        on_error="skip",
        id_key=source.id_field,
        max_record_bytes=source.max_record_bytes,
    )
    for record in records:
        if not isinstance(record, SampleRecord) or record.id not in wanted:
            continue
        for name in wanted.pop(record.id):
            mapper = source.inputs.get(name)
            try:
                shown: object = dict(mapper(record.data)) if mapper is not None else record.data
            except Exception:  # the grader could not read it either: show the whole sample
                shown = record.data
            graders[name].inputs[record.id] = _show(shown)
        if not wanted:
            return


def write_report(
    results_path: Path,
    report_path: Path,
    *,
    title: str,
    lowest: int = 10,
    prices: Mapping[str, Price] | None = None,
    samples: SampleSource | None = None,
) -> None:
    """Write a self-contained HTML report of a results file.

    Args:
        results_path: The results file (see :mod:`openjudge.jobs._results`).
        report_path: Where to write the HTML; replaced atomically.
        title: The report's title.
        lowest: How many lowest-scoring samples to list per grader.
        prices: Optional price per grader for the cost column.
        samples: The dataset, to show the inputs of the lowest-scoring samples.

    Raises:
        ResultsFileError: If the results file is damaged.
        DatasetError: If ``samples`` names a dataset that cannot be read.
        ValueError: If ``lowest`` is negative.
    """
    if lowest < 0:
        raise ValueError(f"lowest must be at least 0, got {lowest}")
    collector = _Collector(lowest_n=lowest, builder=SummaryBuilder(prices=prices))
    for line in read_outcomes(results_path):
        collector.add(line)
    if samples is not None:
        _find_inputs(samples, collector.graders)
    write_page(report_path, _page(title, results_path.name, collector.builder.build(), collector))


_SUMMARY_KINDS = ("", *["num"] * (len(GRADER_COLUMNS) - 1))
_AGGREGATE_KINDS = ("", "num", "num", "num")
_ROUTED_KINDS = ("", "num", "num")
_ERROR_KINDS = ("", "kind", "num", "message")
_LOWEST_KINDS = ("id", "num", "num", "message", "message inputs")


def _summary_section(summary: RunSummary) -> str:
    rows = [table_row(grader_row(g), _SUMMARY_KINDS) for g in summary.graders]
    if len(summary.graders) > 1:
        rows.append(table_row(total_row(summary), _SUMMARY_KINDS, attrs=' class="total"'))
    html = table(GRADER_COLUMNS, _SUMMARY_KINDS, rows, cls="summary")
    html += (
        '<p class="note">mean, std (population), min and max are over raw scores; judge p50 and '
        "p95 are the time the judge took to answer, queue p50 and p95 the time calls waited for "
        "the provider's limits, in seconds.</p>"
    )
    if summary.aggregates:
        agg_rows = [
            table_row(
                (a.name, format_number(a.count), format_number(a.missing), format_number(a.mean)),
                _AGGREGATE_KINDS,
            )
            for a in summary.aggregates
        ]
        header = ("aggregate", "n", "missing", "mean")
        html += "<h3>Aggregates</h3>" + table(header, _AGGREGATE_KINDS, agg_rows, cls="aggregates")
    routed = not_applicable_rows(summary)
    if routed:
        routed_rows = [table_row(row, _ROUTED_KINDS) for row in routed]
        html += "<h3>Routing</h3>" + table(
            ("grader or aggregate", "applies to", "not applicable"), _ROUTED_KINDS, routed_rows, cls="routed"
        )
        html += (
            '<p class="note">Rows a grader does not apply to (its <code>when</code>, or the row\'s '
            "graders field) are neither scores nor errors: they are in no other column.</p>"
        )
    return html


def _histogram_card(name: str, view: _GraderView, summary: RunSummary) -> str:
    stats = next(g for g in summary.graders if g.name == name)
    facts = (
        f"n {format_number(stats.count)} · scored {format_number(stats.scored)} · "
        f"errors {format_number(stats.error_count)} · mean {format_number(stats.mean)}"
    )
    if stats.not_applicable:
        facts += f" · not applicable {format_number(stats.not_applicable)}"
    if view.scores:
        low, high = (0.0, 1.0) if view.ranged else (min(view.scores), max(view.scores))
        if low == high:
            low, high = low - 0.5, high + 0.5
        label = "normalised score" if view.ranged else "score (no declared range)"
        chart = histogram_svg(bin_counts(view.scores, low, high, _BINS), low, high, x_label=label)
    elif stats.ranked:
        chart = '<p class="empty">Ranks only: no scores to plot.</p>'
    else:
        chart = '<p class="empty">No scores to plot.</p>'
    return (
        f'<div class="card chart histogram" data-grader="{escape(name)}">'
        f'<h3>{escape(name)}</h3><p class="facts">{escape(facts)}</p>{chart}</div>'
    )


def _aggregate_card(name: str, values: array[float]) -> str:
    if not values:
        chart = '<p class="empty">No values: every sample had a failed input.</p>'
    else:
        low, high = min(values), max(values)
        if low >= 0.0 and high <= 1.0:
            low, high = 0.0, 1.0
        elif low == high:
            low, high = low - 0.5, high + 0.5
        chart = histogram_svg(bin_counts(values, low, high, _BINS), low, high, x_label="aggregate value")
    moments = RunningMoments()
    for value in values:
        moments.add(value)
    facts = f"n {format_number(len(values))} · mean {format_number(moments.mean)}"
    return (
        f'<div class="card chart histogram" data-aggregate="{escape(name)}">'
        f'<h3>{escape(name)} (aggregate)</h3><p class="facts">{escape(facts)}</p>{chart}</div>'
    )


def _errors_section(
    summary: RunSummary,
    examples: dict[tuple[str, str], str],
    failed: dict[tuple[str, str], list[tuple[str, str]]],
) -> str:
    """Errors per grader and kind, with links to the failing samples' rows below the table."""
    rows: list[str] = []
    failed_rows: list[str] = []
    for g in summary.graders:
        for kind, n in g.errors.items():
            links = []
            for sample_id, message in failed.get((g.name, kind), []):
                anchor = f"failed-{len(failed_rows)}"
                links.append(f'<a href="#{anchor}">{escape(sample_id)}</a>')
                failed_rows.append(
                    f'<tr class="failed-row" id="{anchor}" data-grader="{escape(g.name)}" '
                    f'data-kind="{escape(kind)}"><td class="id">{escape(sample_id)}</td>'
                    f'<td>{escape(g.name)}</td><td class="kind">{escape(kind)}</td>'
                    f'<td class="message">{escape(message)}</td></tr>'
                )
            more = n - len(links)
            if more > 0:
                links.append(f"and {format_number(more)} more")
            cells = (
                table_row(
                    (g.name, kind, format_number(n), _cut(examples.get((g.name, kind), ""))), _ERROR_KINDS
                )
                .removeprefix("<tr>")
                .removesuffix("</tr>")
            )
            rows.append(
                f'<tr class="error-row" data-grader="{escape(g.name)}" data-kind="{escape(kind)}">'
                f'{cells}<td class="samples">{", ".join(links)}</td></tr>'
            )
    if not rows:
        return '<p class="empty">No errors.</p>'
    header = ("grader", "kind", "count", "first message", "failing samples")
    html = table(header, (*_ERROR_KINDS, "samples"), rows, cls="errors")
    html += "<h3>Failed samples</h3>" + table(
        ("sample id", "grader", "kind", "message"), ("id", "", "kind", "message"), failed_rows, cls="failed"
    )
    return html


def _response_failures_section(summary: RunSummary) -> str:
    """Scores given because the response broke grading (bottom of the range), by cause."""
    rows = [
        table_row(
            row,
            _ERROR_KINDS,
            attrs=f' class="failure-row" data-grader="{escape(row[0])}" data-cause="{escape(row[1])}"',
        )
        for row in response_failure_rows(summary)
    ]
    if not rows:
        return '<p class="empty">No response failures.</p>'
    note = (
        '<p class="note">Scored at the bottom of the grader\'s range (they are in the score '
        "statistics above), not errors: the response, not the system, made grading fail.</p>"
    )
    return note + table(("grader", "cause", "count", "first reason"), _ERROR_KINDS, rows, cls="failures")


def _latency_section(latencies_s: array[float]) -> str:
    if not latencies_s:
        return '<div class="card chart latency"><p class="empty">No judge latencies recorded.</p></div>'
    ordered = sorted(latencies_s)
    p95 = percentile(ordered, 95) or 0.0
    high = ordered[-1]
    overflow = high > 3 * p95 > 0  # a long tail would squash every bar into the first bins
    if overflow:
        high = 2 * p95
    if high <= 0:
        high = 1.0
    counts = bin_counts(ordered, 0.0, high, _LATENCY_BINS)
    facts = (
        f"{format_number(len(ordered))} judge calls · p50 {format_number(percentile(ordered, 50))} s · "
        f"p95 {format_number(p95)} s · max {format_number(ordered[-1])} s"
    )
    if overflow:
        facts += f" · the last bar holds the {format_number(counts[-1])} slowest"
    chart = histogram_svg(
        counts, 0.0, high, x_label="latency (s), all graders", overflow=overflow, width=720, height=220
    )
    return f'<div class="card chart latency"><p class="facts">{escape(facts)}</p>{chart}</div>'


def _lowest_section(graders: dict[str, _GraderView]) -> str:
    parts = []
    for name, view in graders.items():
        if not view.lowest:
            continue
        rows = [
            table_row(
                (
                    sample_id,
                    format_number(-neg_norm),
                    format_number(score),
                    reason,
                    view.inputs.get(sample_id, "-"),
                ),
                _LOWEST_KINDS,
                attrs=f' class="lowest-row" data-grader="{escape(name)}"',
            )
            for neg_norm, _, sample_id, score, reason in sorted(view.lowest, reverse=True)
        ]
        header = ("sample id", "normalised", "score", "reason", "inputs")
        lowest = table(header, _LOWEST_KINDS, rows, cls="lowest")
        parts.append(f'<h3>{escape(name)}</h3><div class="scroll">{lowest}</div>')
    return "".join(parts) or '<p class="empty">No scores.</p>'


def _page(title: str, source: str, summary: RunSummary, collector: _Collector) -> str:
    cards = "".join(_histogram_card(name, view, summary) for name, view in collector.graders.items())
    cards += "".join(_aggregate_card(name, values) for name, values in collector.aggregates.items())
    meta = f"{format_number(summary.samples)} samples · {len(summary.graders)} graders · {source}"
    body = f"""<section><h2>Summary</h2><div class="scroll">{_summary_section(summary)}</div></section>
<section><h2>Score distributions</h2><div class="grid">{cards or '<p class="empty">No results.</p>'}</div></section>
<section><h2>Errors</h2><div class="scroll">{_errors_section(summary, collector.error_examples, collector.failed)}</div></section>
<section><h2>Response failures</h2><div class="scroll">{_response_failures_section(summary)}</div></section>
<section><h2>Judge latency</h2>{_latency_section(collector.latencies_s)}</section>
<section><h2>Lowest-scoring samples</h2>{_lowest_section(collector.graders)}</section>"""
    return page(title, meta, body, css=_CSS)


_CSS = """
:root { --ink: #1f2933; --muted: #616e7c; --line: #e4e7eb; --bg: #f5f7fa; --card: #fff;
  --accent: #3b6fd8; --bad: #c93a3a; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 28px 24px 48px; }
header h1 { margin: 0 0 4px; font-size: 24px; }
.meta, .note, .facts, .empty { color: var(--muted); }
.note { font-size: 12px; margin: 6px 0 0; }
.facts { margin: 0 0 6px; font-size: 12px; }
section { margin-top: 28px; }
h2 { font-size: 17px; margin: 0 0 10px; padding-bottom: 6px; border-bottom: 1px solid var(--line); }
h3 { font-size: 14px; margin: 16px 0 6px; }
.card h3 { margin-top: 0; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; background: var(--card); border: 1px solid var(--line);
  border-radius: 6px; font-variant-numeric: tabular-nums; }
th, td { padding: 6px 10px; text-align: left; border-bottom: 1px solid var(--line); vertical-align: baseline; }
th { background: #eef2f7; font-weight: 600; font-size: 12px; color: #3e4c59; white-space: nowrap; }
tbody tr:nth-child(even) { background: #fafbfc; }
tr.total td { font-weight: 600; border-top: 2px solid var(--line); }
.num { text-align: right; white-space: nowrap; }
.id { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; white-space: nowrap; }
.message { max-width: 640px; overflow-wrap: anywhere; color: #323f4b; }
.inputs { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
td.kind { color: var(--bad); font-weight: 600; white-space: nowrap; }
table.errors, table.lowest, table.failed { width: 100%; }
td.samples { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
tr.failed-row:target { background: #fff4d6; }
th.message { width: 60%; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(340px, 1fr)); gap: 16px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px;
  box-shadow: 0 1px 2px rgba(15, 23, 42, .05); }
.chart.latency { max-width: 760px; }
svg { width: 100%; height: auto; display: block; }
svg .bar { fill: var(--accent); }
svg .bar.overflow { fill: #e08a2c; }
svg .bar:hover { fill: #1d4fb8; }
svg .gridline { stroke: var(--line); stroke-width: 1; }
svg .axis { stroke: #9aa5b1; stroke-width: 1; }
svg .tick { fill: var(--muted); font-size: 12px; }
svg .caption { fill: var(--muted); font-size: 12px; }
"""
