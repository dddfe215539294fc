"""The group judgement and its failure policy, without VERL's runtime."""

from __future__ import annotations

import asyncio

import pytest

from openjudge.config import ConfigError
from openjudge.graders.common._relevance import RelevanceGrader
from openjudge.graders.comparison import GroupTournamentGrader, ListwiseRankingGrader
from openjudge.graders.provided_score import ProvidedScoreGrader
from openjudge.integrations.verl import BaseOpenJudgeRewardFunction, RewardResult, RewardSample
from openjudge.integrations.verl.group import GroupSettings
from openjudge.integrations.verl.group._verdict import GroupVerdict, MemberDropped, MemberReward, neutralise
from openjudge.integrations.verl.group.judges import FunctionGroupJudge, GraderGroupJudge
from openjudge.runner.aggregators import WeightedMeanAggregator
from openjudge.runner.grading_runner import GraderConfig, GradingRunner
from openjudge.testing.function_model import FunctionChatModel
from tests.integrations.verl.group.scripted import listwise_judge, member

MAPPER = {"query": "query", "responses": "responses"}


def grader_judge(settings: GroupSettings, *, model: FunctionChatModel | None = None) -> GraderGroupJudge:
    judge_model = model if model is not None else listwise_judge()[0]
    runner = GradingRunner(
        {
            "rank": GraderConfig(ListwiseRankingGrader(judge_model), MAPPER),
            "pointwise": GraderConfig(ProvidedScoreGrader(score_range=(0, 1)), {"score": "pointwise"}),
        },
        aggregators=[WeightedMeanAggregator("reward", {"pointwise": 1.0, "rank": 1.0})],
    )
    return GraderGroupJudge(runner, settings, source="group.yaml")


def rewards(verdict: GroupVerdict) -> dict[int, float | str]:
    return {k: o.reward if isinstance(o, MemberReward) else "dropped" for k, o in verdict.outcomes.items()}


def test_listwise_group_gets_borda_plus_pointwise_and_float_keys() -> None:
    model, seen = listwise_judge()
    judge = grader_judge(GroupSettings(), model=model)
    members = {k: member(k, f"answer q{q}") for k, q in enumerate([3, 9, 1, 5])}
    verdict = asyncio.run(judge.judge(members, 4))
    borda = {0: 1 / 3, 1: 1.0, 2: 0.0, 3: 2 / 3}
    assert rewards(verdict) == {k: (1.0 + b) / 2 for k, b in borda.items()}
    assert len(seen) == 1  # one call for the whole group
    extra = verdict.outcomes[1].extra  # type: ignore[union-attr]  # a MemberReward, checked above
    assert extra["openjudge/rank"] == 1.0 and extra["openjudge/rank/error"] == 0.0
    assert (
        extra["openjudge/pointwise"] == 1.0 and extra["openjudge/reward"] == 1.0
    )  # the provided_score grader
    assert extra["openjudge/group/failed"] == 0.0 and extra["openjudge/group/size"] == 4.0
    assert extra["openjudge/correct"] == 1.0  # the reward loop's keys pass through
    keys = [set(o.extra) for o in verdict.outcomes.values() if isinstance(o, MemberReward)]
    assert all(k == keys[0] for k in keys)
    assert all(isinstance(v, float) for o in verdict.outcomes.values() for v in o.extra.values())  # type: ignore[union-attr]


