"""The group judgement: graders from a group YAML, or an OpenJudge-guide reward function.

:class:`GraderGroupJudge` runs the graders of a group YAML once per group: each *group
grader* (listwise, tournaments, anchor) once over the members' responses, split into one
score per member (:func:`~openjudge.graders.comparison.member_results`), and each
*pointwise* grader once per member, all concurrently. Each member's results are combined
by the YAML's aggregator. Members' samples carry ``pointwise``, the reward VERL's reward
loop gave them (absent when it was a flagged fallback), so a ``provided_score`` grader
mapped to it brings that reward into the aggregate. It writes these
``reward_extra_info`` keys next to the reward loop's own (:mod:`openjudge.integrations.verl._keys`;
a grader name that would collide with one of them, or with the reward loop's, is refused
when the stage is built):

===========================  ==================================================
``openjudge/<grader>``       the member's score (group graders: in [0, 1])
``openjudge/<grader>/error`` 1.0 if it failed (the score is then neutral)
``openjudge/reward``         the reward the member trains on
``openjudge/group/failed``   1.0 if that reward is neutral or a fallback
``openjudge/group/size``     members judged together
===========================  ==================================================

:class:`FunctionGroupJudge` hands the whole group to a guide-style
:class:`~openjudge.integrations.verl.BaseOpenJudgeRewardFunction` as one ``prompt_to_samples``
group; its ``reward_info`` keys are written as they are.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Protocol

import anyio

from openjudge.config import ConfigError
from openjudge.graders.comparison import member_results
from openjudge.integrations._shared import FailureLog
from openjudge.integrations.scoring._guard import FailureRateExceeded, is_outage
from openjudge.integrations.scoring._keys import (
    GROUP_SIZE_KEY,
    error_key,
    name_problems,
    score_entries,
    score_key,
)
from openjudge.integrations.scoring._ledger import FailureLedger, Ledger
from openjudge.integrations.verl._functions import BaseOpenJudgeRewardFunction, ExtraValue, RewardResult
from openjudge.integrations.verl._settings import FailurePolicy
from openjudge.integrations.verl.group._settings import GroupSettings
from openjudge.integrations.verl.group._verdict import (
    GroupVerdict,
    MemberDropped,
    MemberReward,
    Outcome,
    settle,
)
from openjudge.integrations.verl.group.members import Member, group_sample, member_sample, reward_sample
from openjudge.results import GraderError, GraderMode, GraderResult, GraderScore, NotApplicable, RowResult
from openjudge.runner._grader_config import GraderConfig
from openjudge.runner.aggregators import AggregatorLike, WeightedMeanAggregator
from openjudge.runner.grading_runner import GradingRunner, RunnerResult

__all__ = ["FunctionGroupJudge", "GraderGroupJudge", "GroupJudge"]

logger = logging.getLogger(__name__)

DEFAULT_AGGREGATE = "mean"


class GroupJudge(Protocol):
    """Judges the members of one group that arrived (``expected``: the group's size)."""

    async def judge(self, members: Mapping[int, Member], expected: int) -> GroupVerdict: ...


class GraderGroupJudge:
    """Graders and an aggregator from a group YAML (see the module docstring).

    Args:
        runner: The YAML's runner.
        settings: The group options.
        source: Where the YAML came from (for messages).
        reward_loop_names: The names whose ``openjudge/<name>`` keys the reward loop
            writes (the graders and aggregate of ``reward.openjudge.config``), which the
            group graders must not reuse.

    Raises:
        ConfigError: No group grader, an unknown aggregate, or a grader name that would
            collide with another ``reward_extra_info`` key.
    """

    def __init__(
        self,
        runner: GradingRunner,
        settings: GroupSettings,
        *,
        source: str,
        reward_loop_names: Sequence[str] = (),
        grader_providers: Mapping[str, str] | None = None,
        ledger: FailureLedger | None = None,
    ) -> None:
        configs = dict(runner.grader_configs)
        group = {n: c for n, c in configs.items() if c.grader.mode is GraderMode.LISTWISE}
        single = {n: c for n, c in configs.items() if n not in group}
        problems: list[str] = []
        if not group:
            problems.append(
                f"{source}: graders: no group grader (listwise_ranking, group_tournament, knockout_tournament, "
                "anchor_comparison); pointwise graders belong in reward.openjudge.config"
            )
        aggregators = dict(runner.aggregators)
        if settings.aggregate is not None and settings.aggregate not in aggregators:
            known = ", ".join(aggregators) or "none"
            problems.append(
                f"reward.openjudge_group.aggregate: no aggregator named {settings.aggregate!r} "
                f"in {source} (aggregators: {known})"
            )
        problems += name_problems([(name, "grader") for name in configs], source=source)
        problems += [
            f"{source}: grader {name!r} writes {score_key(name)}, which the reward loop writes too (a grader "
            "or the aggregate of reward.openjudge.config): rename it in the group YAML"
            for name in configs
            if name in reward_loop_names
        ]
        if problems:
            raise ConfigError(problems)
        self.settings = settings
        self.grader_names = tuple(configs)
        self.aggregator: AggregatorLike = (
            aggregators[settings.aggregate or next(iter(aggregators))]
            if aggregators
            else WeightedMeanAggregator(DEFAULT_AGGREGATE)
        )
        timeout_s = settings.judge_timeout_s if settings.judge_timeout_s is not None else runner.timeout_s
        self.group_runner = self._runner(group, runner.max_concurrency, timeout_s)
        self.member_runner = self._runner(single, runner.max_concurrency, timeout_s) if single else None
        self._failures = FailureLog(logger)
        self.grader_providers = dict(grader_providers or {})
        self.providers = list(dict.fromkeys(self.grader_providers.values()))
        self.ledger: FailureLedger = ledger if ledger is not None else Ledger(FailurePolicy())

    @staticmethod
    def _runner(
        configs: Mapping[str, GraderConfig], concurrency: int, timeout_s: float | None
    ) -> GradingRunner:
        return GradingRunner(
            configs,
            max_concurrency=max(concurrency, len(configs)),
            show_progress=False,
            timeout_s=timeout_s,
            unrouted="not_applicable",  # each runner holds part of the graders
        )

    async def judge(self, members: Mapping[int, Member], expected: int) -> GroupVerdict:
        sessions = sorted(members)
        ordered = [members[s] for s in sessions]
        if expected == 1 and len(ordered) == 1 and self.settings.pointwise:
            return self._alone(sessions[0], ordered[0])
        # The run's breaker and failure rate (openjudge.integrations.verl._ledger), as for pointwise samples.
        problem, blocked = await self.ledger.admit(self.providers)
        if problem is not None:
            raise FailureRateExceeded(problem)
        if blocked is not None:
            reason = f"not called: the breaker of provider {blocked!r} is open"
            return settle(
                dict.fromkeys(sessions),
                {s: self._blocked_extra(m) for s, m in zip(sessions, ordered, strict=True)},
                self.settings,
                why=dict.fromkeys(sessions, reason),
            )
        group_out: list[RunnerResult] = []
        member_out: list[RunnerResult] = []

        async def run_group() -> None:
            group_out.append(await self.group_runner.arun([group_sample(ordered)]))

        async def run_members() -> None:
            if self.member_runner is not None:
                member_out.append(await self.member_runner.arun([member_sample(m) for m in ordered]))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run_group)
            tg.start_soon(run_members)
        per_grader: dict[str, list[RowResult]] = {
            name: [column[0]] * len(ordered)
            if isinstance(column[0], NotApplicable)  # routing: the group is not this grader's
            else list(member_results(column[0], len(ordered)))
            for name, column in group_out[0].items()
        }
        if member_out:
            per_grader.update({name: list(column) for name, column in member_out[0].items()})
        rewards: dict[int, float | None] = {}
        extras: dict[int, dict[str, ExtraValue]] = {}
        why: dict[int, str] = {}
        for k, (session, member) in enumerate(zip(sessions, ordered, strict=True)):
            results: dict[str, GraderResult] = {}
            extra = self._base_extra(member)
            for name in self.grader_names:
                result = per_grader[name][k]
                if not isinstance(result, GraderScore | GraderError | NotApplicable):  # a rank, not a score
                    result = GraderError(
                        name=name, kind="invalid_input", message="returned a rank, not a score"
                    )
                extra.update(score_entries(name, result))  # a failed score is replaced by the group's mean
                if isinstance(result, GraderError):
                    self._failures.record(result)
                if not isinstance(result, NotApplicable):  # the aggregate is over the graders that apply
                    results[name] = result
            extra[GROUP_SIZE_KEY] = float(len(ordered))
            aggregate = (
                self.aggregator(results)
                if results
                else GraderError(
                    name=str(getattr(self.aggregator, "name", DEFAULT_AGGREGATE)),
                    kind="invalid_input",
                    message="no group grader applies to this group",
                )
            )
            if isinstance(aggregate, GraderScore):
                rewards[session] = aggregate.score
            else:
                rewards[session] = None
                why[session] = aggregate.reason
            extras[session] = extra
        await self._record(per_grader, rewards)
        return settle(rewards, extras, self.settings, why=why)

    async def _record(
        self, per_grader: Mapping[str, list[RowResult]], rewards: Mapping[int, float | None]
    ) -> None:
        """One ledger entry per group judgement: outages by provider; failed when no member was scored."""
        outage = dict.fromkeys(self.providers, False)
        labels: list[str] = []
        for name, results in per_grader.items():
            provider = self.grader_providers.get(name)
            for result in results:
                if isinstance(result, GraderError):
                    if provider is not None and is_outage(result):
                        outage[provider] = True
                    labels.append(f"{provider or name}: {result.kind}")
        failed = all(r is None for r in rewards.values())
        problem = await self.ledger.record(outage, sorted(set(labels)) if failed else [])
        if problem is not None and failed:
            raise FailureRateExceeded(problem)

    def _blocked_extra(self, member: Member) -> dict[str, ExtraValue]:
        extra = self._base_extra(member)
        for name in self.grader_names:
            extra.update({score_key(name): 0.0, error_key(name): 1.0})
        extra[GROUP_SIZE_KEY] = 1.0
        return extra

    def _base_extra(self, member: Member) -> dict[str, ExtraValue]:
        extra: dict[str, ExtraValue] = dict(member.pointwise_extra or {})
        for name in self.grader_names:  # checked at start for our reward manager; this covers any other
            if score_key(name) in extra:
                raise ValueError(
                    f"group grader {name!r} writes {score_key(name)}, which the reward loop's reward_extra_info "
                    "already has: rename it in the group YAML"
                )
        return extra

    def _alone(self, session: int, member: Member) -> GroupVerdict:
        """A group of one (``val_kwargs.n=1``): nothing to compare; the reward loop's reward stands."""
        extra = self._base_extra(member)
        for name in self.grader_names:
            extra.update({score_key(name): 0.0, error_key(name): 0.0})  # nothing compared, nothing failed
        extra[GROUP_SIZE_KEY] = 1.0
        reward = member.pointwise if not member.pointwise_failed else None
        return settle(
            {session: reward}, {session: extra}, self.settings, why={session: "pointwise reward failed"}
        )


