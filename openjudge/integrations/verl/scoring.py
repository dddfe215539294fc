"""Grade one sample (or many) with the configured graders and apply the failure policy.

The result of every sample has the same ``reward_extra_info`` keys, fixed when the
scorer is built (``K`` is each grader name and the aggregate's name; see
:mod:`openjudge.integrations.verl.keys`, which also refuses names that would collide). Every
numeric value is a float, in every case::

    openjudge/<K>              the score, or 0.0 when it failed
    openjudge/<K>/error        0.0 or 1.0
    openjudge/<K>/error_kind   "" or the GraderError kind ("circuit_open": not called)
    openjudge/<K>/reason       the grader's reason      (include_reasons; graders only)
    openjudge/reward           the reward of the sample (0.0 while a colocated neutral is pending)
    openjudge/failed           1.0 when the reward is not a judgement (neutral or fallback)

What a sample whose aggregate failed becomes is :meth:`SampleScorer.settle`'s: dropped
where VERL can drop it, else neutral in its group, or ``fallback_score`` under
``fallback``. Breakers and the failure rate are the run's (:mod:`openjudge.integrations.verl.ledger`).
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from openjudge.config import ConfigError, build_job, load_config
from openjudge.integrations._shared import FailureLog
from openjudge.integrations.verl.functions import ExtraValue
from openjudge.integrations.verl.gc_freeze import freeze_long_lived_objects
from openjudge.integrations.verl.guard import (
    FailureRateExceeded,
    SampleFailed,
    is_outage,
)
from openjudge.integrations.verl.hosted_judge import HostedJudge, resolve_hosted_providers, route_through_verl
from openjudge.integrations.verl.keys import (
    FAILED_KEY,
    REWARD_KEY,
    check_names,
    error_key,
    score_entries,
    score_key,
)
from openjudge.integrations.verl.ledger import Ledger, LedgerClient, group_means, run_ledger
from openjudge.integrations.verl.lifecycle import close_at_exit
from openjudge.integrations.verl.settings import OpenJudgeVerlSettings
from openjudge.models.loop_local import LoopLocal
from openjudge.results import GraderError, GraderResult, GraderScore
from openjudge.runner.aggregators import WeightedMeanAggregator
from openjudge.runner.grading_runner import GradingRunner

__all__ = [
    "DEFAULT_AGGREGATE",
    "Placement",
    "SampleScorer",
    "ScoredSample",
    "neutral_values",
    "reward_loop_names",
    "shared_scorer",
]

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
        ledger: The run's failure ledger (:func:`~openjudge.integrations.verl.ledger.run_ledger`);
            default: one of this scorer's own.

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
        ledger: LedgerClient | None = None,
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
        self.runner = runner.replace(
            aggregators=[aggregators[self.aggregate]],
            show_progress=False,
            timeout=settings.timeout_s if settings.timeout_s is not None else runner.timeout,
        )
        self.grader_providers = dict(
            grader_providers if grader_providers is not None else _providers_of(runner)
        )
        self.providers: tuple[str, ...] = tuple(dict.fromkeys(self.grader_providers.values()))
        self.ledger: LedgerClient = ledger if ledger is not None else Ledger(self.policy, describe_providers)
        self.keys: tuple[str, ...] = self._keys()
        self._value_keys = tuple(score_key(name) for name in (*self.grader_names, self.aggregate))
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

    async def score(self, sample: Mapping[str, Any], placement: Placement | None = None) -> ScoredSample:
        """Grade one sample (graders concurrently) and apply the failure policy (:meth:`settle`).

        Args:
            sample: The grader fields.
            placement: Where it is scored (default: where VERL can drop a failure).

        Raises:
            FailureRateExceeded: The run's ledger has tripped, or a reward worker could not
                start (see :mod:`openjudge.integrations.verl.ledger`).
            SampleFailed: It failed under ``on_failure=drop`` and ``placement`` can drop it.
        """
        return await self.settle(await self.grade(sample), placement or Placement(can_drop=True))

    async def grade(self, sample: Mapping[str, Any]) -> ScoredSample:
        """Grade one sample, recorded in the run's ledger; no failure policy yet (see :meth:`settle`).

        Raises:
            FailureRateExceeded: The run's ledger has tripped, or a reward worker could not start.
        """
        problem, blocked = await self.ledger.admit(list(self.providers))
        if problem is not None:
            raise FailureRateExceeded(problem)
        if blocked is not None:
            return self._circuit_open(blocked)
        if self._limiter is None:
            results = await self.runner.arun([sample])
        else:
            async with self._limiter.get():
                results = await self.runner.arun([sample])
        scored = self._scored({name: column[0] for name, column in results.items()})
        problem = await self._record(scored)
        if problem is not None and scored.failed:
            raise FailureRateExceeded(problem)
        return scored

    async def settle(self, scored: ScoredSample, placement: Placement) -> ScoredSample:
        """Apply the failure policy to one graded sample, as its path allows.

        ``placement`` says what VERL can do with a failure there (:class:`Placement`).
        A scored sample passes through (and its reward is posted for its group's
        neutral members); a failed one is dropped (raises), made neutral, deferred to
        :meth:`~openjudge.integrations.verl.reward_loop.OpenJudgeRewardManager.assemble_rm_scores`
        (``NaN`` reward), or given ``fallback_score``.

        Raises:
            SampleFailed: The sample failed, ``on_failure=drop``, and VERL drops it here.
        """
        uid = placement.uid
        if not scored.failed:
            if placement.posts_rewards and uid is not None:
                await self.ledger.post(uid, scored.reward, self._values(scored.extra))
            return self._flagged(scored, scored.reward, failed=False)
        policy = self.policy.on_failure
        if policy == "fallback":
            reward = self.policy.fallback_score
            assert reward is not None  # FailurePolicy requires it under fallback
            return self._flagged(scored, reward, failed=True)
        if policy == "drop" and placement.can_drop:
            raise SampleFailed(
                f"openjudge: this sample could not be scored ({self._describe_errors(scored)}); "
                "on_failure=drop: VERL drops it instead of training on an invented reward"
            )
        if placement.deferred:  # the colocated batch: assemble_rm_scores sees the group
            return self._flagged(scored, math.nan, failed=True, shown=0.0)
        if uid is None or placement.expected <= 1:
            return self._flagged(scored, 0.0, failed=True)  # a group of one: 0.0 is its zero advantage
        await self.ledger.post(uid, None)
        neutral = await self.ledger.neutral(uid, placement.expected, self.policy.neutral_wait_s)
        problem = await self.ledger.problem()
        if problem is not None:  # a sibling tripped the run while this one waited
            raise FailureRateExceeded(problem)
        return self._flagged(self._with_values(scored, neutral.values), neutral.reward, failed=True)

    def _values(self, extra: Mapping[str, ExtraValue]) -> dict[str, float]:
        """The per-grader scores of a scored sample (what GDPO reads), for its group's neutral members."""
        return {k: float(v) for k in self._value_keys if isinstance(v := extra.get(k), float)}

    def _with_values(self, scored: ScoredSample, values: Mapping[str, float]) -> ScoredSample:
        """``scored`` with each failed per-grader score replaced by its group's mean (flags kept)."""
        extra = dict(scored.extra)
        for key, mean in values.items():
            if extra.get(f"{key}/error") == 1.0:
                extra[key] = mean
        return ScoredSample(scored.reward, scored.failed, extra, scored.errors)

    async def score_many(
        self, samples: Sequence[Mapping[str, Any]], groups: Sequence[str] | None = None
    ) -> list[ScoredSample]:
        """Grade many samples through the runner's bounded pool; results in input order.

        A failed sample is never dropped here (a batch has no way to leave a row out):
        under ``drop`` and ``neutral`` it gets the mean reward of the scored samples of
        its group (``groups[i]``, e.g. the ``uid``; each sample alone when ``None``), or
        0.0 when none was scored; under ``fallback``, ``fallback_score``.

        Raises:
            FailureRateExceeded: The run's ledger has tripped.
        """
        if not samples:
            return []
        problem = await self.ledger.problem()
        if problem is not None:
            raise FailureRateExceeded(problem)
        results = await self.runner.arun(samples)
        scored = [
            self._scored({name: column[i] for name, column in results.items()}) for i in range(len(samples))
        ]
        for s in scored:
            problem = await self._record(s) or problem
        if problem is not None and any(s.failed for s in scored):
            raise FailureRateExceeded(problem)
        keys = list(groups) if groups is not None else [str(i) for i in range(len(samples))]
        members: dict[str, list[ScoredSample]] = {}
        for key, s in zip(keys, scored, strict=True):
            members.setdefault(key, []).append(s)
        means = {
            key: group_means(
                [m.reward for m in ms if not m.failed], [self._values(m.extra) for m in ms if not m.failed]
            )
            for key, ms in members.items()
        }
        out = []
        for key, s in zip(keys, scored, strict=True):
            if not s.failed:
                out.append(self._flagged(s, s.reward, failed=False))
            elif self.policy.on_failure == "fallback":
                assert self.policy.fallback_score is not None
                out.append(self._flagged(s, self.policy.fallback_score, failed=True))
            else:
                neutral = means[key]
                out.append(self._flagged(self._with_values(s, neutral.values), neutral.reward, failed=True))
        return out

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

    async def _record(self, scored: ScoredSample) -> str | None:
        outage = dict.fromkeys(self.providers, False)
        for name, error in scored.errors.items():
            provider = self.grader_providers.get(name)
            if provider is not None and is_outage(error):
                outage[provider] = True
        labels = (
            [f"{self.grader_providers.get(name, name)}: {e.kind}" for name, e in scored.errors.items()]
            if scored.failed
            else []
        )
        if scored.failed and not labels:  # the aggregate failed on its own (e.g. a gate's inputs)
            labels = [f"{self.aggregate}: failed"]
        return await self.ledger.record(outage, labels)

    def _describe_errors(self, scored: ScoredSample) -> str:
        return "; ".join(f"{name}: {e.kind}: {e.message[:200]}" for name, e in scored.errors.items()) or (
            f"aggregate {self.aggregate!r} failed"
        )

    @staticmethod
    def _flagged(
        scored: ScoredSample, reward: float, *, failed: bool, shown: float | None = None
    ) -> ScoredSample:
        extra = {**scored.extra, REWARD_KEY: reward if shown is None else shown, FAILED_KEY: float(failed)}
        return ScoredSample(reward, scored.failed, extra, scored.errors)


