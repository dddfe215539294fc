"""Running mean and standard deviation of finite floats that never overflow.

A grader without a declared range may give any finite score, and ``1.7e308`` and
``-1.7e308`` are two of them: their difference, the sum of two of them and the square of
either overflow to infinity, so a plain running mean becomes ``nan`` and a histogram's span
infinite. :class:`RunningMoments` keeps the running sum (for the mean) and Welford's sum of
squared deviations (for the variance) of the values divided by a power of two at least as
large as every value seen (``2**e`` for the largest binary exponent ``e``, which may be
negative), rescaling when a larger value arrives. Scaling by a power of two is exact, so on ordinary values the results
are bit for bit those of the unscaled sums (the mean is ``sum / n``); the mean lies between
the smallest and the largest value and the population standard deviation is at most the
largest magnitude, so both are finite.
"""

from __future__ import annotations

import math

__all__ = ["RunningMoments", "half_span"]


class RunningMoments:
    """Count, mean and population standard deviation of the finite values added.

    Non-finite values are ignored (and not counted).
    """

    __slots__ = ("_exp", "_m2", "_mean", "_sum", "count")

    def __init__(self) -> None:
        self.count = 0
        # Values are held divided by 2**_exp, so within (-1, 1) once scaled; None until the first
        # non-zero value, whose exponent it takes: tiny values are scaled up as huge ones are
        # scaled down, so squared deviations never sink into subnormals.
        self._exp: int | None = None
        self._sum = 0.0
        self._mean = 0.0  # Welford's, for the deviations only
        self._m2 = 0.0

    def add(self, value: float) -> None:
        if not math.isfinite(value):
            return
        exp = math.frexp(value)[1]
        if self._exp is None:
            if value == 0.0:  # every sum so far is zero: no scale yet
                self.count += 1
                return
            self._exp = exp
        elif exp > self._exp and value != 0.0:  # frexp gives 0.0 the exponent 0
            shift = exp - self._exp
            self._sum = math.ldexp(self._sum, -shift)
            self._mean = math.ldexp(self._mean, -shift)
            self._m2 = math.ldexp(self._m2, -2 * shift)
            self._exp = exp
        scaled = math.ldexp(value, -self._exp)
        self.count += 1
        self._sum += scaled  # at most count in magnitude: never overflows
        delta = scaled - self._mean
        self._mean += delta / self.count
        self._m2 += delta * (scaled - self._mean)

    @property
    def mean(self) -> float | None:
        """The mean, or ``None`` before any value."""
        return math.ldexp(self._sum / self.count, self._exp or 0) if self.count else None

    @property
    def std(self) -> float | None:
        """The population standard deviation (divide by n), or ``None`` before any value."""
        return math.ldexp(math.sqrt(self._m2 / self.count), self._exp or 0) if self.count else None


def half_span(low: float, high: float) -> float:
    """``(high - low) / 2`` for finite values, without the overflow of ``high - low``."""
    return high / 2 - low / 2
