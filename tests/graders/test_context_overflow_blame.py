"""Length past the judge's context window: the response's failure when the response made the prompt long.

The test judge server answers as vLLM does past its ``context_tokens`` (a 400 "This model's
maximum context length is ..."), through the real OpenAI-compatible transport. The rule:
if the grader scores a short benign response with these dataset fields, no response length
turns the sample into an error; only a prompt too long without the response is one
(``invalid_input``: the template and dataset fields do not fit the judge).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openjudge.errors import ChatModelError, ContextOverflow
from openjudge.graders.agent.trajectory.trajectory_comprehensive import TrajectoryComprehensiveGrader
from openjudge.graders.blame import SHORT_RESPONSE_TOKENS, overflow_failure
from openjudge.graders.common._correctness import CorrectnessGrader
from openjudge.graders.comparison import AnchorComparisonGrader, PairwisePreferenceGrader
from openjudge.graders.comparison._group import member_results
from openjudge.graders.comparison._listwise import ListwiseRankingGrader
from openjudge.graders.llm_grader import LLMGrader
from openjudge.graders.openai import from_openai_grader
from openjudge.graders.reward_model import RewardModelGrader
from openjudge.models.chat_model import ChatRequest
from openjudge.models.reward_model import Reward
from openjudge.providers.openai import OpenAIChatModel
from openjudge.results import (
    GraderError,
    GraderRank,
    GraderResult,
    GraderScore,
    TokenUsage,
    is_response_failure,
)
from openjudge.testing.function_model import FunctionChatModel
from openjudge.testing.judge_server import JudgeServer

pytestmark = pytest.mark.anyio

WINDOW = 3000
LONG = "pad " * 10_000  # about 10,000 tokens as the server counts them


@pytest.fixture
async def judge() -> AsyncIterator[OpenAIChatModel]:
    async with JudgeServer(context_tokens=WINDOW) as server:
        model = OpenAIChatModel(model="judge", base_url=server.base_url, api_key="x")
        yield model
        await model.aclose()


def bottom(result: GraderResult, low: float) -> None:
    assert isinstance(result, GraderScore), result
    assert is_response_failure(result) and result.metadata["cause"] == "response_too_long", result
    assert result.score == low


def too_long_for_the_dataset(result: GraderResult) -> None:
    assert isinstance(result, GraderError) and result.kind == "invalid_input", result
    assert "too long for the judge even without" in result.message


async def test_a_pointwise_judge_blames_the_long_response_and_not_a_long_dataset_field(
    judge: OpenAIChatModel,
) -> None:
    grader = CorrectnessGrader(judge)
    fits = await grader.aevaluate(query="2 + 2?", response="4", reference="4")
    assert isinstance(fits, GraderScore) and not is_response_failure(fits)
    bottom(await grader.aevaluate(query="2 + 2?", response=LONG, reference="4"), 1.0)
    too_long_for_the_dataset(await grader.aevaluate(query=LONG, response="4", reference="4"))


async def test_a_trajectory_judge_blames_what_the_agent_wrote(judge: OpenAIChatModel) -> None:
    call = {"id": "1", "type": "function", "function": {"name": "search", "arguments": LONG}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Find it."},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "1", "content": "found"},
    ]
    bottom(await TrajectoryComprehensiveGrader(judge).aevaluate(messages=messages), 0.0)


async def test_an_openai_score_model_blames_the_sample_not_the_item(judge: OpenAIChatModel) -> None:
    spec = {
        "type": "score_model",
        "name": "s",
        "model": "gpt-4o",
        "range": [0, 1],
        "input": [
            {"role": "user", "content": "Reference: {{ item.answer }}\nAnswer: {{ sample.output_text }}"}
        ],
    }
    grader = from_openai_grader(spec, model=judge)
    bottom(await grader.aevaluate(response=LONG, answer="4"), 0.0)
    too_long_for_the_dataset(await grader.aevaluate(response="4", answer=LONG))


async def test_in_a_comparison_the_long_response_forfeits(judge: OpenAIChatModel) -> None:
    pairwise = PairwisePreferenceGrader(judge)
    a_long = await pairwise.aevaluate(query="q", response_a=LONG, response_b="4")
    b_long = await pairwise.aevaluate(query="q", response_a="4", response_b=LONG)
    assert isinstance(a_long, GraderScore) and isinstance(b_long, GraderScore)
    assert (a_long.score, b_long.score) == (0.0, 1.0)
    assert "too long for the judge" in a_long.reason
    anchored = await AnchorComparisonGrader(judge).aevaluate(query="q", responses=["4", LONG], anchor="4")
    assert isinstance(anchored, GraderRank) and anchored.metadata["scores"][1] == 0.0  # type: ignore[index]
    # The anchor is the dataset's: a long anchor never makes a response win.
    long_anchor = await AnchorComparisonGrader(judge).aevaluate(query="q", responses=["4"], anchor=LONG)
    too_long_for_the_dataset(long_anchor)


async def test_a_listwise_group_ranks_the_others_and_scores_the_long_one_zero() -> None:
    def rank_all(request: ChatRequest) -> str:
        text = str(request.messages[1]["content"])
        if len(text) // 4 > WINDOW:
            raise ChatModelError(
                "HTTP 400: too long",
                status_code=400,
                context_overflow=ContextOverflow(WINDOW, len(text) // 4, 0),
            )
        return json.dumps({"reason": "in order", "ranking": re.findall(r'<candidate id="(R\d+)">', text)})

    grader = ListwiseRankingGrader(FunctionChatModel(rank_all))
    result = await grader.aevaluate(query="q", responses=["4", LONG, "four"])
    assert isinstance(result, GraderRank)
    assert result.metadata["scores"] == [1.0, 0.0, 0.0] and result.metadata["too_long"] == [1]
    members = member_results(result, 3)
    assert [is_response_failure(m) for m in members] == [False, True, False]


class _WindowedRewardModel:
    """A reward model with a window of ``WINDOW`` tokens (4 characters each)."""

    model_name = "windowed"

    async def ascore(
        self, response: str, *, prompt: str | None = None, messages: Sequence[Mapping[str, Any]] | None = None
    ) -> Reward:
        tokens = (len(response) + len(prompt or "")) // 4
        if tokens > WINDOW:
            raise ChatModelError(
                "HTTP 400", status_code=400, context_overflow=ContextOverflow(WINDOW, tokens, None)
            )
        return Reward(0.5, (0.5,), "windowed", TokenUsage(tokens, 0, 1), 0.0)


async def test_a_reward_model_blames_the_long_response_and_not_a_long_prompt() -> None:
    grader = RewardModelGrader(_WindowedRewardModel(), score_range=(0, 1))
    assert getattr(await grader.aevaluate(response="4", prompt="2 + 2?"), "score", None) == 0.5
    bottom(await grader.aevaluate(response=LONG, prompt="2 + 2?"), 0.0)
    long_prompt = await grader.aevaluate(response="4", prompt=LONG)
    assert isinstance(long_prompt, GraderError) and long_prompt.kind == "invalid_input"


@settings(max_examples=40, deadline=None)
@given(
    field_chars=st.integers(0, 16_000),
    response_chars=st.one_of(st.integers(0, 200), st.integers(200, 60_000)),
)
def test_no_response_length_turns_a_sample_that_fits_into_an_error(
    field_chars: int, response_chars: int
) -> None:
    """If a short benign response is scored with these fields, no response length is an error.

    "Short" is :data:`SHORT_RESPONSE_TOKENS` (the room the rule leaves for a response), plus a
    few tokens for the server's rounding: a config that leaves less room than that for the
    response is the config's failure, whatever the response.
    """
    short = "b" * (4 * (SHORT_RESPONSE_TOKENS + 8))

    async def grade() -> tuple[GraderResult, GraderResult]:
        async with JudgeServer(context_tokens=WINDOW) as server:
            model = OpenAIChatModel(model="judge", base_url=server.base_url, api_key="x")
            grader = LLMGrader(model, template="Context: {context}\nAnswer: {answer}", score_range=(1, 5))
            context = "c" * field_chars
            try:
                benign = await grader.aevaluate(context=context, answer=short)
                hostile = await grader.aevaluate(context=context, answer="a" * response_chars)
            finally:
                await model.aclose()
            return benign, hostile

    benign, hostile = anyio.run(grade)
    if isinstance(benign, GraderScore):
        assert isinstance(hostile, GraderScore), hostile
        if is_response_failure(hostile):  # too long, or empty (a degenerate response)
            assert hostile.metadata["cause"] in ("response_too_long", "degenerate_response"), hostile
            assert hostile.score == 1.0
    else:  # the fields alone are too long for this judge: the config's failure, whatever the response
        assert isinstance(benign, GraderError) and benign.kind == "invalid_input", benign


@given(
    rest_chars=st.integers(0, 100_000),
    response_chars=st.integers(0, 100_000),
    chars_per_token=st.floats(1.0, 6.0),
    limit=st.integers(500, 50_000),
    completion=st.integers(0, 2_000),
)
def test_the_response_is_blamed_exactly_when_the_rest_and_a_short_response_fit(
    rest_chars: int, response_chars: int, chars_per_token: float, limit: int, completion: int
) -> None:
    prompt_chars = rest_chars + response_chars
    prompt_tokens = max(1, round(prompt_chars / chars_per_token))
    overflow = ContextOverflow(limit, prompt_tokens, completion)
    failure = overflow_failure(overflow, prompt_chars=prompt_chars, rest_chars=rest_chars)
    rest_tokens = rest_chars * prompt_tokens / prompt_chars if prompt_chars else 0.0
    fits_without = rest_tokens + SHORT_RESPONSE_TOKENS + completion <= limit
    assert (failure is not None) == (response_chars > 0 and fits_without)
