"""The group judgement: group graders from a YAML, or the seed guide's reward function.

:class:`GraderGroupJudge` runs the group graders of a graders YAML once per group
(concurrently), splits each into one score per member
(:func:`~openjudge.graders.comparison.member_results`), adds the member's ``pointwise``
reward from the reward loop, and combines them per member with the YAML's aggregator.
It writes these ``reward_extra_info`` keys next to the reward loop's own:

=================================  =============================================
``openjudge/<group grader>``       the member's score in [0, 1]
``openjudge/<group grader>/error`` 1.0 if it failed (the score is then neutral)
``openjudge/pointwise``            the reward loop's reward (``pointwise: true``)
``openjudge/pointwise/error``      1.0 if that reward was a fallback or missing
``openjudge/reward``               the reward the member trains on
``openjudge/group/failed``         1.0 if that reward is neutral or a fallback
``openjudge/group/size``           members judged together
=================================  =============================================

:class:`FunctionGroupJudge` hands the whole group to a seed-style
:class:`~integrations.verl.BaseOpenJudgeRewardFunction` as one ``prompt_to_samples``
group; its ``reward_info`` keys are written as they are.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Protocol

from integrations._shared import FailureLog
from integrations.verl.functions import BaseOpenJudgeRewardFunction, ExtraValue, RewardResult
from integrations.verl.group.members import Member, group_sample, reward_sample
from integrations.verl.group.settings import GroupSettings
from integrations.verl.group.verdict import GroupVerdict, MemberDropped, MemberReward, Outcome, settle
from openjudge.config import ConfigError
from openjudge.graders.base_grader import BaseGrader
from openjudge.graders.comparison import member_results
from openjudge.graders.schema import GraderError, GraderMode, GraderResult, GraderScore, ScoreRange
from openjudge.runner.aggregators import AggregatorLike, WeightedMeanAggregator
from openjudge.runner.grading_runner import GradingRunner

__all__ = ["POINTWISE", "FunctionGroupJudge", "GraderGroupJudge", "GroupJudge"]

logger = logging.getLogger(__name__)

POINTWISE = "pointwise"
"""The name under which aggregators see the reward loop's reward of each member."""

DEFAULT_AGGREGATE = "mean"
_PREFIX = "openjudge/"


class GroupJudge(Protocol):
    """Judges the members of one group that arrived (``expected``: the group's size)."""

    async def judge(self, members: Mapping[int, Member], expected: int) -> GroupVerdict: ...


def _pointwise_result(member: Member, score_range: ScoreRange | None) -> GraderResult:
    if member.pointwise is None:
        return GraderError(name=POINTWISE, kind="internal", message="the reward loop gave no reward")
    if member.pointwise_failed:
        return GraderError(
            name=POINTWISE, kind="provider_error", message="the reward loop's reward is a fallback"
        )
    if score_range is not None and not score_range.contains(member.pointwise):
        return GraderError(
            name=POINTWISE,
            kind="invalid_input",
            message=f"pointwise reward {member.pointwise:g} is outside pointwise_range "
            f"[{score_range.low:g}, {score_range.high:g}]",
        )
    return GraderScore(name=POINTWISE, score=member.pointwise, score_range=score_range)


