from __future__ import annotations

import pytest

from openjudge.graders.comparison import KnockoutTournamentGrader, member_results
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import ChatRequest
from openjudge.results import GraderError, GraderMode, GraderRank, GraderScore
from tests.graders.comparison.judges import Recorder, always, by_quality, field

pytestmark = pytest.mark.anyio

QUALITY = {f"r{k}": float(q) for k, q in enumerate([3, 7, 1, 8, 5, 2, 6, 4])}
GROUP = list(QUALITY)


async def run(recorder: Recorder, responses: list[str], **kwargs: object) -> GraderRank | GraderError:
    grader = KnockoutTournamentGrader(recorder.model, **kwargs)  # type: ignore[arg-type]
    return await grader.aevaluate(query="q", responses=responses)


async def test_eight_responses_take_seven_calls_in_three_rounds() -> None:
    judge = Recorder(by_quality(QUALITY))
    result = await run(judge, GROUP)
    assert isinstance(result, GraderRank)
    assert len(judge.requests) == 7 and result.usage is not None and result.usage.requests == 7
    assert result.metadata["rounds"] == 3
    # r3 (8) wins; r1 (7) and r6 (6) reach round 2 or the final; first-round losers score 0.
    assert result.metadata["matches"] == [
        [1, 0, 1, 1],
        [1, 2, 3, 3],
        [1, 4, 5, 4],
        [1, 6, 7, 6],
        [2, 1, 3, 3],
        [2, 4, 6, 6],
        [3, 3, 6, 3],
    ]
    assert result.metadata["survived"] == [0, 1, 0, 3, 1, 0, 2, 0]
    assert result.metadata["scores"] == [0.0, 1 / 3, 0.0, 1.0, 1 / 3, 0.0, 2 / 3, 0.0]
    assert result.rank[3] == 1 and result.rank[6] == 2
    assert GraderMode.LISTWISE is KnockoutTournamentGrader(judge.model).mode


async def test_shown_order_alternates_between_matches() -> None:
    judge = Recorder(by_quality(QUALITY))
    await run(judge, GROUP[:4])
    shown = [(field(r, "response_a"), field(r, "response_b")) for r in judge.requests[:2]]
    assert sorted(shown) == [("r0", "r1"), ("r3", "r2")]  # round 1: the earlier shown first, then the later


async def test_odd_group_gets_byes_and_ties_send_the_earlier_response_on() -> None:
    judge = Recorder(always("tie"))
    result = await run(judge, ["a", "b", "c", "d", "e"])
    assert isinstance(result, GraderRank)
    assert result.metadata["rounds"] == 3 and len(judge.requests) == 4
    # Round 1: (a, b) -> a, (c, d) -> c, e has a bye; round 2: (a, c) -> a, e bye; final (a, e) -> a.
    assert result.metadata["survived"] == [3, 0, 1, 0, 2]
    assert result.metadata["scores"] == [1.0, 0.0, 1 / 3, 0.0, 2 / 3]


async def test_both_orders_doubles_the_calls_and_cancels_a_position_bias() -> None:
    judge = Recorder(always("A"))  # always prefers whatever is shown first
    result = await run(judge, GROUP[:4], both_orders=True)
    assert isinstance(result, GraderRank) and len(judge.requests) == 6
    matches = result.metadata["matches"]
    assert isinstance(matches, list) and all(m[3] == m[1] for m in matches)  # type: ignore[index]  # flips: earlier goes on


async def test_a_failed_match_fails_both_members_and_gives_a_bye() -> None:
    quality = by_quality(QUALITY)

    def decide(request: ChatRequest) -> str:
        if {field(request, "response_a"), field(request, "response_b")} == {"r2", "r3"}:
            raise ChatModelError("HTTP 400: context too long", status_code=400)
        return quality(request)

    result = await run(Recorder(decide), GROUP[:4])
    assert isinstance(result, GraderRank)
    assert result.metadata["scores"] == [0.0, 1.0, None, None]
    kinds = [m.score if isinstance(m, GraderScore) else m.kind for m in member_results(result, 4)]
    assert kinds == [0.0, 1.0, "provider_error", "provider_error"]


async def test_bradley_terry_scoring() -> None:
    judge = Recorder(by_quality(QUALITY))
    result = await run(judge, GROUP, scoring="bradley_terry")
    assert isinstance(result, GraderRank) and result.metadata["scoring"] == "bradley_terry"
    scores = result.metadata["scores"]
    assert isinstance(scores, list) and all(isinstance(s, float) for s in scores)
    assert max(range(8), key=lambda k: float(scores[k])) == 3  # type: ignore[arg-type]  # floats, checked


async def test_all_matches_failing_is_a_group_error() -> None:
    def down(request: ChatRequest) -> str:
        raise ChatModelError("HTTP 503", status_code=503)

    result = await run(Recorder(down), GROUP[:4])
    assert isinstance(result, GraderError) and result.kind == "provider_error"
