"""One grader setup, two providers, one local server: switching providers changes no score.

The judge is named by one model string; only that line differs between the runs. The
litellm run uses its default aiohttp transport against a real socket (respx is not
involved here).
"""

from __future__ import annotations

import time

import pytest

from openjudge.graders.llm_grader import LLMGrader
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_client import ChatClient
from openjudge.models.chat_model import Sampling
from openjudge.models.policy import ProviderPolicy, RetryPolicy
from openjudge.providers._litellm import LiteLLMChatModel
from openjudge.providers._registry import resolve_model
from openjudge.providers.openai import OpenAIChatModel
from openjudge.results import GraderScore
from openjudge.runner.grading_runner import GradingRunner
from openjudge.testing.judge_server import DEFAULT_MODEL, JudgeServerProcess
from tests._fixtures.extras import need_litellm

pytestmark = [
    pytest.mark.anyio,
    # litellm builds a pydantic schema for one of its own TypedDicts on the first real call.
    pytest.mark.filterwarnings(
        "ignore:Item 'summary' on TypedDict class 'ChatCompletionReasoningItem':UserWarning"
    ),
]

DATASET = [
    {"id": i, "response": f"answer {i} #oj:score={score}"} for i, score in enumerate([5, 1, 4, 2, 3, 5])
]


def need_litellm_on_its_own_transport() -> None:
    """Skip without the litellm extra; litellm runs on its default (aiohttp) transport."""
    assert need_litellm().disable_aiohttp_transport is False


async def grade(judge: ChatClient) -> list[GraderScore]:
    grader = LLMGrader(judge, name="quality", template="Rate this answer: {response}", score_range=(1, 5))
    results = await GradingRunner({"quality": grader}, show_progress=False).arun(DATASET)
    scores = [r for r in results["quality"] if isinstance(r, GraderScore)]
    assert len(scores) == len(DATASET), results["quality"]
    return scores


@pytest.mark.parametrize(
    "judge_spec",
    [
        "openai:{model}@{url}",
        "litellm:hosted_vllm/{model}@{url}",  # the one line that changes
    ],
)
async def test_model_string_switch_keeps_scores(judge_server: JudgeServerProcess, judge_spec: str) -> None:
    if judge_spec.startswith("litellm:"):
        need_litellm_on_its_own_transport()
    judge = resolve_model(
        judge_spec.format(model=DEFAULT_MODEL, url=judge_server.base_url),
        api_key="x",
        sampling=Sampling(temperature=0.0, seed=0),
    )
    scores = await grade(judge)
    assert [s.score for s in scores] == [5.0, 1.0, 4.0, 2.0, 3.0, 5.0]
    assert judge_server.stats().chat_requests == len(DATASET)  # no retries, no re-asks


async def test_both_providers_give_identical_results(judge_server: JudgeServerProcess) -> None:
    need_litellm_on_its_own_transport()
    direct = OpenAIChatModel(
        DEFAULT_MODEL, api_key="x", base_url=judge_server.base_url, temperature=0.0, seed=0
    )
    routed = LiteLLMChatModel(
        f"hosted_vllm/{DEFAULT_MODEL}",
        base_url=judge_server.base_url,
        sampling=Sampling(temperature=0.0, seed=0),
    )
    first, second = await grade(direct), await grade(routed)
    assert [(s.score, s.reason, s.usage) for s in first] == [(s.score, s.reason, s.usage) for s in second]
    assert direct.usage == routed.usage and direct.usage.requests == len(DATASET)
    assert judge_server.stats().by_outcome["200"] == 2 * len(DATASET)


@pytest.mark.parametrize("judge_spec", ["openai:{model}@{url}", "litellm:hosted_vllm/{model}@{url}"])
async def test_a_hung_server_is_bounded_by_the_policy_timeout(
    judge_server: JudgeServerProcess, judge_spec: str
) -> None:
    if judge_spec.startswith("litellm:"):
        need_litellm_on_its_own_transport()
    judge = resolve_model(
        judge_spec.format(model=DEFAULT_MODEL, url=judge_server.base_url),
        api_key="x",
        policy=ProviderPolicy(timeout_s=0.3, retry=RetryPolicy(max_attempts=2)),
    )
    started = time.monotonic()
    with pytest.raises(ChatModelError) as info:
        await judge.achat([{"role": "user", "content": "#oj:hang"}])
    assert info.value.kind == "timeout" and info.value.requests == 2
    # Bounded by the policy (2 attempts x 0.3 s plus backoff), not the SDK's 600 s; loose for loaded CI.
    assert 0.6 <= time.monotonic() - started < 6.0
    assert judge_server.stats().by_outcome["hang"] == 2
