"""Reward functions for TRL's ``GRPOTrainer`` (and ``RLOOTrainer``, ``AsyncGRPOTrainer``).

TRL (0.27 and later) calls every reward function as
``f(prompts=..., completions=..., completion_ids=..., **columns) -> list[float | None]``,
awaits async ones together with ``asyncio.gather`` on one persistent event-loop thread,
logs each function's mean as ``rewards/<f.__name__>/mean``, turns ``None`` into NaN and
leaves NaN out of the reward sum (a completion for which every function returned
``None`` is unscorable: TRL gives it no advantage).

:class:`OpenJudgeRewards` turns a graders config into such functions:

- :meth:`~OpenJudgeRewards.per_grader`: one function per grader, named after it (TRL
  weights and sums them: ``GRPOConfig(reward_weights=[...])``); with routing (``when``,
  ``data.graders_field``), a grader returns ``None`` for the completions it does not apply
  to, which is TRL's own way to say "not this function's sample" (no failure);
- :meth:`~OpenJudgeRewards.aggregate`: one function returning an aggregator's score
  (the config's first aggregator, or the equal-weight ``mean`` of every grader).

Each function is a :class:`~openjudge.integrations.scoring.RewardScorer` (the scorer
VERL and SkyRL use too) whose reward is its grader's or aggregator's score. Each call
grades the batch concurrently; one capacity limit bounds the gradings in flight across
every function of the set, since TRL runs them at the same time, and one failure ledger
keeps the set's breakers and failure rate. A failed grading follows ``on_failure``:
``None`` by default (TRL's dropped reward), the mean of the prompt's scored completions
under ``neutral``, ``fallback_score`` under ``fallback``: a failure is never silently a
number. When more than ``max_failure_rate`` of the last ``failure_window`` gradings
failed, the next call raises :class:`~openjudge.integrations.scoring.FailureRateExceeded`
and training stops.

The functions are callable objects, so they pickle (``AsyncGRPOTrainer`` sends reward
functions to a spawned process) when the set was built from a config file: the child
process rebuilds the graders from the same file, once per process.
"""

from __future__ import annotations

import inspect
import logging
import math
import os
from collections.abc import Callable, Mapping, Sequence

import anyio

from openjudge._text import encodable
from openjudge.config import ConfigError
from openjudge.integrations.scoring._ledger import FailureLedger, process_ledger
from openjudge.integrations.scoring._loader import ProcessCache, describe_providers, load_job, settings_path
from openjudge.integrations.scoring._scorer import (
    DEFAULT_AGGREGATE,
    Placement,
    RewardScorer,
    ScoredSample,
)
from openjudge.integrations.trl._closing import LoopCloser
from openjudge.integrations.trl._samples import TRLText, samples_from_batch
from openjudge.integrations.trl._settings import OpenJudgeTRLSettings
from openjudge.models._loop_local import LoopLocal
from openjudge.runner._concurrency import chat_clients
from openjudge.runner.grading_runner import GradingRunner

__all__ = ["DEFAULT_AGGREGATE", "OpenJudgeReward", "OpenJudgeRewards", "shared_rewards"]

logger = logging.getLogger(__name__)

_WHERE = "OpenJudgeRewards"
_PLACEMENT = Placement(can_drop=True, drop="nan")
"""TRL leaves ``None`` (NaN) out of the reward sum: a dropped grading is ``None``."""


