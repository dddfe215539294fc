"""Grade one sample (or many) with the configured graders and apply the failure policy.

The result of every sample has the same ``reward_extra_info`` keys, fixed when the
scorer is built (``K`` is each grader name and the aggregate's name)::

    openjudge/<K>              raw score, or None when it failed (VERL's metrics skip None)
    openjudge/<K>/error        0 or 1                  (flag_failures)
    openjudge/<K>/error_kind   "" or the GraderError kind         (flag_failures)
    openjudge/<K>/reason       the grader's reason      (include_reasons; graders only)
    openjudge/failed           1 when the reward is the fallback   (flag_failures)

The reward is the aggregate's score, or ``fallback_score`` when the aggregate failed.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from integrations._shared import FailureLog
from integrations.verl.functions import ExtraValue
from integrations.verl.settings import OpenJudgeVerlSettings
from openjudge.config import ConfigError, load_config
from openjudge.config.build import build_job
from openjudge.graders.schema import GraderError, GraderResult, GraderScore
from openjudge.models.loop_local import LoopLocal
from openjudge.runner.aggregators import WeightedMeanAggregator
from openjudge.runner.grading_runner import GradingRunner

__all__ = ["DEFAULT_AGGREGATE", "KEY_PREFIX", "SampleScorer", "ScoredSample", "shared_scorer"]

logger = logging.getLogger(__name__)

KEY_PREFIX = "openjudge/"
DEFAULT_AGGREGATE = "mean"


@dataclass(frozen=True, slots=True)
class ScoredSample:
    """The reward of one sample and its ``reward_extra_info`` (keys fixed per scorer)."""

    reward: float
    failed: bool
    extra: dict[str, ExtraValue]


class SampleScorer:
    """Grades samples with a runner; the same keys for every sample.

    Args:
        runner: Graders and aggregators (one runner is safe to share across loops and tasks).
        settings: The failure policy and options.
    """

    def __init__(self, runner: GradingRunner, settings: OpenJudgeVerlSettings) -> None:
        self.settings = settings
        self.grader_names: tuple[str, ...] = tuple(runner.grader_configs)
        aggregators = dict(runner.aggregators)
        if settings.aggregate is not None:
            if settings.aggregate not in aggregators:
                known = ", ".join(aggregators) or "none"
                raise ConfigError(
                    [
                        f"reward.openjudge.aggregate: no aggregator named {settings.aggregate!r} (aggregators: {known})"
                    ]
                )
            self.aggregate = settings.aggregate
        elif aggregators:
            self.aggregate = next(iter(aggregators))
        else:
            if DEFAULT_AGGREGATE in runner.grader_configs:
                raise ConfigError(
                    [f"a grader is named {DEFAULT_AGGREGATE!r}: add an aggregator to the config or rename it"]
                )
            self.aggregate = DEFAULT_AGGREGATE
            aggregators[DEFAULT_AGGREGATE] = WeightedMeanAggregator(DEFAULT_AGGREGATE)
        self.runner = GradingRunner(
            runner.grader_configs,
            max_concurrency=runner.max_concurrency,
            aggregators=[aggregators[self.aggregate]],
            show_progress=False,
            timeout=settings.timeout_s if settings.timeout_s is not None else runner.timeout,
            deadline=runner.deadline,
        )
        self.keys: tuple[str, ...] = self._keys()
        self._failures = FailureLog(logger)
        limit = settings.max_concurrent_samples
        self._limiter: LoopLocal[anyio.CapacityLimiter] | None = (
            LoopLocal(lambda: anyio.CapacityLimiter(limit)) if limit is not None else None
        )

    def _keys(self) -> tuple[str, ...]:
        keys: list[str] = []
        flag = self.settings.flag_failures
        for name in (*self.grader_names, self.aggregate):
            keys.append(f"{KEY_PREFIX}{name}")
            if flag:
                keys += [f"{KEY_PREFIX}{name}/error", f"{KEY_PREFIX}{name}/error_kind"]
            if self.settings.include_reasons and name != self.aggregate:
                keys.append(f"{KEY_PREFIX}{name}/reason")
        if flag:
            keys.append(f"{KEY_PREFIX}failed")
        return tuple(keys)

    async def score(self, sample: Mapping[str, Any]) -> ScoredSample:
        """Grade one sample (graders concurrently)."""
        if self._limiter is None:
            results = await self.runner.arun([sample])
        else:
            async with self._limiter.get():
                results = await self.runner.arun([sample])
        return self._scored({name: column[0] for name, column in results.items()})

    async def score_many(self, samples: Sequence[Mapping[str, Any]]) -> list[ScoredSample]:
        """Grade many samples through the runner's bounded pool; results in input order."""
        if not samples:
            return []
        results = await self.runner.arun(samples)
        return [
            self._scored({name: column[i] for name, column in results.items()}) for i in range(len(samples))
        ]

    def _scored(self, results: Mapping[str, GraderResult]) -> ScoredSample:
        extra: dict[str, ExtraValue] = {}
        flag = self.settings.flag_failures
        for name in (*self.grader_names, self.aggregate):
            r = results[name]
            key = f"{KEY_PREFIX}{name}"
            if isinstance(r, GraderScore):
                extra[key] = r.score
                error_kind = ""
            else:
                if not isinstance(r, GraderError):  # a rank where a score was expected
                    r = GraderError(name=name, kind="invalid_input", message="returned a rank, not a score")
                extra[key] = None
                error_kind = r.kind
                if name != self.aggregate:  # the aggregate's failure repeats its input's
                    self._failures.record(r)
            if flag:
                extra[f"{key}/error"] = 1 if error_kind else 0
                extra[f"{key}/error_kind"] = error_kind
            if self.settings.include_reasons and name != self.aggregate:
                extra[f"{key}/reason"] = r.reason
        aggregate = results[self.aggregate]
        failed = not isinstance(aggregate, GraderScore)
        reward = aggregate.score if isinstance(aggregate, GraderScore) else self.settings.fallback_score
        if flag:
            extra[f"{KEY_PREFIX}failed"] = 1 if failed else 0
        return ScoredSample(reward=reward, failed=failed, extra=extra)


_SCORERS: dict[tuple[OpenJudgeVerlSettings, str], SampleScorer] = {}
_SCORERS_LOCK = threading.Lock()


def shared_scorer(settings: OpenJudgeVerlSettings) -> SampleScorer:
    """The scorer for these settings in this process, built once.

    Every manager instance and every ``compute_score`` call in a worker process shares
    it, and so shares its providers' limits and clients (clients are created lazily,
    one per running event loop).

    Raises:
        ConfigError: The graders YAML is unreadable or invalid.
    """
    path = os.path.realpath(settings.config)
    key = (settings, path)
    with _SCORERS_LOCK:
        scorer = _SCORERS.get(key)
        if scorer is None:
            job = build_job(load_config(path), source=settings.config)
            scorer = SampleScorer(job.runner, settings)
            _SCORERS[key] = scorer
            logger.info(
                "openjudge: graders %s, reward = %s (fallback %g) from %s",
                ", ".join(scorer.grader_names),
                scorer.aggregate,
                settings.fallback_score,
                path,
            )
        return scorer
