"""A runner asked for more concurrency than a provider's *default* limit says so at start."""

from __future__ import annotations

import logging

import pytest

from openjudge.graders.llm_grader import LLMGrader
from openjudge.models.policy import ProviderLimits, ProviderPolicy
from openjudge.providers.openai import OpenAIChatModel
from openjudge.runner._concurrency import capped_providers
from openjudge.runner.grading_runner import GraderConfig, GradingRunner
from openjudge.testing.function_model import FunctionChatModel


def _runner(model: OpenAIChatModel | FunctionChatModel, concurrency: int) -> GradingRunner:
    grader = LLMGrader(model, name="q", template="Rate: {answer}", score_range=(1, 5))
    return GradingRunner({"q": GraderConfig(grader, {"answer": "answer"})}, max_concurrency=concurrency)


def test_a_default_limit_below_the_runner_is_named_with_its_fix(caplog: pytest.LogCaptureFixture) -> None:
    model = OpenAIChatModel("gpt-4o-mini", api_key="sk-test", base_url="http://127.0.0.1:9/v1")
    with caplog.at_level(logging.WARNING, logger="openjudge.runner.grading_runner"):
        _runner(model, 256)
    [record] = caplog.records
    assert record.getMessage() == (
        "GradingRunner(max_concurrency=256) over OpenAIChatModel('gpt-4o-mini'): the provider's default "
        "limit allows 64 calls in flight, so at most 64 of its judge calls run at once. To run 256, set "
        "the provider's limit: OpenAIChatModel(..., max_concurrency=256) or policy=ProviderPolicy("
        "limits=ProviderLimits(max_concurrency=256)); to keep 64, set it explicitly and this warning goes"
    )


@pytest.mark.parametrize(
    "model",
    [
        OpenAIChatModel("m", api_key="sk-test", base_url="http://127.0.0.1:9/v1", max_concurrency=256),
        OpenAIChatModel("m", api_key="sk-test", base_url="http://127.0.0.1:9/v1", max_concurrency=8),
        FunctionChatModel(lambda r: "{}", policy=ProviderPolicy(limits=ProviderLimits(max_concurrency=16))),
    ],
    ids=["lifted", "set-lower", "policy-set"],
)
def test_a_limit_the_user_set_is_respected_silently(
    model: OpenAIChatModel | FunctionChatModel, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="openjudge.runner.grading_runner"):
        _runner(model, 256)
    assert caplog.records == []


def test_a_runner_within_the_default_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    model = FunctionChatModel(lambda r: "{}")
    with caplog.at_level(logging.WARNING, logger="openjudge.runner.grading_runner"):
        runner = _runner(model, 64)
    assert caplog.records == []
    assert capped_providers([c.grader for c in runner.grader_configs.values()], 65) == [model]