def _matched(results: list[RewardResult], n: int) -> list[RewardResult]:
    by_index = {r.original_index: r for r in results}
    if len(results) != n or sorted(by_index) != list(range(n)):
        raise ValueError(
            f"compute_batch_scores returned results for original_index {sorted(by_index)}; "
            f"expected one for each of 0..{n - 1}"
        )
    return [by_index[k] for k in range(n)]


class FunctionGroupJudge:
    """The flow of OpenJudge's VERL guide with real groups: one ``compute_batch_scores`` call per group.

    A failure (the function raises, or returns results that do not match the samples)
    drops the group's trajectories: the function's ``reward_info`` keys are unknown, so
    no fallback could keep ``reward_extra_info`` keys equal across samples.
    """

    def __init__(self, function: BaseOpenJudgeRewardFunction) -> None:
        self.function = function

    async def judge(self, members: Mapping[int, Member], expected: int) -> GroupVerdict:
        sessions = sorted(members)
        samples = [reward_sample(members[s], k) for k, s in enumerate(sessions)]
        late: Outcome = MemberDropped("it finished after its group was judged (wait_timeout_s)")
        try:
            results = _matched(
                await self.function.compute_batch_scores({samples[0].prompt: samples}), len(samples)
            )
        except Exception as exc:
            logger.warning(
                "openjudge: %s.compute_batch_scores failed for group %s: %s",
                type(self.function).__name__,
                samples[0].uid,
                exc,
            )
            dropped = MemberDropped(f"compute_batch_scores failed: {type(exc).__name__}: {exc}")
            return GroupVerdict(dict.fromkeys(sessions, dropped), late)
        outcomes: dict[int, Outcome] = {
            s: MemberReward(float(r.score), dict(r.reward_info))
            for s, r in zip(sessions, results, strict=True)
        }
        return GroupVerdict(outcomes, late)
