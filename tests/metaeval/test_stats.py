"""The bootstrap statistics: exact values on resamples, reproducibility, coverage, pairing."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from openjudge.metaeval._stats import Correlation, Ratio, Resamples, difference_interval, interval


def brute_tau_b(x: list[float], y: list[float]) -> float:
    """Kendall's tau-b by counting every pair (the textbook definition)."""
    concordant = discordant = tied_x = tied_y = 0
    for (x1, y1), (x2, y2) in itertools.combinations(zip(x, y, strict=True), 2):
        if x1 == x2:
            tied_x += 1
        if y1 == y2:
            tied_y += 1
        if x1 != x2 and y1 != y2:
            if (x1 - x2) * (y1 - y2) > 0:
                concordant += 1
            else:
                discordant += 1
    pairs = len(x) * (len(x) - 1) // 2
    return (concordant - discordant) / math.sqrt((pairs - tied_x) * (pairs - tied_y))


def expand(values: np.ndarray, weights: np.ndarray) -> list[float]:
    return [float(v) for v in np.repeat(values, weights.astype(int))]


def test_resamples_are_reproducible_and_draw_n_units_each() -> None:
    first = np.concatenate(list(Resamples(7, count=50, seed=3, chunk_cells=40)))
    again = np.concatenate(list(Resamples(7, count=50, seed=3, chunk_cells=40)))
    other = np.concatenate(list(Resamples(7, count=50, seed=4)))
    assert first.shape == (50, 7)
    assert (first.sum(axis=1) == 7).all()
    assert np.array_equal(first, again)
    assert not np.array_equal(first, other)


def test_ratio_is_a_ratio_of_weighted_sums() -> None:
    stat = Ratio(np.array([1.0, 0.0, 2.0]), np.array([1.0, 1.0, 2.0]))
    weights = np.array([[1.0, 1.0, 1.0], [0.0, 3.0, 0.0], [2.0, 0.0, 1.0]])
    assert stat(weights).tolist() == pytest.approx([3 / 4, 0.0, 4 / 4])
    uncovered = Ratio.mean(np.array([1.0, 1.0]), np.array([False, False]))
    assert math.isnan(float(uncovered(np.ones((1, 2)))[0]))


@pytest.mark.parametrize("method", ["spearman", "kendall"])
@pytest.mark.parametrize("discrete", [True, False])
def test_correlations_equal_the_definition_on_each_resample(method: str, discrete: bool) -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(11)
    n = 40
    x = rng.integers(1, 6, n).astype(float) if discrete else rng.normal(size=n)
    y = np.round(x + rng.normal(0, 1.2, n), 0 if discrete else 3)
    stat = Correlation(x, y, np.arange(n), n, "spearman" if method == "spearman" else "kendall")
    weights = next(iter(Resamples(n, count=6, seed=1)))
    got = stat(weights)
    for row, value in zip(weights, got, strict=True):
        xs, ys = expand(x, row), expand(y, row)
        if method == "kendall":
            assert value == pytest.approx(brute_tau_b(xs, ys), abs=1e-12)
        else:
            assert value == pytest.approx(scipy_stats.spearmanr(xs, ys)[0], abs=1e-12)


def test_observations_of_one_unit_are_resampled_together() -> None:
    # Two observations per unit (a pair's two responses): a unit drawn twice counts both twice.
    x = np.array([1.0, 2.0, 3.0, 4.0])
    y = np.array([1.0, 3.0, 2.0, 4.0])
    unit = np.array([0, 0, 1, 1])
    stat = Correlation(x, y, unit, 2, "kendall")
    got = float(stat(np.array([[2.0, 0.0]]))[0])
    assert got == pytest.approx(brute_tau_b([1, 2, 1, 2], [1, 3, 1, 3]))


def test_constant_scores_give_no_correlation_rather_than_zero() -> None:
    stat = Correlation(np.ones(5), np.arange(5.0), np.arange(5), 5, "spearman")
    found = interval(stat, resamples=50)
    assert found.value is None and found.low is None and found.n == 5


def test_interval_of_nothing_and_of_a_constant() -> None:
    assert interval(Ratio.mean(np.zeros(3), np.zeros(3, dtype=bool))).n == 0
    constant = interval(Ratio.mean(np.ones(10), np.ones(10, dtype=bool)), resamples=100)
    assert (constant.value, constant.low, constant.high, constant.n) == (1.0, 1.0, 1.0, 10)


def test_interval_covers_the_true_rate_about_95_percent_of_the_time() -> None:
    rng = np.random.default_rng(2024)
    true_rate, trials = 0.3, 200
    covered = 0
    for _ in range(trials):
        values = (rng.random(150) < true_rate).astype(float)
        found = interval(
            Ratio.mean(values, np.ones(150, dtype=bool)), resamples=400, seed=int(rng.integers(1 << 30))
        )
        assert found.low is not None and found.high is not None
        covered += found.low <= true_rate <= found.high
    assert 0.9 <= covered / trials <= 0.99


def test_paired_difference_uses_the_same_resamples() -> None:
    rng = np.random.default_rng(5)
    base = (rng.random(300) < 0.6).astype(float)
    better = base.copy()
    better[np.flatnonzero(base == 0)[:30]] = 1.0  # 30 more items right, nothing else changed
    covered = np.ones(300, dtype=bool)
    a, b, diff = difference_interval(Ratio.mean(base, covered), Ratio.mean(better, covered), resamples=500)
    assert diff.value == pytest.approx(0.1)
    assert b.value is not None and a.value is not None and b.value - a.value == pytest.approx(0.1)
    assert diff.low is not None and diff.low > 0  # paired: every resample moves both together
    same = difference_interval(Ratio.mean(base, covered), Ratio.mean(base, covered), resamples=100)[2]
    assert (same.value, same.low, same.high) == (0.0, 0.0, 0.0)


def test_paired_difference_counts_only_units_both_cover() -> None:
    values = np.array([1.0, 0.0, 1.0, 1.0])
    a = Ratio.mean(values, np.array([True, True, True, False]))
    b = Ratio.mean(values, np.array([False, True, True, True]))
    first, second, diff = difference_interval(a, b, resamples=20)
    assert first.n == second.n == diff.n == 2
    assert first.value == second.value == 0.5


def test_paired_difference_rejects_different_units() -> None:
    with pytest.raises(ValueError, match="same units"):
        difference_interval(
            Ratio.mean(np.ones(2), np.ones(2, bool)), Ratio.mean(np.ones(3), np.ones(3, bool))
        )
