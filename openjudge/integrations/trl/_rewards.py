"""Reward functions for TRL's ``GRPOTrainer`` (and ``RLOOTrainer``, ``AsyncGRPOTrainer``).

TRL (0.27 and later) calls every reward function as
``f(prompts=..., completions=..., completion_ids=..., **columns) -> list[float | None]``,
awaits async ones together with ``asyncio.gather`` on one persistent event-loop thread,
logs each function's mean as ``rewards/<f.__name__>/mean``, turns ``None`` into NaN and
sums the functions with ``nansum`` (weighted by ``reward_weights``). From TRL 1.6.0 on, a
completion for which every function returned ``None`` is unscorable: left out of its
group's baseline, no advantage. TRL 0.27 to 1.5 train it as a reward of 0.

:class:`OpenJudgeRewards` turns a graders config into such functions:

- :meth:`~OpenJudgeRewards.per_grader`: one function per grader, named after it (TRL
  weights and sums them: ``GRPOConfig(reward_weights=[...])``). They judge each batch
  together (:mod:`~openjudge.integrations.trl._team`): a completion whose judging failed
  for one of them failed for all of them; with routing (``when``, ``data.graders_field``),
  a grader returns ``None`` for the completions it does not apply to, which is TRL's own
  way to say "not this function's sample" (no failure);
- :meth:`~OpenJudgeRewards.aggregate`: one function returning an aggregator's score
  (the config's first aggregator, or the equal-weight ``mean`` of every grader).

The grading is the :class:`~openjudge.integrations.scoring.RewardScorer`'s (the scorer
VERL and SkyRL use too). One capacity limit bounds the gradings in flight across every
function of the set, since TRL runs them at the same time, and one failure ledger keeps
the set's breakers and failure rate. A failed completion follows ``on_failure``
(:mod:`~openjudge.integrations.trl._columns`): ``None`` from every per-grader function by
default (``drop``: TRL leaves it out; refused on TRL before 1.6.0, which would train it
as 0), its group's mean under ``neutral``, ``fallback_score`` under ``fallback``: a
failure is never silently a number. When more than ``max_failure_rate`` of the last
``failure_window`` gradings failed, the next call raises
:class:`~openjudge.integrations.scoring.FailureRateExceeded` and training stops: on every
training process at the same call (:mod:`~openjudge.integrations.trl._collective`).

The functions are callable objects, so they pickle (``AsyncGRPOTrainer`` sends reward
functions to a spawned process) when the set was built from a config file: the child
process rebuilds the graders from the same file, once per process.
"""

from __future__ import annotations

import logging
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
from openjudge.integrations.trl import _version
from openjudge.integrations.trl._closing import LoopCloser
from openjudge.integrations.trl._collective import process_count
from openjudge.integrations.trl._columns import Column, prompt_groups, reward_column
from openjudge.integrations.trl._function import OpenJudgeReward
from openjudge.integrations.trl._samples import TRLText, samples_from_batch
from openjudge.integrations.trl._settings import OpenJudgeTRLSettings
from openjudge.integrations.trl._team import SharedGradings, batch_key
from openjudge.models._loop_local import LoopLocal
from openjudge.results import GraderScore
from openjudge.runner._concurrency import chat_clients
from openjudge.runner.aggregators import WeightedMeanAggregator
from openjudge.runner.grading_runner import GradingRunner

__all__ = ["DEFAULT_AGGREGATE", "OpenJudgeReward", "OpenJudgeRewards", "shared_rewards"]

logger = logging.getLogger(__name__)

