"""``multi``: named sub-graders, the formula over their rewards, and failures that cannot be laundered."""

from __future__ import annotations

import json

import pytest
from pydantic import JsonValue

from openjudge.graders.openai import from_openai_grader
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import ChatRequest
from openjudge.models.policy import ProviderPolicy, RetryPolicy
from openjudge.testing.function_model import FunctionChatModel
from tests.graders.openai.helpers import GUIDE_MULTI, blamed, error_of, grade, score_of


def call(name: str, arguments: str) -> dict[str, JsonValue]:
    return {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}


CALL = call("get_weather", '{"city": "Paris"}')
ITEM = {"name": "get_weather", "arguments": '{"city": "Paris"}'}


@pytest.mark.parametrize(
    ("tool_calls", "reward", "subs"),
    [
        ([CALL], 1.0, {"name": 1.0, "arguments": 1.0}),
        (
            [call("get_weather", '{"city": "Lyon"}')],
            0.5,
            {"name": 1.0, "arguments": 0.0},
        ),
        (
            [call("get_time", "{}")],
            0.0,
            {"name": 0.0, "arguments": 0.0},
        ),
    ],
)
def test_the_guides_tool_call_multigrader(
    tool_calls: list[object], reward: float, subs: dict[str, float]
) -> None:
    grader = from_openai_grader(GUIDE_MULTI)
    result = grade(grader, response="", tool_calls=tool_calls, item=ITEM)
    assert score_of(result) == reward and result.metadata["sub_rewards"] == subs
    assert grader.score_range is not None and (grader.score_range.low, grader.score_range.high) == (0.0, 1.0)


def test_a_response_without_the_tool_call_is_a_response_failure() -> None:
    result = blamed(
        grade(from_openai_grader(GUIDE_MULTI), response="I won't call tools", item=ITEM),
        "invalid_variable_error",
    )
    assert result.score == 0.0


def test_a_response_failure_is_never_fed_to_the_formula() -> None:
    # "1 - penalty": a penalty grader that crashes on the response must not give a reward of 1.
    spec = {
        "type": "multi",
        "name": "inverted",
        "graders": {
            "penalty": {
                "type": "python",
                "name": "penalty",
                "source": "def grade(sample, item):\n    return 1.0 if float(sample['output_text']) > 10 else 0.0\n",
            }
        },
        "calculate_output": "1 - penalty",
    }
    grader = from_openai_grader(spec)
    assert score_of(grade(grader, response="50")) == 0.0
    assert score_of(grade(grader, response="5")) == 1.0
    crashed = blamed(grade(grader, response="not a number"), "python_grader_runtime_error")
    assert crashed.score == 0.0 and "sub-grader 'penalty'" in crashed.reason


def test_a_formula_that_cannot_be_computed_is_the_responses() -> None:
    spec = {
        "type": "multi",
        "name": "ratio",
        "graders": {
            "a": {
                "type": "string_check",
                "name": "a",
                "input": "{{ sample.output_text }}",
                "reference": "yes",
                "operation": "eq",
            },
            "b": {
                "type": "string_check",
                "name": "b",
                "input": "{{ sample.output_text }}",
                "reference": "yes",
                "operation": "like",
            },
        },
        "calculate_output": "a / b",
    }
    grader = from_openai_grader(spec, name="ratio")
    assert grader.score_range is None  # a / b has no bounded range: no declared range
    assert score_of(grade(grader, response="yes")) == 1.0
    assert blamed(grade(grader, response="no"), "formula_error").score == 0.0


def test_a_system_failure_of_a_sub_grader_fails_the_multi() -> None:
    def down(request: ChatRequest) -> str:
        raise ChatModelError("connection refused", kind="provider_error")

    model = FunctionChatModel(down, policy=ProviderPolicy(retry=RetryPolicy(max_attempts=1)))
    spec = {
        "type": "multi",
        "name": "mixed",
        "graders": {
            "exact": {
                "type": "string_check",
                "name": "e",
                "input": "{{ sample.output_text }}",
                "reference": "4",
                "operation": "eq",
            },
            "judge": {
                "type": "score_model",
                "name": "j",
                "model": "gpt-4o",
                "input": [{"role": "user", "content": "{{ sample.output_text }}"}],
                "range": [0, 10],
            },
        },
        "calculate_output": "0.5 * exact + 0.05 * judge",
    }
    grader = from_openai_grader(spec, model=model)
    assert grader.score_range is not None and (grader.score_range.low, grader.score_range.high) == (0.0, 1.0)
    err = error_of(grade(grader, response="4"))
    assert err.kind == "provider_error" and err.message.startswith("sub-grader 'judge'")
    assert err.metadata["sub_rewards"] == {"exact": 1.0, "judge": None}

    ok = from_openai_grader(spec, model=FunctionChatModel(lambda r: json.dumps({"steps": [], "result": 8})))
    result = grade(ok, response="4")
    assert score_of(result) == pytest.approx(0.9) and result.usage is not None and result.usage.requests == 1


def test_a_bad_formula_is_refused_when_built() -> None:
    with pytest.raises(ValueError, match="formula_parse_error: calculate_output names 'nme'"):
        from_openai_grader({**GUIDE_MULTI, "calculate_output": "0.5 * nme + 0.5 * arguments"})
