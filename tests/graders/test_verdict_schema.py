"""The schema a judge is sent carries its range in the form engines enforce; the grader still validates."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from openjudge.graders._verdict_schema import is_integer_scale, ranking_output, verdict_output
from openjudge.graders.agent.trajectory.trajectory_comprehensive import TrajectoryEvaluationOutput
from openjudge.graders.comparison import ListwiseRankingGrader, ListwiseVerdict, PairwisePreferenceGrader
from openjudge.graders.llm_grader import JudgeVerdict, LLMGrader
from openjudge.graders.openai import from_openai_grader
from openjudge.models.chat_model import ChatRequest
from openjudge.providers._structured import response_format_for
from openjudge.results import GraderError, GraderRank, GraderScore, ScoreRange
from openjudge.testing.function_model import FunctionChatModel
from tests.graders.openai.helpers import grade, score_of

pytestmark = pytest.mark.anyio


def score_property(score_range: tuple[float, float] | None) -> dict[str, object]:
    rng = None if score_range is None else ScoreRange(low=score_range[0], high=score_range[1])
    properties = verdict_output(JudgeVerdict, rng).schema["properties"]
    assert isinstance(properties, dict)
    score = properties["score"]
    assert isinstance(score, dict)
    return {k: v for k, v in score.items() if k not in ("title", "description")}


@pytest.mark.parametrize(
    ("score_range", "expected"),
    [
        ((1, 5), {"type": "integer", "enum": [1, 2, 3, 4, 5]}),
        ((0, 10), {"type": "integer", "enum": list(range(11))}),
        ((-1, 1), {"type": "integer", "enum": [-1, 0, 1]}),
        ((0, 100), {"type": "integer", "enum": list(range(101))}),
        ((0, 1), {"type": "number", "minimum": 0, "maximum": 1}),  # a share: an enum would make it pass/fail
        ((0.5, 2.5), {"type": "number", "minimum": 0.5, "maximum": 2.5}),
        ((0, 1000), {"type": "number", "minimum": 0, "maximum": 1000}),  # too many values for an enum
        (None, {"type": "number"}),
    ],
)
def test_the_range_is_an_enum_for_integer_scales_and_bounds_otherwise(
    score_range: tuple[float, float] | None, expected: dict[str, object]
) -> None:
    assert score_property(score_range) == expected


def test_the_description_survives_and_the_spec_is_built_once_per_model_and_range() -> None:
    spec = verdict_output(JudgeVerdict, ScoreRange(low=1, high=5))
    assert spec.schema["properties"]["score"]["description"] == "The score."
    assert verdict_output(JudgeVerdict, ScoreRange(low=1, high=5)) is spec  # providers cache by identity
    assert verdict_output(JudgeVerdict, ScoreRange(low=1, high=10)) is not spec
    assert is_integer_scale(1, 5) and not is_integer_scale(0, 1) and not is_integer_scale(1.5, 5)


class OwnBounds(BaseModel):
    reason: str
    score: float = Field(ge=1, le=5)  # a continuous 1-5: the model says so itself


class OwnLabels(BaseModel):
    reason: str
    score: Literal[0, 5, 10]


def test_a_score_that_says_what_it_allows_is_sent_as_written() -> None:
    rng = ScoreRange(low=0, high=10)
    assert verdict_output(OwnBounds, rng).schema["properties"]["score"] == {
        "maximum": 5,
        "minimum": 1,
        "title": "Score",
        "type": "number",
    }
    assert verdict_output(OwnLabels, rng).schema["properties"]["score"]["enum"] == [0, 5, 10]


def test_bounded_integers_anywhere_in_the_verdict_become_enums() -> None:
    """The trajectory judge's per-step scores (``int``, 1..5) reach llama.cpp as enums it enforces."""
    schema = verdict_output(TrajectoryEvaluationOutput, None).schema
    step = schema["$defs"]["StepEvaluation"]["properties"]
    for name in ("relevance_score", "accuracy_score", "efficiency_score"):
        assert step[name]["enum"] == [1, 2, 3, 4, 5] and "minimum" not in step[name]


