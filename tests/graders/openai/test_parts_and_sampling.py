"""Model graders' image and audio parts, and sampling_params, as the judge receives them."""

from __future__ import annotations

import json
import logging

import pytest

from openjudge.graders.openai import from_openai_grader
from openjudge.models.chat_model import ChatRequest, ModelCapabilities, Sampling
from openjudge.models.policy import ProviderPolicy, RetryPolicy
from openjudge.testing.function_model import FunctionChatModel
from tests.graders.openai.helpers import GUIDE_SCORE_MODEL, blamed, error_of, grade, score_of

REPLY = json.dumps({"steps": [], "result": 1})


def judge(
    seen: list[ChatRequest],
    *,
    capabilities: ModelCapabilities | None = None,
    sampling: Sampling | None = None,
) -> FunctionChatModel:
    def reply(request: ChatRequest) -> str:
        seen.append(request)
        return REPLY

    return FunctionChatModel(
        reply,
        model="local-judge",
        policy=ProviderPolicy(retry=RetryPolicy(max_attempts=1)),
        capabilities=capabilities,
        sampling=sampling,
    )


# The API reference's score_model example: an input_image part with file_id null.
API_REFERENCE_IMAGE: dict[str, object] = {
    "type": "score_model",
    "name": "Example score model grader",
    "input": [
        {
            "role": "user",
            "content": [
                {
                    "type": "input_text",
                    "text": "Score how close the reference answer is to the model answer. "
                    "Score 1.0 if they are the same and 0.0 if they are different. "
                    "Return just a floating point score\n\nReference answer: {{item.reference_answer}}\n\n"
                    "Model answer: {{sample.output_text}}",
                },
                {
                    "type": "input_image",
                    "image_url": "https://example.com/reference.png",
                    "file_id": None,
                    "detail": "auto",
                },
            ],
        }
    ],
    "model": "gpt-5-mini",
    "sampling_params": {
        "temperature": 1,
        "top_p": 1,
        "seed": 42,
        "max_completions_tokens": 32768,
        "reasoning_effort": "medium",
    },
}


def test_the_api_references_image_example_reaches_the_judge_as_an_image_url_part() -> None:
    seen: list[ChatRequest] = []
    grader = from_openai_grader(API_REFERENCE_IMAGE, model=judge(seen))
    assert score_of(grade(grader, response="Paris", reference_answer="Paris")) == 1.0
    user = seen[0].messages[1]
    assert user["role"] == "user"
    assert user["content"] == [
        {
            "type": "text",
            "text": "Score how close the reference answer is to the model answer. Score 1.0 if they are the same "
            "and 0.0 if they are different. Return just a floating point score\n\nReference answer: Paris\n\n"
            "Model answer: Paris",
        },
        {"type": "image_url", "image_url": {"url": "https://example.com/reference.png", "detail": "auto"}},
    ]
    s = seen[0].sampling
    assert (s.temperature, s.top_p, s.seed, s.max_tokens, s.reasoning_effort) == (1, 1, 42, 32768, "medium")
    texts = [
        m["content"] if isinstance(m["content"], str) else m["content"][0]["text"] for m in seen[0].messages
    ]
    assert seen[0].prompt_chars() == sum(len(t) for t in texts)  # text parts count toward the token estimate


def test_templated_image_and_audio_parts_between_text() -> None:
    seen: list[ChatRequest] = []
    spec: dict[str, object] = {
        **GUIDE_SCORE_MODEL,
        "input": [
            {
                "role": "user",
                "content": [
                    "Does the caption fit? ",
                    {"type": "input_image", "image_url": "{{ item.image }}"},
                    {"type": "input_text", "text": "Caption: "},
                    {"type": "output_text", "text": "{{ sample.output_text }}"},
                    {"type": "input_audio", "input_audio": {"data": "{{ item.clip }}", "format": "wav"}},
                ],
            }
        ],
    }
    grader = from_openai_grader(spec, model=judge(seen))
    grade(grader, response="a cat", item={"image": "data:image/png;base64,iVBOR", "clip": "UklGRg=="})
    assert seen[0].messages[1]["content"] == [
        {"type": "text", "text": "Does the caption fit? "},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}},
        {"type": "text", "text": "Caption: a cat"},
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
    ]


