"""What the judge cache stores under which key, and where it reads and writes.

Keys are the wire request plus the endpoint (not the provider's kind), values hold
everything a grader reads (logprobs included), only replies a grader could use are
stored, and SQLite is used off the event loop.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import pytest

from openjudge.graders.llm_grader import LLMGrader
from openjudge.models._errors import ChatModelError
from openjudge.models.cache import JudgeCache
from openjudge.models.chat_model import ChatRequest, ChatResponse, Sampling
from openjudge.providers._litellm import LiteLLMChatModel
from openjudge.providers.openai import OpenAIChatModel
from openjudge.providers.vllm import VLLMChatModel
from openjudge.results import GraderError, GraderScore, TokenUsage
from openjudge.testing.function_model import FunctionChatModel
from openjudge.testing.judge_server import DEFAULT_MODEL, JudgeServerProcess
from tests._fixtures.extras import need_litellm

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:Item 'summary' on TypedDict class:UserWarning"),
]

ZERO = Sampling(temperature=0.0)
GOOD = json.dumps({"reason": "fine", "score": 4})


def judge(model: object, **kwargs: object) -> LLMGrader:
    return LLMGrader(model, name="q", template="Rate: {response}", score_range=(1, 5), **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def cache(tmp_path: Path) -> JudgeCache:
    return JudgeCache(tmp_path / "cache.sqlite", shared=True)  # shared: the tests read the file too


def keys(cache: JudgeCache) -> list[str]:
    with sqlite3.connect(cache.path) as conn:
        return [key for (key,) in conn.execute("SELECT key FROM judge_replies")]


def stored(cache: JudgeCache) -> int:
    return len(keys(cache))


async def test_litellm_providers_with_different_api_base_do_not_share_entries(
    cache: JudgeCache, judge_server: JudgeServerProcess
) -> None:
    need_litellm()
    # Two endpoints of one server: it serves /v1/chat/completions and /chat/completions.
    first, second = judge_server.base_url, judge_server.url
    for api_base in (first, second, second):
        model = LiteLLMChatModel(
            f"hosted_vllm/{DEFAULT_MODEL}", base_url=api_base, sampling=ZERO, cache=cache
        )
        result = await judge(model).aevaluate(response="the same answer #oj:score=2")
        assert isinstance(result, GraderScore) and result.score == 2.0
    # The second endpoint was asked although the first had answered the same request;
    # asking the second again was a hit.
    assert judge_server.stats().chat_requests == 2
    assert (cache.hits, cache.writes) == (1, 2)


async def test_vllm_chat_template_kwargs_are_in_the_key(
    cache: JudgeCache, judge_server: JudgeServerProcess
) -> None:
    for thinking in (False, True, False):
        model = VLLMChatModel(
            DEFAULT_MODEL,
            base_url=judge_server.base_url,
            sampling=ZERO,
            chat_template_kwargs={"enable_thinking": thinking},
            cache=cache,
        )
        assert isinstance(await judge(model).aevaluate(response="x #oj:score=3"), GraderScore)
    assert judge_server.stats().chat_requests == 2  # the third call repeats the first: a hit
    assert cache.hits == 1


async def test_the_key_is_the_wire_body_not_the_provider_kind(
    cache: JudgeCache, judge_server: JudgeServerProcess
) -> None:
    openai_kind = OpenAIChatModel(DEFAULT_MODEL, base_url=judge_server.base_url, sampling=ZERO, cache=cache)
    assert isinstance(await judge(openai_kind).aevaluate(response="x #oj:score=2"), GraderScore)
    # vLLM sends the schema as structured_outputs: different bytes, so a miss, never openai's reply.
    vllm_kind = VLLMChatModel(DEFAULT_MODEL, base_url=judge_server.base_url, sampling=ZERO, cache=cache)
    assert isinstance(await judge(vllm_kind).aevaluate(response="x #oj:score=2"), GraderScore)
    assert judge_server.stats().chat_requests == 2 and cache.hits == 0
    # With the standard response_format the bytes are openai's: the same bytes to the same server hit.
    same_bytes = VLLMChatModel(
        DEFAULT_MODEL,
        base_url=judge_server.base_url,
        sampling=ZERO,
        schema_field="response_format",
        cache=cache,
    )
    assert isinstance(await judge(same_bytes).aevaluate(response="x #oj:score=2"), GraderScore)
    assert judge_server.stats().chat_requests == 2 and cache.hits == 1


class Flaky:
    """Replies with ``first`` until told to recover, then with a good verdict; counts calls."""

    def __init__(self, first: str | ChatResponse) -> None:
        self.first = first
        self.recovered = False
        self.calls = 0

    def __call__(self, request: ChatRequest) -> str | ChatResponse:
        self.calls += 1
        return GOOD if self.recovered else self.first


@pytest.mark.parametrize(
    ("bad", "kind"),
    [
        ("The answer looks fine. Score: 4", "parse_error"),
        (ChatResponse("", TokenUsage(5, 0, 1), "content_filter"), "refused"),
    ],
)
async def test_unusable_replies_are_never_cached(
    cache: JudgeCache, bad: str | ChatResponse, kind: str
) -> None:
    backend = Flaky(bad)
    grader = judge(FunctionChatModel(backend, sampling=ZERO, cache=cache), max_reasks=0)
    failed = await grader.aevaluate(response="x")
    if kind == "refused":  # a pointwise judge's refusal is the response's failure (its bottom score)
        assert isinstance(failed, GraderScore) and failed.metadata["cause"] == "judge_refused"
    else:
        assert isinstance(failed, GraderError) and failed.kind == kind
    assert stored(cache) == 0  # evicted as soon as the grader found it unusable
    backend.recovered = True
    recovered = await grader.aevaluate(response="x")
    assert isinstance(recovered, GraderScore) and recovered.score == 4.0
    assert backend.calls == 2  # the recovered server was asked again
    again = await grader.aevaluate(response="x")
    assert isinstance(again, GraderScore) and backend.calls == 2 and cache.hits == 1
    assert stored(cache) == 1


async def test_an_unusable_cached_reply_is_evicted(cache: JudgeCache) -> None:
    backend = Flaky(GOOD)
    model = FunctionChatModel(backend, sampling=ZERO, cache=cache)
    grader = judge(model, max_reasks=0)
    assert isinstance(await grader.aevaluate(response="x"), GraderScore)
    [key] = keys(cache)
    cache.put(key, ChatResponse("not json at all"))  # e.g. written by an older, laxer version
    stale = await grader.aevaluate(response="x")
    assert isinstance(stale, GraderError) and stale.kind == "parse_error" and backend.calls == 1
    fresh = await grader.aevaluate(response="x")
    assert isinstance(fresh, GraderScore) and backend.calls == 2  # evicted, so asked again


async def test_failed_calls_are_never_cached(cache: JudgeCache) -> None:
    def failing(request: ChatRequest) -> str:
        raise ChatModelError("HTTP 400: bad", status_code=400)

    result = await judge(FunctionChatModel(failing, sampling=ZERO, cache=cache)).aevaluate(response="x")
    assert isinstance(result, GraderError) and result.kind == "provider_error"
    assert cache.writes == 0 and cache.misses == 1 and stored(cache) == 0


async def test_logprob_scores_are_the_same_fresh_and_from_the_cache(
    cache: JudgeCache, judge_server: JudgeServerProcess
) -> None:

    async def score() -> GraderScore:
        model = OpenAIChatModel(DEFAULT_MODEL, base_url=judge_server.base_url, sampling=ZERO, cache=cache)
        result = await judge(model, score_mode="logprobs", top_logprobs=5).aevaluate(response="x #oj:score=4")
        assert isinstance(result, GraderScore) and result.metadata["score_mode"] == "logprobs"
        return result

    fresh, cached = await score(), await score()
    assert judge_server.stats().chat_requests == 1
    # 4 at p=.6, 3 and 5 at .15, 2 at .04, 1 at .01: the expectation is 3.69 / 0.95.
    assert fresh.score == pytest.approx(3.69 / 0.95)
    assert cached.score == fresh.score and cached.metadata == fresh.metadata
    assert cached.usage == TokenUsage(0, 0, 0)


async def test_sqlite_is_used_off_the_event_loop(tmp_path: Path) -> None:
    threads: set[int] = set()

    class Recording(JudgeCache):
        def get(self, key: str) -> ChatResponse | None:
            threads.add(threading.get_ident())
            return super().get(key)

        def put(self, key: str, response: ChatResponse, *, request: str | None = None) -> None:
            threads.add(threading.get_ident())
            super().put(key, response, request=request)

        def holds(self, request: str) -> bool:
            threads.add(threading.get_ident())
            return super().holds(request)

    cache = Recording(tmp_path / "cache.sqlite")
    model = FunctionChatModel(lambda request: GOOD, sampling=ZERO, cache=cache)
    assert isinstance(await judge(model).aevaluate(response="x"), GraderScore)
    assert isinstance(await judge(model).aevaluate(response="x"), GraderScore)
    assert (cache.misses, cache.writes, cache.hits) == (1, 1, 1)
    assert threads and threading.get_ident() not in threads


def test_the_cache_keeps_logprobs_and_usage_on_disk(tmp_path: Path) -> None:
    from openjudge.models.chat_model import TokenLogprob

    path = tmp_path / "cache.sqlite"
    reply = ChatResponse(
        '{"score": 4}',
        TokenUsage(30, 8, 1),
        "stop",
        (TokenLogprob("4", -0.51, (("4", -0.51), ("5", -1.9))), TokenLogprob("}", float("-inf"))),
        model="judge-1",
    )
    JudgeCache(path, shared=True).put("k", reply)
    hit = JudgeCache(path, shared=True).get("k")  # another process would read the same
    assert hit is not None and hit.cached and hit.cache_key == "k"
    assert (hit.content, hit.finish_reason, hit.model, hit.logprobs) == (
        reply.content,
        "stop",
        "judge-1",
        reply.logprobs,
    )
    assert hit.usage == TokenUsage(0, 0, 0)  # a hit costs nothing
