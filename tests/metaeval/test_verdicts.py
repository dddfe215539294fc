"""Reading grader results as verdicts, and telling pair graders from single ones."""

from __future__ import annotations

import math
from typing import Any

import pytest

from openjudge.graders.comparison import GroupTournamentGrader, PairwisePreferenceGrader
from openjudge.graders.llm_grader import LLMGrader
from openjudge.graders.text.string_match import StringMatchGrader
from openjudge.metaeval._verdicts import NONE, TIE, A, B, grader_kind, read_pair, read_single
from openjudge.results import GraderError, GraderRank, GraderScore, ScoreRange
from openjudge.runner._grader_config import GraderConfig
from openjudge.testing.function_model import FunctionChatModel

UNIT = ScoreRange(low=0, high=1)


def model() -> FunctionChatModel:
    return FunctionChatModel(lambda request: "{}")


def test_kinds_from_inputs_and_mappers() -> None:
    assert grader_kind("p", GraderConfig(PairwisePreferenceGrader(model()))) == "pair"
    assert grader_kind("t", GraderConfig(GroupTournamentGrader(model()))) == "pair"  # reads `responses`
    template = LLMGrader(model(), template="{query}: {response_a} or {response_b}?", score_range=(0, 1))
    assert grader_kind("l", GraderConfig(template)) == "pair"
    single = LLMGrader(model(), template="Rate {response}", score_range=(1, 5))
    assert grader_kind("s", GraderConfig(single)) == "single"
    rule = StringMatchGrader()
    assert (
        grader_kind("m", GraderConfig(rule, {"response": "response_a.text", "reference": "reference"}))
        == "pair"
    )
    assert (
        grader_kind("m", GraderConfig(rule, {"response": "response", "reference": "reference"})) == "single"
    )


def test_a_function_mapper_needs_an_explicit_kind() -> None:
    def mapper(sample: Any) -> dict[str, Any]:
        return {"response": sample["response"]}

    with pytest.raises(ValueError, match=r"kinds=\{'f': 'pair'\}"):
        grader_kind("f", GraderConfig(StringMatchGrader(), mapper))


def test_pair_readings() -> None:
    winner = read_pair(GraderScore(name="j", score=0.0, metadata={"winner": "B"}, score_range=UNIT))
    assert (winner.verdict, winner.first_preference) == (B, 0.0)
    ranged = read_pair(GraderScore(name="j", score=7.0, score_range=ScoreRange(low=0, high=10)))
    assert (ranged.verdict, ranged.first_preference) == (A, 0.7)
    assert read_pair(GraderScore(name="j", score=5.0, score_range=ScoreRange(low=0, high=10))).verdict == TIE
    tied = read_pair(GraderRank(name="t", rank=[1, 2], metadata={"rewards": [0.0, 0.0]}))
    assert tied.verdict == TIE  # the tournament ranks a tie by position; its rewards say tie
    assert read_pair(GraderRank(name="l", rank=[2, 1])).verdict == B
    failed = read_pair(GraderError(name="j", kind="timeout", message="slow"))
    assert (failed.verdict, failed.failure, failed.message) == (NONE, "timeout", "slow")
    unranged = read_pair(GraderScore(name="j", score=1.0))
    assert unranged.verdict == NONE and unranged.failure == "no_verdict" and "score_range" in unranged.message


def test_inner_orders_of_a_debiased_grader() -> None:
    result = GraderScore(
        name="p",
        score=0.5,
        score_range=UNIT,
        metadata={
            "winner": "tie",
            "flip": True,
            "verdicts": [{"order": "A,B", "raw_winner": "A"}, {"order": "B,A", "raw_winner": "A"}],
        },
    )
    reading = read_pair(result)
    assert (reading.verdict, reading.judge_flip, reading.judge_first_wins, reading.judge_decisive) == (
        TIE,
        1.0,
        2,
        2,
    )
    assert math.isnan(read_pair(GraderScore(name="j", score=1.0, score_range=UNIT)).judge_flip)


def test_single_readings() -> None:
    lower_better = ScoreRange(low=1, high=5, higher_is_better=False)
    reading = read_single(GraderScore(name="s", score=2.0, score_range=lower_better))
    assert (reading.score, reading.oriented) == (2.0, 0.75)
    assert read_single(GraderScore(name="s", score=3.5)).oriented == 3.5
    assert read_single(GraderRank(name="r", rank=[1, 2])).failure == "no_verdict"
    failed = read_single(GraderError(name="s", kind="parse_error", message="bad"))
    assert failed.failure == "parse_error" and math.isnan(failed.score)


@pytest.mark.anyio
async def test_kinds_are_settled_before_any_judge_is_called() -> None:
    from openjudge.metaeval._items import PairItem, PairwiseSet
    from openjudge.metaeval._runs import collect

    calls: list[object] = []

    def reply(request: object) -> str:
        calls.append(request)
        return '{"reason": "r", "score": 3}'

    def mapper(sample: Any) -> dict[str, Any]:
        return {"response": sample["response"]}

    rated = LLMGrader(FunctionChatModel(reply), name="rated", template="{response}", score_range=(1, 5))
    item = PairItem(id="1", line=1, prompt="q", response_a="a", response_b="b", label="A")
    graders = {"rated": GraderConfig(rated), "custom": GraderConfig(StringMatchGrader(), mapper)}
    with pytest.raises(ValueError, match="function mapper"):
        await collect(graders, PairwiseSet((item,)))
    assert calls == []
    with pytest.raises(ValueError, match="kinds names no grader 'nope'"):
        await collect(graders, PairwiseSet((item,)), kinds={"nope": "pair"})
    run = await collect(graders, PairwiseSet((item,)), kinds={"custom": "single"})
    assert [g.kind for g in run.graders] == ["single", "single"] and len(calls) == 2
