"""Summary statistics of a run, accumulated one results line at a time.

Per grader: results seen, scores, ranks, system errors by kind (with the first message of
each), rows it does not apply to (routing: apart from the rest, in no count, mean or error
rate), response failures by cause (scores given because the response broke grading; they
count as scores, apart from errors),
the mean, **population** standard deviation (divide by n: it describes the scores
observed, and is 0 for one score; both computed without overflow for any finite scores, see
:mod:`._moments`), min and max of the *raw* score, the mean normalised
score, p50/p95 of the judge's latency and of the time queued for the provider's limits,
tokens and cost. Per aggregate: the mean of its non-null values, and the rows it does not
apply to (absent from their ``aggregates``).

Memory: O(1) per grader except latencies and queue times, which are kept exactly (8 bytes
each in an ``array('d')``: 16 MB per million results) so the percentiles are exact. Percentiles use
linear interpolation between order statistics (numpy's default ``"linear"`` method).
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TypedDict

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from openjudge.jobs._moments import RunningMoments
from openjudge.jobs._records import (
    ErrorEntry,
    NotApplicableEntry,
    OutcomeLine,
    RankEntry,
    ResultEntry,
    ScoreEntry,
)
from openjudge.jobs._results import SampleOutcome
from openjudge.results import RESPONSE_BLAME

__all__ = [
    "GRADER_COLUMNS",
    "AggregateSummary",
    "GraderSummary",
    "Price",
    "RunSummary",
    "SummaryBuilder",
    "format_cost",
    "format_number",
    "grader_row",
    "not_applicable_rows",
    "percentile",
    "render_table",
    "response_failure_rows",
    "total_row",
]


class Price(TypedDict):
    """What a grader's judge costs, in any currency unit, per 1,000 tokens."""

    prompt_per_1k: float
    completion_per_1k: float


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GraderSummary(_Model):
    """Statistics of one grader over a run. Score statistics are over raw scores.

    Attributes:
        name: The grader.
        count: Samples with a result from this grader (the rows it applies to).
        scored: Results that are scores.
        ranked: Results that are ranks.
        errors: Error count per kind.
        mean: Mean score (``None`` without scores); likewise ``std``, ``min``, ``max``.
        std: Population standard deviation of the scores.
        normalized_mean: Mean of the normalised scores.
        latency_p50_s: Median judge latency of results that report one (time the judge spent
            answering; queueing excluded); likewise ``latency_p95_s``.
        queue_p50_s: Median time those results queued for the provider's limits; likewise
            ``queue_p95_s``.
        error_examples: The first message seen per error kind.
        response_failures: Scores given because the *response* made grading fail
            (``metadata["blame"] == "response"``), counted per cause; they are also in
            ``scored`` and the score statistics (they are scores), never in ``errors``.
        response_failure_examples: The first reason seen per cause.
        prompt_tokens: Prompt tokens over all results; likewise the completion tokens and
            requests.
        cost: Token cost from the price table, or ``None`` if the grader has no price.
        not_applicable: Samples the grader does not apply to (routing): in no other count.
    """

    name: str
    count: int = 0
    scored: int = 0
    ranked: int = 0
    errors: dict[str, int]
    mean: float | None
    std: float | None
    min: float | None
    max: float | None
    normalized_mean: float | None
    latency_p50_s: float | None
    latency_p95_s: float | None
    queue_p50_s: float | None = None
    queue_p95_s: float | None = None
    error_examples: dict[str, str] = Field(default_factory=dict)
    response_failures: dict[str, int] = Field(default_factory=dict)
    response_failure_examples: dict[str, str] = Field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    cost: float | None = None
    not_applicable: int = 0

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    @property
    def response_failure_count(self) -> int:
        return sum(self.response_failures.values())

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class AggregateSummary(_Model):
    """One aggregate over a run: the mean of its ``count`` values; ``missing`` were null;
    ``not_applicable`` samples had none (it does not apply to them)."""

    name: str
    count: int
    missing: int
    mean: float | None
    not_applicable: int = 0


