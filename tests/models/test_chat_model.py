"""The request a transport receives: a frozen value with the protocol's defaults."""

from __future__ import annotations

import dataclasses

import pytest

from openjudge.models.chat_model import ChatRequest, OutputSpec, Sampling


def test_a_request_takes_the_protocol_defaults_and_keeps_what_it_is_given() -> None:
    messages = [{"role": "user", "content": "x" * 40}]
    plain = ChatRequest(messages)
    assert (plain.messages, plain.output, plain.sampling, plain.top_logprobs) == (
        messages,
        None,
        Sampling(),
        None,
    )
    spec = OutputSpec.from_schema("Verdict", {"type": "object"})
    full = ChatRequest(messages, spec, Sampling(max_tokens=100), 5)
    assert full.output is spec and full.sampling.max_tokens == 100 and full.top_logprobs == 5
    assert full == ChatRequest(
        messages=messages, output=spec, sampling=Sampling(max_tokens=100), top_logprobs=5
    )
    # 40 characters are ~10 tokens; the completion is reserved at max_tokens, else 512.
    assert (plain.estimated_tokens(), full.estimated_tokens()) == (10 + 512, 10 + 100)


def test_a_request_is_frozen_and_slotted() -> None:
    request = ChatRequest([{"role": "user", "content": "x"}])
    assert not hasattr(request, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.top_logprobs = 3  # type: ignore[misc]  # frozen on purpose
