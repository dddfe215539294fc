"""Reading a decoded chat-completions body: the happy path, odd usage counts, every malformed shape."""

from __future__ import annotations

from typing import Any

import pytest

from openjudge.models._errors import ChatModelError
from openjudge.providers._completion import parse_completion
from openjudge.results import TokenUsage

WHERE = "http://judge model 'm'"


def body(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "model": "served-name",
        "choices": [{"message": {"role": "assistant", "content": '{"score": 4}'}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
    }
    data.update(overrides)
    return data


def test_a_well_formed_body_becomes_its_response() -> None:
    response = parse_completion(body(), where=WHERE, model="configured")
    assert response.content == '{"score": 4}'
    assert response.usage == TokenUsage(12, 5, 1)
    assert response.finish_reason == "stop"
    assert response.model == "served-name"
    assert response.logprobs == ()


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (None, TokenUsage(0, 0, 1)),
        ("12", TokenUsage(0, 0, 1)),
        ({"prompt_tokens": True, "completion_tokens": 3}, TokenUsage(0, 3, 1)),
        ({"prompt_tokens": -1, "completion_tokens": 2.0}, TokenUsage(0, 0, 1)),
        ({"prompt_tokens": 7}, TokenUsage(7, 0, 1)),
    ],
)
def test_only_non_negative_int_counts_are_kept(usage: object, expected: TokenUsage) -> None:
    assert parse_completion(body(usage=usage), where=WHERE, model="m").usage == expected


def test_odd_fields_fall_back_to_neutral_values() -> None:
    data = body(model=3)
    data["choices"][0].update(finish_reason=1, message={"content": None})
    response = parse_completion(data, where=WHERE, model="configured")
    assert (response.content, response.finish_reason, response.model) == ("", None, "configured")


NO_CHOICES = "the response has no choices"
NO_MESSAGE = "the response's choice has no message"


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ([], NO_CHOICES),
        ("choices", NO_CHOICES),
        (None, NO_CHOICES),
        ({}, NO_CHOICES),
        ({"choices": []}, NO_CHOICES),
        ({"choices": {"0": {"message": {}}}}, NO_CHOICES),
        ({"choices": "message"}, NO_CHOICES),
        ({"choices": [["message"]]}, NO_CHOICES),
        ({"choices": [None]}, NO_CHOICES),
        ({"choices": [{}]}, NO_MESSAGE),
        ({"choices": [{"message": "hello"}]}, NO_MESSAGE),
        ({"choices": [{"message": ["hello"]}]}, NO_MESSAGE),
        ({"choices": [{"message": None}]}, NO_MESSAGE),
    ],
)
def test_a_body_without_a_message_object_is_a_retryable_malformed_response(
    data: object, problem: str
) -> None:
    with pytest.raises(ChatModelError) as caught:
        parse_completion(data, where=WHERE, model="m")
    assert str(caught.value) == f"{WHERE}: {problem}"
    assert caught.value.retryable
    assert caught.value.error_type == "MalformedResponse"


def test_a_refusal_is_not_retried() -> None:
    data = body()
    data["choices"][0]["message"]["refusal"] = "I can't help with that."
    with pytest.raises(ChatModelError) as caught:
        parse_completion(data, where=WHERE, model="m")
    assert caught.value.kind == "refused"
    assert not caught.value.retryable
    assert str(caught.value) == f"{WHERE}: the model refused: I can't help with that."
