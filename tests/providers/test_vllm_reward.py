"""Reward-model scoring through vLLM's /classify and /pooling, HTTP mocked with respx."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import respx

from openjudge.graders.reward_model import RewardModelGrader
from openjudge.providers.vllm_reward import VLLMRewardModel
from openjudge.results import GraderError, GraderScore
from openjudge.runner.grading_runner import GradingRunner
from tests.providers._support import fast_policy

pytestmark = pytest.mark.anyio

ROOT = "http://rm.test:8000"
USAGE = {"prompt_tokens": 21, "total_tokens": 21, "completion_tokens": 0}


def classify_reply(*probs: float) -> dict[str, Any]:
    item = {"index": 0, "label": "LABEL_0", "probs": list(probs), "num_classes": len(probs)}
    return {
        "id": "classify-1",
        "object": "list",
        "created": 0,
        "model": "skywork-rm",
        "data": [item],
        "usage": USAGE,
    }


def pooling_reply(data: list[float] | list[list[float]]) -> dict[str, Any]:
    item = {"index": 0, "object": "pooling", "data": data}
    return {"id": "pool-1", "object": "list", "created": 0, "model": "prm", "data": [item], "usage": USAGE}


def client(**kwargs: Any) -> VLLMRewardModel:
    kwargs.setdefault("policy", fast_policy())
    kwargs.setdefault("http_client_factory", httpx.AsyncClient)  # respx intercepts httpx (not aiohttp)
    return VLLMRewardModel(f"{ROOT}/v1", "skywork-rm", **kwargs)


@respx.mock
async def test_classify_scores_the_conversation_with_the_raw_reward() -> None:
    route = respx.post(f"{ROOT}/classify").mock(return_value=httpx.Response(200, json=classify_reply(3.25)))
    grader = RewardModelGrader(client(), score_range=(-10, 10))
    result = await grader.aevaluate(response="Paris.", prompt="Capital of France?")
    assert isinstance(result, GraderScore)
    assert result.score == 3.25 and result.normalized_score == pytest.approx(0.6625)
    assert result.name == "reward_model" and result.metadata == {"raw_reward": 3.25, "model": "skywork-rm"}
    assert result.usage is not None and (result.usage.prompt_tokens, result.usage.requests) == (21, 1)
    assert json.loads(route.calls.last.request.content) == {
        "model": "skywork-rm",
        "messages": [
            {"role": "user", "content": "Capital of France?"},
            {"role": "assistant", "content": "Paris."},
        ],
        "use_activation": False,
    }


@respx.mock
async def test_inputs_shapes() -> None:
    route = respx.post(f"{ROOT}/classify").mock(return_value=httpx.Response(200, json=classify_reply(1.0)))
    grader = RewardModelGrader(client(use_activation=None))
    await grader.aevaluate(response="just text")
    assert json.loads(route.calls.last.request.content) == {"model": "skywork-rm", "input": "just text"}
    history = [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Hi"}]
    await grader.aevaluate(response="Hello!", messages=history)
    sent = json.loads(route.calls.last.request.content)["messages"]
    assert sent == [*history, {"role": "assistant", "content": "Hello!"}]
    both = await grader.aevaluate(response="x", prompt="p", messages=history)
    assert isinstance(both, GraderError) and both.kind == "invalid_input" and "not both" in both.message


@respx.mock
async def test_pooling_sequence_row_and_label_index() -> None:
    route = respx.post(f"{ROOT}/pooling").mock(
        return_value=httpx.Response(200, json=pooling_reply([0.25, 0.75]))
    )
    grader = RewardModelGrader(client(endpoint="pooling", label_index=1), name="rm")
    result = await grader.aevaluate(response="x", prompt="p")
    assert isinstance(result, GraderScore) and result.score == 0.75
    assert result.metadata["values"] == [0.25, 0.75]
    body = json.loads(route.calls.last.request.content)
    assert body["task"] == "classify" and body["use_activation"] is False


@pytest.mark.parametrize(("reduce", "expected"), [("last", 0.9), ("min", 0.2), ("mean", 0.5)])
@respx.mock
async def test_pooling_token_rewards_are_reduced(reduce: str, expected: float) -> None:
    rows = [[0.8, 0.2], [0.6, 0.4], [0.1, 0.9]]  # per token: [p(bad), p(good)]
    route = respx.post(f"{ROOT}/pooling").mock(return_value=httpx.Response(200, json=pooling_reply(rows)))
    rm = client(endpoint="pooling", task="token_classify", label_index=1, token_reduce=reduce)
    result = await RewardModelGrader(rm, score_range=(0, 1)).aevaluate(response="step 1\nstep 2")
    assert isinstance(result, GraderScore) and result.score == pytest.approx(expected)
    assert result.metadata["values"] == [0.2, 0.4, 0.9]
    assert json.loads(route.calls.last.request.content)["task"] == "token_classify"


@respx.mock
async def test_declared_range_is_enforced_or_clipped() -> None:
    respx.post(f"{ROOT}/classify").mock(return_value=httpx.Response(200, json=classify_reply(12.5)))
    failed = await RewardModelGrader(client(), score_range=(-10, 10)).aevaluate(response="x")
    assert isinstance(failed, GraderError) and failed.kind == "parse_error" and "12.5" in failed.message
    clipped = await RewardModelGrader(client(), score_range=(-10, 10), clip_to_range=True).aevaluate(
        response="x"
    )
    assert isinstance(clipped, GraderScore) and clipped.score == 10.0
    assert clipped.metadata["raw_reward"] == 12.5
    with pytest.raises(ValueError, match="needs a score_range"):
        RewardModelGrader(client(), clip_to_range=True)


@respx.mock
async def test_retries_and_final_errors() -> None:
    route = respx.post(f"{ROOT}/classify")
    route.side_effect = [
        httpx.Response(503, json={"object": "error", "message": "busy"}),
        httpx.ConnectError("refused"),
        httpx.Response(200, json=classify_reply(0.5)),
    ]
    rm = client()
    result = await RewardModelGrader(rm).aevaluate(response="x")
    assert isinstance(result, GraderScore) and result.score == 0.5
    assert route.call_count == 3 and rm.usage.requests == 3

    route.side_effect = None
    route.return_value = httpx.Response(
        400, json={"error": {"message": "This model does not support classify"}}
    )
    failed = await RewardModelGrader(client()).aevaluate(response="x")
    assert isinstance(failed, GraderError) and failed.kind == "provider_error"
    assert "HTTP 400" in failed.message and "does not support classify" in failed.message
    assert failed.usage is not None and failed.usage.requests == 1  # not retried


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ({"data": []}, "no finite scores"),
        (classify_reply(float("nan")), "no finite scores"),
        (classify_reply(0.1), "label_index=2"),
    ],
)
@respx.mock
async def test_unusable_replies_are_errors(reply: dict[str, Any], problem: str) -> None:
    respx.post(f"{ROOT}/classify").mock(return_value=httpx.Response(200, content=json.dumps(reply).encode()))
    result = await RewardModelGrader(client(label_index=2)).aevaluate(response="x")
    assert isinstance(result, GraderError) and problem in result.message


@respx.mock
async def test_runs_in_the_grading_runner() -> None:
    respx.post(f"{ROOT}/classify").mock(
        side_effect=lambda request: httpx.Response(
            200, json=classify_reply(float(len(json.loads(request.content)["messages"][1]["content"])))
        )
    )
    grader = RewardModelGrader(client(), name="rm")
    assert grader.input_spec().required == {"response"}
    assert grader.input_spec().optional == {"prompt", "messages"}
    runner = GradingRunner({"rm": grader}, show_progress=False)
    results = await runner.arun([{"prompt": "q", "response": "a" * n} for n in (1, 3, 2)])
    assert [r.score for r in results["rm"] if isinstance(r, GraderScore)] == [1.0, 3.0, 2.0]


def test_construction_checks() -> None:
    assert VLLMRewardModel("http://h:8000").server_url == "http://h:8000"
    with pytest.raises(ValueError, match="endpoint"):
        VLLMRewardModel("http://h:8000", endpoint="score")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="token_reduce"):
        VLLMRewardModel("http://h:8000", token_reduce="max")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="label_index"):
        VLLMRewardModel("http://h:8000", label_index=-1)