class RunSummary(_Model):
    """The summary of a run: per grader and per aggregate, in first-seen order."""

    samples: int
    graders: tuple[GraderSummary, ...]
    aggregates: tuple[AggregateSummary, ...]

    @property
    def total_tokens(self) -> int:
        return sum(g.total_tokens for g in self.graders)

    @property
    def cost(self) -> float | None:
        """Total cost of the priced graders, or ``None`` if none is priced."""
        costs = [g.cost for g in self.graders if g.cost is not None]
        return math.fsum(costs) if costs else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) of sorted ``values`` by linear interpolation."""
    if not values:
        return None
    rank = (len(values) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (rank - low)


class _GraderStats:
    def __init__(self) -> None:
        self.count = self.scored = self.ranked = self.not_applicable = 0
        self.scores = RunningMoments()
        self.normalized = RunningMoments()
        self.low = math.inf
        self.high = -math.inf
        self.errors: Counter[str] = Counter()
        self.examples: dict[str, str] = {}
        self.failures: Counter[str] = Counter()
        self.failure_examples: dict[str, str] = {}
        self.latencies_s = array("d")
        self.queued_s = array("d")
        self.prompt_tokens = self.completion_tokens = self.requests = 0

    def add(self, entry: ResultEntry) -> None:
        if isinstance(entry, NotApplicableEntry):
            self.not_applicable += 1
            return
        self.count += 1
        if isinstance(entry, ScoreEntry):
            self.scored += 1
            self.scores.add(entry.score)  # overflow-safe: any finite score, 1.7e308 included
            if entry.score < self.low:
                self.low = entry.score
            if entry.score > self.high:
                self.high = entry.score
            self.normalized.add(entry.normalized_score)
            if entry.metadata.get("blame") == RESPONSE_BLAME:
                cause = str(entry.metadata.get("cause", "unknown"))
                self.failures[cause] += 1
                self.failure_examples.setdefault(cause, entry.reason)
        elif isinstance(entry, RankEntry):
            self.ranked += 1
        elif isinstance(entry, ErrorEntry):
            self.errors[entry.kind] += 1
            self.examples.setdefault(entry.kind, entry.message)
        if entry.latency_s is not None and math.isfinite(entry.latency_s):
            self.latencies_s.append(entry.latency_s)
            queued_s = entry.queue_s or 0.0  # a judge result without a queue time did not wait
            self.queued_s.append(queued_s if math.isfinite(queued_s) else 0.0)
        if entry.usage is not None:
            self.prompt_tokens += entry.usage.prompt_tokens
            self.completion_tokens += entry.usage.completion_tokens
            self.requests += entry.usage.requests

    def build(self, name: str, price: Price | None) -> GraderSummary:
        has = self.scored > 0
        latencies_s = sorted(self.latencies_s)
        queued_s = sorted(self.queued_s)
        cost = None
        if price is not None:
            cost = (
                self.prompt_tokens * price["prompt_per_1k"]
                + self.completion_tokens * price["completion_per_1k"]
            ) / 1000.0
        return GraderSummary(
            name=name,
            count=self.count,
            scored=self.scored,
            ranked=self.ranked,
            errors=dict(sorted(self.errors.items())),
            mean=self.scores.mean,
            std=self.scores.std,
            min=self.low if has else None,
            max=self.high if has else None,
            normalized_mean=self.normalized.mean,
            latency_p50_s=percentile(latencies_s, 50),
            latency_p95_s=percentile(latencies_s, 95),
            queue_p50_s=percentile(queued_s, 50),
            queue_p95_s=percentile(queued_s, 95),
            error_examples={kind: self.examples[kind] for kind in sorted(self.examples)},
            response_failures=dict(sorted(self.failures.items())),
            response_failure_examples={c: self.failure_examples[c] for c in sorted(self.failure_examples)},
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            requests=self.requests,
            cost=cost,
            not_applicable=self.not_applicable,
        )


class SummaryBuilder:
    """Accumulates a :class:`RunSummary` from results lines, one at a time.

    Args:
        prices: Optional price per grader name; graders without one get ``cost=None``.
    """

    def __init__(self, *, prices: Mapping[str, Price] | None = None) -> None:
        self._prices = dict(prices or {})
        self._samples = 0
        self._graders: dict[str, _GraderStats] = {}
        # name -> (values, [missing, not applicable])
        self._aggregates: dict[str, tuple[RunningMoments, list[int]]] = {}

    def add(self, record: SampleOutcome | OutcomeLine | Mapping[str, JsonValue]) -> None:
        """Add one results line: a dict read from the file, its typed model, or an outcome.

        Raises:
            pydantic.ValidationError: If a dict does not match the results-line format.
        """
        if isinstance(record, SampleOutcome):
            line = record.to_line()
        elif isinstance(record, OutcomeLine):
            line = record
        else:
            line = OutcomeLine.model_validate(record)
        self._samples += 1
        for name in self._aggregates.keys() - line.aggregates.keys():
            self._aggregates[name][1][1] += 1  # absent: it does not apply to this sample
        for name, entry in line.results.items():
            stats = self._graders.get(name)
            if stats is None:
                stats = self._graders[name] = _GraderStats()
            stats.add(entry)
        for name, value in line.aggregates.items():
            values, missing = self._aggregates.setdefault(name, (RunningMoments(), [0, self._samples - 1]))
            if value is None or not math.isfinite(value):
                missing[0] += 1
            else:
                values.add(value)

    def build(self) -> RunSummary:
        """The summary of everything added so far."""
        return RunSummary(
            samples=self._samples,
            graders=tuple(stats.build(name, self._prices.get(name)) for name, stats in self._graders.items()),
            aggregates=tuple(
                AggregateSummary(
                    name=name, count=values.count, missing=missing, mean=values.mean, not_applicable=absent
                )
                for name, (values, (missing, absent)) in self._aggregates.items()
            ),
        )


def format_number(value: float | None) -> str:
    """Four significant digits; thousands separators from 10,000 to 10**15, exponent
    notation past it (``1.7e+308``, not 309 digits); ``-`` for ``None``."""
    if value is None:
        return "-"
    if isinstance(value, int) or 10_000 <= abs(value) < 1e15:
        return f"{value:,.0f}"
    if abs(value) >= 1e15:
        return f"{value:.4g}"
    text = f"{value:.4g}"
    return "0" if text == "-0" else text


def format_cost(value: float | None) -> str:
    """Dollars with two significant digits below a dollar: ``$0.000065``, ``$0.0090``, ``$1.25``."""
    if value is None:
        return "-"
    if value == 0 or not math.isfinite(value):
        return f"${value:g}"
    if abs(value) >= 1:
        return f"${value:,.2f}"
    decimals = min(12, max(2, 1 - math.floor(math.log10(abs(value)))))
    return f"${value:.{decimals}f}"


GRADER_COLUMNS = (
    "grader",
    "n",
    "scored",
    "errors",
    "mean",
    "std",
    "min",
    "max",
    "judge p50 s",
    "judge p95 s",
    "queue p50 s",
    "queue p95 s",
    "tokens",
    "cost",
)
"""The summary table's columns: judge latency and queue time percentiles are in seconds."""


