from __future__ import annotations

import pytest

from openjudge.graders.comparison import AnchorComparisonGrader, member_results
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import ChatRequest
from openjudge.results import GraderError, GraderRank, GraderScore
from tests.graders.comparison.judges import Recorder, always, by_quality, field

pytestmark = pytest.mark.anyio

QUALITY = {"anchor": 2.0, "worse": 1.0, "same": 2.0, "better": 3.0}


async def test_n_calls_with_the_anchor_shown_first() -> None:
    judge = Recorder(by_quality(QUALITY))
    grader = AnchorComparisonGrader(judge.model)
    result = await grader.aevaluate(query="q", responses=["worse", "same", "better"], anchor="anchor")
    assert isinstance(result, GraderRank)
    assert result.metadata["scores"] == [0.0, 0.5, 1.0] and result.metadata["scoring"] == "anchor"
    assert len(judge.requests) == 3
    assert {field(r, "response_a") for r in judge.requests} == {"anchor"}
    assert result.rank == [3, 2, 1]
    assert grader.input_spec().required == {"query", "responses", "anchor"}


async def test_both_orders_cancel_a_position_bias() -> None:
    judge = Recorder(always("A"))
    grader = AnchorComparisonGrader(judge.model, both_orders=True)
    result = await grader.aevaluate(query="q", responses=["worse", "better"], anchor="anchor")
    assert isinstance(result, GraderRank) and len(judge.requests) == 4
    assert result.metadata["scores"] == [0.5, 0.5]  # every pair flips: no information
    single = await AnchorComparisonGrader(Recorder(always("A")).model).aevaluate(
        query="q", responses=["worse", "better"], anchor="anchor"
    )
    assert isinstance(single, GraderRank) and single.metadata["scores"] == [
        0.0,
        0.0,
    ]  # the same shift for all


async def test_a_failed_call_fails_its_member_only() -> None:
    quality = by_quality(QUALITY)

    def decide(request: ChatRequest) -> str:
        if field(request, "response_b") == "same":
            raise ChatModelError("HTTP 400: too long", status_code=400)
        return quality(request)

    result = await AnchorComparisonGrader(Recorder(decide).model).aevaluate(
        query="q", responses=["worse", "same", "better"], anchor="anchor"
    )
    assert isinstance(result, GraderRank)
    members = member_results(result, 3)
    assert isinstance(members[0], GraderScore) and members[0].score == 0.0
    assert isinstance(members[1], GraderError) and members[1].kind == "provider_error"
    assert isinstance(members[2], GraderScore) and members[2].score == 1.0


async def test_missing_anchor_is_invalid_input() -> None:
    judge = Recorder(always("A"))
    result = await AnchorComparisonGrader(judge.model).aevaluate(query="q", responses=["a"], anchor=None)  # type: ignore[arg-type]
    assert isinstance(result, GraderError) and result.kind == "invalid_input" and "anchor" in result.message
    assert judge.requests == []
