"""The public surface: what `openjudge` and its documented subpackages export, pinned."""

from __future__ import annotations

import importlib

import pytest

import openjudge
from openjudge.graders.registry import BUILTIN_GRADERS

PUBLIC = {
    "openjudge": [
        "BaseGrader",
        "ChatMessage",
        "ErrorKind",
        "FunctionGrader",
        "GateAggregator",
        "GraderConfig",
        "GraderError",
        "GraderMode",
        "GraderRank",
        "GraderResult",
        "GraderScore",
        "GradingRunner",
        "InvalidInputError",
        "LLMGrader",
        "MinAggregator",
        "OpenAIChatModel",
        "PromptTemplate",
        "ResponseFailure",
        "ScoreRange",
        "TokenUsage",
        "WeightedMeanAggregator",
        "__version__",
    ],
    "openjudge.runner": [
        "Aggregator",
        "GateAggregator",
        "GraderConfig",
        "GradingRunner",
        "MinAggregator",
        "WeightedMeanAggregator",
    ],
    "openjudge.providers": [
        "AzureChatModel",
        "LiteLLMChatModel",
        "OpenAIChatModel",
        "RewardModelClient",
        "TransformersChatModel",
        "TransformersRewardModel",
        "VLLMChatModel",
        "resolve_model",
    ],
    "openjudge.testing": ["FunctionChatModel"],
    "openjudge.models": [
        "ChatClient",
        "ChatMessage",
        "ChatModel",
        "ChatRequest",
        "ChatResponse",
        "LanguageEnum",
        "PromptTemplate",
        "ProviderLimits",
        "ProviderPolicy",
        "RetryPolicy",
        "Reward",
        "RewardModel",
        "Sampling",
    ],
}


@pytest.mark.parametrize("package", sorted(PUBLIC))
def test_all_is_pinned_and_every_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    assert sorted(module.__all__) == sorted(PUBLIC[package])
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"


def test_every_builtin_grader_class_is_importable_from_openjudge_graders() -> None:
    graders = importlib.import_module("openjudge.graders")
    classes = {entry.target.partition(":")[2]: entry.load() for entry in BUILTIN_GRADERS.values()}
    extra = {"BaseGrader", "FunctionGrader", "grader_boundary", "from_openai_grader"}
    assert set(classes) | extra == set(graders.__all__)
    for name, cls in classes.items():
        assert getattr(graders, name) is cls


def test_the_top_level_names_are_the_ones_the_seed_paths_give() -> None:
    from openjudge.graders.base_grader import BaseGrader, GraderScore
    from openjudge.models.openai_chat_model import OpenAIChatModel
    from openjudge.runner.grading_runner import GraderConfig, GradingRunner

    assert openjudge.BaseGrader is BaseGrader
    assert openjudge.GraderScore is GraderScore
    assert openjudge.OpenAIChatModel is OpenAIChatModel
    assert (openjudge.GradingRunner, openjudge.GraderConfig) == (GradingRunner, GraderConfig)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        _ = openjudge.Nope
