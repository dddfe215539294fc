"""What ``GET /models`` tells of the weights behind a model name, as vLLM, llama.cpp and OpenAI answer it."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from pydantic import JsonValue

from openjudge.errors import ChatModelError
from openjudge.providers._http import HttpReply
from openjudge.providers._served_model import STAMP_WINDOW_S, ServedModelProbe, card_identity, served_card

pytestmark = pytest.mark.anyio

NOW = 1_800_000_000.0
VLLM: dict[str, JsonValue] = {
    "object": "list",
    "data": [
        {
            "id": "qwen3-8b",
            "object": "model",
            "created": int(NOW),  # vLLM stamps the list with the time it answers
            "owned_by": "vllm",
            "root": "/models/Qwen3-8B",
            "parent": None,
            "max_model_len": 32768,
            "permission": [{"id": "modelperm-5f0c", "created": int(NOW)}],
        },
        {
            "id": "qwen3-8b-lora",
            "object": "model",
            "owned_by": "vllm",
            "root": "/adapters/a",
            "parent": "qwen3-8b",
        },
    ],
}
LLAMA_CPP: dict[str, JsonValue] = {
    "object": "list",
    "data": [
        {
            "id": "/models/judge.gguf",  # whatever the request names, llama.cpp serves this one
            "object": "model",
            "created": int(NOW) - 1,
            "owned_by": "llamacpp",
            "meta": {"n_params": 8_030_261_248, "size": 4_920_734_720, "n_ctx_train": 131072},
        }
    ],
}
OPENAI: dict[str, JsonValue] = {
    "object": "list",
    "data": [{"id": "gpt-4o-mini", "object": "model", "created": 1721172741, "owned_by": "system"}],
}


def identity(body: Mapping[str, JsonValue], model: str) -> str:
    return card_identity(served_card(body, model), now=NOW)


def test_vllm_is_known_by_its_weights_and_context_not_by_the_time_it_answered() -> None:
    assert identity(VLLM, "qwen3-8b") == '{"max_model_len":32768,"owned_by":"vllm","root":"/models/Qwen3-8B"}'
    assert identity(VLLM, "qwen3-8b-lora") == '{"owned_by":"vllm","parent":"qwen3-8b","root":"/adapters/a"}'
    assert identity(VLLM, "not-served") == ""  # two cards, neither named: the server does not say


def test_llama_cpp_is_known_by_its_only_model_whatever_the_name() -> None:
    expected = '{"meta":{"n_ctx_train":131072,"n_params":8030261248,"size":4920734720},"owned_by":"llamacpp"}'
    assert identity(LLAMA_CPP, "any-name") == expected


def test_a_creation_time_far_from_now_is_the_models_own() -> None:
    assert identity(OPENAI, "gpt-4o-mini") == '{"created":1721172741,"owned_by":"system"}'
    stamp: dict[str, JsonValue] = {
        "data": [{"id": "m", "created": NOW - STAMP_WINDOW_S + 1, "owned_by": "sglang"}]
    }
    assert identity(stamp, "m") == '{"owned_by":"sglang"}'


class Replies:
    """An HTTP client that answers GET /models from a list (a status and a body, or an error)."""

    def __init__(self, *replies: tuple[int, bytes] | ChatModelError) -> None:
        self.replies = list(replies)
        self.sent: list[Mapping[str, str]] = []

    async def send(
        self,
        method: str,
        url: str,
        body: bytes | None,
        headers: Mapping[str, str],
        timeout_s: float,
        where: str,
    ) -> HttpReply:
        assert (method, url, body) == ("GET", "http://judge/v1/models", None)
        self.sent.append(headers)
        reply = self.replies.pop(0)
        if isinstance(reply, ChatModelError):
            raise reply
        return HttpReply(reply[0], {}, reply[1])

    async def aclose(self) -> None:
        return None


async def test_the_probe_asks_once_and_keeps_the_answer() -> None:
    client = Replies((200, b'{"data": [{"id": "m", "owned_by": "vllm", "root": "/w"}]}'))
    probe = ServedModelProbe(
        "http://judge/v1/models", {"authorization": "Bearer k", "content-type": "application/json"}, "judge"
    )
    assert await probe.identity(client, "m", 5.0) == '{"owned_by":"vllm","root":"/w"}'
    assert await probe.identity(client, "m", 5.0) == '{"owned_by":"vllm","root":"/w"}'
    assert client.sent == [{"authorization": "Bearer k"}]  # once, with the key, and no body type
    assert probe.card == {"id": "m", "owned_by": "vllm", "root": "/w"}


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ((404, b"not found"), ""),  # no /models: the server does not say
        ((200, b"<html>"), ""),
        ((503, b"busy"), None),  # asked again later
        ((429, b"slow down"), None),
        (ChatModelError("connection refused", retryable=True), None),
    ],
)
async def test_what_the_probe_makes_of_a_server_that_does_not_answer(
    reply: tuple[int, bytes] | ChatModelError, expected: str | None
) -> None:
    probe = ServedModelProbe("http://judge/v1/models", {}, "judge")
    assert await probe.identity(Replies(reply), "m", 5.0) == expected
