"""Grade samples with the configured graders and apply the failure policy: one scorer for every trainer.

The result of every sample has the same extra keys, fixed when the scorer is built
(``K`` is each grader name and the reward's aggregate; see
:mod:`openjudge.integrations.scoring._keys`, which also refuses names that would collide). Every
numeric value is a float, in every case::

    openjudge/<K>              the score, or 0.0 when it failed
    openjudge/<K>/error        0.0 or 1.0
    openjudge/<K>/error_kind   "" or the GraderError kind ("circuit_open": not called)
    openjudge/<K>/reason       the grader's reason      (include_reasons; graders only)
    openjudge/<K>/not_applicable  0.0 or 1.0: routing leaves it out here (only when the
                               config routes: ``when``, ``data.graders_field``)
    openjudge/reward           the reward of the sample (0.0 while it is pending or dropped)
    openjudge/failed           1.0 when the reward is not a judgement (neutral, fallback, dropped)

With routing, a grader that does not apply to a sample scores ``0.0`` there with
``not_applicable`` 1.0 (never an error), and the reward is the aggregate over the graders
that apply. A sample whose reward does not apply to it (no grader applies to it, or none
of the reward aggregate's inputs does) is a failure of that sample, with an
``invalid_input`` error that says so, handled by the failure policy like any other:
configs cannot know every row in advance, and a row without a reward must neither stop
the run nor train on an invented number. Only a scorer whose reward is one grader of
several (TRL's per-grader functions, ``skip_not_applicable``) leaves such a sample
unscored instead: ``NaN``, which TRL leaves out of its sum.

VERL writes them as ``reward_extra_info``, SkyRL as step metadata and metrics, TRL as its
logs. What a failed sample becomes is :meth:`RewardScorer.settle`'s, told by a
:class:`Placement` what the trainer can do with a failure where the sample is scored.
Breakers and the failure rate live in a :class:`~openjudge.integrations.scoring._ledger.FailureLedger`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import anyio

from openjudge._text import encodable
from openjudge.config import ConfigError
from openjudge.integrations._shared import FailureLog
from openjudge.integrations.scoring._guard import FailureRateExceeded, SampleFailed, is_outage
from openjudge.integrations.scoring._keys import (
    FAILED_KEY,
    REWARD_KEY,
    ExtraValue,
    check_names,
    error_key,
    not_applicable_key,
    score_entries,
    score_key,
)
from openjudge.integrations.scoring._ledger import FailureLedger, group_means, process_ledger
from openjudge.integrations.scoring._settings import ScorerSettings
from openjudge.models._loop_local import LoopLocal
from openjudge.results import GraderError, GraderScore, NotApplicable, RowResult
from openjudge.runner.aggregators import AggregatorLike, WeightedMeanAggregator
from openjudge.runner.grading_runner import GradingRunner

__all__ = ["CIRCUIT_OPEN", "DEFAULT_AGGREGATE", "Placement", "RewardScorer", "ScoredSample", "neutral_values"]

logger = logging.getLogger(__name__)

DEFAULT_AGGREGATE = "mean"
"""The reward when the config declares no aggregator: every grader's normalised score, equal weights."""
CIRCUIT_OPEN = "circuit_open"
"""The error kind of a sample failed fast by an open breaker (no call was made)."""


