"""Prompt layout of the group graders: the shared question and rubric come first.

Every call of one group starts with the same text (system message, instructions,
criteria, query, reference), so a vLLM or SGLang judge serves it from its prefix cache
and only the responses are new tokens.
"""

from __future__ import annotations

import pytest

from openjudge.graders.comparison import (
    AnchorComparisonGrader,
    GroupTournamentGrader,
    KnockoutTournamentGrader,
    member_results,
)
from openjudge.models.chat_model import ChatRequest
from openjudge.results import GraderRank, GraderScore
from tests.graders.comparison.judges import Recorder, always

pytestmark = pytest.mark.anyio

QUERY = "Explain why the sky is blue to a child."
CRITERIA = "Prefer the answer a seven-year-old understands."
REFERENCE = "Sunlight scatters off air; blue scatters most."
RESPONSES = ["Because of Rayleigh scattering.", "Air bends blue light around.", "Blue bounces most."]


def text(request: ChatRequest) -> str:
    return "\n".join(f"{m['role']}: {m['content']}" for m in request.messages)


def shared_prefix(requests: list[ChatRequest]) -> str:
    texts = [text(r) for r in requests]
    length = 0
    while all(len(t) > length and t[length] == texts[0][length] for t in texts):
        length += 1
    return texts[0][:length]


@pytest.mark.parametrize(
    "make",
    [
        lambda model: GroupTournamentGrader(model, criteria=CRITERIA),
        lambda model: KnockoutTournamentGrader(model, criteria=CRITERIA),
    ],
)
async def test_pairwise_calls_of_a_group_share_instructions_query_and_reference(make: object) -> None:
    judge = Recorder(always("tie"))
    grader = make(judge.model)  # type: ignore[operator]  # a constructor from the parametrize list
    await grader.aevaluate(query=QUERY, responses=RESPONSES, reference=REFERENCE)
    prefix = shared_prefix(judge.requests)
    assert CRITERIA in prefix and QUERY in prefix and REFERENCE in prefix
    assert not any(r in prefix for r in RESPONSES)
    assert prefix.index(CRITERIA) < prefix.index(QUERY) < prefix.index(REFERENCE)


async def test_anchor_calls_share_the_anchor_too() -> None:
    judge = Recorder(always("B"))
    grader = AnchorComparisonGrader(judge.model, criteria=CRITERIA)
    result = await grader.aevaluate(query=QUERY, responses=RESPONSES, anchor="Magic.")
    prefix = shared_prefix(judge.requests)
    assert QUERY in prefix and "Magic." in prefix and not any(r in prefix for r in RESPONSES)
    assert isinstance(result, GraderRank) and result.metadata["scores"] == [1.0, 1.0, 1.0]


def test_member_results_refuses_a_result_that_is_not_a_group_result() -> None:
    plain = GraderScore(name="x", score=1.0)
    with pytest.raises(ValueError, match="not a group grader result for 2 responses"):
        member_results(plain, 2)
    rank = GraderRank(name="x", rank=[1, 2], metadata={"scores": [1.0, 0.0]})
    with pytest.raises(ValueError, match="for 3 responses"):
        member_results(rank, 3)
    [first, second] = member_results(rank, 2)
    assert isinstance(first, GraderScore) and first.normalized_score == 1.0
    assert isinstance(second, GraderScore) and second.score_range is not None and second.score == 0.0