def test_failed_member_is_neutral_zero_advantage_and_flagged() -> None:
    judge = grader_judge(GroupSettings())
    members = {k: member(k, f"answer q{q}") for k, q in enumerate([3, 9, 1])}
    members[3] = member(3, "answer q5", pointwise=0.0, failed=True)  # the reward loop's fallback
    verdict = asyncio.run(judge.judge(members, 4))
    scored = [verdict.outcomes[k].reward for k in range(3)]  # type: ignore[union-attr]
    failed = verdict.outcomes[3]
    assert isinstance(failed, MemberReward)
    assert failed.reward == pytest.approx(sum(scored) / 3)  # the others' mean: zero GRPO advantage
    assert failed.extra["openjudge/group/failed"] == 1.0 and failed.extra["openjudge/pointwise/error"] == 1.0
    assert failed.extra["openjudge/correct"] == 1.0  # a failed per-key value becomes the others' mean
    all_rewards = [o.reward for o in verdict.outcomes.values()]  # type: ignore[union-attr]
    mean = sum(all_rewards) / 4
    assert failed.reward - mean == pytest.approx(0.0)


def test_failed_member_can_be_dropped() -> None:
    judge = grader_judge(GroupSettings(on_member_failure="drop"))
    members = {0: member(0, "q1"), 1: member(1, "q2", failed=True)}
    verdict = asyncio.run(judge.judge(members, 2))
    assert isinstance(verdict.outcomes[1], MemberDropped) and isinstance(verdict.outcomes[0], MemberReward)
    assert isinstance(verdict.late, MemberDropped)


def test_judge_down_follows_on_failure() -> None:
    def down(request: object) -> str:
        raise ConnectionError("judge unreachable")

    members = {k: member(k, f"q{k}") for k in range(3)}
    fallback = grader_judge(
        GroupSettings(on_failure="fallback", fallback_score=-1.0), model=FunctionChatModel(down)
    )
    verdict = asyncio.run(fallback.judge(members, 3))
    assert rewards(verdict) == {0: -1.0, 1: -1.0, 2: -1.0}
    assert all(o.extra["openjudge/group/failed"] == 1.0 for o in verdict.outcomes.values())  # type: ignore[union-attr]
    assert all(o.extra["openjudge/rank/error"] == 1.0 for o in verdict.outcomes.values())  # type: ignore[union-attr]
    dropped = grader_judge(GroupSettings(), model=FunctionChatModel(down))  # default on_failure: drop
    verdict = asyncio.run(dropped.judge(members, 3))
    assert rewards(verdict) == {0: "dropped", 1: "dropped", 2: "dropped"}
    outcome = verdict.outcomes[0]
    assert isinstance(outcome, MemberDropped) and "on_failure=drop" in outcome.message


def test_group_of_one_keeps_the_pointwise_reward_without_a_call() -> None:
    model, seen = listwise_judge()
    judge = grader_judge(GroupSettings(), model=model)
    verdict = asyncio.run(judge.judge({0: member(0, "q1", pointwise=0.7)}, 1))
    outcome = verdict.outcomes[0]
    assert isinstance(outcome, MemberReward) and outcome.reward == 0.7 and seen == []
    assert outcome.extra["openjudge/group/size"] == 1.0 and outcome.extra["openjudge/rank"] == 0.0


def test_all_pairs_with_a_failing_pair_neutralises_only_those_members() -> None:
    def decide(request: object) -> str:
        text = str(request.messages[-1]["content"])  # type: ignore[attr-defined]
        if "q1" in text and "q2" in text:
            raise ConnectionError("reset")
        a = text.split("<response_a>\n", 1)[1].split("\n</response_a>", 1)[0]
        b = text.split("<response_b>\n", 1)[1].split("\n</response_b>", 1)[0]
        return '{"reason": "r", "winner": "%s"}' % ("A" if a > b else "B")

    runner = GradingRunner({"pairs": GraderConfig(GroupTournamentGrader(FunctionChatModel(decide)), MAPPER)})
    judge = GraderGroupJudge(runner, GroupSettings(pointwise=False), source="group.yaml")
    members = {k: member(k, f"q{k}") for k in range(4)}
    verdict = asyncio.run(judge.judge(members, 4))
    r = rewards(verdict)
    assert r[0] == 0.0 and r[3] == 1.0  # complete records: Borda exact
    assert r[1] == r[2] == pytest.approx(0.5)  # the failed pair's members: the others' mean
    assert verdict.outcomes[1].extra["openjudge/pairs/error"] == 1.0  # type: ignore[union-attr]


