"""Through TRL's reward functions, a response that breaks a grader gets the bottom score:
never ``None`` (which TRL skips) and never the fallback (which is for system failures)."""

from __future__ import annotations

import pytest

from openjudge.graders.format import JsonMatchGrader
from openjudge.graders.llm_grader import LLMGrader
from openjudge.integrations.trl import OpenJudgeReward, OpenJudgeRewards
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import ChatRequest, ChatResponse
from openjudge.results import TokenUsage
from openjudge.runner.grading_runner import GraderConfig, GradingRunner
from openjudge.testing.function_model import FunctionChatModel

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("trl_drops_unscorable")]

DEEP = "[" * 600 + "]" * 600


def judge(request: ChatRequest) -> str | ChatResponse:
    text = str(request.messages[-1]["content"])
    if "FILTER" in text:
        return ChatResponse(content="", usage=TokenUsage(5, 0, 1), finish_reason="content_filter", model="f")
    if "DOWN" in text:
        raise ChatModelError("judge down", status_code=503, retryable=False)
    return '{"reason": "ok", "score": 5}'


def runner() -> GradingRunner:
    return GradingRunner(
        {
            "json": GraderConfig(
                JsonMatchGrader(strict_order=False), {"response": "response", "reference": "answer"}
            ),
            "judge": GraderConfig(
                LLMGrader(FunctionChatModel(judge), name="judge", template="A: {answer}", score_range=(1, 5)),
                {"answer": "response"},
            ),
        },
        show_progress=False,
    )


async def call(func: OpenJudgeReward, completions: list[str]) -> list[float | None]:
    n = len(completions)
    return await func(
        prompts=["list?"] * n,
        completions=completions,
        completion_ids=[[1]] * n,
        answer=["[1]"] * n,
        trainer_state=None,
    )


@pytest.mark.parametrize("fallback", [None, -1.0])
async def test_response_failures_are_the_bottom_score_never_none_nor_the_fallback(
    fallback: float | None,
) -> None:
    json_reward, judge_reward = OpenJudgeRewards(runner(), fallback_score=fallback).per_grader()
    assert await call(json_reward, ["[1]", DEEP, "[2]"]) == [1.0, 0.0, 0.0]
    # A refused judge call is the response's (bottom, normalised 0.0); a judge outage is the system's.
    assert await call(judge_reward, ["[1]", "[1] FILTER", "[1] DOWN"]) == [1.0, 0.0, fallback]
