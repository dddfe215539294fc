"""Per-worker shares of each provider's limits, so that they hold across a cluster.

Every grading worker (a Ray actor) builds its own providers from the job config, and
each provider enforces its limits inside that one process. To keep the *cluster-wide*
totals within the configured limits, every worker gets an equal share:

* ``max_concurrency``: ``floor(C / workers)``. The number of workers is first capped at
  the smallest provider ``max_concurrency``, so every share is at least 1 and the sum of
  the shares never exceeds ``C``;
* ``rpm`` and ``tpm``: ``rate / workers`` (rates may be fractional);
* AIMD (``adaptive``) stays on per worker: a worker that sees a 429 halves its own share
  and grows it back, never above the share.

These are plain functions over the config, so they are tested without Ray.
"""

from __future__ import annotations

from dataclasses import dataclass

from openjudge.config._spec import JobConfig, ProviderSpec
from openjudge.models.policy import ProviderLimits

__all__ = ["WorkerPlan", "plan_workers", "worker_limits"]


def worker_limits(limits: ProviderLimits, workers: int) -> ProviderLimits:
    """One worker's share of ``limits`` when ``workers`` workers use the provider at once.

    Raises:
        ValueError: If ``workers`` is below 1 or above ``limits.max_concurrency`` (the
            shares could not then sum to at most the limit).
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if workers > limits.max_concurrency:
        raise ValueError(
            f"cannot split max_concurrency={limits.max_concurrency} across {workers} workers "
            "without exceeding it; use fewer workers or raise the limit"
        )
    return limits.model_copy(
        update={
            "max_concurrency": limits.max_concurrency // workers,
            "rpm": None if limits.rpm is None else limits.rpm / workers,
            "tpm": None if limits.tpm is None else limits.tpm / workers,
        }
    )


@dataclass(frozen=True, slots=True)
class WorkerPlan:
    """How a job is spread over workers.

    Attributes:
        workers: Workers to start (the request, capped by the smallest provider limit).
        config: The job config each worker builds, with every provider's limits replaced
            by one worker's share.
        limits: Provider name to one worker's share of its limits.
    """

    workers: int
    config: JobConfig
    limits: dict[str, ProviderLimits]


def plan_workers(config: JobConfig, workers: int) -> WorkerPlan:
    """Cap ``workers`` so every provider can be split, and split each provider's limits.

    Raises:
        ValueError: If ``workers`` is below 1.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    capped = min([workers, *(spec.limits.max_concurrency for spec in config.providers.values())])
    shares = {name: worker_limits(spec.limits, capped) for name, spec in config.providers.items()}
    providers: dict[str, ProviderSpec] = {
        name: spec.model_copy(update={"limits": shares[name]}) for name, spec in config.providers.items()
    }
    return WorkerPlan(capped, config.model_copy(update={"providers": providers}), shares)
