from __future__ import annotations

import json
import math

import pytest

from openjudge.graders.llm_grader import LLMGrader
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import ChatRequest, ChatResponse, ModelCapabilities, Sampling, TokenLogprob
from openjudge.providers.openai import OpenAIChatModel
from openjudge.results import GraderError, GraderScore, TokenUsage
from openjudge.testing.function_model import FunctionChatModel
from openjudge.testing.judge_server import JudgeServerProcess

pytestmark = pytest.mark.anyio

HOT = Sampling(temperature=0.8)


def with_logprobs(distribution: dict[str, float], written: str = "4") -> ChatResponse:
    head = '{"reason": "ok", "score": '
    top = tuple((token, math.log(p)) for token, p in distribution.items())
    tokens = (
        TokenLogprob(head, -0.01),
        TokenLogprob(written, math.log(distribution[written]), top),
        TokenLogprob("}", -0.01),
    )
    return ChatResponse(
        content=f"{head}{written}}}", usage=TokenUsage(10, 5, 1), finish_reason="stop", logprobs=tokens
    )


async def test_logprob_weighted_score() -> None:
    model = FunctionChatModel(lambda request: with_logprobs({"4": 0.6, "5": 0.3, "3": 0.1}))
    grader = LLMGrader(model, template="{response}", score_range=(1, 5), score_mode="logprobs")
    result = await grader.aevaluate(response="x")
    assert isinstance(result, GraderScore)
    assert result.score == pytest.approx(4.2)
    assert result.metadata["score_mode"] == "logprobs" and result.metadata["verdict_score"] == 4.0
    assert result.metadata["score_distribution"] == pytest.approx({"3": 0.1, "4": 0.6, "5": 0.3})


async def test_out_of_range_alternatives_are_ignored_and_thin_mass_falls_back() -> None:
    model = FunctionChatModel(lambda request: with_logprobs({"4": 0.5, "9": 0.3, "x": 0.1, "3": 0.1}))
    grader = LLMGrader(model, template="{response}", score_range=(1, 5), score_mode="logprobs")
    result = await grader.aevaluate(response="x")
    assert isinstance(result, GraderScore) and result.score == pytest.approx((4 * 0.5 + 3 * 0.1) / 0.6)

    thin = FunctionChatModel(lambda request: with_logprobs({"4": 0.3, "9": 0.7}))
    fallback = await LLMGrader(
        thin, template="{response}", score_range=(1, 5), score_mode="logprobs"
    ).aevaluate(response="x")
    assert isinstance(fallback, GraderScore) and fallback.score == 4.0
    assert fallback.metadata["score_mode"] == "verdict"


def test_logprob_mode_needs_an_integer_range_and_logprobs() -> None:
    model = FunctionChatModel(lambda request: "{}")
    with pytest.raises(ValueError, match="integer score_range"):
        LLMGrader(model, template="{x}", score_mode="logprobs")
    with pytest.raises(ValueError, match="integer score_range"):
        LLMGrader(model, template="{x}", score_range=(0, 0.5), score_mode="logprobs")
    blind = FunctionChatModel(lambda request: "{}", capabilities=ModelCapabilities(logprobs=False))
    with pytest.raises(ValueError, match="returns logprobs"):
        LLMGrader(blind, template="{x}", score_range=(1, 5), score_mode="logprobs")


async def test_logprob_mode_over_http(judge_server: JudgeServerProcess) -> None:
    judge = OpenAIChatModel("judge", api_key="k", base_url=judge_server.base_url, temperature=0.0)
    grader = LLMGrader(
        judge, template="{response}", score_range=(1, 5), score_mode="logprobs", top_logprobs=5
    )
    result = await grader.aevaluate(response="fine #oj:score=4")
    await judge.aclose()
    assert isinstance(result, GraderScore) and result.metadata["score_mode"] == "logprobs"
    distribution = result.metadata["score_distribution"]
    assert isinstance(distribution, dict) and set(distribution) == {"1", "2", "3", "4", "5"}
    weighted = sum(int(k) * float(v) for k, v in distribution.items() if isinstance(v, float))
    assert result.score == pytest.approx(weighted)
    assert 3.5 < result.score < 4.5 and result.score != 4.0


def voter(*scores: int | None) -> tuple[FunctionChatModel, list[ChatRequest]]:
    seen: list[ChatRequest] = []
    queue = list(scores)

    def reply(request: ChatRequest) -> str:
        seen.append(request)
        score = queue.pop(0)
        if score is None:
            raise ChatModelError("HTTP 400: nope", status_code=400)
        return json.dumps({"reason": f"said {score}", "score": score})

    return FunctionChatModel(reply), seen


async def test_vote_stops_once_the_majority_is_decided() -> None:
    model, seen = voter(4, 4, 4, 1, 1)
    result = await LLMGrader(
        model, template="{r}", score_range=(1, 5), score_mode="vote", votes=5, sampling=HOT
    ).aevaluate(r="x")
    assert isinstance(result, GraderScore) and result.score == 4.0
    assert len(seen) == 3  # three of five already agree
    assert result.metadata["votes"] == [4.0, 4.0, 4.0] and result.metadata["agreement"] == 1.0
    assert result.usage is not None and result.usage.requests == 3


async def test_vote_samples_more_while_undecided() -> None:
    model, seen = voter(4, 3, 4, 4, 5)
    result = await LLMGrader(
        model, template="{r}", score_range=(1, 5), score_mode="vote", votes=5, sampling=HOT
    ).aevaluate(r="x")
    assert isinstance(result, GraderScore) and result.score == 4.0
    assert len(seen) == 4
    votes = result.metadata["votes"]
    assert isinstance(votes, list) and sorted(float(v) for v in votes if isinstance(v, float)) == [
        3.0,
        4.0,
        4.0,
        4.0,
    ]


async def test_failed_votes_abstain_and_all_failed_is_an_error() -> None:
    model, seen = voter(None, 2, 2, None, 2)
    result = await LLMGrader(
        model, template="{r}", score_range=(1, 5), score_mode="vote", votes=5, sampling=HOT
    ).aevaluate(r="x")
    assert isinstance(result, GraderScore) and result.score == 2.0 and result.metadata["failed_votes"] == 2

    model, seen = voter(None, None, None)
    failed = await LLMGrader(model, template="{r}", score_mode="vote", votes=3, sampling=HOT).aevaluate(r="x")
    assert isinstance(failed, GraderError) and failed.kind == "provider_error"
    assert len(seen) == 3 and failed.usage is not None and failed.usage.requests == 3


def test_vote_needs_sampling() -> None:
    model, _ = voter()
    with pytest.raises(ValueError, match="temperature above 0"):
        LLMGrader(model, template="{r}", score_mode="vote", sampling=Sampling(temperature=0.0))
    with pytest.raises(ValueError, match="votes >= 2"):
        LLMGrader(model, template="{r}", score_mode="vote", votes=1, sampling=HOT)
