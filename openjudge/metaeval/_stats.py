"""Statistics over labelled items, each with a percentile-bootstrap 95 % interval.

Every statistic is a function of a *weights matrix* ``W`` of shape ``(k, n)``: row ``b``
holds how many times each of the ``n`` units (labelled items) appears in one bootstrap
resample. The point estimate is the same function at ``W = 1``. So one resample drives
every statistic at once, a paired comparison of two judges is the difference of two
statistics under the same ``W``, and nothing is re-sorted per resample.

* :class:`Ratio`: ``sum(w * num) / sum(w * den)`` (rates, accuracies; ``den`` is 0 for
  items the rate does not cover, so the denominator is resampled too).
* :class:`Correlation`: Spearman's rho, or Kendall's tau-b, between ``x`` and ``y``
  observed per *observation*; an observation belongs to a unit (a pair contributes two
  responses), and a unit's weight applies to all its observations. Ties get average ranks
  (Spearman) and the tau-b correction (Kendall), exactly as on the resampled multiset.

Costs for ``k`` resamples: a ratio O(k·n); Spearman O(k·m) with m observations; Kendall
O(k·c·log L) with c distinct (x, y) cells and L distinct y values, swept with a Fenwick
tree over y per resample row (with 1-5 scores c <= 25, whatever the data size).

numpy only (no scipy): the formulas are short, and scipy would add about 110 MB to an
install for them; numpy is what the ``metaeval`` extra installs.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "Correlation",
    "Interval",
    "Ratio",
    "Resamples",
    "Statistic",
    "difference_interval",
    "interval",
    "intervals",
]

Floats: TypeAlias = NDArray[np.float64]
Ints: TypeAlias = NDArray[np.int64]

CONFIDENCE = 0.95
_MIN_FINITE_SHARE = 0.5
"""Below this share of resamples with a defined value, no interval is given."""


class Statistic(Protocol):
    """A statistic over ``n`` weighted units."""

    @property
    def n(self) -> int:
        """Units the statistic is defined over."""
        ...

    def covered(self) -> NDArray[np.bool_]:
        """Which units contribute to the statistic (shape ``(n,)``)."""
        ...

    def restrict(self, keep: NDArray[np.bool_]) -> Statistic:
        """The same statistic over the units where ``keep`` is true, re-indexed."""
        ...

    def __call__(self, weights: Floats) -> Floats:
        """Values for each row of a ``(k, n)`` weights matrix (NaN where undefined)."""
        ...


@dataclass(frozen=True, slots=True)
class Ratio:
    """``sum(w * num) / sum(w * den)`` over units."""

    num: Floats
    den: Floats

    @classmethod
    def mean(cls, values: Floats, covered: NDArray[np.bool_]) -> Ratio:
        """The mean of ``values`` over the covered units."""
        mask = covered.astype(np.float64)
        return cls(np.where(covered, values, 0.0), mask)

    @property
    def n(self) -> int:
        return int(self.num.shape[0])

    def covered(self) -> NDArray[np.bool_]:
        return self.den > 0

    def restrict(self, keep: NDArray[np.bool_]) -> Ratio:
        return Ratio(self.num[keep], self.den[keep])

    def __call__(self, weights: Floats) -> Floats:
        top = weights @ self.num
        bottom = weights @ self.den
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), np.nan)


@dataclass(frozen=True, slots=True)
class Correlation:
    """Spearman's rho or Kendall's tau-b between per-observation ``x`` and ``y``.

    Attributes:
        x: One value per observation.
        y: One value per observation.
        unit: The unit (item) index of each observation, in ``0..units-1``.
        units: How many units there are (some may have no observation).
        method: ``"spearman"`` or ``"kendall"``.
    """

    x: Floats
    y: Floats
    unit: Ints
    units: int
    method: Literal["spearman", "kendall"]

    @property
    def n(self) -> int:
        return self.units

    def covered(self) -> NDArray[np.bool_]:
        mask = np.zeros(self.units, dtype=bool)
        mask[self.unit] = True
        return mask

    def restrict(self, keep: NDArray[np.bool_]) -> Correlation:
        new_index = np.cumsum(keep) - 1
        rows = keep[self.unit]
        return Correlation(
            self.x[rows], self.y[rows], new_index[self.unit[rows]], int(keep.sum()), self.method
        )

    def __call__(self, weights: Floats) -> Floats:
        obs = weights[:, self.unit]
        if self.method == "spearman":
            return _spearman(self.x, self.y, obs)
        return _kendall_tau_b(self.x, self.y, obs)


def _sum_by_code(weights: Floats, code: Ints, levels: int) -> Floats:
    """``out[b, c] = sum of weights[b, j] over j with code[j] == c`` (every code 0..levels-1 occurs)."""
    order = np.argsort(code, kind="stable")
    starts = np.searchsorted(code[order], np.arange(levels))
    return np.add.reduceat(weights[:, order], starts, axis=1)


def _average_ranks(values: Floats, weights: Floats) -> Floats:
    """1-based average ranks of each observation within each weighted row."""
    _, code = np.unique(values, return_inverse=True)
    levels = int(code.max()) + 1
    counts = _sum_by_code(weights, code, levels)
    before = np.cumsum(counts, axis=1) - counts
    return (before + (counts + 1.0) / 2.0)[:, code]


def _spearman(x: Floats, y: Floats, weights: Floats) -> Floats:
    if x.size == 0:
        return np.full(weights.shape[0], np.nan)
    rx, ry = _average_ranks(x, weights), _average_ranks(y, weights)
    total = weights.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        dx = rx - (weights * rx).sum(axis=1, keepdims=True) / total
        dy = ry - (weights * ry).sum(axis=1, keepdims=True) / total
        cov = (weights * dx * dy).sum(axis=1)
        var = (weights * dx * dx).sum(axis=1) * (weights * dy * dy).sum(axis=1)
        # Constant ranks (var 0) leave the correlation undefined: NaN, never 0.
        return np.where(var > 1e-12, cov / np.sqrt(np.where(var > 1e-12, var, 1.0)), np.nan)


def _fenwick_prefix(tree: Floats, position: int) -> Floats:
    """Sum of the tree's entries 1..position, per row."""
    total = np.zeros(tree.shape[0])
    while position > 0:
        total += tree[:, position]
        position -= position & -position
    return total


