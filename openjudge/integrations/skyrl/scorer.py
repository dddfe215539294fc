"""Score one environment step with the graders, from any thread, on one persistent loop.

SkyRL calls ``env.step`` (a sync method) on a thread pool, one new environment per
trajectory. The graders, their providers (with their concurrency and rate limits) and
one event-loop thread (:class:`~openjudge.runner.sync.SyncPortal`) are therefore shared
per process: every step of every environment hands its coroutine to that loop and
blocks until it is done. HTTP clients live across steps; no ``asyncio.run`` per step.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import JsonValue

from openjudge.config import ConfigError, build_job, load_config
from openjudge.integrations._shared import FailureLog
from openjudge.integrations.skyrl.settings import OpenJudgeSkyRLSettings
from openjudge.results import GraderError, GraderResult, GraderScore
from openjudge.runner.aggregators import WeightedMeanAggregator
from openjudge.runner.grading_runner import GradingRunner
from openjudge.runner.sync import SyncPortal

__all__ = ["DEFAULT_AGGREGATE", "EnvScorer", "StepScore", "shared_scorer"]

logger = logging.getLogger(__name__)

DEFAULT_AGGREGATE = "mean"


@dataclass(frozen=True, slots=True)
class StepScore:
    """The outcome of grading one step.

    Attributes:
        reward: The aggregate's score, or the fallback when it failed.
        failed: Whether the reward is the fallback.
        scores: Raw score per grader and for the aggregate (``None`` when it failed).
        errors: Error kind per failed grader or aggregate.
        reasons: Each grader's reason (only with ``include_reasons``).
    """

    reward: float
    failed: bool
    scores: dict[str, float | None]
    errors: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)

    def metadata(self) -> dict[str, JsonValue]:
        """The step's ``metadata``: everything under one ``openjudge`` key."""
        info: dict[str, JsonValue] = {
            "reward": self.reward,
            "failed": self.failed,
            "scores": dict[str, JsonValue](self.scores),
            "errors": dict[str, JsonValue](self.errors),
        }
        if self.reasons:
            info["reasons"] = dict[str, JsonValue](self.reasons)
        return {"openjudge": info}

    def metrics(self) -> dict[str, float]:
        """Numeric episode metrics (SkyRL averages them per environment class)."""
        out: dict[str, float] = {"openjudge/failed": 1.0 if self.failed else 0.0}
        for name, score in self.scores.items():
            out[f"openjudge/{name}/error"] = 1.0 if name in self.errors else 0.0
            if score is not None:
                out[f"openjudge/{name}"] = score
        return out