_WHERE = "OpenJudgeRewards"
_PLACEMENT = Placement(can_drop=True, drop="nan")
"""Grading only: the failure policy is TRL's own (:func:`~openjudge.integrations.trl._columns.reward_column`)."""
_TOGETHER = "per-grader functions"
"""The name of the aggregate that fails when any grader of the per-grader functions failed."""


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
        SettingsError: ``on_failure="drop"`` (the default) with TRL older than 1.6.0,
            which would train a dropped completion as a reward of 0.

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
        self._trl = _version.installed_trl()
        _version.check_drop(options.on_failure, self._trl)
        limit = self.max_concurrency
        self._limiter: LoopLocal[anyio.CapacityLimiter] = LoopLocal(lambda: anyio.CapacityLimiter(limit))
        self.ledger: FailureLedger = process_ledger(options.failure_policy(), describe)
        """The set's breakers and failure rate (every function of the set records here)."""
        self._together: dict[str, None] = {}  # graders with a per-grader function, in creation order
        self._together_scorers: dict[frozenset[str], RewardScorer] = {}
        self._gradings = SharedGradings()
        self._unknown = 0
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
            SettingsError: ``on_failure="drop"`` (the default) with TRL older than 1.6.0.
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

    def _together_scorer(self, members: frozenset[str]) -> RewardScorer:
        """The scorer of the per-grader functions ``members``: their graders, failed when any failed."""
        scorer = self._together_scorers.get(members)
        if scorer is None:
            configs = self._runner.grader_configs
            name = _TOGETHER
            while name in configs:
                name += "_"
            runner = self._runner.replace(
                grader_configs={n: c for n, c in configs.items() if n in members},
                aggregators=[WeightedMeanAggregator(name)],  # fails when any input failed
                unrouted="not_applicable",  # a grader's None where it does not apply
            )
            scorer = self._together_scorers[members] = self._scorer(runner, name, per_grader=True)
        return scorer

    def grader(self, name: str) -> OpenJudgeReward:
        """The reward function of one grader, named after it.

        The per-grader functions of a set judge each batch together: the first one
        called grades it with every grader that has a function, and a completion whose
        judging failed for one of them failed for all of them (see ``on_failure``).

        Raises:
            KeyError: No grader of that name (the message lists them).
        """
        configs = self._runner.grader_configs
        if name not in configs:
            raise KeyError(f"no grader named {name!r} (graders: {', '.join(configs)})")
        self._together[name] = None
        return OpenJudgeReward(self, name, None, aggregate=False)

    def per_grader(self) -> list[OpenJudgeReward]:
        """One reward function per grader, in config order (they judge each batch together)."""
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

    # -- a call -------------------------------------------------------------------------

    async def _rewards_of(
        self,
        reward: OpenJudgeReward,
        prompts: Sequence[TRLText],
        completions: Sequence[TRLText],
        completion_ids: Sequence[Sequence[int]] | None,
        columns: Mapping[str, object],
    ) -> list[float | None]:
        """``reward``'s rewards for a batch: graded, then the failure policy applied."""
        self._closer.saw_running_loop()  # TRL's loop: where the judges' clients are closed
        samples = samples_from_batch(prompts, completions, completion_ids, columns)
        processes = process_count()
        groups = prompt_groups(prompts, batch_is_whole=processes == 1)
        if reward.is_aggregate:
            scored = await reward.scorer.score_many(samples, None, _PLACEMENT)
            values = tuple(None if s.failed else s.reward for s in scored)
        else:
            members = frozenset(self._together)
            scored = await self._gradings.get(
                reward.target,
                members,
                batch_key(samples),
                lambda graders: self._together_scorer(graders).score_many(samples, None, _PLACEMENT),
            )
            values = tuple(self._value(s, reward.target) for s in scored)
        rewards, unknown = reward_column(
            Column(values, tuple(s.failed for s in scored)), groups, self.options
        )
        if unknown:
            self._warn_unknown(unknown)
        self._report(reward, scored, columns)
        return rewards

    def _value(self, scored: ScoredSample, name: str) -> float | None:
        result = scored.results.get(name)
        if not isinstance(result, GraderScore):
            return None
        return float(result.normalized_score if self.normalize else result.score)

    def _warn_unknown(self, count: int) -> None:
        """Neutral completions left ``None``: their group continues on another process, none scored here."""
        if self._trl is None or _version.drops_unscorable(self._trl):
            return  # TRL leaves them out: nothing is trained on them
        self._unknown += count
        if self._unknown == count or self._unknown // 1000 > (self._unknown - count) // 1000:
            logger.warning(
                "openjudge: %d failed completions (%d so far) have no known group mean on this process "
                "(their prompt's other generations are scored on another one, none here); on_failure="
                "neutral returns None for them, which TRL %s trains as a reward of 0: upgrade to TRL 1.6.0 "
                "or later, which leaves them out",
                count,
                self._unknown,
                self._trl,
            )

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


_SHARED: ProcessCache[OpenJudgeRewards] = ProcessCache()


def shared_rewards(settings: OpenJudgeTRLSettings) -> OpenJudgeRewards:
    """The reward set for these settings in this process, built once.

    Unpickled reward functions come from here, so every function sent to a process
    shares one set of graders, providers (and their limits), one concurrency limit and
    one failure ledger.
    """
    return _SHARED.get((settings, settings_path(settings)), lambda: OpenJudgeRewards.from_settings(settings))
