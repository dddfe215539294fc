"""Each of OpenAI's error kinds, and what it becomes here (the table in openjudge.graders.openai._blame).

Response-caused: a score at the bottom of the range with ``blame: response`` and the cause.
System-caused: a ``GraderError`` (never a number). Config mistakes: refused when built.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from openjudge.graders.openai import OpenAIGrader, from_openai_grader
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import ChatRequest, ChatResponse
from openjudge.models.policy import ProviderPolicy, RetryPolicy
from openjudge.results import GraderResult
from openjudge.testing.function_model import FunctionChatModel
from tests.graders.openai.helpers import GUIDE_MULTI, GUIDE_SCORE_MODEL, blamed, error_of, grade, string_check


def model(reply: Callable[[ChatRequest], str | ChatResponse]) -> FunctionChatModel:
    return FunctionChatModel(reply, policy=ProviderPolicy(retry=RetryPolicy(max_attempts=1)))


LABELS: dict[str, object] = {
    "type": "label_model",
    "name": "tone",
    "model": "gpt-4o",
    "input": [{"role": "user", "content": "Tone of: {{ sample.output_text }}"}],
    "labels": ["calm", "angry"],
    "passing_labels": ["calm"],
}


def raise_503(request: ChatRequest) -> str:
    raise ChatModelError("503 Service Unavailable", kind="provider_error", status_code=503)


def python(body: str) -> dict[str, object]:
    return {"type": "python", "name": "py", "source": f"def grade(sample, item):\n    {body}\n"}


RESPONSE_CAUSED: list[tuple[str, Callable[[], GraderResult]]] = [
    (
        "sample_parse_error",
        lambda: grade(
            from_openai_grader(string_check("eq", input="{{ sample.output_json.answer }}")),
            response="Paris",
            reference_answer="Paris",
        ),
    ),
    (
        "invalid_variable_error",
        lambda: grade(
            from_openai_grader(string_check("eq", input="{{ sample.output_json.answer }}")),
            response='{"city": "Paris"}',
            reference_answer="Paris",
        ),
    ),
    ("python_grader_runtime_error", lambda: grade(from_openai_grader(python("return 1 / 0")), response="x")),
    (
        "judge_refused",  # OpenAI's model_grader_refusal_error: the judge refused the response
        lambda: grade(
            from_openai_grader(
                GUIDE_SCORE_MODEL, model=model(lambda r: ChatResponse("", finish_reason="content_filter"))
            ),
            response="x",
            reference_answer="y",
        ),
    ),
    (
        "formula_error",
        lambda: grade(
            from_openai_grader({**GUIDE_MULTI, "calculate_output": "name / arguments"}),
            response="",
            item={"name": "f", "arguments": "{}"},
            tool_calls=[{"function": {"name": "g", "arguments": "[]"}}],
        ),
    ),
]


@pytest.mark.parametrize(("cause", "run"), RESPONSE_CAUSED, ids=[c for c, _ in RESPONSE_CAUSED])
def test_response_caused_errors_score_the_bottom(cause: str, run: Callable[[], GraderResult]) -> None:
    result = blamed(run(), cause)
    assert result.score == 0.0


SYSTEM_CAUSED: list[tuple[str, str, Callable[[], GraderResult]]] = [
    (
        "invalid_variable_error (item)",
        "invalid_input",
        lambda: grade(from_openai_grader(string_check("eq")), response="Paris", question="no reference here"),
    ),
    (
        "model_grader_parse_error (label_model)",
        "parse_error",
        lambda: grade(
            from_openai_grader(LABELS, model=model(lambda r: "I think it is good")),
            response="x",
        ),
    ),
    (
        "model_grader_parse_error (score_model, openjudge's rule)",
        "parse_error",
        lambda: grade(
            OpenAIGrader(
                GUIDE_SCORE_MODEL,
                model=model(lambda r: "I think it is good"),
                score_model_non_numeric="error",
            ),
            response="x",
            reference_answer="y",
        ),
    ),
    (
        "python_grader_runtime_error (a value outside python_score_range)",
        "internal",
        lambda: grade(from_openai_grader(python("return 7.5")), response="x"),
    ),
    (
        "model_grader_server_error",
        "provider_error",
        lambda: grade(
            from_openai_grader(GUIDE_SCORE_MODEL, model=model(raise_503)), response="x", reference_answer="y"
        ),
    ),
    (
        "python_grader_server_error (the source fails before grade)",
        "internal",
        lambda: grade(
            from_openai_grader(
                {"type": "python", "name": "p", "source": "1/0\ndef grade(s, i):\n    return 1\n"}
            ),
            response="x",
        ),
    ),
]


@pytest.mark.parametrize(("openai_kind", "kind", "run"), SYSTEM_CAUSED, ids=[k for k, _, _ in SYSTEM_CAUSED])
def test_system_caused_errors_are_grader_errors(
    openai_kind: str, kind: str, run: Callable[[], GraderResult]
) -> None:
    assert error_of(run()).kind == kind


@pytest.mark.parametrize(
    ("grader", "message"),
    [
        ({**GUIDE_MULTI, "calculate_output": "name +* args"}, "formula_parse_error"),
        (string_check("eq", input="{{ model.output }}"), "starts with 'item.' or 'sample.'"),
        (
            {**string_check("eq"), "operation": "neq"},
            "operation: Input should be 'eq', 'ne', 'like' or 'ilike'",
        ),
        (
            {
                "type": "text_similarity",
                "name": "t",
                "input": "a",
                "reference": "b",
                "evaluation_metric": "rouge",
            },
            "evaluation_metric",
        ),
        (
            {
                "type": "string_check",
                "name": "t",
                "input": "a",
                "reference": "b",
                "operation": "eq",
                "extra": 1,
            },
            "extra: Extra inputs are not permitted",
        ),
        ({"type": "grader_of_doom"}, "does not match any of the expected tags"),
    ],
)
def test_config_mistakes_are_refused_when_built(grader: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("*", r"\*")):
        OpenAIGrader(grader)


def test_a_custom_failure_score() -> None:
    grader = OpenAIGrader(
        python("return float(sample['output_text'])"), response_failure_score=-1.0, python_score_range=(-1, 1)
    )
    result = blamed(grade(grader, response="nope"), "python_grader_runtime_error")
    assert result.score == -1.0