class OpenJudgeRewards:
    """A set of TRL reward functions over one set of graders, sharing one limit and one ledger.

    Args:
        runner: The graders (with their mappers) and aggregators, e.g. ``build_job(...).runner``.
        fallback_score: The reward of a failed grading (chooses ``on_failure=fallback``);
            ``None`` returns ``None`` (NaN in TRL).
        normalize: Return normalised scores (0 worst, 1 best) rather than raw ones.
        max_concurrency: Gradings in flight at once across every function of the set
            (default: the runner's ``max_concurrency``).
        timeout_s: Seconds per (completion, grader) pair, retries included (default: the
            runner's ``timeout_s``).
        log_failures: Report failure rates (``log_metric``) and error kinds (``log_extra``).
        log_reasons: Add each grader's reason to TRL's completions table.
        **options: The other options of :class:`OpenJudgeTRLSettings` (``on_failure``,
            ``breaker_failures``, ``max_failure_rate``, ...).

    Raises:
        pydantic.ValidationError: An option is invalid (a ``ValueError``).

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
        **options: object,
    ) -> None:
        options = {
            "fallback_score": fallback_score,
            "normalize": normalize,
            "max_concurrency": max_concurrency,
            "timeout_s": timeout_s,
            "log_failures": log_failures,
            "log_reasons": log_reasons,
            **options,
        }
        self._setup(runner, OpenJudgeTRLSettings.model_validate(options))

    def _setup(
        self,
        runner: GradingRunner,
        options: OpenJudgeTRLSettings,
        grader_providers: Mapping[str, str] | None = None,
        describe: Mapping[str, str] | None = None,
    ) -> None:
        self.options = options
        self.settings: OpenJudgeTRLSettings | None = None
        """The options this set was built from a YAML with (``None`` when built from a runner in code)."""
        self.normalize = options.normalize
        self.fallback_score = options.fallback_score
        self.max_concurrency = options.max_concurrent_samples or runner.max_concurrency
        self.timeout_s = options.timeout_s if options.timeout_s is not None else runner.timeout_s
        self.log_failures = options.log_failures
        self.log_reasons = options.include_reasons
        self._runner = runner
        self._grader_providers = grader_providers
        limit = self.max_concurrency
        self._limiter: LoopLocal[anyio.CapacityLimiter] = LoopLocal(lambda: anyio.CapacityLimiter(limit))
        self.ledger: FailureLedger = process_ledger(options.failure_policy(), describe)
        """The set's breakers and failure rate (every function of the set records here)."""
        self._closer = LoopCloser(self, chat_clients(c.grader for c in runner.grader_configs.values()))

    def close(self) -> None:
        """Close the judges' HTTP clients on the event loops the functions ran on (TRL's).

        Runs by itself when the set is garbage-collected and at interpreter exit, before TRL
        stops its event loop (see :mod:`openjudge.integrations.trl._closing`). Closing twice
        is harmless, and the functions still work after: a later call opens new clients.
        """
        self._closer.close()

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
        **options: object,
    ) -> OpenJudgeRewards:
        """Build the graders of a YAML config (see :class:`OpenJudgeTRLSettings`).

        Raises:
            ConfigError: The file is unreadable or invalid (every problem is listed).
            pydantic.ValidationError: An option is invalid.
        """
        settings = OpenJudgeTRLSettings.model_validate(
            {
                "config": os.fspath(config),
                "fallback_score": fallback_score,
                "normalize": normalize,
                "max_concurrency": max_concurrency,
                "timeout_s": timeout_s,
                "log_failures": log_failures,
                "log_reasons": log_reasons,
                **options,
            }
        )
        return cls.from_settings(settings)

    @classmethod
    def from_settings(cls, settings: OpenJudgeTRLSettings) -> OpenJudgeRewards:
        """Build from validated settings (what :meth:`from_config` and unpickling use)."""
        _, job = load_job(settings)
        rewards = cls.__new__(cls)
        rewards._setup(job.runner, settings, job.grader_providers, describe_providers(job))
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
        return tuple(self._runner.grader_configs)

    @property
    def aggregate_names(self) -> tuple[str, ...]:
        """The config's aggregators (``mean`` is always available when it declares none)."""
        return tuple(self._runner.aggregators) or (DEFAULT_AGGREGATE,)

    def _scorer(self, runner: GradingRunner, target: str | None, *, per_grader: bool = False) -> RewardScorer:
        return RewardScorer(
            runner,
            self.options.model_copy(update={"aggregate": target, "timeout_s": self.timeout_s}),
            grader_providers=self._grader_providers,
            source=self.options.config or "the graders config",
            ledger=self.ledger,
            limiter=self._limiter,
            where=_WHERE,
            reserve_keys=False,
            skip_not_applicable=per_grader,  # TRL sums per-grader rewards without None
        )

    def grader(self, name: str) -> OpenJudgeReward:
        """The reward function of one grader, named after it.

        Raises:
            KeyError: No grader of that name (the message lists them).
        """
        configs = self._runner.grader_configs
        if name not in configs:
            raise KeyError(f"no grader named {name!r} (graders: {', '.join(configs)})")
        runner = self._runner.replace(
            grader_configs={name: configs[name]}, aggregators=None, unrouted="not_applicable"
        )
        return OpenJudgeReward(self, name, self._scorer(runner, name, per_grader=True), aggregate=False)

    def per_grader(self) -> list[OpenJudgeReward]:
        """One reward function per grader, in config order."""
        return [self.grader(name) for name in self._runner.grader_configs]

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
        aggregators = self._runner.aggregators
        if name is not None and name not in aggregators and (aggregators or name != DEFAULT_AGGREGATE):
            known = ", ".join(aggregators) or "none"
            raise ConfigError([f"no aggregator named {name!r} (aggregators: {known})"])
        scorer = self._scorer(self._runner, name)
        return OpenJudgeReward(self, scorer.aggregate, scorer, aggregate=True)

    # -- reporting ----------------------------------------------------------------------

    def _report(
        self, reward: OpenJudgeReward, scored: Sequence[ScoredSample], columns: Mapping[str, object]
    ) -> None:
        """Hand failure rates, error kinds and reasons to TRL's logging hooks."""
        names = (*self.grader_names, reward.target) if reward.is_aggregate else (reward.target,)
        log_metric = columns.get("log_metric")
        log_extra = columns.get("log_extra")
        n = len(scored)
        for name in names:
            kinds = [reward.scorer.error_kind(s, name) for s in scored]
            if self.log_failures and n:
                if callable(log_metric):
                    log_metric(f"openjudge/{name}/failed", sum(1 for k in kinds if k) / n)
                if callable(log_extra):
                    log_extra(f"openjudge/{name}/error", kinds)
            if self.log_reasons and callable(log_extra) and name in self.grader_names:
                log_extra(f"openjudge/{name}/reason", [encodable(s.results[name].reason) for s in scored])


