from __future__ import annotations

import pytest

from openjudge.graders.comparison import GroupTournamentGrader, member_results
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import ChatRequest
from openjudge.results import GraderError, GraderMode, GraderRank, GraderScore
from tests.graders.comparison.judges import Recorder, always, by_quality, field, verdict

pytestmark = pytest.mark.anyio

GROUP = ["w", "x", "y", "z"]


async def run(recorder: Recorder, responses: list[str], **kwargs: object) -> GraderRank | GraderError:
    grader = GroupTournamentGrader(recorder.model, **kwargs)  # type: ignore[arg-type]
    return await grader.aevaluate(query="q", responses=responses)


async def test_one_response_is_invalid_input_without_calls() -> None:
    judge = Recorder(always("A"))
    result = await run(judge, ["alone"])
    assert isinstance(result, GraderError) and result.kind == "invalid_input"
    assert "at least 2 responses" in result.message and judge.requests == []


async def test_two_responses() -> None:
    judge = Recorder(by_quality({"good": 2, "bad": 1}))
    result = await run(judge, ["bad", "good"])
    assert isinstance(result, GraderRank)
    assert result.rank == [2, 1]
    assert result.metadata["rewards"] == [-1.0, 1.0]
    assert (result.metadata["wins"], result.metadata["losses"]) == ([0, 1], [1, 0])
    assert result.metadata["flip_rate"] == 0.0 and result.metadata["matches"] == [[0, 1, 1]]
    assert len(judge.requests) == 2 and result.usage is not None and result.usage.requests == 2


async def test_position_biased_judge_gives_every_response_zero() -> None:
    judge = Recorder(always("A"))
    result = await run(judge, GROUP)
    assert isinstance(result, GraderRank)
    assert result.metadata["rewards"] == [0.0, 0.0, 0.0, 0.0]
    assert result.metadata["wins"] == [0, 0, 0, 0] and result.metadata["losses"] == [0, 0, 0, 0]
    assert (result.metadata["flips"], result.metadata["flip_rate"]) == (6, 1.0)
    assert result.rank == [1, 2, 3, 4]  # equal rewards: ranked by position
    assert len(judge.requests) == 12


async def test_consistent_judge_gives_exact_rewards() -> None:
    judge = Recorder(by_quality({"w": 1, "x": 3, "y": 2, "z": 4}))
    result = await run(judge, GROUP)
    assert isinstance(result, GraderRank)
    assert result.metadata["rewards"] == [-1.0, 1 / 3, -1 / 3, 1.0]
    assert result.metadata["wins"] == [0, 2, 1, 3] and result.metadata["losses"] == [3, 1, 2, 0]
    assert result.metadata["flip_rate"] == 0.0
    assert result.rank == [4, 2, 3, 1]
    assert result.metadata["matches"] == [[0, 1, 1], [0, 2, 2], [0, 3, 3], [1, 2, 1], [1, 3, 3], [2, 3, 3]]


async def test_ties_count_as_neither_win_nor_loss() -> None:
    judge = Recorder(by_quality({"w": 3, "x": 1, "y": 3, "z": 2}))
    result = await run(judge, GROUP)
    assert isinstance(result, GraderRank)
    assert result.metadata["rewards"] == [2 / 3, -1.0, 2 / 3, -1 / 3]
    assert result.rank == [1, 4, 2, 3]
    matches = result.metadata["matches"]
    assert isinstance(matches, list) and matches[1] == [0, 2, None]


async def test_one_inconsistent_pair_counts_neither() -> None:
    # The judge is consistent except that it always says "A" when w meets x.
    quality = by_quality({"w": 1, "x": 3, "y": 2, "z": 4})

    def decide(request: ChatRequest) -> str:
        if {field(request, "response_a"), field(request, "response_b")} == {"w", "x"}:
            return verdict("A")
        return quality(request)

    result = await run(Recorder(decide), GROUP)
    assert isinstance(result, GraderRank)
    assert result.metadata["rewards"] == [-2 / 3, 0.0, -1 / 3, 1.0]
    assert (result.metadata["flips"], result.metadata["flip_rate"]) == (1, 1 / 6)


