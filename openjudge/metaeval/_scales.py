"""Put a grader's scores on the labels' scale, or say why they cannot be compared.

Exact and within-1 agreement compare a score with a label as numbers, so both must be
on one scale: a 0-1 grader is never "within 1" of a 1-5 label by accident. Rank
correlations (Spearman, Kendall) do not depend on the scale and are always computed, on
the normalised score, so a "lower is better" grader correlates positively when it agrees.

* The grader declares a range that holds every label: its raw scores are compared.
* It declares another range: its normalised score (1 best) is mapped linearly onto the
  labels' scale, with a note naming both scales.
* It declares none, and its scores leave the labels' scale: exact and within-1 agreement
  are left out, with a note saying how to fix it (declare a ``score_range``).

The labels' scale is the one given (``--label-scale``), or else the lowest and highest label.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from openjudge.metaeval._stats import Floats
from openjudge.results import ScoreRange

__all__ = ["OnLabelScale", "label_scale", "on_label_scale"]

_EPS = 1e-9


def _span(low: float, high: float) -> str:
    return f"{low:g}-{high:g}"


def label_scale(labels: Floats, given: tuple[float, float] | None = None) -> tuple[float, float]:
    """The labels' scale: ``given``, or the lowest and highest label."""
    if given is not None:
        return given
    if labels.size == 0:
        return (0.0, 0.0)
    return float(labels.min()), float(labels.max())


@dataclass(frozen=True, slots=True)
class OnLabelScale:
    """A grader's scores for exact / within-1 agreement.

    Attributes:
        scores: On the labels' scale (NaN without a score), or ``None`` when they cannot be
            put there.
        note: What was done and why (``None`` when the raw scores are compared as they are).
    """

    scores: Floats | None
    note: str | None


def on_label_scale(
    name: str,
    raw: Floats,
    oriented: Floats,
    declared: ScoreRange | None,
    labels: Floats,
    scale: tuple[float, float],
) -> OnLabelScale:
    """The grader's scores on the labels' scale (see the module docstring)."""
    low, high = scale
    labels_span = _span(low, high)
    if declared is not None:
        holds = bool(((labels >= declared.low - _EPS) & (labels <= declared.high + _EPS)).all())
        same = abs(declared.low - low) <= _EPS and abs(declared.high - high) <= _EPS
        if declared.higher_is_better and (same or holds):
            return OnLabelScale(raw, None)
        if high - low <= _EPS:
            return OnLabelScale(
                None,
                f"grader {name!r} scores on {_span(declared.low, declared.high)} and every label is "
                f"{low:g}: exact and within-1 agreement are left out (give the labels' scale with "
                "--label-scale LOW HIGH to have the scores rescaled onto it)",
            )
        direction = "" if declared.higher_is_better else ", lower is better, so reversed"
        return OnLabelScale(
            low + oriented * (high - low),
            f"grader {name!r} scores on {_span(declared.low, declared.high)}{direction}; the labels are "
            f"on {labels_span}: its scores are rescaled linearly onto {labels_span} (best = {high:g}) for "
            "exact and within-1 agreement (Spearman and Kendall do not depend on the scale)",
        )
    valid = raw[~np.isnan(raw)]
    if valid.size == 0 or bool(((valid >= low - _EPS) & (valid <= high + _EPS)).all()):
        return OnLabelScale(raw, None)
    return OnLabelScale(
        None,
        f"grader {name!r} declares no score range and its scores ({_span(float(valid.min()), float(valid.max()))}) "
        f"leave the labels' scale {labels_span}: exact and within-1 agreement are left out (declare the "
        "grader's score_range to have its scores rescaled onto the labels' scale)",
    )