@dataclass(frozen=True, slots=True)
class ScoredSample:
    """The reward of one sample and its extra keys (the same keys for every sample of a scorer).

    Attributes:
        reward: The reward: the aggregate's score, or what the failure policy made of a
            failure; ``NaN`` when there is none (dropped, or pending in a colocated batch).
        failed: The aggregate failed (``reward`` is not a judgement).
        extra: The extra keys (see the module docstring).
        errors: The failed graders' errors, by grader name (aggregate excluded).
        results: Each grader's (and the aggregate's) result, by name.
        not_applicable: The reward does not apply to the sample and the scorer leaves it
            unscored (``skip_not_applicable``): ``reward`` is ``NaN``, and it is no failure.
    """

    reward: float
    failed: bool
    extra: dict[str, ExtraValue]
    errors: dict[str, GraderError]
    results: dict[str, GraderScore | GraderError | NotApplicable] = field(default_factory=dict)
    not_applicable: bool = False


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a sample is scored, and so what the trainer can do with its failure.

    Attributes:
        can_drop: The trainer trains around a dropped sample here (VERL's V1 streaming
            path; TRL, which leaves ``None`` out).
        drop: How a drop is said: ``raise`` :class:`SampleFailed` (VERL fails the
            session), or a ``nan`` reward (TRL's ``None``).
        deferred: The sample is one row of a colocated batch: its neutral value is set
            when the batch's rewards are assembled (``NaN`` until then).
        uid: Its group (VERL's prompt ``uid``), when known.
        expected: Members per group (``actor_rollout_ref.rollout.n``).
        posts_rewards: Scored rewards go to the ledger, for neutral siblings.
    """

    can_drop: bool = False
    drop: Literal["raise", "nan"] = "raise"
    deferred: bool = False
    uid: str | None = None
    expected: int = 1
    posts_rewards: bool = False


def _providers_of(runner: GradingRunner) -> dict[str, str]:
    """Grader -> a name for the chat model it calls (graders built in Python)."""
    out: dict[str, str] = {}
    for name, config in runner.grader_configs.items():
        model = getattr(config.grader, "model", None)
        model_name = getattr(model, "model_name", None)
        if isinstance(model_name, str):
            out[name] = model_name
    return out


class RewardScorer:
    """Grades samples with a runner; the same keys for every sample; the failure policy applied.

    Args:
        runner: Graders and aggregators (one runner is safe to share across loops and tasks).
        settings: The failure policy and options (any :class:`ScorerSettings`).
        grader_providers: Grader name -> provider name, for the breaker and messages
            (default: each LLM grader's model name).
        describe_providers: Provider name -> endpoint and model, for messages.
        source: Where the graders come from (for messages).
        ledger: Where breakers and the failure rate are kept (VERL: the run's, across
            workers); default: one of this scorer's own.
        limiter: Bounds the samples graded at once, shared with other scorers (TRL's
            functions share one); default: ``settings.max_concurrent_samples``.
        where: How the options are named in messages (e.g. ``reward.openjudge``).
        reserve_keys: Refuse names whose keys would collide in the extra keys (VERL writes
            them all as ``reward_extra_info``; TRL and SkyRL write only per-name keys, so an
            aggregator may be named ``reward`` there).
        skip_not_applicable: A sample the reward does not apply to is unscored (``NaN``, no
            failure) rather than failed: for a reward that is one grader of several (TRL).

    Raises:
        ConfigError: An unknown ``aggregate``, or a grader or aggregate name that would
            collide with another extra key (:func:`~openjudge.integrations.scoring._keys.check_names`).
    """

    def __init__(
        self,
        runner: GradingRunner,
        settings: ScorerSettings,
        *,
        grader_providers: Mapping[str, str] | None = None,
        describe_providers: Mapping[str, str] | None = None,
        source: str = "the graders config",
        ledger: FailureLedger | None = None,
        limiter: LoopLocal[anyio.CapacityLimiter] | None = None,
        where: str = "reward.openjudge",
        reserve_keys: bool = True,
        skip_not_applicable: bool = False,
    ) -> None:
        self.settings = settings
        self.skip_not_applicable = skip_not_applicable
        self.policy = settings.failure_policy()
        self.grader_names: tuple[str, ...] = tuple(runner.grader_configs)
        aggregators = dict(runner.aggregators)
        chosen = settings.aggregate
        if chosen is not None and chosen not in aggregators and chosen not in runner.grader_configs:
            known = ", ".join(aggregators) or "none"
            raise ConfigError([f"{where}.aggregate: no aggregator named {chosen!r} (aggregators: {known})"])
        default = chosen is None and not aggregators
        if chosen is None:
            chosen = next(iter(aggregators), DEFAULT_AGGREGATE)
        writers = [(name, "grader") for name in runner.grader_configs]
        if default:  # the equal-weight mean (a grader named "mean" would collide with it)
            writers.append((chosen, "the default aggregate"))
            aggregators[chosen] = WeightedMeanAggregator(DEFAULT_AGGREGATE)
        elif chosen in aggregators:
            writers.append((chosen, "aggregator"))
        if reserve_keys:
            check_names(writers, source=source)
        elif default and chosen in runner.grader_configs:
            raise ConfigError(
                [
                    f"{source}: the default aggregate {chosen!r} and grader {chosen!r} would both be "
                    f"openjudge/{chosen}: rename the grader or add an aggregator to the config"
                ]
            )
        self.aggregate = chosen
        """The aggregator (or grader) whose score is the reward."""
        self._names: tuple[str, ...] = tuple(dict.fromkeys((*self.grader_names, chosen)))
        self.routed = runner.routed
        """Whether some graders may not apply to some samples (the ``not_applicable`` keys are written)."""
        if chosen in runner.aggregators:  # with the earlier aggregators it reads
            chain: list[AggregatorLike] | None = runner.aggregator_chain(chosen)
        else:
            chain = [aggregators[chosen]] if chosen in aggregators else None
        self.runner = runner.replace(
            aggregators=chain,
            show_progress=False,
            timeout_s=settings.timeout_s if settings.timeout_s is not None else runner.timeout_s,
            deadline_s=None,
        )
        self.grader_providers = dict(
            grader_providers if grader_providers is not None else _providers_of(runner)
        )
        self.providers: tuple[str, ...] = tuple(
            dict.fromkeys(p for g, p in self.grader_providers.items() if g in runner.grader_configs)
        )
        self.ledger: FailureLedger = (
            ledger if ledger is not None else process_ledger(self.policy, describe_providers)
        )
        self.keys: tuple[str, ...] = self._keys()
        self._value_keys = tuple(score_key(name) for name in self._names)
        self._failures = FailureLog(logger)
        limit = settings.max_concurrent_samples
        self._limiter = limiter
        if limiter is None and limit is not None:
            self._limiter = LoopLocal(lambda: anyio.CapacityLimiter(limit))
        self._batch_limit = runner.max_concurrency  # samples at once in score_many when uncapped

    def _keys(self) -> tuple[str, ...]:
        keys: list[str] = []
        for name in self._names:
            keys += [score_key(name), error_key(name), f"{score_key(name)}/error_kind"]
            if self.settings.include_reasons and name in self.grader_names:
                keys.append(f"{score_key(name)}/reason")
            if self.routed:
                keys.append(not_applicable_key(name))
        return (*keys, REWARD_KEY, FAILED_KEY)

    # -- one sample -------------------------------------------------------------------------

    async def score(self, sample: Mapping[str, Any], placement: Placement | None = None) -> ScoredSample:
        """Grade one sample (graders concurrently) and apply the failure policy (:meth:`settle`).

        Args:
            sample: The grader fields.
            placement: Where it is scored (default: where a failure can be dropped by raising).

        Raises:
            FailureRateExceeded: The ledger has tripped, or a VERL reward worker could not
                start (see :mod:`openjudge.integrations.verl._ledger`).
            SampleFailed: It failed under ``on_failure=drop`` and ``placement`` drops by raising.
        """
        return await self.settle(await self.grade(sample), placement or Placement(can_drop=True))

    async def grade(self, sample: Mapping[str, Any]) -> ScoredSample:
        """Grade one sample, recorded in the ledger; no failure policy yet (see :meth:`settle`).

        Raises:
            FailureRateExceeded: The ledger has tripped, or a VERL reward worker could not start.
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
        if scored.not_applicable:  # not a grading: neither a success nor a failure of the judges
            return scored
        problem = await self._record(scored)
        if problem is not None and scored.failed:
            raise FailureRateExceeded(problem)
        return scored

    async def settle(self, scored: ScoredSample, placement: Placement) -> ScoredSample:
        """Apply the failure policy to one graded sample, as its placement allows.

        A scored sample passes through (and its reward is posted for its group's neutral
        members); a failed one is dropped (raises, or ``NaN``), made neutral, deferred to
        :meth:`~openjudge.integrations.verl._reward_loop.OpenJudgeRewardManager.assemble_rm_scores`
        (``NaN`` reward), or given ``fallback_score``. A neutral one whose group has no
        mean (none of it scored, members still missing) is dropped where the placement can
        drop, as 0.0 would not be its zero advantage; elsewhere it gets 0.0, with a warning.

        Raises:
            SampleFailed: The sample failed, ``on_failure=drop`` (or its neutral value is
                unknown), and the placement drops by raising.
        """
        uid = placement.uid
        if not scored.failed:
            if placement.posts_rewards and uid is not None and not scored.not_applicable:
                await self.ledger.post(uid, scored.reward, self._values(scored.extra))
            return self._flagged(scored, scored.reward, failed=False)
        policy = self.policy.on_failure
        if policy == "fallback":
            reward = self.policy.fallback_score
            assert reward is not None  # FallbackPolicy requires it under fallback
            return self._flagged(scored, reward, failed=True)
        if policy == "drop" and placement.can_drop:
            return self._dropped(
                scored, placement, "on_failure=drop: VERL drops it instead of training on an invented reward"
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
        if not neutral.known:
            unknown = (
                f"no member of group {uid!r} was scored within neutral_wait_s "
                f"({self.policy.neutral_wait_s:g} s) while members were missing, so its mean is unknown"
            )
            if placement.can_drop:
                return self._dropped(
                    scored, placement, f"{unknown}: it is dropped instead of trained on an invented reward"
                )
            logger.warning(
                "openjudge: a failed sample gets 0.0: %s (this trainer cannot drop it here)", unknown
            )
        return self._flagged(self._with_values(scored, neutral.values), neutral.reward, failed=True)

    def _dropped(self, scored: ScoredSample, placement: Placement, why: str) -> ScoredSample:
        """``scored`` left out of training as ``placement`` drops: a ``NaN`` reward, or :class:`SampleFailed`."""
        if placement.drop == "nan":
            return self._flagged(scored, math.nan, failed=True, shown=0.0)
        raise SampleFailed(
            f"openjudge: this sample could not be scored ({self._describe_errors(scored)}); {why}"
        )

    # -- a batch ----------------------------------------------------------------------------

    async def score_many(
        self,
        samples: Sequence[Mapping[str, Any]],
        groups: Sequence[str] | None = None,
        placement: Placement | None = None,
    ) -> list[ScoredSample]:
        """Grade many samples concurrently (each through :meth:`grade`); results in input order.

        A batch cannot leave a row out by raising: a failed sample is dropped only when
        ``placement`` drops with ``nan`` (TRL: under ``drop``, and under ``neutral`` when
        none of its group was scored in the batch); otherwise, under ``drop`` and
        ``neutral``, it gets the mean reward of the scored samples of its group
        (``groups[i]``, e.g. the ``uid``; each sample alone when ``None``), or 0.0 when
        none was scored; under ``fallback``, ``fallback_score``. At most
        ``max_concurrent_samples`` (else the runner's ``max_concurrency``) samples are
        graded at once.

        Raises:
            FailureRateExceeded: The ledger has tripped.
        """
        if not samples:
            return []
        where = placement or Placement()
        scored: list[ScoredSample | None] = [None] * len(samples)
        stop: list[FailureRateExceeded] = []
        batch_limiter = None if self._limiter is not None else anyio.CapacityLimiter(self._batch_limit)

        async def one(i: int) -> None:
            try:
                if batch_limiter is None:
                    scored[i] = await self.grade(samples[i])
                else:
                    async with batch_limiter:
                        scored[i] = await self.grade(samples[i])
            except FailureRateExceeded as exc:  # every sample is graded; the stop is raised after
                stop.append(exc)

        async with anyio.create_task_group() as tg:
            for i in range(len(samples)):
                tg.start_soon(one, i)
        if stop:
            raise stop[0]
        graded = [s for s in scored if s is not None]
        keys = list(groups) if groups is not None else [str(i) for i in range(len(samples))]
        members: dict[str, list[ScoredSample]] = {}
        for key, s in zip(keys, graded, strict=True):
            members.setdefault(key, []).append(s)
        # A batch holds whole groups, except where it is dropped with NaN (TRL): a process's
        # batch there may hold only part of a group, whose other members are scored elsewhere.
        partial = where.can_drop and where.drop == "nan"
        means = {
            key: group_means(
                [m.reward for m in ms if not (m.failed or m.not_applicable)],
                [self._values(m.extra) for m in ms if not (m.failed or m.not_applicable)],
                complete=not partial,
            )
            for key, ms in members.items()
        }
        out = []
        for key, s in zip(keys, graded, strict=True):
            if not s.failed:
                out.append(self._flagged(s, s.reward, failed=False))
            elif self.policy.on_failure == "fallback":
                assert self.policy.fallback_score is not None
                out.append(self._flagged(s, self.policy.fallback_score, failed=True))
            elif partial and (self.policy.on_failure == "drop" or not means[key].known):
                out.append(self._dropped(s, where, "dropped with NaN"))  # drop == "nan": never raises
            else:
                neutral = means[key]
                out.append(self._flagged(self._with_values(s, neutral.values), neutral.reward, failed=True))
        return out

    # -- building results -------------------------------------------------------------------

    def _values(self, extra: Mapping[str, ExtraValue]) -> dict[str, float]:
        """The per-grader scores of a scored sample (what GDPO reads), for its group's neutral members."""
        return {k: float(v) for k in self._value_keys if isinstance(v := extra.get(k), float)}

    def _with_values(self, scored: ScoredSample, values: Mapping[str, float]) -> ScoredSample:
        """``scored`` with each failed per-grader score replaced by its group's mean (flags kept)."""
        extra = dict(scored.extra)
        for key, mean in values.items():
            if extra.get(f"{key}/error") == 1.0:
                extra[key] = mean
        return replace(scored, extra=extra)

    def _reward_of(self, result: GraderScore) -> float:
        return float(result.normalized_score if self.settings.normalize else result.score)

    def _scored(self, results: Mapping[str, RowResult]) -> ScoredSample:
        extra: dict[str, ExtraValue] = {}
        errors: dict[str, GraderError] = {}
        kept: dict[str, GraderScore | GraderError | NotApplicable] = {}
        skipped = False
        for name in self._names:
            r = results.get(name)
            if isinstance(r, NotApplicable) and name == self.aggregate:
                if self.skip_not_applicable:
                    skipped = True
                else:  # a sample without a reward: its failure, for the failure policy
                    r = GraderError(
                        name=name,
                        kind="invalid_input",
                        message=f"the reward {name!r} does not apply to this sample ({r.reason}): route "
                        "a grader to such samples, or leave them out of the data",
                    )
            elif not isinstance(
                r, GraderScore | GraderError | NotApplicable
            ):  # a rank where a score was expected
                r = GraderError(name=name, kind="invalid_input", message="returned a rank, not a score")
            kept[name] = r
            self._put(extra, name, r)
            if isinstance(r, GraderError) and name in self.grader_names:  # an aggregate repeats its inputs
                errors[name] = r
                self._failures.record(r)
        aggregate = kept[self.aggregate]
        if skipped:
            return ScoredSample(math.nan, False, extra, errors, kept, not_applicable=True)
        if isinstance(aggregate, GraderScore):
            return ScoredSample(self._reward_of(aggregate), False, extra, errors, kept)
        return ScoredSample(0.0, True, extra, errors, kept)

    def _put(
        self, extra: dict[str, ExtraValue], name: str, result: GraderScore | GraderError | NotApplicable
    ) -> None:
        extra.update(score_entries(name, result))
        extra[f"{score_key(name)}/error_kind"] = result.kind if isinstance(result, GraderError) else ""
        if self.settings.include_reasons and name in self.grader_names:
            extra[f"{score_key(name)}/reason"] = encodable(result.reason)  # trainers dump it as UTF-8
        if self.routed:
            extra[not_applicable_key(name)] = float(isinstance(result, NotApplicable))

    def _circuit_open(self, provider: str) -> ScoredSample:
        extra: dict[str, ExtraValue] = {}
        errors: dict[str, GraderError] = {}
        kept: dict[str, GraderScore | GraderError | NotApplicable] = {}
        message = (
            f"not called: the breaker of provider {provider!r} is open after "
            f"{self.policy.breaker_failures} consecutive failed samples"
        )
        for name in self._names:
            error = GraderError(name=name, kind="provider_error", message=message)
            kept[name] = error
            self._put(extra, name, error)
            extra[f"{score_key(name)}/error_kind"] = CIRCUIT_OPEN  # a kind only the breaker gives
            if name in self.grader_names:
                errors[name] = error
        return ScoredSample(0.0, True, extra, errors, kept)

    def error_kind(self, scored: ScoredSample, name: str) -> str:
        """``""`` or the error kind of ``name``'s result (``circuit_open`` when the breaker stopped it)."""
        kind = scored.extra.get(f"{score_key(name)}/error_kind")
        return kind if isinstance(kind, str) else ""

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
        return ScoredSample(reward, scored.failed, extra, scored.errors, scored.results)


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