def test_a_lone_surrogate_in_a_part_is_the_responses_in_the_sample_and_the_datasets_in_the_item() -> None:
    seen: list[ChatRequest] = []
    spec: dict[str, object] = {
        **GUIDE_SCORE_MODEL,
        "input": [
            {
                "role": "user",
                "content": [
                    {"type": "input_image", "image_url": "{{ item.image }}"},
                    {"type": "input_text", "text": "Caption: {{ sample.output_text }}"},
                ],
            }
        ],
    }
    grader = from_openai_grader(spec, model=judge(seen))
    in_response = grade(grader, response="a cat \ud800", item={"image": "https://x.test/cat.png"})
    assert blamed(in_response, "lone_surrogate").score == 0.0
    in_item = error_of(grade(grader, response="a cat", item={"image": "https://x.test/\udc00.png"}))
    assert in_item.kind == "invalid_input" and "U+DC00" in in_item.message
    assert seen == []  # neither was sent


def test_text_only_messages_stay_one_string() -> None:
    seen: list[ChatRequest] = []
    spec: dict[str, object] = {
        **GUIDE_SCORE_MODEL,
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "A: "}, "{{ sample.output_text }}"]}
        ],
    }
    grade(from_openai_grader(spec, model=judge(seen)), response="42")
    assert seen[0].messages[1] == {"role": "user", "content": "A: 42"}


def test_parts_a_judge_cannot_take_are_refused_when_built() -> None:
    text_only = ModelCapabilities(image_input=False, audio_input=False)
    with pytest.raises(
        ValueError, match=r"input\[0\]: the judge 'local-judge' takes text only, not input_image parts"
    ):
        from_openai_grader(API_REFERENCE_IMAGE, model=judge([], capabilities=text_only))
    in_store = {
        **API_REFERENCE_IMAGE,
        "input": [{"role": "user", "content": [{"type": "input_image", "file_id": "file-abc"}]}],
    }
    with pytest.raises(
        ValueError,
        match=r"input\[0\]\.content\[0\]: an input_image with file_id 'file-abc' is in OpenAI's file store.*give its image_url",
    ):
        from_openai_grader(in_store, model=judge([]))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            [{"type": "input_img", "image_url": "x"}],
            r"input\[0\]\.content\[0\]: a content part is a string or an object",
        ),
        (
            [{"type": "input_image", "file_id": None}],
            r"input\[0\]\.content\[0\]: an input_image part needs image_url",
        ),
        (
            [{"type": "input_audio", "input_audio": {"data": "x", "format": "ogg"}}],
            r"input\[0\]\.content\[0\]\.input_audio\.format: Input should be 'mp3' or 'wav'",
        ),
    ],
)
def test_a_malformed_part_is_named_by_its_json_path(content: list[object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        from_openai_grader(
            {**GUIDE_SCORE_MODEL, "input": [{"role": "user", "content": content}]}, model=judge([])
        )


def test_an_absent_temperature_leaves_the_providers_own() -> None:
    seen: list[ChatRequest] = []
    spec = {**GUIDE_SCORE_MODEL, "sampling_params": {"seed": 3}}
    grade(
        from_openai_grader(spec, model=judge(seen, sampling=Sampling(temperature=0.0))),
        response="x",
        reference_answer="y",
    )
    assert seen[0].sampling.temperature == 0.0 and seen[0].sampling.seed == 3


def test_reasoning_effort_is_dropped_with_a_warning_where_the_judge_does_not_take_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[ChatRequest] = []
    model = judge(seen, capabilities=ModelCapabilities(reasoning_effort=False))
    with caplog.at_level(logging.WARNING, logger="openjudge.graders.openai._model_graders"):
        grader = from_openai_grader(GUIDE_SCORE_MODEL, model=model)
    assert "reasoning_effort 'medium' is not sent: the judge 'local-judge' does not take it" in caplog.text
    grade(grader, response="x", reference_answer="y")
    assert seen[0].sampling.reasoning_effort is None and seen[0].sampling.max_tokens == 32768


def test_an_unknown_reasoning_effort_is_refused() -> None:
    spec = {**GUIDE_SCORE_MODEL, "sampling_params": {"reasoning_effort": "extreme"}}
    with pytest.raises(
        ValueError, match=r"sampling_params\.reasoning_effort: Input should be 'none', 'minimal'"
    ):
        from_openai_grader(spec, model=judge([]))
