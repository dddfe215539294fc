"""Through TRL's reward functions, a response that breaks a grader gets the bottom score:
never ``None`` (which TRL skips) and never the fallback (which is for system failures)."""

from __future__ import annotations

import pytest

from openjudge.graders.agent.tool._tool_call_precision_recall_match import ToolCallPrecisionRecallMatchGrader
from openjudge.graders.format import JsonMatchGrader
from openjudge.graders.llm_grader import LLMGrader
from openjudge.graders.openai import from_openai_grader
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


def deep_arguments(depth: int) -> dict[str, object]:
    value: dict[str, object] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


async def test_a_600_deep_tool_call_is_one_bottom_score_not_an_exception_out_of_the_batch() -> None:
    python = {"type": "python", "name": "py", "source": "def grade(sample, item):\n    return 1.0\n"}
    graders = GradingRunner(
        {
            "tools": GraderConfig(
                ToolCallPrecisionRecallMatchGrader(match_arguments=True),
                {"reference_tool_calls": "reference", "messages": "messages"},
            ),
            "python": GraderConfig(from_openai_grader(python)),
        },
        show_progress=False,
    )
    deep_call = {"id": "1", "type": "function", "function": {"name": "f", "arguments": deep_arguments(600)}}
    completions: list[list[dict[str, object]]] = [
        [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{**deep_call, "function": {"name": "f", "arguments": {}}}],
            }
        ],
        [{"role": "assistant", "content": "", "tool_calls": [deep_call]}],
    ]
    tools, python_reward = OpenJudgeRewards(graders).per_grader()
    reference = [["f"], ["f"]]
    assert await tools(["q", "q"], completions, reference=reference) == [1.0, 0.0]  # too_deep: the bottom
    # The item is the dataset row, not the completion: the deep call is no dataset fault.
    assert await python_reward(["q", "q"], completions, reference=reference) == [1.0, 1.0]
