"""Grade one sample (or many) with the configured graders and apply the failure policy.

The result of every sample has the same ``reward_extra_info`` keys, fixed when the
scorer is built (``K`` is each grader name and the aggregate's name; see
:mod:`openjudge.integrations.verl.keys`, which also refuses names that would collide). Every
numeric value is a float, in every case::

    openjudge/<K>              the score, or 0.0 when it failed
    openjudge/<K>/error        0.0 or 1.0
    openjudge/<K>/error_kind   "" or the GraderError kind ("circuit_open": not called)
    openjudge/<K>/reason       the grader's reason      (include_reasons; graders only)
    openjudge/reward           the reward of the sample
    openjudge/failed           1.0 when the reward is not a judgement (fallback_score)

A sample whose aggregate failed raises :class:`~openjudge.integrations.verl.guard.SampleFailed`
under ``on_failure=drop`` (the default), or gets ``fallback_score`` under ``fallback``.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from openjudge.config import ConfigError, load_config
from openjudge.config.build import build_job
from openjudge.integrations._shared import FailureLog
from openjudge.integrations.verl.functions import ExtraValue
from openjudge.integrations.verl.gc_freeze import freeze_long_lived_objects
from openjudge.integrations.verl.guard import OUTAGE_KINDS, FailureGuard, SampleFailed
from openjudge.integrations.verl.hosted_judge import HostedJudge, resolve_hosted_providers
from openjudge.integrations.verl.keys import (
    FAILED_KEY,
    REWARD_KEY,
    check_names,
    error_key,
    score_entries,
    score_key,
)
from openjudge.integrations.verl.lifecycle import close_at_exit
from openjudge.integrations.verl.settings import OpenJudgeVerlSettings
from openjudge.models.loop_local import LoopLocal
from openjudge.results import GraderError, GraderResult, GraderScore
from openjudge.runner.aggregators import WeightedMeanAggregator
from openjudge.runner.grading_runner import GradingRunner

__all__ = ["DEFAULT_AGGREGATE", "SampleScorer", "ScoredSample", "reward_loop_names", "shared_scorer"]

logger = logging.getLogger(__name__)

DEFAULT_AGGREGATE = "mean"
CIRCUIT_OPEN = "circuit_open"


@dataclass(frozen=True, slots=True)
class ScoredSample:
    """The reward of one sample and its ``reward_extra_info`` (keys fixed per scorer).

    Attributes:
        reward: The aggregate's score, or ``fallback_score`` when it failed.
        failed: The aggregate failed (``reward`` is the fallback).
        extra: ``reward_extra_info`` (see the module docstring).
        errors: The failed graders' errors, by grader name (aggregate excluded).
    """

    reward: float
    failed: bool
    extra: dict[str, ExtraValue]
    errors: dict[str, GraderError]


def _providers_of(runner: GradingRunner) -> dict[str, str]:
    """Grader -> a name for the chat model it calls (graders built in Python)."""
    out: dict[str, str] = {}
    for name, config in runner.grader_configs.items():
        model = getattr(config.grader, "model", None)
        model_name = getattr(model, "model", None)
        if isinstance(model_name, str):
            out[name] = model_name
    return out


class SampleScorer:
    """Grades samples with a runner; the same keys for every sample.

    Args:
        runner: Graders and aggregators (one runner is safe to share across loops and tasks).
        settings: The failure policy and options.
        grader_providers: Grader name -> provider name, for the breaker and messages
            (default: each LLM grader's model name).
        describe_providers: Provider name -> endpoint and model, for messages.
        source: Where the graders come from (for messages).

    Raises:
        ConfigError: An unknown ``aggregate``, or a grader or aggregate name that would
            collide with another ``reward_extra_info`` key (:func:`~openjudge.integrations.verl.keys.check_names`).
    """

    def __init__(
        self,
        runner: GradingRunner,
        settings: OpenJudgeVerlSettings,
        *,
        grader_providers: Mapping[str, str] | None = None,
        describe_providers: Mapping[str, str] | None = None,
        source: str = "the graders config",
    ) -> None:
        self.settings = settings
        self.policy = settings.failure_policy()
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
            self.aggregate = DEFAULT_AGGREGATE
            aggregators[DEFAULT_AGGREGATE] = WeightedMeanAggregator(DEFAULT_AGGREGATE)
        check_names(
            [
                *((name, "grader") for name in runner.grader_configs),
                (self.aggregate, "aggregator" if runner.aggregators else "the default aggregate"),
            ],
            source=source,
        )
        self.runner = GradingRunner(
            runner.grader_configs,
            max_concurrency=runner.max_concurrency,
            aggregators=[aggregators[self.aggregate]],
            show_progress=False,
            timeout=settings.timeout_s if settings.timeout_s is not None else runner.timeout,
            deadline=runner.deadline,
        )
        self.grader_providers = dict(
            grader_providers if grader_providers is not None else _providers_of(runner)
        )
        self.providers: tuple[str, ...] = tuple(dict.fromkeys(self.grader_providers.values()))
        self.guard = FailureGuard(self.policy, describe_providers)
        self.keys: tuple[str, ...] = self._keys()
        self._failures = FailureLog(logger)
        limit = settings.max_concurrent_samples
        self._limiter: LoopLocal[anyio.CapacityLimiter] | None = (
            LoopLocal(lambda: anyio.CapacityLimiter(limit)) if limit is not None else None
        )
        freeze_long_lived_objects()  # the worker's imports and graders: out of full GC passes

    def _keys(self) -> tuple[str, ...]:
        keys: list[str] = []
        for name in (*self.grader_names, self.aggregate):
            keys += [score_key(name), error_key(name), f"{score_key(name)}/error_kind"]
            if self.settings.include_reasons and name != self.aggregate:
                keys.append(f"{score_key(name)}/reason")
        return (*keys, REWARD_KEY, FAILED_KEY)

    async def score(self, sample: Mapping[str, Any]) -> ScoredSample:
        """Grade one sample (graders concurrently) and apply the failure policy.

        Raises:
            FailureRateExceeded: The guard has tripped (see :mod:`openjudge.integrations.verl.guard`).
            SampleFailed: The sample's reward failed and ``on_failure=drop``.
        """
        self.guard.check()
        blocked = self.guard.open_provider(self.providers)
        if blocked is not None:
            self.guard.record_blocked(blocked)
            return self._apply_policy(self._circuit_open(blocked))
        if self._limiter is None:
            results = await self.runner.arun([sample])
        else:
            async with self._limiter.get():
                results = await self.runner.arun([sample])
        scored = self._scored({name: column[0] for name, column in results.items()})
        self._record(scored)
        return self._apply_policy(scored)

    async def score_many(self, samples: Sequence[Mapping[str, Any]]) -> list[ScoredSample]:
        """Grade many samples through the runner's bounded pool; results in input order.

        Raises:
            FailureRateExceeded: The guard has tripped.
            SampleFailed: Some sample's reward failed and ``on_failure=drop`` (the
                message counts them); no partial result is returned.
        """
        if not samples:
            return []
        self.guard.check()
        results = await self.runner.arun(samples)
        scored = [
            self._scored({name: column[i] for name, column in results.items()}) for i in range(len(samples))
        ]
        for s in scored:
            self._record(s)
        failed = [i for i, s in enumerate(scored) if s.failed]
        if failed and self.policy.on_failure == "drop":
            raise SampleFailed(
                f"openjudge: {len(failed)} of {len(samples)} samples could not be scored (first: "
                f"{self._describe_errors(scored[failed[0]])}); on_failure=drop: not training on them"
            )
        return [self._apply_policy(s) for s in scored]

    def _scored(self, results: Mapping[str, GraderResult]) -> ScoredSample:
        extra: dict[str, ExtraValue] = {}
        errors: dict[str, GraderError] = {}
        for name in (*self.grader_names, self.aggregate):
            r = results[name]
            if not isinstance(r, GraderScore | GraderError):  # a rank where a score was expected
                r = GraderError(name=name, kind="invalid_input", message="returned a rank, not a score")
            self._put(extra, name, r)
            if isinstance(r, GraderError) and name != self.aggregate:  # the aggregate repeats its inputs
                errors[name] = r
                self._failures.record(r)
        aggregate = results[self.aggregate]
        failed = not isinstance(aggregate, GraderScore)
        reward = float(aggregate.score) if isinstance(aggregate, GraderScore) else 0.0
        return ScoredSample(reward=reward, failed=failed, extra=extra, errors=errors)

    def _put(self, extra: dict[str, ExtraValue], name: str, result: GraderScore | GraderError) -> None:
        extra.update(score_entries(name, result))
        extra[f"{score_key(name)}/error_kind"] = result.kind if isinstance(result, GraderError) else ""
        if self.settings.include_reasons and name != self.aggregate:
            extra[f"{score_key(name)}/reason"] = result.reason

    def _circuit_open(self, provider: str) -> ScoredSample:
        extra: dict[str, ExtraValue] = {}
        errors: dict[str, GraderError] = {}
        message = (
            f"not called: the breaker of provider {provider!r} is open after "
            f"{self.policy.breaker_failures} consecutive failed samples"
        )
        for name in (*self.grader_names, self.aggregate):
            error = GraderError(name=name, kind="provider_error", message=message)
            self._put(extra, name, error)
            extra[f"{score_key(name)}/error_kind"] = CIRCUIT_OPEN  # a kind only the breaker gives
            if name != self.aggregate:
                errors[name] = error
        return ScoredSample(reward=0.0, failed=True, extra=extra, errors=errors)

    def _record(self, scored: ScoredSample) -> None:
        outage = dict.fromkeys(self.providers, False)
        for name, error in scored.errors.items():
            provider = self.grader_providers.get(name)
            if provider is not None and error.kind in OUTAGE_KINDS:
                outage[provider] = True
        labels = (
            [f"{self.grader_providers.get(name, name)}: {e.kind}" for name, e in scored.errors.items()]
            if scored.failed
            else []
        )
        if scored.failed and not labels:  # the aggregate failed on its own (e.g. a gate's inputs)
            labels = [f"{self.aggregate}: failed"]
        self.guard.record(outage, labels)

    def _describe_errors(self, scored: ScoredSample) -> str:
        return "; ".join(f"{name}: {e.kind}: {e.message[:200]}" for name, e in scored.errors.items()) or (
            f"aggregate {self.aggregate!r} failed"
        )

    def _apply_policy(self, scored: ScoredSample) -> ScoredSample:
        if not scored.failed:
            extra = {**scored.extra, REWARD_KEY: scored.reward, FAILED_KEY: 0.0}
            return ScoredSample(scored.reward, False, extra, scored.errors)
        if self.policy.on_failure == "drop":
            raise SampleFailed(
                f"openjudge: this sample could not be scored ({self._describe_errors(scored)}); "
                "on_failure=drop: VERL drops it instead of training on an invented reward"
            )
        reward = self.policy.fallback_score
        assert reward is not None  # FailurePolicy requires it under fallback
        extra = {**scored.extra, REWARD_KEY: reward, FAILED_KEY: 1.0}
        return ScoredSample(reward, True, extra, scored.errors)


_SCORERS: dict[tuple[OpenJudgeVerlSettings, str, HostedJudge | None], SampleScorer] = {}
_SCORERS_LOCK = threading.Lock()


def shared_scorer(settings: OpenJudgeVerlSettings, hosted_judge: HostedJudge | None = None) -> SampleScorer:
    """The scorer for these settings in this process, built once.

    Every manager instance and every ``compute_score`` call in a worker process shares
    it, and so shares its providers' limits and clients (clients are created lazily,
    one per running event loop), its breakers and its failure-rate window. What it
    built is closed when the process exits (:mod:`openjudge.integrations.verl.lifecycle`).

    Args:
        settings: The options.
        hosted_judge: VERL's reward-model router, for ``kind: verl`` providers.

    Raises:
        ConfigError: The graders YAML is unreadable or invalid.
    """
    path = os.path.realpath(settings.config)
    key = (settings, path, hosted_judge)
    with _SCORERS_LOCK:
        scorer = _SCORERS.get(key)
        if scorer is None:
            try:
                config = resolve_hosted_providers(load_config(path), hosted_judge, source=settings.config)
            except ValueError as exc:
                if isinstance(exc, ConfigError):
                    raise
                raise ConfigError([str(exc)]) from None
            job = build_job(config, source=settings.config, use_cache=settings.judge_cache)
            close_at_exit(job)  # in-process models and the cache file (Ray actors: see lifecycle)
            describe = {
                name: f"{getattr(model, 'base_url', None) or name}, model {model.model!r}"
                for name, model in job.providers.items()
            }
            scorer = SampleScorer(
                job.runner,
                settings,
                grader_providers=job.grader_providers,
                describe_providers=describe,
                source=settings.config,
            )
            _SCORERS[key] = scorer
            logger.info(
                "openjudge: graders %s, reward = %s (on_failure=%s) from %s",
                ", ".join(scorer.grader_names),
                scorer.aggregate,
                settings.on_failure,
                path,
            )
        return scorer


def reward_loop_names(settings: OpenJudgeVerlSettings) -> tuple[str, ...]:
    """The names whose ``openjudge/<name>`` keys the reward manager writes with these settings.

    Reads the graders YAML (the group stage checks its own graders against these).

    Raises:
        ConfigError: The graders YAML is unreadable or invalid.
    """
    config = load_config(os.path.realpath(settings.config))
    aggregators = [spec.name or spec.type for spec in config.aggregators]
    aggregate = settings.aggregate or (aggregators[0] if aggregators else DEFAULT_AGGREGATE)
    return (*config.graders, aggregate)