def grader_row(g: GraderSummary) -> tuple[str, ...]:
    """The cells of a grader's row, in :data:`GRADER_COLUMNS` order."""
    return (
        g.name,
        format_number(g.count),
        format_number(g.scored),
        format_number(g.error_count),
        format_number(g.mean),
        format_number(g.std),
        format_number(g.min),
        format_number(g.max),
        format_number(g.latency_p50_s),
        format_number(g.latency_p95_s),
        format_number(g.queue_p50_s),
        format_number(g.queue_p95_s),
        format_number(g.total_tokens),
        format_cost(g.cost),
    )


def total_row(summary: RunSummary) -> tuple[str, ...]:
    """The cells of the totals row (tokens and cost), in :data:`GRADER_COLUMNS` order."""
    blanks = [""] * (len(GRADER_COLUMNS) - 3)
    return ("total", *blanks, format_number(summary.total_tokens), format_cost(summary.cost))


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _table(
    header: Sequence[str], rows: Sequence[Sequence[str]], *, left: int = 1, text_last: bool = False
) -> list[str]:
    """Aligned text lines: the first ``left`` columns (and the last, if ``text_last``)
    left-aligned, the rest right-aligned."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    last = len(widths) - 1 if text_last else -1

    def fmt(cells: Sequence[str]) -> str:
        aligned = (
            cell.ljust(width) if i < left or i == last else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        )
        return "  ".join(aligned).rstrip()

    return [fmt(header), "  ".join("-" * w for w in widths), *(fmt(row) for row in rows)]


def response_failure_rows(summary: RunSummary) -> list[tuple[str, str, str, str]]:
    """(grader, cause, count, first reason) per cause of a response failure, graders in order."""
    return [
        (g.name, cause, format_number(n), _cut(g.response_failure_examples.get(cause, ""), 100))
        for g in summary.graders
        for cause, n in g.response_failures.items()
    ]


def not_applicable_rows(summary: RunSummary) -> list[tuple[str, str, str]]:
    """(grader or aggregate, rows it applies to, rows it does not) for each one routing left out somewhere."""
    rows = [
        (g.name, format_number(g.count), format_number(g.not_applicable))
        for g in summary.graders
        if g.not_applicable
    ]
    rows += [
        (a.name, format_number(a.count + a.missing), format_number(a.not_applicable))
        for a in summary.aggregates
        if a.not_applicable
    ]
    return rows


def render_table(summary: RunSummary) -> str:
    """A plain-text table of the summary for a terminal, columns aligned.

    One row per grader (score statistics over raw scores; the judge's latency and the time
    queued for the provider's limits in seconds; ``-`` where there is nothing to show), then
    system errors by kind with the first message of each, response failures (scored at the
    bottom of the range) by cause with the first reason of each, aggregates if any, and
    the rows each grader or aggregate does not apply to, if routing left any out.
    """
    lines = [f"{format_number(summary.samples)} samples"]
    rows = [grader_row(g) for g in summary.graders]
    if summary.graders:
        lines += ["", *_table(GRADER_COLUMNS, [*rows, total_row(summary)] if len(rows) > 1 else rows)]
    errors = [
        (g.name, kind, format_number(n), _cut(g.error_examples.get(kind, ""), 100))
        for g in summary.graders
        for kind, n in g.errors.items()
    ]
    if errors:
        header = ("grader", "error kind", "count", "first message")
        lines += ["", *_table(header, errors, left=2, text_last=True)]
    failures = response_failure_rows(summary)
    if failures:
        header = ("grader", "response failure", "count", "first reason")
        lines += ["", *_table(header, failures, left=2, text_last=True)]
    if summary.aggregates:
        aggregates = [
            (a.name, format_number(a.count), format_number(a.missing), format_number(a.mean))
            for a in summary.aggregates
        ]
        lines += ["", *_table(("aggregate", "n", "missing", "mean"), aggregates)]
    routed = not_applicable_rows(summary)
    if routed:
        lines += ["", *_table(("routed", "applies to", "not applicable"), routed)]
    return "\n".join(lines) + "\n"
