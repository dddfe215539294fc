"""Reward functions for TRL's ``GRPOTrainer`` (and ``RLOOTrainer``, ``AsyncGRPOTrainer``).

TRL (0.27 and later) calls every reward function as
``f(prompts=..., completions=..., completion_ids=..., **columns) -> list[float | None]``,
awaits async ones together with ``asyncio.gather`` on one persistent event-loop thread,
logs each function's mean as ``rewards/<f.__name__>/mean``, turns ``None`` into NaN and
leaves NaN out of the reward sum (a completion for which every function returned
``None`` is unscorable: TRL gives it no advantage).

:class:`OpenJudgeRewards` turns a graders config into such functions:

- :meth:`~OpenJudgeRewards.per_grader`: one function per grader, named after it (TRL
  weights and sums them: ``GRPOConfig(reward_weights=[...])``);
- :meth:`~OpenJudgeRewards.aggregate`: one function returning an aggregator's score
  (the config's first aggregator, or the equal-weight ``mean`` of every grader).

Each call grades the batch concurrently; one capacity limit bounds the gradings in
flight across every function of the set, since TRL runs them at the same time. A
failed grading is ``None`` unless a ``fallback_score`` is configured: a failure is
never silently a number.

The functions are callable objects, so they pickle (``AsyncGRPOTrainer`` sends reward
functions to a spawned process) when the set was built from a config file: the child
process rebuilds the graders from the same file, once per process.
"""

from __future__ import annotations

import inspect
import logging
import math
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import anyio

from openjudge.config import ConfigError, build_job, load_config
from openjudge.integrations._shared import FailureLog
from openjudge.integrations.trl.samples import TRLText, samples_from_batch
from openjudge.integrations.trl.settings import OpenJudgeTRLSettings
from openjudge.models.loop_local import LoopLocal
from openjudge.results import GraderError, GraderResult, GraderScore
from openjudge.runner.aggregators import AggregatorLike, WeightedMeanAggregator
from openjudge.runner.grading_runner import GraderConfig, GradingRunner

__all__ = ["DEFAULT_AGGREGATE", "OpenJudgeReward", "OpenJudgeRewards", "shared_rewards"]

logger = logging.getLogger(__name__)

DEFAULT_AGGREGATE = "mean"
"""The aggregate used when the config declares no aggregator: every grader, equal weights."""


def _as_score(name: str, result: GraderResult | None) -> GraderScore | GraderError:
    if isinstance(result, GraderScore | GraderError):
        return result
    if result is None:
        return GraderError(name=name, kind="internal", message=f"no result for {name!r}")
    return GraderError(name=name, kind="invalid_input", message=f"{name!r} returned a rank, not a score")


