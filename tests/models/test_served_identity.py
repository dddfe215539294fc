"""Cached verdicts stay with the weights that gave them: the served model's card and the
replies' system_fingerprint are part of the key, each learned once per endpoint and process."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from openjudge.graders import LLMGrader
from openjudge.models import ChatClient, ChatRequest, ChatResponse, JudgeCache, Sampling, _served_identity
from openjudge.providers import OpenAIChatModel
from openjudge.results import GraderScore, TokenUsage
from openjudge.testing import FunctionChatModel
from openjudge.testing.judge_server import JudgeServer

pytestmark = pytest.mark.anyio

MODEL = "qwen3-8b"


def served(score: float, identity: dict[str, str], port: int = 0) -> JudgeServer:
    """A test judge that gives ``score`` and says of its weights what ``identity`` holds."""
    return JudgeServer(
        model=MODEL,
        port=port,
        default_score=score,
        root=identity.get("root"),
        system_fingerprint=identity.get("system_fingerprint"),
    )


def grader(server: JudgeServer, cache: JudgeCache) -> LLMGrader:
    judge = OpenAIChatModel(MODEL, api_key="sk-test", base_url=server.base_url, temperature=0.0, cache=cache)
    return LLMGrader(judge, name="q", template="Rate: {answer}", score_range=(1, 5))


async def scores(server: JudgeServer, cache: JudgeCache, n: int = 12) -> list[float]:
    """``n`` samples graded at once; the scores in sample order."""
    judged = grader(server, cache)
    out: dict[int, float] = {}

    async def one(i: int) -> None:
        result = await judged.aevaluate(answer=f"answer {i}")
        assert isinstance(result, GraderScore), result
        out[i] = result.score

    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(one, i)
    return [out[i] for i in range(n)]


async def test_a_new_process_asks_one_witness_then_answers_from_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    async with JudgeServer(model=MODEL, default_score=4, system_fingerprint="fp-1") as server:
        first = JudgeCache(path)
        assert await scores(server, first) == [4.0] * 12
        first.close()
        server.reset_stats()
        again = JudgeCache(path)  # what a new process opens
        assert await scores(server, again) == [4.0] * 12
        # The witness went to the server (its reply told the fingerprint); the 11 calls that
        # arrived meanwhile waited for it and were answered from the cache.
        assert server.stats().chat_requests == 1
        assert (again.hits, again.misses) == (11, 1)
        again.close()


async def hangs_while(server: JudgeServer, cache: JudgeCache, *, stored: int) -> tuple[list[float], bool]:
    """A first call whose request hangs the judge, then ``stored`` calls graded at once
    (``answer 0``...): their scores, and whether the hung call was still hanging after them."""
    judged = grader(server, cache)
    hung_ended = anyio.Event()

    async def hung() -> None:
        await judged.aevaluate(answer="a response that hangs the judge #oj:hang")
        hung_ended.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(hung)
        with anyio.fail_after(10):
            while server.stats().by_outcome["hang"] == 0:  # noqa: ASYNC110  # the server's count, no event to await
                await anyio.sleep(0.01)  # the hung call is the first in flight
            got = await scores(server, cache, n=stored)
        still_hanging = not hung_ended.is_set()
        tg.cancel_scope.cancel()
    return got, still_hanging


async def test_a_first_call_that_hangs_holds_up_no_call_with_nothing_stored(tmp_path: Path) -> None:
    async with JudgeServer(model=MODEL, default_score=4, system_fingerprint="fp-1") as server:
        cache = JudgeCache(tmp_path / "cache.sqlite")
        # Every request is new (training): no call has a stored verdict to wait for.
        assert await hangs_while(server, cache, stored=8) == ([4.0] * 8, True)
        assert server.stats().chat_requests == 9
        cache.close()


async def test_a_rerun_waits_for_the_first_reply_only_to_use_stored_verdicts(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    async with JudgeServer(model=MODEL, default_score=4, system_fingerprint="fp-1") as server:
        first = JudgeCache(path)
        assert await scores(server, first, n=6) == [4.0] * 6
        first.close()
        server.reset_stats()
        again = JudgeCache(path)  # a new process: the fingerprint is not known
        # The hung call has nothing stored, so it is no witness: the stored calls send one
        # of theirs, whose reply releases the others to the cache.
        assert await hangs_while(server, again, stored=6) == ([4.0] * 6, True)
        assert server.stats().chat_requests == 2  # the hung call and the witness
        assert again.hits == 5
        again.close()


@pytest.mark.parametrize(
    ("first", "then"),
    [
        ({"root": "/models/judge-a"}, {"root": "/models/judge-b"}),  # other weights, one name
        ({"system_fingerprint": "fp-a"}, {"system_fingerprint": "fp-b"}),  # another configuration
        ({}, {"system_fingerprint": "fp-b"}),  # one that starts to say which
    ],
    ids=["root", "fingerprint", "fingerprint-appears"],
)
async def test_another_judge_behind_the_same_url_and_name_is_asked_afresh(
    tmp_path: Path, first: dict[str, str], then: dict[str, str]
) -> None:
    cache = JudgeCache(tmp_path / "cache.sqlite")
    async with served(5, first) as server:
        port = server.port
        assert await scores(server, cache) == [5.0] * 12
    async with served(2, then, port=port) as other:
        stale = JudgeCache(tmp_path / "cache.sqlite")
        cache.close()
        assert await scores(other, stale) == [2.0] * 12
        assert stale.hits == 0 and other.stats().chat_requests == 12
        stale.close()


async def test_the_same_judge_back_is_answered_by_its_own_verdicts(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    async with JudgeServer(model=MODEL, default_score=5, root="/models/a") as server:
        port = server.port
        cache = JudgeCache(path)
        await scores(server, cache)
        cache.close()
    async with JudgeServer(model=MODEL, port=port, default_score=1, root="/models/b") as other:
        cache = JudgeCache(path)
        assert await scores(other, cache) == [1.0] * 12
        cache.close()
    async with JudgeServer(model=MODEL, port=port, default_score=3, root="/models/a") as back:
        cache = JudgeCache(path)
        # Judge a's verdicts, except the witness's, which judge a' gave now (it says it is a).
        assert sorted(await scores(back, cache)) == [3.0] + [5.0] * 11
        cache.close()


class Unreachable:
    """A transport whose server cannot be asked what it serves (down, then back)."""

    model_name = "m"
    endpoint = "test://judge"
    connection_key = "test://judge|m"
    enforces_timeout = False

    def __init__(self) -> None:
        self.asked = 0
        self.answer: str | None = None

    async def served_identity(self, timeout_s: float) -> str | None:
        self.asked += 1
        return self.answer

    def wire_body(self, request: ChatRequest) -> bytes | None:
        return json.dumps(request.messages).encode()

    async def attempt(self, request: ChatRequest, timeout_s: float) -> ChatResponse:
        return ChatResponse('{"reason": "ok", "score": 3}', TokenUsage(1, 1, 1), "stop")

    async def aclose(self) -> None:
        return None


async def test_calls_bypass_the_cache_until_the_server_can_be_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    transport = Unreachable()
    cache = JudgeCache(":memory:")
    model = ChatClient(transport, sampling=Sampling(temperature=0.0), cache=cache)
    messages = [{"role": "user", "content": "x"}]
    for _ in range(3):
        await model.achat(messages)
    # Asked once: a failure is asked again only after RETRY_AFTER_S; meanwhile nothing is
    # served from or stored in the cache (the weights are unknown).
    assert (transport.asked, cache.hits, cache.misses, cache.writes) == (1, 0, 3, 0)
    monkeypatch.setattr(_served_identity, "RETRY_AFTER_S", 0.0)
    transport.answer = '{"owned_by":"vllm","root":"/models/a"}'
    first, second = await model.achat(messages), await model.achat(messages)
    assert transport.asked == 2 and not first.cached and second.cached
    assert (cache.hits, cache.writes) == (1, 1)


async def test_a_backend_that_says_nothing_of_its_weights_needs_no_witness() -> None:
    calls: list[ChatRequest] = []

    def reply(request: ChatRequest) -> str:
        calls.append(request)
        return '{"reason": "ok", "score": 3}'

    cache = JudgeCache(":memory:")
    model = FunctionChatModel(reply, sampling=Sampling(temperature=0.0), cache=cache)
    messages = [{"role": "user", "content": "x"}]
    await model.achat(messages)
    again = FunctionChatModel(reply, sampling=Sampling(temperature=0.0), cache=cache)
    assert (await again.achat(messages)).cached and len(calls) == 1