def test_the_strict_form_keeps_the_enum() -> None:
    """What OpenAI, vLLM and the in-process judge get: strict, with the range kept."""
    fmt = response_format_for(verdict_output(JudgeVerdict, ScoreRange(low=1, high=5)), "json_schema")
    schema = fmt["json_schema"]["schema"]
    assert fmt["json_schema"]["strict"] is True and schema["additionalProperties"] is False
    assert schema["required"] == ["reason", "score"]
    assert schema["properties"]["score"] == {
        "description": "The score.",
        "enum": [1, 2, 3, 4, 5],
        "type": "integer",
    }
    plain = response_format_for(verdict_output(JudgeVerdict, ScoreRange(low=0, high=1)), "json_object")
    assert plain["schema"]["properties"]["score"]["minimum"] == 0


def capture(reply: str) -> tuple[FunctionChatModel, list[ChatRequest]]:
    seen: list[ChatRequest] = []

    def answer(request: ChatRequest) -> str:
        seen.append(request)
        return reply

    return FunctionChatModel(answer), seen


async def test_the_grader_sends_the_range_and_still_rejects_a_score_outside_it() -> None:
    """Where the engine does not enforce the schema, an out-of-range score is re-asked, then a parse_error."""
    model, seen = capture('{"reason": "r", "score": 9}')
    grader = LLMGrader(model, name="q", template="Rate {response}", score_range=(1, 5))
    result = await grader.aevaluate(response="x")
    assert isinstance(result, GraderError) and result.kind == "parse_error"
    assert "score 9 is outside the range 1 to 5" in result.message
    assert len(seen) == 2  # the reply, and the re-ask
    output = seen[0].output
    assert output is not None and output.schema["properties"]["score"]["enum"] == [1, 2, 3, 4, 5]
    assert "The score must be an integer from 1 to 5." in seen[0].messages[0]["content"]


async def test_a_listwise_call_lists_its_candidate_ids_as_an_enum() -> None:
    model, seen = capture('{"reason": "r", "ranking": ["R2", "R1", "R3"]}')
    grader = ListwiseRankingGrader(model)
    result = await grader.aevaluate(query="q", responses=["a", "b", "c"])
    assert isinstance(result, GraderRank) and result.rank == [2, 1, 3]
    output = seen[0].output
    assert output is not None
    ranking = output.schema["properties"]["ranking"]
    assert ranking["items"] == {"type": "string", "enum": ["R1", "R2", "R3"]}
    assert ranking["minItems"] == ranking["maxItems"] == 3
    assert ranking_output(ListwiseVerdict, ["R1", "R2", "R3"]) is output  # one spec per id list
    await grader.aevaluate(query="q", responses=["a", "b"])
    pair = seen[-1].output
    assert pair is not None and pair.schema["properties"]["ranking"]["items"]["enum"] == ["R1", "R2"]


async def test_a_pairwise_verdict_is_one_of_its_labels() -> None:
    model, seen = capture('{"reason": "r", "winner": "A"}')
    result = await PairwisePreferenceGrader(model).aevaluate(query="q", response_a="a", response_b="b")
    assert isinstance(result, GraderScore)
    output = seen[0].output
    assert output is not None and output.schema["properties"]["winner"]["enum"] == ["A", "B", "tie"]


def test_openai_model_graders_send_labels_as_an_enum_and_the_score_range_as_bounds() -> None:
    seen: list[ChatRequest] = []

    def reply(request: ChatRequest) -> str:
        seen.append(request)
        assert request.output is not None
        labelled = "enum" in request.output.schema["properties"]["result"]
        return json.dumps({"steps": [], "result": "good" if labelled else 6.5})

    model = FunctionChatModel(reply)
    base = {"model": "gpt-4o", "input": [{"role": "user", "content": "{{ sample.output_text }}"}]}
    label = {
        **base,
        "type": "label_model",
        "name": "l",
        "labels": ["good", "bad"],
        "passing_labels": ["good"],
    }
    assert score_of(grade(from_openai_grader(label, model=model), response="x")) == 1.0
    assert (
        score_of(
            grade(
                from_openai_grader(
                    {**base, "type": "score_model", "name": "s", "range": [1, 7]}, model=model
                ),
                response="x",
            )
        )
        == 6.5
    )
    label_output, score_output = (r.output for r in seen)
    assert label_output is not None and score_output is not None
    assert label_output.schema["properties"]["result"] == {"type": "string", "enum": ["good", "bad"]}
    # OpenAI scores a score_model on a continuous range (6.5 is a score): bounds, not an enum.
    assert score_output.schema["properties"]["result"] == {"type": "number", "minimum": 1.0, "maximum": 7.0}