class GraderGroupJudge:
    """Group graders and an aggregator from a graders YAML (see the module docstring).

    Args:
        runner: The YAML's runner (its graders must all be group graders).
        settings: The group options.
        source: Where the YAML came from (for messages).
        pointwise_range: The declared range of the reward loop's reward, so aggregators
            normalise it; ``None`` keeps it raw.

    Raises:
        ConfigError: A grader judges single responses, a grader is named ``pointwise``,
            or the aggregate is unknown.
    """

    def __init__(
        self,
        runner: GradingRunner,
        settings: GroupSettings,
        *,
        source: str,
        pointwise_range: ScoreRange | None = None,
    ) -> None:
        problems: list[str] = []
        for name, cfg in runner.grader_configs.items():
            grader: BaseGrader = cfg.grader
            if name == POINTWISE:
                problems.append(
                    f"{source}: graders.{name}: the name {POINTWISE!r} is the reward loop's reward"
                )
            elif grader.mode is not GraderMode.LISTWISE:
                problems.append(
                    f"{source}: graders.{name}: {type(grader).__name__} judges one response at a time; "
                    "put it in the pointwise config (reward.openjudge.config) and use its reward as 'pointwise'"
                )
        aggregators = dict(runner.aggregators)
        if settings.aggregate is not None and settings.aggregate not in aggregators:
            known = ", ".join(aggregators) or "none"
            problems.append(
                f"reward.openjudge_group.aggregate: no aggregator named {settings.aggregate!r} "
                f"in {source} (aggregators: {known})"
            )
        if problems:
            raise ConfigError(problems)
        self.settings = settings
        self.grader_names = tuple(runner.grader_configs)
        self.pointwise_range = pointwise_range
        self.aggregator: AggregatorLike = (
            aggregators[settings.aggregate or next(iter(aggregators))]
            if aggregators
            else WeightedMeanAggregator(DEFAULT_AGGREGATE)
        )
        self.runner = GradingRunner(
            runner.grader_configs,
            max_concurrency=max(runner.max_concurrency, len(runner.grader_configs)),
            show_progress=False,
            timeout=settings.judge_timeout_s if settings.judge_timeout_s is not None else runner.timeout,
        )
        self._failures = FailureLog(logger)

    async def judge(self, members: Mapping[int, Member], expected: int) -> GroupVerdict:
        sessions = sorted(members)
        ordered = [members[s] for s in sessions]
        use_pointwise = self.settings.pointwise
        if expected == 1 and len(ordered) == 1 and use_pointwise:
            return self._alone(sessions[0], ordered[0])
        columns = await self.runner.arun([group_sample(ordered)])
        per_grader = {name: member_results(column[0], len(ordered)) for name, column in columns.items()}
        rewards: dict[int, float | None] = {}
        extras: dict[int, dict[str, ExtraValue]] = {}
        why: dict[int, str] = {}
        for k, (session, member) in enumerate(zip(sessions, ordered, strict=True)):
            results: dict[str, GraderResult] = {name: column[k] for name, column in per_grader.items()}
            extra = self._base_extra(member)
            if use_pointwise:
                results[POINTWISE] = _pointwise_result(member, self.pointwise_range)
            for name, result in results.items():
                extra[f"{_PREFIX}{name}"] = result.score if isinstance(result, GraderScore) else None
                extra[f"{_PREFIX}{name}/error"] = 0.0 if isinstance(result, GraderScore) else 1.0
                if isinstance(result, GraderError) and name != POINTWISE:
                    self._failures.record(result)
            extra["openjudge/group/size"] = float(len(ordered))
            aggregate = self.aggregator(results)
            if isinstance(aggregate, GraderScore):
                rewards[session] = aggregate.score
            else:
                rewards[session] = None
                why[session] = aggregate.reason
            extras[session] = extra
        return settle(rewards, extras, self.settings, why=why)

    def _base_extra(self, member: Member) -> dict[str, ExtraValue]:
        extra: dict[str, ExtraValue] = dict(member.pointwise_extra or {})
        for name in self.grader_names:
            if f"{_PREFIX}{name}" in extra:
                raise ValueError(
                    f"group grader {name!r} writes {_PREFIX}{name}, which the reward loop's reward_extra_info "
                    "already has: rename the group grader"
                )
        return extra

    def _alone(self, session: int, member: Member) -> GroupVerdict:
        """A group of one (``val_kwargs.n=1``): nothing to compare; the pointwise reward stands."""
        extra = self._base_extra(member)
        for name in self.grader_names:
            extra[f"{_PREFIX}{name}"] = 0.0
            extra[f"{_PREFIX}{name}/error"] = 0.0
        extra[f"{_PREFIX}{POINTWISE}"] = member.pointwise
        extra[f"{_PREFIX}{POINTWISE}/error"] = 1.0 if member.pointwise_failed else 0.0
        extra["openjudge/group/size"] = 1.0
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
    """The seed guide's flow with real groups: one ``compute_batch_scores`` call per group.

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
