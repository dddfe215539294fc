from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from openjudge.graders.llm_grader import LLMGrader
from openjudge.models._errors import ChatModelError
from openjudge.models.cache import JudgeCache
from openjudge.models.chat_model import ChatRequest, ChatResponse, Sampling
from openjudge.models.policy import ProviderPolicy, RetryPolicy
from openjudge.providers.openai import OpenAIChatModel
from openjudge.results import GraderScore
from openjudge.runner.grading_runner import GraderConfig, GradingRunner
from openjudge.testing.function_model import FunctionChatModel
from openjudge.testing.judge_server import JudgeServerProcess

pytestmark = pytest.mark.anyio

MESSAGES = [{"role": "user", "content": "judge this"}]
ZERO = Sampling(temperature=0.0)


class SlowCounter:
    def __init__(self, delay_s: float = 0.05, fail: ChatModelError | None = None) -> None:
        self.calls = 0
        self.delay_s = delay_s
        self.fail = fail

    async def __call__(self, request: ChatRequest) -> str:
        self.calls += 1
        await anyio.sleep(self.delay_s)
        if self.fail is not None:
            raise self.fail
        return f"reply {self.calls}"


async def gather(model: FunctionChatModel, n: int, sampling: Sampling | None) -> list[ChatResponse]:
    out: list[ChatResponse] = []

    async def one() -> None:
        out.append(await model.achat(MESSAGES, sampling=sampling))

    async with anyio.create_task_group() as tg:
        for _ in range(n):
            tg.start_soon(one)
    return out


async def test_identical_deterministic_calls_in_flight_are_made_once() -> None:
    reply = SlowCounter()
    model = FunctionChatModel(reply)
    responses = await gather(model, 10, ZERO)
    assert reply.calls == 1
    assert {r.content for r in responses} == {"reply 1"}
    assert sorted(r.usage.requests for r in responses) == [0] * 9 + [1]
    assert model.usage.requests == 1


async def test_sampled_calls_are_never_merged() -> None:
    reply = SlowCounter()
    model = FunctionChatModel(reply)
    await gather(model, 5, Sampling(temperature=0.7))
    await gather(model, 5, None)  # temperature unset: the server decides, so not deterministic
    assert reply.calls == 10


async def test_followers_share_the_leaders_failure() -> None:
    reply = SlowCounter(fail=ChatModelError("HTTP 400: bad", status_code=400))
    model = FunctionChatModel(reply)
    errors: list[ChatModelError] = []

    async def one() -> None:
        try:
            await model.achat(MESSAGES, sampling=ZERO)
        except ChatModelError as exc:
            errors.append(exc)

    async with anyio.create_task_group() as tg:
        for _ in range(4):
            tg.start_soon(one)
    assert reply.calls == 1
    assert [e.status_code for e in errors] == [400] * 4


async def test_a_follower_takes_over_when_the_leader_is_cancelled() -> None:
    reply = SlowCounter(delay_s=0.2)
    model = FunctionChatModel(reply)
    got: list[str] = []

    async def follower() -> None:
        await anyio.sleep(0.05)
        got.append((await model.achat(MESSAGES, sampling=ZERO)).content)

    async with anyio.create_task_group() as tg:
        tg.start_soon(follower)
        with anyio.move_on_after(0.1):
            await model.achat(MESSAGES, sampling=ZERO)
    assert got == ["reply 2"]
    assert reply.calls == 2


def grading_runner(
    model: OpenAIChatModel, template: str, grader_cls: type[LLMGrader] = LLMGrader
) -> GradingRunner:
    grader = grader_cls(model, name="judge", template=template, score_range=(1, 5))
    return GradingRunner({"judge": GraderConfig(grader, {"response": "text"})}, show_progress=False)


class JudgeV2(LLMGrader):
    version = "2"


def test_second_run_is_served_from_disk_and_changes_miss(
    tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    data = [{"text": f"answer {i} #oj:score={1 + i % 5}"} for i in range(40)]

    def model(cache: JudgeCache) -> OpenAIChatModel:
        return OpenAIChatModel(
            "judge",
            api_key="sk-test",
            base_url=judge_server.base_url,
            temperature=0.0,
            policy=ProviderPolicy(retry=RetryPolicy(max_attempts=2)),
        ).with_cache(cache)

    first_cache = JudgeCache(tmp_path / "cache.sqlite")
    first = anyio.run(grading_runner(model(first_cache), "Rate: {response}").arun, data)
    assert judge_server.stats().chat_requests == 40 and first_cache.misses == 40
    first_cache.close()

    judge_server.reset_stats()
    cache = JudgeCache(tmp_path / "cache.sqlite")  # a new run, a new process would do the same
    second = anyio.run(grading_runner(model(cache), "Rate: {response}").arun, data)
    assert judge_server.stats().chat_requests == 0  # zero HTTP calls
    assert cache.hits == 40
    assert [r.score for r in second["judge"] if isinstance(r, GraderScore)] == [
        r.score for r in first["judge"] if isinstance(r, GraderScore)
    ]
    assert second.usage["judge"].requests == 0

    anyio.run(grading_runner(model(cache), "Rate this: {response}").arun, data[:5])
    assert judge_server.stats().chat_requests == 5  # a changed prompt misses
    anyio.run(grading_runner(model(cache), "Rate: {response}", JudgeV2).arun, data[:5])
    assert judge_server.stats().chat_requests == 10  # so does a new grader version


async def test_an_unusable_cache_is_bypassed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    cache = JudgeCache(blocker / "cache.sqlite")
    model = FunctionChatModel(SlowCounter(delay_s=0.0)).with_cache(cache)
    response = await model.achat(MESSAGES, sampling=ZERO)
    assert response.content == "reply 1"
    await model.asettle(response, usable=True)
    assert "judge cache" in caplog.text and cache.writes == 0