async def test_twelve_calls_for_four_responses_run_concurrently() -> None:
    judge = Recorder(by_quality({"w": 1, "x": 3, "y": 2, "z": 4}), delay_s=0.03)
    result = await run(judge, GROUP)
    assert isinstance(result, GraderRank)
    assert len(judge.requests) == 12 and result.usage is not None and result.usage.requests == 12
    shown = sorted((field(r, "response_a"), field(r, "response_b")) for r in judge.requests)
    assert shown == sorted((a, b) for a in GROUP for b in GROUP if a != b)  # every ordered pair once
    assert judge.peak > 1
    assert result.latency_s is not None and result.latency_s < 12 * 0.03


async def test_max_concurrency_bounds_calls_in_flight() -> None:
    judge = Recorder(always("tie"), delay_s=0.02)
    result = await run(judge, GROUP, max_concurrency=3)
    assert isinstance(result, GraderRank) and judge.peak == 3 and len(judge.requests) == 12
    with pytest.raises(ValueError, match="max_concurrency must be >= 1"):
        GroupTournamentGrader(judge.model, max_concurrency=0)


async def test_a_failed_call_fails_only_the_two_members_of_its_pair() -> None:
    quality = by_quality({"w": 1, "x": 3, "y": 2, "z": 4})

    def decide(request: ChatRequest) -> str:
        if (field(request, "response_a"), field(request, "response_b")) == ("z", "y"):
            raise ChatModelError("HTTP 400: context too long", status_code=400)
        return quality(request)

    result = await run(Recorder(decide), GROUP)
    assert isinstance(result, GraderRank)
    # w and x met everyone (y and z included): exact Borda scores; y and z have no score.
    assert result.metadata["scores"] == [0.0, 2 / 3, None, None]
    assert result.metadata["rewards"] == [-1.0, 1 / 3, None, None]
    assert result.metadata["failed_pairs"] == [[2, 3]]
    errors = result.metadata["member_errors"]
    assert isinstance(errors, list) and errors[:2] == [None, None]
    assert errors[2] == {"kind": "provider_error", "message": "vs response 3: HTTP 400: context too long"}
    assert result.rank == [2, 1, 3, 4]  # failed members last
    assert result.usage is not None and result.usage.requests == 12
    members = member_results(result, 4)
    assert [m.score if isinstance(m, GraderScore) else m.kind for m in members] == [
        0.0,
        2 / 3,
        "provider_error",
        "provider_error",
    ]


async def test_every_call_failing_fails_the_group_with_the_usage_of_every_call() -> None:
    def decide(request: ChatRequest) -> str:
        raise ChatModelError("HTTP 503: judge down", status_code=503)

    result = await run(Recorder(decide), GROUP)
    assert isinstance(result, GraderError) and result.kind == "provider_error"
    assert "no response of the group could be scored" in result.message and "judge down" in result.message
    assert result.usage is not None and result.usage.requests == 12
    assert member_results(result, 4) == [result] * 4


async def test_scores_by_borda_and_bradley_terry() -> None:
    judge = Recorder(by_quality({"w": 1, "x": 3, "y": 2, "z": 4}))
    borda = await run(judge, GROUP)
    bt = await run(judge, GROUP, scoring="bradley_terry")
    assert isinstance(borda, GraderRank) and isinstance(bt, GraderRank)
    assert borda.metadata["scores"] == [0.0, 2 / 3, 1 / 3, 1.0]
    assert borda.metadata["scoring"] == "borda" and bt.metadata["scoring"] == "bradley_terry"
    scores = bt.metadata["scores"]
    assert isinstance(scores, list) and all(isinstance(s, float) and 0 < s < 1 for s in scores)
    assert bt.rank == borda.rank == [4, 2, 3, 1]
    with pytest.raises(ValueError, match="scoring must be one of borda, bradley_terry"):
        GroupTournamentGrader(judge.model, scoring="elo")  # type: ignore[arg-type]


async def test_reference_and_declared_inputs() -> None:
    judge = Recorder(always("tie"))
    grader = GroupTournamentGrader(judge.model)
    assert grader.mode is GraderMode.LISTWISE
    spec = grader.input_spec()
    assert spec.required == {"query", "responses"} and spec.optional == {"reference"}
    result = await grader.aevaluate(query="q", responses=["a", "b"], reference="42")
    assert isinstance(result, GraderRank)
    assert [field(r, "reference") for r in judge.requests] == ["42", "42"]