def _fenwick_add(tree: Floats, position: int, value: Floats) -> None:
    size = tree.shape[1] - 1
    while position <= size:
        tree[:, position] += value
        position += position & -position


def _tied_pairs(weights: Floats, code: Ints) -> Floats:
    counts = _sum_by_code(weights, code, int(code.max()) + 1)
    pairs: Floats = (counts * (counts - 1.0) / 2.0).sum(axis=1)
    return pairs


def _kendall_tau_b(x: Floats, y: Floats, weights: Floats) -> Floats:
    rows = weights.shape[0]
    if x.size == 0:
        return np.full(rows, np.nan)
    _, x_code = np.unique(x, return_inverse=True)
    _, y_code = np.unique(y, return_inverse=True)
    y_levels = int(y_code.max()) + 1
    # Collapse observations into distinct (x, y) cells, sorted by x then y.
    cells, cell_code = np.unique(x_code * y_levels + y_code, return_inverse=True)
    cell_weights = _sum_by_code(weights, cell_code, cells.size)
    cell_x, cell_y = cells // y_levels, cells % y_levels
    total = cell_weights.sum(axis=1)
    pairs = total * (total - 1.0) / 2.0
    tied_x = _tied_pairs(cell_weights, cell_x)
    tied_y = _tied_pairs(cell_weights, cell_y)
    # S = concordant - discordant pairs: sweep x groups in order; each cell meets the cells
    # of strictly smaller x already in the tree (same-x cells are inserted after the group).
    tree = np.zeros((rows, y_levels + 1))
    inserted = np.zeros(rows)
    s = np.zeros(rows)
    group_starts = [*np.flatnonzero(np.diff(cell_x)) + 1, cells.size]
    start = 0
    for end in group_starts:
        for c in range(start, end):
            rank = int(cell_y[c])
            below = _fenwick_prefix(tree, rank)
            above = inserted - _fenwick_prefix(tree, rank + 1)
            s += cell_weights[:, c] * (below - above)
        for c in range(start, end):
            _fenwick_add(tree, int(cell_y[c]) + 1, cell_weights[:, c])
            inserted += cell_weights[:, c]
        start = end
    with np.errstate(invalid="ignore", divide="ignore"):
        denominator = (pairs - tied_x) * (pairs - tied_y)
        return np.where(denominator > 0, s / np.sqrt(np.where(denominator > 0, denominator, 1.0)), np.nan)


