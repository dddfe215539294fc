"""Every number that reaches a mean or a chart is finite-safe: any finite scores,
``±1.7e308`` included, give a finite mean, standard deviation and histogram."""

from __future__ import annotations

import math
import statistics
import sys

from hypothesis import example, given, settings
from hypothesis import strategies as st

from openjudge.jobs._moments import RunningMoments
from openjudge.jobs._records import OutcomeLine, ScoreEntry
from openjudge.jobs._summary import SummaryBuilder, format_number, render_table
from openjudge.jobs._svg import bin_counts, histogram_svg

_MAX = sys.float_info.max
_finite = st.floats(allow_nan=False, allow_infinity=False)
_ordinary = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False).filter(
    lambda x: x == 0 or abs(x) > 1e-300
)


def _moments(values: list[float]) -> RunningMoments:
    moments = RunningMoments()
    for value in values:
        moments.add(value)
    return moments


@settings(max_examples=300, deadline=None)
@given(st.lists(_finite, min_size=1, max_size=30))
@example([0.0, 4.214945193941825e-161])  # tiny deviations squared would sink into subnormals
@example([4.214945193941825e-161, 0.0])
def test_any_finite_values_give_a_finite_mean_and_std_within_their_range(values: list[float]) -> None:
    moments = _moments(values)
    mean, std = moments.mean, moments.std
    assert mean is not None and std is not None
    assert math.isfinite(mean) and math.isfinite(std)
    slack = 1e-9 * max(abs(v) for v in values)
    assert min(values) - slack <= mean <= max(values) + slack
    assert 0 <= std <= (max(values) / 2 - min(values) / 2) * (1 + 1e-9) + slack


@settings(max_examples=300, deadline=None)
@given(st.lists(_ordinary, min_size=1, max_size=30))
def test_on_ordinary_values_the_mean_is_the_plain_one_bit_for_bit(values: list[float]) -> None:
    moments = _moments(values)
    total = 0.0
    for value in values:
        total += value
    assert moments.mean == total / len(values)
    assert moments.std is not None
    assert math.isclose(moments.std, statistics.pstdev(values), rel_tol=1e-7, abs_tol=1e-9)


def test_two_huge_scores_of_opposite_signs() -> None:
    moments = _moments([0.0, 1.7e308, -1.7e308, 0.5])
    assert moments.mean == 0.125
    assert moments.std is not None and math.isclose(moments.std, 1.7e308 / math.sqrt(2))
    assert moments.count == 4
    assert _moments([_MAX, _MAX]).mean == _MAX and _moments([_MAX, _MAX]).std == 0.0
    assert _moments([math.inf, math.nan]).mean is None  # not counted


def test_the_summary_of_huge_scores_has_no_nan() -> None:
    builder = SummaryBuilder()
    for i, score in enumerate([1.7e308, -1.7e308, 0.5]):
        entry = ScoreEntry(score=score, normalized_score=score)  # no declared range
        builder.add(OutcomeLine(id=f"s{i}", results={"given": entry}, aggregates={"a": score}))
    summary = builder.build()
    (grader,) = summary.graders
    for mean in (grader.mean, grader.normalized_mean, summary.aggregates[0].mean):
        assert mean is not None and math.isclose(mean, 0.5 / 3, rel_tol=1e-12)  # the huge ones cancel
    table = render_table(summary)
    assert "nan" not in table and "inf" not in table
    assert "1.7e+308" in table and "-1.7e+308" in table  # not 309 digits
    assert format_number(1.7e308) == "1.7e+308" and format_number(123_456.0) == "123,456"


def test_histograms_of_huge_values_bin_them_and_label_finite_edges() -> None:
    counts = bin_counts([-1.7e308, 0.0, 1.7e308, math.nan, math.inf], -1.7e308, 1.7e308, 20)
    assert counts[0] == 1 and counts[10] == 1 and counts[-1] == 1 and sum(counts) == 3
    svg = histogram_svg(counts, -1.7e308, 1.7e308, x_label="score")
    assert "inf" not in svg and "nan" not in svg
    assert "1.53e+308 – 1.7e+308: 1" in svg and "-1.7e+308 – -1.53e+308: 1" in svg
