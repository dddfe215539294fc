from __future__ import annotations

import math

import pytest
from pydantic import JsonValue

from openjudge.jobs._results import SampleOutcome
from openjudge.jobs._summary import (
    RunSummary,
    SummaryBuilder,
    format_cost,
    format_number,
    percentile,
    render_table,
)
from openjudge.results import GraderError, GraderRank, GraderResult, GraderScore, ScoreRange, TokenUsage

_USAGE = TokenUsage(prompt_tokens=100, completion_tokens=10, requests=1)


def _outcomes() -> list[SampleOutcome]:
    def a(score: float, latency_s: float) -> GraderScore:
        return GraderScore(
            name="a", score=score, score_range=ScoreRange(low=0, high=4), latency_s=latency_s, usage=_USAGE
        )

    def b(score: float) -> GraderScore:
        return GraderScore(name="b", score=score)

    rank = GraderRank(name="r", rank=[1, 2])
    timeout = GraderError(
        name="a",
        kind="timeout",
        message="slow",
        latency_s=10.0,
        usage=TokenUsage(prompt_tokens=50, requests=1),
    )
    parse = GraderError(
        name="a",
        kind="parse_error",
        message="bad",
        usage=TokenUsage(prompt_tokens=200, completion_tokens=20, requests=2),
    )
    rows: list[tuple[dict[str, GraderResult], dict[str, float | None]]] = [
        ({"a": a(1, 1.0), "b": b(0)}, {"overall": 0.5}),
        ({"a": a(2, 2.0), "b": b(1)}, {"overall": None}),
        ({"a": a(3, 3.0), "b": b(1), "r": rank}, {"overall": 1.0}),
        ({"a": a(4, 4.0), "b": b(1), "r": rank}, {}),  # "overall" absent: it does not apply
        ({"a": timeout, "b": b(1)}, {"overall": 0.0}),
        ({"a": parse, "b": b(0)}, {}),
    ]
    return [
        SampleOutcome(id=f"s{i}", line=i, results=r, aggregates=agg) for i, (r, agg) in enumerate(rows, 1)
    ]


def _summary(*, from_json: bool) -> RunSummary:
    builder = SummaryBuilder(prices={"a": {"prompt_per_1k": 1.0, "completion_per_1k": 2.0}})
    for outcome in _outcomes():
        record: SampleOutcome | dict[str, JsonValue] = outcome.to_json() if from_json else outcome
        builder.add(record)
    return builder.build()


@pytest.mark.parametrize("from_json", [True, False])
def test_grader_statistics_are_exact(from_json: bool) -> None:
    summary = _summary(from_json=from_json)
    assert summary.samples == 6
    a, b, r = summary.graders
    data = a.model_dump()
    # Exact fields compared exactly; pytest.approx (9.2+) takes numbers only under a tolerance.
    assert data.pop("name") == "a"
    assert data.pop("errors") == {"parse_error": 1, "timeout": 1}
    counts = {
        key: data.pop(key)
        for key in ("count", "scored", "ranked", "prompt_tokens", "completion_tokens", "requests")
    }
    assert counts == {
        "count": 6,
        "scored": 4,
        "ranked": 0,
        "prompt_tokens": 650,
        "completion_tokens": 60,
        "requests": 7,
    }
    assert data.pop("error_examples") == {"parse_error": "bad", "timeout": "slow"}
    assert (data.pop("response_failures"), data.pop("response_failure_examples")) == ({}, {})
    assert (data.pop("queue_p50_s"), data.pop("queue_p95_s")) == (0.0, 0.0)  # no result waited
    assert data.pop("not_applicable") == 0
    assert data == pytest.approx(
        {
            "mean": 2.5,
            "std": math.sqrt(1.25),  # population std of 1, 2, 3, 4
            "min": 1.0,
            "max": 4.0,
            "normalized_mean": 0.625,
            "latency_p50_s": 3.0,  # latencies 1, 2, 3, 4, 10 (errors count too)
            "latency_p95_s": 8.8,  # 4 + 0.8 * (10 - 4)
            "cost": 0.77,  # 650 / 1000 * 1.0 + 60 / 1000 * 2.0
        },
        rel=1e-12,
    )
    assert (b.count, b.scored, b.errors, b.cost) == (6, 6, {}, None)
    assert b.mean == pytest.approx(4 / 6)
    assert b.std == pytest.approx(math.sqrt(2 / 9))
    assert (b.min, b.max, b.latency_p50_s, b.latency_p95_s) == (0.0, 1.0, None, None)
    assert (r.count, r.scored, r.ranked, r.mean, r.std) == (2, 0, 2, None, None)
    assert a.error_count == 2
    assert a.total_tokens == 710
    assert summary.total_tokens == 710
    assert summary.cost == pytest.approx(0.77)
    (overall,) = summary.aggregates
    assert (overall.name, overall.count, overall.missing, overall.mean) == ("overall", 3, 1, 0.5)
    assert overall.not_applicable == 2  # the two samples without it


def test_empty_summary() -> None:
    summary = SummaryBuilder().build()
    assert summary == RunSummary(samples=0, graders=(), aggregates=())
    assert summary.cost is None
    assert render_table(summary) == "0 samples\n"


