"""Servers' "too long for the context window" answers, read into a ContextOverflow (and nothing else is).

The strings are the servers' own (see openjudge/providers/_context_overflow.py for where each
comes from); a 400 for another reason must stay a plain error.
"""

from __future__ import annotations

import json

import pytest

from openjudge.errors import ContextOverflow
from openjudge.providers._context_overflow import read_context_overflow
from openjudge.providers._errors import status_error


def openai_body(message: str, code: str | None = "context_length_exceeded") -> bytes:
    error = {"message": message, "type": "invalid_request_error", "param": "messages", "code": code}
    return json.dumps({"error": error}).encode()


CASES = {
    "openai": (
        openai_body(
            "This model's maximum context length is 128000 tokens. However, your messages resulted in "
            "130021 tokens. Please reduce the length of the messages."
        ),
        ContextOverflow(128000, 130021, None),
    ),
    "vllm_chat": (
        openai_body(
            "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
            "(4000 in the messages, 1000 in the completion). Please reduce the length of the messages "
            "or completion.",
            code=None,
        ),
        ContextOverflow(4096, 4000, 1000),
    ),
    "vllm_chat_new": (
        json.dumps(
            {
                "object": "error",
                "message": "This model's maximum context length is 131072 tokens. However, you requested "
                "65536 output tokens and your prompt contains at least 65537 input tokens, for a total of "
                "at least 131073 tokens. Please reduce the length of the input prompt or the number of "
                "requested output tokens. (parameter=input_tokens, value=65537)",
                "type": "BadRequestError",
                "code": 400,
            }
        ).encode(),
        ContextOverflow(131072, 65537, 65536),
    ),
    "vllm_passed": (
        openai_body(
            "You passed 12289 input tokens and requested 4096 output tokens. However, the model's context "
            "length is only 16384 tokens, resulting in a maximum input length of 12288 tokens. Please "
            "reduce the length of the input prompt. (parameter=input_tokens, value=12289)",
            code=None,
        ),
        ContextOverflow(16384, 12289, 4096),
    ),
    "vllm_pooling": (
        json.dumps(
            {
                "object": "error",
                "message": "This model's maximum context length is 8192 tokens. However, you requested "
                "10288 tokens in the input for embedding generation. Please reduce the length of the input.",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            }
        ).encode(),
        ContextOverflow(8192, 10288, None),
    ),
    "llama_cpp": (
        json.dumps(
            {
                "error": {
                    "code": 400,
                    "message": "request (13392 tokens) exceeds the available context size (8192 tokens), "
                    "try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": 13392,
                    "n_ctx": 8192,
                }
            }
        ).encode(),
        ContextOverflow(8192, 13392, None),
    ),
    "llama_cpp_old": (
        json.dumps(
            {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                }
            }
        ).encode(),
        ContextOverflow(None, None, None),
    ),
    "llama_cpp_python": (
        b"Requested tokens (5000) exceed context window of 2048",
        ContextOverflow(2048, 5000, None),
    ),
    "anthropic": (
        b"prompt is too long: 210432 tokens > 200000 maximum",
        ContextOverflow(200000, 210432, None),
    ),
}


@pytest.mark.parametrize("server", list(CASES))
def test_each_servers_wording_is_an_overflow_with_its_counts(server: str) -> None:
    body, expected = CASES[server]
    assert read_context_overflow(400, body) == expected


@pytest.mark.parametrize(
    "body",
    [
        openai_body("Invalid 'messages[0].content': string too long.", code="string_above_max_length"),
        openai_body("'response_format' is not supported with this model", code="invalid_request_error"),
        b"Bad Request",
        b"",
    ],
)
def test_other_400s_are_not_overflows(body: bytes) -> None:
    assert read_context_overflow(400, body) is None


def test_only_a_400_or_a_413_says_it() -> None:
    body = CASES["vllm_chat"][0]
    assert read_context_overflow(500, body) is None
    assert read_context_overflow(413, b"<html>Request Entity Too Large</html>") == ContextOverflow()


def test_the_status_error_carries_it_and_stays_final() -> None:
    error = status_error(400, {}, CASES["vllm_chat"][0], where="http://x/v1 model 'm'")
    assert error.context_overflow == ContextOverflow(4096, 4000, 1000)
    assert not error.retryable and error.kind == "provider_error"
    assert status_error(400, {}, b"Bad Request", where="x").context_overflow is None


def test_the_description_says_what_is_known() -> None:
    assert ContextOverflow(4096, 4000, 1000).describe() == (
        "4000 prompt tokens + 1000 for the reply > the context window of 4096"
    )
    assert ContextOverflow().describe() == "the prompt > the context window"