def neutral_values(groups: Sequence[str], rewards: Sequence[float | None]) -> dict[str, float]:
    """Per group: the mean of its scored rewards (``None``: failed), or 0.0 when none was scored.

    A failed member given its group's mean has a GRPO advantage of exactly zero (the
    group mean does not move); in a group where every member failed, every member gets
    0.0: equal rewards, zero advantage.
    """
    sums: dict[str, list[float]] = {}
    for key, reward in zip(groups, rewards, strict=True):
        bucket = sums.setdefault(key, [])
        if reward is not None:
            bucket.append(reward)
    return {key: (sum(v) / len(v) if v else 0.0) for key, v in sums.items()}


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a sample is scored, and so what VERL can do with its failure.

    Attributes:
        can_drop: VERL trains around a raised failure here (the V1 streaming path).
        deferred: The sample is one row of a colocated batch: its neutral value is set
            when the batch's rewards are assembled (``assemble_rm_scores``).
        uid: Its group (VERL's prompt ``uid``), when known.
        expected: Members per group (``actor_rollout_ref.rollout.n``).
        posts_rewards: Scored rewards go to the ledger, for neutral siblings.
    """

    can_drop: bool = False
    deferred: bool = False
    uid: str | None = None
    expected: int = 1
    posts_rewards: bool = False


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
            route_through_verl(job, config, hosted_judge)
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
                ledger=run_ledger(settings.failure_policy(), describe),
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