def test_config_mistakes_are_reported() -> None:
    model = listwise_judge()[0]
    pointwise_only = GradingRunner({"relevance": RelevanceGrader(model)})
    with pytest.raises(ConfigError) as caught:
        GraderGroupJudge(pointwise_only, GroupSettings(aggregate="nope"), source="g.yaml")
    text = str(caught.value)
    assert "g.yaml: graders: no group grader" in text
    assert "no aggregator named 'nope' in g.yaml" in text
    clash = GradingRunner({"correct": GraderConfig(ListwiseRankingGrader(model), MAPPER)})
    with pytest.raises(
        ConfigError, match=r"g\.yaml: grader 'correct' writes openjudge/correct, which the reward"
    ):
        GraderGroupJudge(clash, GroupSettings(), source="g.yaml", reward_loop_names=("correct", "mean"))
    judge = GraderGroupJudge(clash, GroupSettings(), source="g.yaml")  # another reward manager's keys
    with pytest.raises(ValueError, match="group grader 'correct' writes openjudge/correct"):
        asyncio.run(judge.judge({0: member(0, "a"), 1: member(1, "b")}, 2))
    reserved = GradingRunner({"reward": GraderConfig(ListwiseRankingGrader(model), MAPPER)})
    with pytest.raises(
        ConfigError, match=r"g\.yaml: grader 'reward' would write openjudge/reward.*rename it"
    ):
        GraderGroupJudge(reserved, GroupSettings(), source="g.yaml")


def test_neutralise_makes_floats_and_means() -> None:
    out = neutralise(
        [
            {"a": 1, "a/error": 0, "kind": ""},
            {"a": None, "a/error": 1, "kind": "timeout"},
            {"a": 3, "a/error": 0, "kind": ""},
        ]
    )
    assert out == [
        {"a": 1.0, "a/error": 0.0, "kind": ""},
        {"a": 2.0, "a/error": 1.0, "kind": "timeout"},
        {"a": 3.0, "a/error": 0.0, "kind": ""},
    ]
    assert neutralise([{"a": None, "a/error": 1}]) == [{"a": 0.0, "a/error": 1.0}]


class ByLength(BaseOpenJudgeRewardFunction):
    def __init__(self) -> None:
        self.groups: list[list[int]] = []

    async def compute_batch_scores(
        self, prompt_to_samples: dict[str, list[RewardSample]]
    ) -> list[RewardResult]:
        [(_prompt, samples)] = prompt_to_samples.items()
        self.groups.append([s.original_index for s in samples])
        longest = max(len(s.response) for s in samples)
        return [
            RewardResult(
                s.original_index, s.group_index, len(s.response) / longest, {"size": float(len(samples))}
            )
            for s in samples
        ]


def test_guide_function_gets_the_whole_group() -> None:
    function = ByLength()
    members = {k: member(k, "x" * (k + 1)) for k in (0, 2, 3)}  # session 1 failed to generate
    verdict = asyncio.run(FunctionGroupJudge(function).judge(members, 4))
    assert function.groups == [[0, 1, 2]]
    assert rewards(verdict) == {0: 0.25, 2: 0.75, 3: 1.0}
    assert verdict.outcomes[3].extra == {"size": 3.0}  # type: ignore[union-attr]


def test_guide_function_failure_drops_the_group() -> None:
    class Broken(ByLength):
        async def compute_batch_scores(
            self, prompt_to_samples: dict[str, list[RewardSample]]
        ) -> list[RewardResult]:
            return []

    verdict = asyncio.run(FunctionGroupJudge(Broken()).judge({0: member(0, "a")}, 1))
    outcome = verdict.outcomes[0]
    assert isinstance(outcome, MemberDropped) and "expected one for each of 0..0" in outcome.message