def test_single_score_has_zero_std() -> None:
    builder = SummaryBuilder()
    builder.add(SampleOutcome(id="x", line=1, results={"g": GraderScore(name="g", score=0.3)}))
    (g,) = builder.build().graders
    assert (g.mean, g.std, g.min, g.max) == (0.3, 0.0, 0.3, 0.3)


def test_summary_is_json_serialisable() -> None:
    data = _summary(from_json=True).model_dump(mode="json")
    assert data["samples"] == 6
    assert data["graders"][0]["errors"] == {"parse_error": 1, "timeout": 1}


def test_render_table() -> None:
    assert render_table(_summary(from_json=True)) == (
        "6 samples\n"
        "\n"
        "grader  n  scored  errors    mean     std  min  max  judge p50 s  judge p95 s  queue p50 s  queue p95 s  tokens   cost\n"
        "------  -  ------  ------  ------  ------  ---  ---  -----------  -----------  -----------  -----------  ------  -----\n"
        "a       6       4       2     2.5   1.118    1    4            3          8.8            0            0     710  $0.77\n"
        "b       6       6       0  0.6667  0.4714    0    1            -            -            -            -       0      -\n"
        "r       2       0       0       -       -    -    -            -            -            -            -       0      -\n"
        "total                                                                                                       710  $0.77\n"
        "\n"
        "grader  error kind   count  first message\n"
        "------  -----------  -----  -------------\n"
        "a       parse_error      1  bad\n"
        "a       timeout          1  slow\n"
        "\n"
        "aggregate  n  missing  mean\n"
        "---------  -  -------  ----\n"
        "overall    3        1   0.5\n"
        "\n"
        "routed   applies to  not applicable\n"
        "-------  ----------  --------------\n"
        "overall           4               2\n"
    )


def test_judge_latency_and_queue_time_are_separate_columns() -> None:
    builder = SummaryBuilder()
    for i in range(1, 5):  # judge 0.5 s each; queued 0, 1, 2, 3 s behind the provider's limit
        queued = float(i - 1) or None  # a call that never waited records no queue time
        builder.add(
            SampleOutcome(
                id=f"s{i}",
                line=i,
                results={"q": GraderScore(name="q", score=1.0, latency_s=0.5, queue_s=queued)},
            )
        )
    builder.add(SampleOutcome(id="rule", line=5, results={"q": GraderScore(name="q", score=0.0)}))
    (q,) = builder.build().graders
    assert (q.latency_p50_s, q.latency_p95_s) == (0.5, 0.5)
    assert q.queue_p50_s == 1.5
    assert q.queue_p95_s == pytest.approx(2.85)  # 2 + 0.85 * (3 - 2)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "-"),
        (0.0, "$0"),
        (6.5e-05, "$0.000065"),
        (0.009, "$0.0090"),
        (0.77, "$0.77"),
        (1234.5, "$1,234.50"),
    ],
)
def test_format_cost(value: float | None, text: str) -> None:
    assert format_cost(value) == text


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([], 50, None),
        ([7.0], 95, 7.0),
        ([1.0, 2.0], 50, 1.5),
        ([float(v) for v in range(1, 11)], 50, 5.5),
        ([float(v) for v in range(1, 11)], 95, 9.55),
        ([float(v) for v in range(1, 11)], 100, 10.0),
        ([float(v) for v in range(1, 11)], 0, 1.0),
    ],
)
def test_percentile(values: list[float], q: float, expected: float | None) -> None:
    result = percentile(values, q)
    assert result == (pytest.approx(expected) if expected is not None else None)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "-"),
        (0, "0"),
        (3, "3"),
        (0.5, "0.5"),
        (2 / 3, "0.6667"),
        (1234.5678, "1235"),
        (12345.6, "12,346"),
        (1_038_963, "1,038,963"),
        (0.000012345, "1.234e-05"),
        (-0.00001, "-1e-05"),
    ],
)
def test_format_number(value: float | None, text: str) -> None:
    assert format_number(value) == text


def test_response_failures_are_scores_counted_by_cause_apart_from_errors() -> None:
    unit = ScoreRange(low=0, high=1)

    def failed(cause: str, reason: str) -> GraderScore:
        return GraderScore(
            name="g",
            score=0.0,
            score_range=unit,
            reason=reason,
            metadata={"blame": "response", "cause": cause},
        )

    rows: list[GraderResult] = [
        failed("too_deep", "nests deeper than 100 levels"),
        failed("too_deep", "again"),
        failed("lone_surrogate", "U+D800"),
        GraderScore(name="g", score=1.0, score_range=unit),
        GraderError(name="g", kind="provider_error", message="down"),
    ]
    builder = SummaryBuilder()
    for i, result in enumerate(rows):
        builder.add(SampleOutcome(id=str(i), line=i, results={"g": result}))
    (g,) = builder.build().graders
    assert (g.scored, g.errors, g.mean) == (4, {"provider_error": 1}, 0.25)
    assert g.response_failures == {"lone_surrogate": 1, "too_deep": 2}
    assert g.response_failure_count == 3
    assert g.response_failure_examples == {
        "lone_surrogate": "U+D800",
        "too_deep": "nests deeper than 100 levels",
    }
    text = render_table(builder.build())
    assert "response failure" in text and "too_deep" in text and "provider_error" in text