class Resamples:
    """``count`` bootstrap resamples of ``n`` units, as weights matrices, reproducible from a seed.

    Iterating twice (or two instances with the same arguments) gives the same resamples,
    so every statistic of a report, and both sides of a paired comparison, see the same ones.
    Rows are produced in chunks of at most about ``chunk_cells`` matrix cells.
    """

    def __init__(self, n: int, *, count: int = 1000, seed: int = 0, chunk_cells: int = 2_000_000) -> None:
        if count < 1:
            raise ValueError(f"the number of bootstrap resamples must be at least 1, got {count}")
        self.n = n
        self.count = count
        self.seed = seed
        self.rows_per_chunk = max(1, chunk_cells // max(1, n))

    def __iter__(self) -> Iterator[Floats]:
        rng = np.random.default_rng(self.seed)
        n = self.n
        done = 0
        while done < self.count:
            rows = min(self.rows_per_chunk, self.count - done)
            draws = rng.integers(0, n, size=(rows, n)) if n else np.zeros((rows, 0), dtype=np.int64)
            offsets = (draws + np.arange(rows)[:, None] * n).ravel()
            yield np.bincount(offsets, minlength=rows * n).reshape(rows, n).astype(np.float64)
            done += rows


@dataclass(frozen=True, slots=True)
class Interval:
    """A point estimate and its percentile-bootstrap interval.

    Attributes:
        value: The statistic on the data (``None`` if undefined, e.g. no covered unit).
        low: Lower bound of the 95 % interval (``None`` if it cannot be given).
        high: Upper bound.
        n: Units that contribute to the statistic.
    """

    value: float | None
    low: float | None
    high: float | None
    n: int


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _bounds(draws: Floats) -> tuple[float | None, float | None]:
    finite = draws[np.isfinite(draws)]
    if finite.size == 0 or finite.size < _MIN_FINITE_SHARE * draws.size:
        return None, None
    tail = (1.0 - CONFIDENCE) / 2.0 * 100.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return float(low), float(high)


def intervals(
    statistics: Mapping[str, Statistic], *, resamples: int = 1000, seed: int = 0
) -> dict[str, Interval]:
    """Each statistic on the data, with its bootstrap 95 % interval, from one set of resamples.

    All statistics must be over the same units (a grader's labelled items). Every unit is
    resampled, so how many units a statistic covers (e.g. the items a judge answered)
    varies across resamples as it would with new data; ``n`` is the count on the data.

    Raises:
        ValueError: The statistics are over different numbers of units.
    """
    sizes = {stat.n for stat in statistics.values()}
    if len(sizes) > 1:
        raise ValueError(f"statistics over different numbers of units: {sorted(sizes)}")
    n = sizes.pop() if sizes else 0
    covered = {name: int(stat.covered().sum()) for name, stat in statistics.items()}
    live = {name: stat for name, stat in statistics.items() if covered[name]}
    ones = np.ones((1, n))
    values = {name: _finite(float(stat(ones)[0])) for name, stat in live.items()}
    draws: dict[str, list[Floats]] = {name: [] for name in live}
    if live:
        for weights in Resamples(n, count=resamples, seed=seed):
            for name, stat in live.items():
                draws[name].append(stat(weights))
    found = {name: Interval(None, None, None, 0) for name in statistics}
    for name in live:
        low, high = _bounds(np.concatenate(draws[name]))
        found[name] = Interval(values[name], low, high, covered[name])
    return found


def interval(statistic: Statistic, *, resamples: int = 1000, seed: int = 0) -> Interval:
    """One statistic with its bootstrap 95 % interval (see :func:`intervals`)."""
    return intervals({"statistic": statistic}, resamples=resamples, seed=seed)["statistic"]


def difference_interval(
    baseline: Statistic, candidate: Statistic, *, resamples: int = 1000, seed: int = 0
) -> tuple[Interval, Interval, Interval]:
    """Paired bootstrap of ``candidate - baseline`` over the units both cover.

    Both statistics must be over the same units in the same order (the same labelled
    items). Returns the baseline and candidate on the shared units, and their difference.
    """
    if baseline.n != candidate.n:
        raise ValueError(f"paired statistics need the same units, got {baseline.n} and {candidate.n}")
    shared = baseline.covered() & candidate.covered()
    a, b = baseline.restrict(shared), candidate.restrict(shared)
    n = int(shared.sum())
    if n == 0:
        empty = Interval(None, None, None, 0)
        return empty, empty, empty
    ones = np.ones((1, n))
    value_a, value_b = float(a(ones)[0]), float(b(ones)[0])
    draws_a, draws_b = [], []
    for w in Resamples(n, count=resamples, seed=seed):
        draws_a.append(a(w))
        draws_b.append(b(w))
    da, db = np.concatenate(draws_a), np.concatenate(draws_b)
    return (
        Interval(_finite(value_a), *_bounds(da), n),
        Interval(_finite(value_b), *_bounds(db), n),
        Interval(_finite(value_b - value_a), *_bounds(db - da), n),
    )
