"""Pointwise graders are typed as returning a score or an error; listwise ones may rank.

``assert_type`` is checked by ``mypy --strict`` over the tests: code that handles the
error reads ``result.score`` as it is, as the README's first example does.
"""

from __future__ import annotations

from typing import assert_type

import pytest

from openjudge.graders import FunctionGrader, ListwiseRankingGrader, LLMGrader, TrajectoryComprehensiveGrader
from openjudge.graders.judge_grader import PreparedCall
from openjudge.results import GraderError, GraderMode, GraderRank, GraderScore
from openjudge.testing import FunctionChatModel

pytestmark = pytest.mark.anyio

VERDICT = '{"reason": "fine", "score": 4}'


async def test_an_llm_grader_returns_a_score_or_an_error() -> None:
    grader = LLMGrader(FunctionChatModel(lambda request: VERDICT), template="{answer}", score_range=(1, 5))
    result = await grader.aevaluate(answer="4")
    assert_type(result, GraderScore | GraderError)
    assert not isinstance(result, GraderError)
    assert (result.score, result.normalized_score) == (4.0, 0.75)  # no narrowing past the error


async def test_a_pointwise_function_grader_returns_a_score_or_an_error() -> None:
    grader = FunctionGrader(lambda response: len(response) / 10, name="length")
    assert_type(grader, FunctionGrader[GraderScore])
    result = await grader.aevaluate(response="abcd")
    assert_type(result, GraderScore | GraderError)
    assert not isinstance(result, GraderError) and result.score == 0.4


async def test_a_listwise_function_grader_may_rank() -> None:
    grader = FunctionGrader(
        lambda responses: GraderRank(name="order", rank=list(range(1, len(responses) + 1))),
        name="order",
        mode=GraderMode.LISTWISE,
    )
    assert_type(grader, FunctionGrader[GraderScore | GraderRank])
    result = await grader.aevaluate(responses=["a", "b"])
    assert_type(result, GraderScore | GraderRank | GraderError)
    assert isinstance(result, GraderRank) and result.rank == [1, 2]


async def test_a_ranking_from_a_pointwise_function_is_an_internal_error() -> None:
    untyped: object = lambda response: GraderRank(name="r", rank=[1, 2])  # noqa: E731  # as an untyped caller passes it
    grader = FunctionGrader(untyped, name="r")  # type: ignore[call-overload]  # what the types refuse
    result = await grader.aevaluate(response="x")
    assert isinstance(result, GraderError) and result.kind == "internal"
    assert "pass mode=GraderMode.LISTWISE" in result.message


class RanksAnyway(LLMGrader):
    """A subclass that goes around the types: its ranking is reported, never passed on."""

    def to_result(self, verdict: object, call: PreparedCall[None]) -> GraderRank:  # type: ignore[override]  # on purpose
        return GraderRank(name=self.name, rank=[1, 2])


async def test_a_ranking_from_a_pointwise_judge_is_an_internal_error() -> None:
    grader = RanksAnyway(FunctionChatModel(lambda request: VERDICT), name="ranks", template="{answer}")
    result = await grader.aevaluate(answer="4")
    assert isinstance(result, GraderError) and (result.kind, result.error_type) == ("internal", "TypeError")
    assert "RanksAnyway.to_result returned a GraderRank" in result.message


async def test_the_trajectory_judge_is_pointwise_too() -> None:
    grader = TrajectoryComprehensiveGrader(FunctionChatModel(lambda request: VERDICT))
    result = await grader.aevaluate(messages=[])
    assert_type(result, GraderScore | GraderError)
    assert isinstance(result, GraderError) and result.kind == "invalid_input"


async def test_a_listwise_judge_returns_a_rank_or_an_error() -> None:
    ranking = '{"reason": "R2 explains", "ranking": ["R2", "R1"]}'
    grader = ListwiseRankingGrader(FunctionChatModel(lambda request: ranking))
    result = await grader.aevaluate(query="Why is the sky blue?", responses=["Air.", "Rayleigh scattering."])
    assert_type(result, GraderRank | GraderError)
    assert not isinstance(result, GraderError) and result.rank == [2, 1]
