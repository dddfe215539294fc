"""Each benchmark's own headline figures, by the benchmark's own rule, over our verdicts.

Our metrics read a judge's verdict in the stored order (accuracy) and compare the two
orders (flip rate, first-position wins). Benchmarks publish other summaries of the same
verdicts; to put a judge beside a leaderboard, the report also gives those, computed as
the benchmark's code computes them, with bootstrap intervals from the same resamples:

* **JudgeBench** (``utils/metrics.py``, ``compute_final_metrics``): per pair, +1 for each
  order whose decision names the labelled winner, -1 for each that names the other one,
  0 for a tie or no decision; the pair is correct when the sum is positive. With one
  order only, the decision must name the labelled winner. It also counts the pairs whose
  two decisions differ (``n_inconsistent``; a missing decision differs from a present one).
* **LLMBar** (``LLMEvaluator/evaluate.py``, ``statistics.json``): ``correct_average`` is the
  mean of the accuracies in the two orders (no verdict is wrong); ``equal`` the share of
  items whose two verdicts are the same (two missing verdicts are the same).

Denominators are every item, as in the benchmarks' code: a missing verdict counts
against the judge here, while our own metrics leave it out (and count it as a failure).
A single grader (one score per response) is order-blind, so its second order is its first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from openjudge.metaeval._stats import Floats, Ints, Ratio
from openjudge.metaeval._verdicts import NONE, TIE, A, B

__all__ = ["HEADLINES", "Headline", "headline_statistics"]

_OPPOSITE = np.array([B, A, TIE, NONE])  # indexed by verdict code; NONE (-1) reads the last entry


@dataclass(frozen=True, slots=True)
class Headline:
    """One published figure: where it comes from and how it is computed.

    Attributes:
        key: Its name in the report (``judgebench_accuracy``).
        benchmark: The benchmark that publishes it.
        name: What the benchmark calls it.
        rule: The rule, in one line.
        compute: ``(first, second, labels) -> Ratio`` over items: the verdicts in the stored
            order and in the swapped order (mapped back to the stored order), and the labels.
    """

    key: str
    benchmark: str
    name: str
    rule: str
    compute: Callable[[Ints, Ints | None, Ints], Ratio]


def _judgebench_accuracy(first: Ints, second: Ints | None, labels: Ints) -> Ratio:
    everyone = np.ones(first.shape[0], dtype=bool)
    if second is None:
        return Ratio.mean((first == labels).astype(np.float64), everyone)
    against = _OPPOSITE[labels]
    total = np.zeros(first.shape[0])
    for verdict in (first, second):
        total += (verdict == labels).astype(np.float64)
        # JudgeBench checks "names the label" first, so a tie label is never "against".
        total -= ((verdict == against) & (verdict != labels)).astype(np.float64)
    return Ratio.mean((total > 0).astype(np.float64), everyone)


def _disagree(first: Ints, second: Ints | None) -> Floats:
    return np.zeros(first.shape[0]) if second is None else (first != second).astype(np.float64)


def _judgebench_inconsistent(first: Ints, second: Ints | None, labels: Ints) -> Ratio:
    return Ratio.mean(_disagree(first, second), np.ones(first.shape[0], dtype=bool))


def _llmbar_correct_average(first: Ints, second: Ints | None, labels: Ints) -> Ratio:
    other = first if second is None else second
    right = (first == labels).astype(np.float64) + (other == labels)
    return Ratio(right, np.full(first.shape[0], 2.0))


def _llmbar_equal(first: Ints, second: Ints | None, labels: Ints) -> Ratio:
    return Ratio.mean(1.0 - _disagree(first, second), np.ones(first.shape[0], dtype=bool))


HEADLINES: dict[str, tuple[Headline, ...]] = {
    "judgebench": (
        Headline(
            "judgebench_accuracy",
            "JudgeBench",
            "accuracy",
            "per pair, +1 per order naming the labelled winner, -1 per order naming the other; correct if > 0",
            _judgebench_accuracy,
        ),
        Headline(
            "judgebench_inconsistent",
            "JudgeBench",
            "inconsistent pairs",
            "the two orders' decisions differ (a missing decision included)",
            _judgebench_inconsistent,
        ),
    ),
    "llmbar": (
        Headline(
            "llmbar_correct_average",
            "LLMBar",
            "correct_average",
            "mean of the accuracies in the two orders (no verdict is wrong)",
            _llmbar_correct_average,
        ),
        Headline(
            "llmbar_equal",
            "LLMBar",
            "equal",
            "the two orders give the same verdict (two missing verdicts included)",
            _llmbar_equal,
        ),
    ),
}
"""Headline figures by data format (``PairwiseSet.format``)."""


def headline_statistics(
    data_format: str, verdict: Ints, labels: Ints, *, swapped: bool
) -> dict[str, tuple[Headline, Ratio]]:
    """The benchmark's figures for a grader's ``(repeats, orders, n)`` verdicts, by key.

    Empty for formats without published figures. ``swapped`` says whether the second order
    was judged; an order-blind grader passes one order and ``swapped=True``.
    """
    first = verdict[0, 0]
    second: Ints | None
    second = verdict[0, 1] if verdict.shape[1] > 1 else first if swapped else None
    return {h.key: (h, h.compute(first, second, labels)) for h in HEADLINES.get(data_format, ())}