class OpenJudgeRewards:
    """A set of TRL reward functions over one set of graders, sharing one concurrency limit.

    Args:
        runner: The graders (with their mappers) and aggregators, e.g. ``build_job(...).runner``.
        fallback_score: The reward of a failed grading; ``None`` returns ``None`` (NaN in TRL).
        normalize: Return normalised scores (0 worst, 1 best) rather than raw ones.
        max_concurrency: Gradings in flight at once across every function of the set
            (default: the runner's ``max_concurrency``).
        timeout_s: Seconds per (completion, grader) pair, retries included (default: the
            runner's ``timeout``).
        log_failures: Report failure rates (``log_metric``) and error kinds (``log_extra``).
        log_reasons: Add each grader's reason to TRL's completions table.

    Example:
        >>> rewards = OpenJudgeRewards.from_config("graders.yaml")  # doctest: +SKIP
        >>> trainer = GRPOTrainer(model, reward_funcs=rewards.per_grader(), ...)  # doctest: +SKIP
    """

    def __init__(
        self,
        runner: GradingRunner,
        *,
        fallback_score: float | None = None,
        normalize: bool = True,
        max_concurrency: int | None = None,
        timeout_s: float | None = None,
        log_failures: bool = True,
        log_reasons: bool = False,
    ) -> None:
        if fallback_score is not None and not math.isfinite(fallback_score):
            raise ValueError("fallback_score must be a finite number or None")
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        self.fallback_score = fallback_score
        self.normalize = normalize
        self.max_concurrency = max_concurrency if max_concurrency is not None else runner.max_concurrency
        self.timeout_s = timeout_s if timeout_s is not None else runner.timeout
        self.log_failures = log_failures
        self.log_reasons = log_reasons
        self.settings: OpenJudgeTRLSettings | None = None
        """The options this set was built from (``None`` when built from a runner in code)."""
        self._configs: dict[str, GraderConfig] = dict(runner.grader_configs)
        self._aggregators: dict[str, AggregatorLike] = dict(runner.aggregators)
        limit = self.max_concurrency
        self._limiter: LoopLocal[anyio.CapacityLimiter] = LoopLocal(lambda: anyio.CapacityLimiter(limit))
        self._failures = FailureLog(logger)

    @classmethod
    def from_config(
        cls,
        config: str | os.PathLike[str],
        *,
        fallback_score: float | None = None,
        normalize: bool = True,
        max_concurrency: int | None = None,
        timeout_s: float | None = None,
        log_failures: bool = True,
        log_reasons: bool = False,
    ) -> OpenJudgeRewards:
        """Build the graders of a YAML config (see :class:`OpenJudgeTRLSettings`).

        Raises:
            ConfigError: The file is unreadable or invalid (every problem is listed).
            pydantic.ValidationError: An option is invalid.
        """
        settings = OpenJudgeTRLSettings(
            config=os.fspath(config),
            fallback_score=fallback_score,
            normalize=normalize,
            max_concurrency=max_concurrency,
            timeout_s=timeout_s,
            log_failures=log_failures,
            log_reasons=log_reasons,
        )
        return cls.from_settings(settings)

    @classmethod
    def from_settings(cls, settings: OpenJudgeTRLSettings) -> OpenJudgeRewards:
        """Build from validated settings (what :meth:`from_config` and unpickling use)."""
        path = Path(settings.config)
        job = build_job(load_config(path), source=settings.config, base_dir=path.parent)
        rewards = cls(
            job.runner,
            fallback_score=settings.fallback_score,
            normalize=settings.normalize,
            max_concurrency=settings.max_concurrency,
            timeout_s=settings.timeout_s,
            log_failures=settings.log_failures,
            log_reasons=settings.log_reasons,
        )
        rewards.settings = settings
        logger.info(
            "openjudge: TRL rewards over graders %s from %s", ", ".join(rewards.grader_names), settings.config
        )
        return rewards

    def __reduce__(
        self,
    ) -> tuple[Callable[[OpenJudgeTRLSettings], OpenJudgeRewards], tuple[OpenJudgeTRLSettings]]:
        # Pickled as its settings: the receiving process rebuilds the graders once (shared_rewards).
        if self.settings is None:
            raise TypeError(
                "these reward functions were built from a GradingRunner in code and cannot be pickled "
                "(AsyncGRPOTrainer sends reward functions to another process): build them with "
                "OpenJudgeRewards.from_config('graders.yaml') instead"
            )
        return shared_rewards, (self.settings,)

    # -- the functions ------------------------------------------------------------------

    @property
    def grader_names(self) -> tuple[str, ...]:
        return tuple(self._configs)

    @property
    def aggregate_names(self) -> tuple[str, ...]:
        """The config's aggregators (``mean`` is always available when it declares none)."""
        return tuple(self._aggregators) or (DEFAULT_AGGREGATE,)

    def grader(self, name: str) -> OpenJudgeReward:
        """The reward function of one grader, named after it.

        Raises:
            KeyError: No grader of that name (the message lists them).
        """
        if name not in self._configs:
            raise KeyError(f"no grader named {name!r} (graders: {', '.join(self._configs)})")
        runner = GradingRunner(
            {name: self._configs[name]}, max_concurrency=1, show_progress=False, timeout=self.timeout_s
        )
        return OpenJudgeReward(self, name, runner, aggregate=False)

    def per_grader(self) -> list[OpenJudgeReward]:
        """One reward function per grader, in config order."""
        return [self.grader(name) for name in self._configs]

    def aggregate(self, name: str | None = None) -> OpenJudgeReward:
        """One reward function returning an aggregator's score for each completion.

        Args:
            name: The aggregator; default: the config's first one, else ``mean`` (the
                equal-weight mean of every grader's normalised score; it fails when any
                grader fails).

        Raises:
            ConfigError: No aggregator of that name, or a grader is named ``mean`` and
                the config declares no aggregator.
        """
        if name is None:
            name = next(iter(self._aggregators), DEFAULT_AGGREGATE)
        aggregator = self._aggregators.get(name)
        if aggregator is None:
            if name != DEFAULT_AGGREGATE or self._aggregators:
                known = ", ".join(self._aggregators) or "none"
                raise ConfigError([f"no aggregator named {name!r} (aggregators: {known})"])
            if DEFAULT_AGGREGATE in self._configs:
                raise ConfigError(
                    [f"a grader is named {DEFAULT_AGGREGATE!r}: add an aggregator to the config or rename it"]
                )
            aggregator = WeightedMeanAggregator(DEFAULT_AGGREGATE)
        runner = GradingRunner(
            self._configs,
            max_concurrency=len(self._configs),
            aggregators=[aggregator],
            show_progress=False,
            timeout=self.timeout_s,
        )
        return OpenJudgeReward(self, name, runner, aggregate=True)

    # -- grading ------------------------------------------------------------------------

    async def _grade(
        self, runner: GradingRunner, samples: Sequence[Mapping[str, object]]
    ) -> list[dict[str, GraderResult]]:
        """Grade every sample through ``runner``, at most ``max_concurrency`` at once (set-wide)."""
        limiter = self._limiter.get()
        out: list[dict[str, GraderResult]] = [{} for _ in samples]

        async def one(i: int) -> None:
            async with limiter:
                results = await runner.arun([samples[i]])
            out[i] = {name: column[0] for name, column in results.items()}

        async with anyio.create_task_group() as tg:
            for i in range(len(samples)):
                tg.start_soon(one, i)
        return out

    def _value(self, result: GraderScore | GraderError) -> float | None:
        """The reward for one result: its (normalised) score, or the fallback."""
        if isinstance(result, GraderScore):
            return result.normalized_score if self.normalize else result.score
        return self.fallback_score

    def _report(
        self,
        reward: OpenJudgeReward,
        results: Sequence[Mapping[str, GraderResult]],
        columns: Mapping[str, object],
    ) -> None:
        """Log failures, and hand failure rates and error kinds to TRL's logging hooks."""
        names = (*self._configs, reward.target) if reward.is_aggregate else (reward.target,)
        log_metric = columns.get("log_metric")
        log_extra = columns.get("log_extra")
        n = len(results)
        for name in names:
            scored = [_as_score(name, r.get(name)) for r in results]
            kinds = ["" if isinstance(s, GraderScore) else s.kind for s in scored]
            if name in self._configs:  # an aggregate's failure repeats its input's
                for s in scored:
                    if isinstance(s, GraderError):
                        self._failures.record(s)
            if self.log_failures and n:
                if callable(log_metric):
                    log_metric(f"openjudge/{name}/failed", sum(1 for k in kinds if k) / n)
                if callable(log_extra):
                    log_extra(f"openjudge/{name}/error", kinds)
            if self.log_reasons and callable(log_extra) and name in self._configs:
                log_extra(f"openjudge/{name}/reason", [s.reason for s in scored])


