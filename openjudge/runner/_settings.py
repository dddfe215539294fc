"""How a runner runs: one frozen settings object, replaced rather than rebuilt field by field."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["RunSettings"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSettings:
    """Concurrency, time limits and progress of a :class:`~openjudge.runner.GradingRunner`.

    Attributes:
        max_concurrency: Pairs evaluated at once (provider limits apply on top).
        timeout_s: Seconds one pair may take (retries included) before it becomes a timeout error.
        deadline_s: Seconds the whole run may take; pairs not finished by then become timeout errors.
        show_progress: Draw a progress line on stderr.
        tune_collector: Run under :func:`~openjudge.runner.batch_collector`: the garbage
            collector's young threshold raised from CPython's 700 to 10,000 while the run is
            active (why, and what is put back when: see there). Off by default: the
            collector's thresholds belong to the whole process, and a library changes no
            process-wide state of its host (a trainer, your program); ``openjudge run``
            turns it on in its own processes.
    """

    max_concurrency: int = 32
    timeout_s: float | None = 300.0
    deadline_s: float | None = None
    show_progress: bool = True
    tune_collector: bool = False

    def __post_init__(self) -> None:
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {self.max_concurrency}")
        for label, value in (("timeout_s", self.timeout_s), ("deadline_s", self.deadline_s)):
            if value is not None and not (value > 0 and math.isfinite(value)):
                raise ValueError(f"{label} must be a positive number of seconds or None, got {value}")
