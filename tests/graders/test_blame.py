"""The response pays for its own failures; the system's failures stay errors.

Every rule grader (outside code/ and math/, which have their own suites) is fed what a
policy can write to break it; each result must be a score, and a failure the response
caused must be the bottom of the range with ``metadata["blame"] == "response"``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from openjudge.graders._registry import BUILTIN_GRADERS
from openjudge.graders.agent.action.action_loop import ActionLoopDetectionGrader
from openjudge.graders.agent.observation.observation_information_gain import ObservationInformationGainGrader
from openjudge.graders.agent.tool._tool_call_precision_recall_match import ToolCallPrecisionRecallMatchGrader
from openjudge.graders.agent.tool._tool_call_step_sequence_match import ToolCallStepSequenceMatchGrader
from openjudge.graders.agent.trajectory._trajectory_step_efficiency import TrajectoryStepEfficiencyGrader
from openjudge.graders.agent.trajectory.trajectory_comprehensive import TrajectoryComprehensiveGrader
from openjudge.graders.base_grader import BaseGrader
from openjudge.graders.blame import nesting_depth, set_response_failure_score
from openjudge.graders.common._correctness import CorrectnessGrader
from openjudge.graders.comparison import PairwiseJudge, PairwisePreferenceGrader
from openjudge.graders.comparison.prompts import pairwise_template
from openjudge.graders.format import (
    JsonMatchGrader,
    JsonSchemaGrader,
    JsonValidatorGrader,
    LengthPenaltyGrader,
    NgramRepetitionPenaltyGrader,
    ReasoningFormatGrader,
)
from openjudge.graders.llm_grader import LLMGrader
from openjudge.graders.openai._grader import from_openai_grader
from openjudge.graders.text import NumberAccuracyGrader, SimilarityGrader, StringMatchGrader
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import ChatRequest, ChatResponse
from openjudge.models.schema.prompt_template import LanguageEnum
from openjudge.results import GraderError, GraderResult, GraderScore, TokenUsage, is_response_failure
from openjudge.testing.function_model import FunctionChatModel

pytestmark = pytest.mark.anyio

SURROGATE = "answer \ud800 here"
DEEP_ARRAY = "[" * 600 + "]" * 600


def deep_object(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def deep_args_text(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


def bottom(result: GraderResult, cause: str) -> float:
    """The score, after checking it is a response failure with ``cause`` at the bottom of the range."""
    assert isinstance(result, GraderScore), result
    assert is_response_failure(result), result
    assert result.metadata["cause"] == cause, result
    assert result.score_range is not None
    low = result.score_range.low if result.score_range.higher_is_better else result.score_range.high
    assert result.score == low
    return result.score


# ---------------------------------------------------------------------------------------------
# Attacks found by adversarial testing
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("strict_order", [False, True])
async def test_json_match_on_a_600_deep_array_is_the_responses_failure(strict_order: bool) -> None:
    result = await JsonMatchGrader(strict_order=strict_order).aevaluate(
        response=DEEP_ARRAY, reference="[[1]]"
    )
    assert bottom(result, "too_deep") == 0.0


async def test_json_match_a_deep_reference_is_invalid_input_not_the_responses() -> None:
    reference = "[" * 300 + "]" * 300
    result = await JsonMatchGrader(strict_order=False).aevaluate(response="[]", reference=reference)
    assert isinstance(result, GraderError) and result.kind == "invalid_input"
    assert "reference" in result.message


async def test_json_match_keeps_matching_deep_but_legitimate_values() -> None:
    value = json.dumps(deep_object(60))
    result = await JsonMatchGrader(strict_order=False).aevaluate(response=value, reference=value)
    assert isinstance(result, GraderScore) and result.score == 1.0 and not is_response_failure(result)


@pytest.mark.parametrize("shape", ["text", "dict", "messages"])
async def test_tool_calls_with_400_deep_arguments_are_the_responses_failure(shape: str) -> None:
    arguments: object = deep_args_text(400) if shape != "dict" else deep_object(400)
    call = {"function": {"name": "search", "arguments": arguments}}
    grader = ToolCallPrecisionRecallMatchGrader(match_arguments=True)
    reference = [{"name": "search", "arguments": {"q": "x"}}]
    if shape == "messages":
        messages: list[dict[str, object]] = [
            {"role": "user", "content": "q"},
            {"role": "assistant", "tool_calls": [call]},
        ]
        result = await grader.aevaluate(reference_tool_calls=reference, messages=messages)
    else:
        result = await grader.aevaluate(reference_tool_calls=reference, tool_calls=[call])
    assert bottom(result, "too_deep") == 0.0
    sequence = await ToolCallStepSequenceMatchGrader().aevaluate(
        reference_tool_calls=reference, tool_calls=[call]
    )
    assert bottom(sequence, "too_deep") == 0.0


async def test_tool_calls_deep_reference_arguments_are_invalid_input() -> None:
    reference = [{"name": "search", "arguments": deep_object(400)}]
    result = await ToolCallPrecisionRecallMatchGrader().aevaluate(
        reference_tool_calls=reference, tool_calls=["search"]
    )
    assert isinstance(result, GraderError) and result.kind == "invalid_input"


async def test_tool_call_metadata_stays_bounded() -> None:
    call = {"name": "search", "arguments": {"q": "x" * 100_000}}
    result = await ToolCallPrecisionRecallMatchGrader(match_arguments=True).aevaluate(
        reference_tool_calls=[call], tool_calls=[call]
    )
    assert isinstance(result, GraderScore) and result.score == 1.0
    assert len(json.dumps(result.metadata)) < 12_000


def _judge(reply: Callable[[ChatRequest], str | ChatResponse], seen: list[ChatRequest]) -> FunctionChatModel:
    def record(request: ChatRequest) -> str | ChatResponse:
        seen.append(request)
        return reply(request)

    return FunctionChatModel(record)


async def test_a_lone_surrogate_in_the_response_is_the_responses_failure_without_a_call() -> None:
    seen: list[ChatRequest] = []
    grader = CorrectnessGrader(_judge(lambda r: '{"reason": "x", "score": 5}', seen))
    result = await grader.aevaluate(query="2 + 2?", response=SURROGATE, reference="4")
    assert bottom(result, "lone_surrogate") == 1.0
    assert seen == []
    custom = LLMGrader(
        _judge(lambda r: '{"reason": "x", "score": 5}', seen),
        template="Q {q} A {answer}",
        score_range=(0, 10),
    )
    assert bottom(await custom.aevaluate(q="q", answer=SURROGATE), "lone_surrogate") == 0.0


async def test_a_lone_surrogate_in_a_dataset_field_stays_invalid_input() -> None:
    seen: list[ChatRequest] = []
    grader = CorrectnessGrader(_judge(lambda r: '{"reason": "x", "score": 5}', seen))
    result = await grader.aevaluate(query="2 + 2?", response="4", reference=SURROGATE)
    assert isinstance(result, GraderError) and result.kind == "invalid_input"
    assert seen == []


async def test_a_lone_surrogate_in_an_assistant_message_is_the_responses_failure() -> None:
    seen: list[ChatRequest] = []
    messages: list[dict[str, object]] = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": SURROGATE,
            "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}],
        },
    ]
    grader = TrajectoryComprehensiveGrader(_judge(lambda r: "{}", seen))
    assert bottom(await grader.aevaluate(messages=messages), "lone_surrogate") == 0.0
    assert seen == []


async def test_comparison_graders_judge_a_damaged_response_as_shown() -> None:
    seen: list[ChatRequest] = []
    judge = _judge(lambda r: '{"reason": "the other is intact", "winner": "tie"}', seen)
    result = await PairwisePreferenceGrader(judge).aevaluate(query="q", response_a=SURROGATE, response_b="4")
    assert isinstance(result, GraderScore)
    user = str(seen[0].messages[-1]["content"])
    assert "answer \ufffd here" in user


def _filtered(request: ChatRequest) -> ChatResponse:
    return ChatResponse(content="", usage=TokenUsage(10, 0, 1), finish_reason="content_filter", model="f")


async def test_a_pointwise_judge_refusal_is_the_responses_failure() -> None:
    seen: list[ChatRequest] = []
    result = await CorrectnessGrader(_judge(_filtered, seen)).aevaluate(
        query="q", response="r", reference="4"
    )
    assert bottom(result, "judge_refused") == 1.0
    assert result.usage is not None and result.usage.requests == 1

    def refuse(request: ChatRequest) -> str:
        raise ChatModelError("the model refused: no", kind="refused", error_type="Refusal")

    refused = await CorrectnessGrader(FunctionChatModel(refuse)).aevaluate(
        query="q", response="r", reference="4"
    )
    assert bottom(refused, "judge_refused") == 1.0


async def test_a_comparison_judge_refusal_stays_an_error() -> None:
    seen: list[ChatRequest] = []
    judge = PairwiseJudge(
        _judge(_filtered, seen), pairwise_template(LanguageEnum.EN, None, with_reference=False)
    )
    result = await judge.aevaluate(query="q", response_a="a", response_b="b")
    assert isinstance(result, GraderError) and result.kind == "refused"


async def test_system_failures_stay_errors() -> None:
    def down(request: ChatRequest) -> str:
        raise ChatModelError("server error 500", kind="provider_error", error_type="APIError")

    result = await CorrectnessGrader(FunctionChatModel(down)).aevaluate(
        query="q", response="r", reference="4"
    )
    assert isinstance(result, GraderError) and result.kind == "provider_error"
    garbled = await CorrectnessGrader(FunctionChatModel(lambda r: "no json")).aevaluate(
        query="q", response="r", reference="4"
    )
    assert isinstance(garbled, GraderError) and garbled.kind == "parse_error"


async def test_response_failure_score_is_configurable_within_the_range() -> None:
    grader = JsonMatchGrader()
    set_response_failure_score(grader, 0.25)
    result = await grader.aevaluate(response=DEEP_ARRAY, reference="[]")
    assert isinstance(result, GraderScore) and result.score == 0.25 and is_response_failure(result)
    with pytest.raises(ValueError, match="outside the grader's range"):
        set_response_failure_score(grader, 2.0)
    with pytest.raises(ValueError, match="finite"):
        set_response_failure_score(grader, float("nan"))
    penalty = NgramRepetitionPenaltyGrader()  # range [-1, 0]: the bottom is -1
    assert penalty.score_range is not None and penalty.score_range.low == -1.0


def test_nesting_depth_is_iterative() -> None:
    assert nesting_depth(json.loads("[" * 900 + "]" * 900), 10_000) == 900
    assert nesting_depth(deep_object(50_000), 100) == 101  # stops counting past the limit
    assert nesting_depth("text", 5) == 0


# ---------------------------------------------------------------------------------------------
# The hunt: every rule grader against everything a policy can write
# ---------------------------------------------------------------------------------------------

HOSTILE_TEXT = {
    "deep_array": DEEP_ARRAY,
    "deep_object": deep_args_text(3000),
    "huge_int": "1" * 50_000,
    "huge_float": "1e99999",
    "json_huge_int": json.dumps({"a": 1}).replace("1", "1" * 5000),
    "lone_surrogate": SURROGATE,
    "only_surrogates": "\udfff" * 100,
    "nul_and_controls": "\x00\x01\x1b[31m\u202e\ufeff",
    "long": "lorem ipsum " * 50_000,
    "zalgo": "a" + "\u0301" * 10_000,
    "think_tags": "<think>" * 1000 + "</think>" * 1000 + "<answer>x</answer>",
    "fence": "```json\n" + DEEP_ARRAY + "\n```",
}

RULE_GRADERS: dict[str, tuple[Callable[[], BaseGrader], Callable[[str], dict[str, Any]]]] = {
    "json_match": (
        lambda: JsonMatchGrader(strict_order=False),
        lambda r: {"response": r, "reference": "[1]"},
    ),
    "json_match_strict": (JsonMatchGrader, lambda r: {"response": r, "reference": {"a": 1}}),
    "json_schema": (
        lambda: JsonSchemaGrader({"type": "array", "items": {"multipleOf": 0.1}}),
        lambda r: {"response": r},
    ),
    "json_validator": (JsonValidatorGrader, lambda r: {"response": r}),
    "length_penalty": (LengthPenaltyGrader, lambda r: {"response": r}),
    "ngram_repetition_penalty": (NgramRepetitionPenaltyGrader, lambda r: {"response": r}),
    "reasoning_format": (ReasoningFormatGrader, lambda r: {"response": r}),
    "number_accuracy": (NumberAccuracyGrader, lambda r: {"response": r, "reference": "4 and 2.5"}),
    "similarity_bleu": (
        lambda: SimilarityGrader("bleu"),
        lambda r: {"response": r, "reference": "lorem ipsum"},
    ),
    "similarity_edit": (
        lambda: SimilarityGrader("edit_distance"),
        lambda r: {"response": r, "reference": "lorem"},
    ),
    "string_match": (lambda: StringMatchGrader("normalized"), lambda r: {"response": r, "reference": "x"}),
    "string_match_regex": (
        lambda: StringMatchGrader("regex"),
        lambda r: {"response": r, "reference": r"\d+"},
    ),
    "tool_call_precision_recall": (
        lambda: ToolCallPrecisionRecallMatchGrader(match_arguments=True),
        lambda r: {"reference_tool_calls": ["f"], "tool_calls": [{"name": r[:100], "arguments": r}]},
    ),
    "tool_call_step_sequence": (
        ToolCallStepSequenceMatchGrader,
        lambda r: {"reference_tool_calls": ["f"], "tool_calls": [{"name": "f", "arguments": r}]},
    ),
    "openai_grader": (
        lambda: from_openai_grader(
            {
                "type": "string_check",
                "name": "eq",
                "input": "{{ sample.output_text }}",
                "reference": "{{ item.answer }}",
                "operation": "ilike",
            }
        ),
        lambda r: {"response": r, "answer": "lorem"},
    ),
    "action_loop": (ActionLoopDetectionGrader, lambda r: {"messages": _trajectory(r)}),
    "observation_information_gain": (
        ObservationInformationGainGrader,
        lambda r: {"messages": _trajectory(r)},
    ),
    "trajectory_step_efficiency": (TrajectoryStepEfficiencyGrader, lambda r: {"messages": _trajectory(r)}),
}


def _trajectory(text: str) -> list[dict[str, Any]]:
    call = {"id": "1", "type": "function", "function": {"name": "f", "arguments": text}}
    return [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": text, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "1", "content": "ok"},
        {"role": "assistant", "content": text, "tool_calls": [{**call, "id": "2"}]},
        {"role": "tool", "tool_call_id": "2", "content": "ok"},
    ]


def test_every_rule_grader_is_hunted() -> None:
    owned_elsewhere = {
        "code_execution",
        "math_answer_equivalence",
        "provided_score",
    }  # code/, math/, no response
    rule = {name for name, entry in BUILTIN_GRADERS.items() if entry.kind == "rule"} - owned_elsewhere
    hunted = {
        name.removesuffix("_strict").removesuffix("_regex").removesuffix("_bleu").removesuffix("_edit")
        for name in RULE_GRADERS
    }
    hunted |= {
        "tool_call_precision_recall_match",
        "tool_call_step_sequence_match",
        "action_loop_detection",
        "similarity",
    }
    assert rule - hunted == set()


@pytest.mark.parametrize("text", list(HOSTILE_TEXT), ids=list(HOSTILE_TEXT))
@pytest.mark.parametrize("grader_name", list(RULE_GRADERS))
async def test_hostile_responses_never_become_errors(grader_name: str, text: str) -> None:
    build, inputs = RULE_GRADERS[grader_name]
    grader = build()
    result = await grader.aevaluate(**inputs(HOSTILE_TEXT[text]))
    assert isinstance(result, GraderScore), f"{grader_name} on {text}: {result}"
    assert result.score_range is None or result.score_range.contains(result.score)
    if is_response_failure(result):
        bottom(result, str(result.metadata["cause"]))
    result.model_dump_json()  # the result can be written out