class OpenJudgeReward:
    """One TRL reward function: ``await f(prompts, completions, completion_ids, **columns)``.

    Made by :meth:`OpenJudgeRewards.grader`, :meth:`~OpenJudgeRewards.per_grader` or
    :meth:`~OpenJudgeRewards.aggregate`. ``__name__`` is the grader's (or aggregator's)
    name, which TRL uses in its logs (``rewards/<name>/mean``).

    Attributes:
        rewards: The set it belongs to (its options and its shared limit).
        target: The grader or aggregator whose score this function returns.
        is_aggregate: Whether ``target`` is an aggregator.
    """

    def __init__(
        self, rewards: OpenJudgeRewards, target: str, runner: GradingRunner, *, aggregate: bool
    ) -> None:
        self.rewards = rewards
        self.target = target
        self.is_aggregate = aggregate
        self.__name__ = target
        self.__qualname__ = target
        self._runner = runner
        # TRL before 1.14 asks `inspect.iscoroutinefunction(f)` (0.27: `asyncio.iscoroutinefunction`)
        # about the object itself, not its `__call__`, and would call it without awaiting. inspect
        # reads the code flags of "function-like" objects (the protocol Cython functions use):
        # `__code__`, `__defaults__` and `__kwdefaults__` beside `__name__`. `__signature__` keeps
        # `inspect.signature(f)` that of the call, without `self`.
        call = type(self).__call__
        self.__code__ = call.__code__
        self.__defaults__ = call.__defaults__
        self.__kwdefaults__ = call.__kwdefaults__
        self.__signature__ = inspect.signature(self.__call__)

    async def __call__(
        self,
        prompts: Sequence[TRLText],
        completions: Sequence[TRLText],
        completion_ids: Sequence[Sequence[int]] | None = None,
        **kwargs: object,
    ) -> list[float | None]:
        """Grade a batch; one reward per completion, ``None`` for a failed grading (no fallback).

        Args:
            prompts: One prompt per completion (text, or a list of messages).
            completions: The completions (text, or a list of messages).
            completion_ids: Their token ids.
            **kwargs: The other dataset columns (one value per completion) and TRL's own
                keywords (``trainer_state``, ``log_metric``, ``log_extra``, ...).
        """
        samples = samples_from_batch(prompts, completions, completion_ids, kwargs)
        results = await self.rewards._grade(self._runner, samples)
        self.rewards._report(self, results, kwargs)
        return [self.rewards._value(_as_score(self.target, r.get(self.target))) for r in results]

    def __repr__(self) -> str:
        kind = "aggregate" if self.is_aggregate else "grader"
        return f"<OpenJudgeReward {kind} {self.target!r}>"

    def __reduce__(
        self,
    ) -> tuple[Callable[[OpenJudgeRewards, str, bool], OpenJudgeReward], tuple[OpenJudgeRewards, str, bool]]:
        return _reward_of, (self.rewards, self.target, self.is_aggregate)


def _reward_of(rewards: OpenJudgeRewards, target: str, aggregate: bool) -> OpenJudgeReward:
    return rewards.aggregate(target) if aggregate else rewards.grader(target)


_SHARED: dict[tuple[OpenJudgeTRLSettings, str], OpenJudgeRewards] = {}
_SHARED_LOCK = threading.Lock()


def shared_rewards(settings: OpenJudgeTRLSettings) -> OpenJudgeRewards:
    """The reward set for these settings in this process, built once.

    Unpickled reward functions come from here, so every function sent to a process
    shares one set of graders, providers (and their limits) and one concurrency limit.
    """
    key = (settings, os.path.realpath(settings.config))
    with _SHARED_LOCK:
        rewards = _SHARED.get(key)
        if rewards is None:
            rewards = OpenJudgeRewards.from_settings(settings)
            _SHARED[key] = rewards
        return rewards