class OpenJudgeReward:
    """One TRL reward function: ``await f(prompts, completions, completion_ids, **columns)``.

    Made by :meth:`OpenJudgeRewards.grader`, :meth:`~OpenJudgeRewards.per_grader` or
    :meth:`~OpenJudgeRewards.aggregate`. ``__name__`` is the grader's (or aggregator's)
    name, which TRL uses in its logs (``rewards/<name>/mean``).

    Attributes:
        rewards: The set it belongs to (its options, its shared limit and ledger).
        target: The grader or aggregator whose score this function returns.
        is_aggregate: Whether ``target`` is an aggregator.
        scorer: The scorer whose reward is ``target``'s score.
    """

    def __init__(
        self, rewards: OpenJudgeRewards, target: str, scorer: RewardScorer, *, aggregate: bool
    ) -> None:
        self.rewards = rewards
        self.target = target
        self.is_aggregate = aggregate
        self.scorer = scorer
        self.__name__ = target
        self.__qualname__ = target
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
        """Grade a batch; one reward per completion, ``None`` for a dropped grading.

        Args:
            prompts: One prompt per completion (text, or a list of messages).
            completions: The completions (text, or a list of messages).
            completion_ids: Their token ids.
            **kwargs: The other dataset columns (one value per completion) and TRL's own
                keywords (``trainer_state``, ``log_metric``, ``log_extra``, ...).

        Raises:
            FailureRateExceeded: More than ``max_failure_rate`` of the set's recent
                gradings failed (the message names the judges): training stops.
        """
        self.rewards._closer.saw_running_loop()
        samples = samples_from_batch(prompts, completions, completion_ids, kwargs)
        groups = [str(s["prompt"]) for s in samples]  # a prompt's generations: neutral's group
        scored = await self.scorer.score_many(samples, groups, _PLACEMENT)
        self.rewards._report(self, scored, kwargs)
        return [None if math.isnan(s.reward) else s.reward for s in scored]

    def __repr__(self) -> str:
        kind = "aggregate" if self.is_aggregate else "grader"
        return f"<OpenJudgeReward {kind} {self.target!r}>"

    def __reduce__(
        self,
    ) -> tuple[Callable[[OpenJudgeRewards, str, bool], OpenJudgeReward], tuple[OpenJudgeRewards, str, bool]]:
        return _reward_of, (self.rewards, self.target, self.is_aggregate)


def _reward_of(rewards: OpenJudgeRewards, target: str, aggregate: bool) -> OpenJudgeReward:
    return rewards.aggregate(target) if aggregate else rewards.grader(target)


_SHARED: ProcessCache[OpenJudgeRewards] = ProcessCache()


def shared_rewards(settings: OpenJudgeTRLSettings) -> OpenJudgeRewards:
    """The reward set for these settings in this process, built once.

    Unpickled reward functions come from here, so every function sent to a process
    shares one set of graders, providers (and their limits), one concurrency limit and
    one failure ledger.
    """
    return _SHARED.get((settings, settings_path(settings)), lambda: OpenJudgeRewards.from_settings(settings))