class EnvScorer:
    """Grades environment steps: graders, one aggregate as the reward, a fallback on failure.

    Args:
        runner: Graders (with mappers) and aggregators, e.g. ``build_job(...).runner``.
        aggregate: The aggregator whose score is the reward (default: the runner's first,
            else ``mean`` of every grader's normalised score).
        fallback_score: The reward of a step whose aggregate failed.
        include_reasons: Keep each grader's reason in the step metadata.
        timeout_s: Seconds per (step, grader) pair (default: the runner's ``timeout``).
    """

    def __init__(
        self,
        runner: GradingRunner,
        *,
        aggregate: str | None = None,
        fallback_score: float = 0.0,
        include_reasons: bool = False,
        timeout_s: float | None = None,
    ) -> None:
        aggregators = dict(runner.aggregators)
        if aggregate is None:
            aggregate = next(iter(aggregators), DEFAULT_AGGREGATE)
        if aggregate not in aggregators:
            if aggregate != DEFAULT_AGGREGATE or aggregators:
                known = ", ".join(aggregators) or "none"
                raise ConfigError([f"aggregate: no aggregator named {aggregate!r} (aggregators: {known})"])
            if DEFAULT_AGGREGATE in runner.grader_configs:
                raise ConfigError(
                    [f"a grader is named {DEFAULT_AGGREGATE!r}: add an aggregator to the config or rename it"]
                )
            aggregators[aggregate] = WeightedMeanAggregator(DEFAULT_AGGREGATE)
        self.aggregate = aggregate
        self.grader_names: tuple[str, ...] = tuple(runner.grader_configs)
        self.fallback_score = fallback_score
        self.include_reasons = include_reasons
        self.runner = runner.replace(
            aggregators=[aggregators[aggregate]],
            max_concurrency=len(runner.grader_configs),  # one step's graders run concurrently
            show_progress=False,
            timeout=timeout_s if timeout_s is not None else runner.timeout,
            deadline=None,
        )
        self._portal = SyncPortal()
        self._failures = FailureLog(logger)

    @classmethod
    def from_settings(cls, settings: OpenJudgeSkyRLSettings) -> EnvScorer:
        """Build the graders of the settings' YAML.

        Raises:
            ConfigError: The YAML is unreadable or invalid, or names no such aggregator.
        """
        path = Path(settings.config)
        job = build_job(load_config(path), source=settings.config, base_dir=path.parent)
        scorer = cls(
            job.runner,
            aggregate=settings.aggregate,
            fallback_score=settings.fallback_score,
            include_reasons=settings.include_reasons,
            timeout_s=settings.timeout_s,
        )
        logger.info(
            "openjudge: SkyRL env graders %s, reward = %s (fallback %g) from %s",
            ", ".join(scorer.grader_names),
            scorer.aggregate,
            scorer.fallback_score,
            settings.config,
        )
        return scorer

    async def ascore(self, sample: Mapping[str, object]) -> StepScore:
        """Grade one step's sample (its graders concurrently)."""
        results = await self.runner.arun([sample])
        return self._step_score({name: column[0] for name, column in results.items()})

    def score(self, sample: Mapping[str, object]) -> StepScore:
        """Blocking :meth:`ascore` on the scorer's persistent loop; safe from any thread."""
        return self._portal.call(self.ascore, sample)

    def close(self) -> None:
        """Stop the loop thread (a later :meth:`score` starts a new one)."""
        self._portal.close()

    def _step_score(self, results: Mapping[str, GraderResult]) -> StepScore:
        scores: dict[str, float | None] = {}
        errors: dict[str, str] = {}
        reasons: dict[str, str] = {}
        for name in (*self.grader_names, self.aggregate):
            r = results.get(name)
            if isinstance(r, GraderScore):
                scores[name] = r.score
            else:
                if not isinstance(r, GraderError):  # a rank (or nothing) where a score was expected
                    r = GraderError(name=name, kind="invalid_input", message="returned no score")
                scores[name] = None
                errors[name] = r.kind
                if name != self.aggregate:  # the aggregate's failure repeats its input's
                    self._failures.record(r)
            if self.include_reasons and name != self.aggregate and r is not None:
                reasons[name] = r.reason
        aggregate = results.get(self.aggregate)
        if isinstance(aggregate, GraderScore):
            return StepScore(aggregate.score, False, scores, errors, reasons)
        return StepScore(self.fallback_score, True, scores, errors, reasons)


_SCORERS: dict[tuple[OpenJudgeSkyRLSettings, str], EnvScorer] = {}
_SCORERS_LOCK = threading.Lock()


def shared_scorer(settings: OpenJudgeSkyRLSettings) -> EnvScorer:
    """The scorer for these settings in this process, built once.

    Every environment instance in the process (SkyRL makes one per trajectory) shares it,
    and so shares its providers' limits, their HTTP clients and its event-loop thread.

    Raises:
        ConfigError: The graders YAML is unreadable or invalid.
    """
    key = (settings, os.path.realpath(settings.config))
    with _SCORERS_LOCK:
        scorer = _SCORERS.get(key)
        if scorer is None:
            scorer = EnvScorer.from_settings(settings)
            _SCORERS[key] = scorer
        return scorer
