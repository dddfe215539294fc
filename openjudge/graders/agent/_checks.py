"""Constructor argument checks shared by the agent graders (mistakes raise early)."""

from __future__ import annotations

import math

__all__ = ["finite_number"]


def finite_number(param: str, value: object) -> float | int:
    """Return ``value`` unchanged if it is a finite int or float (not a bool), else raise.

    The value is kept as given (not converted to float) so that reasons and metadata print
    it the way OpenJudge does, e.g. ``threshold=1`` for ``1``.

    Raises:
        TypeError: ``value`` is not a number.
        ValueError: ``value`` is NaN or infinite.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{param} must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{param} must be finite, got {value!r}")
    return value
