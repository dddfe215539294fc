from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import anyio
import pytest

from openjudge.models._errors import ChatModelError
from openjudge.models._limits import ConcurrencyLimiter, ConnectionLimits, TokenBucket
from openjudge.models.chat_model import ChatRequest
from openjudge.models.engine import CallEngine
from openjudge.models.policy import ProviderLimits, ProviderPolicy, RetryPolicy
from openjudge.results import TokenUsage
from openjudge.testing.function_model import FunctionChatModel

pytestmark = pytest.mark.anyio

MESSAGES = [{"role": "user", "content": "hello"}]


def policy(
    *,
    attempts: int = 4,
    elapsed_s: float = 30.0,
    timeout_s: float = 5.0,
    concurrency: int = 64,
    rpm: float | None = None,
    adaptive: bool = True,
) -> ProviderPolicy:
    return ProviderPolicy(
        timeout_s=timeout_s,
        retry=RetryPolicy(
            max_attempts=attempts, max_elapsed_s=elapsed_s, initial_backoff_s=0.01, max_backoff_s=0.02
        ),
        limits=ProviderLimits(max_concurrency=concurrency, rpm=rpm, adaptive=adaptive),
    )


class Script:
    """Replies with the given outcomes in order: an exception to raise or text to return."""

    def __init__(self, *outcomes: str | ChatModelError) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[float] = []

    def __call__(self, request: ChatRequest) -> str:
        self.calls.append(time.monotonic())
        outcome = self.outcomes.pop(0) if len(self.outcomes) > 1 else self.outcomes[0]
        if isinstance(outcome, ChatModelError):
            raise outcome
        return outcome


def http(status: int, retry_after_s: float | None = None) -> ChatModelError:
    return ChatModelError(
        f"HTTP {status}",
        status_code=status,
        retryable=status in (408, 409, 429) or status >= 500,
        retry_after_s=retry_after_s,
    )


async def test_retryable_errors_are_retried_then_succeed() -> None:
    script = Script(http(500), http(503), "ok")
    model = FunctionChatModel(script, policy=policy())
    response = await model.achat(MESSAGES)
    assert response.content == "ok"
    assert len(script.calls) == 3
    assert response.usage.requests == 3
    assert model.usage.requests == 3


async def test_final_errors_are_not_retried() -> None:
    script = Script(http(400))
    model = FunctionChatModel(script, policy=policy())
    with pytest.raises(ChatModelError, match="HTTP 400"):
        await model.achat(MESSAGES)
    assert len(script.calls) == 1
    assert model.usage.requests == 1


async def test_attempts_are_capped() -> None:
    script = Script(http(429))
    model = FunctionChatModel(script, policy=policy(attempts=3))
    with pytest.raises(ChatModelError, match="HTTP 429"):
        await model.achat(MESSAGES)
    assert len(script.calls) == 3


async def test_retry_after_is_honoured() -> None:
    script = Script(http(429, retry_after_s=0.3), "ok")
    model = FunctionChatModel(script, policy=policy())
    assert (await model.achat(MESSAGES)).content == "ok"
    gap = script.calls[1] - script.calls[0]
    assert 0.3 <= gap < 1.5


async def test_elapsed_cap_stops_retries_that_would_sleep_past_it() -> None:
    script = Script(http(503, retry_after_s=5.0))
    model = FunctionChatModel(script, policy=policy(elapsed_s=1.0))
    started = time.monotonic()
    with pytest.raises(ChatModelError):
        await model.achat(MESSAGES)
    assert time.monotonic() - started < 2.5  # gave up at once instead of sleeping 5 s
    assert len(script.calls) == 1


async def test_hung_attempt_times_out_and_is_retried() -> None:
    calls = 0

    async def reply(request: ChatRequest) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            await anyio.sleep(10)
        return "late but fine"

    model = FunctionChatModel(reply, policy=policy(timeout_s=0.2))
    started = time.monotonic()
    assert (await model.achat(MESSAGES)).content == "late but fine"
    assert 0.2 <= time.monotonic() - started < 3.0
    assert calls == 2


async def test_timeout_error_kind_when_every_attempt_hangs() -> None:
    async def reply(request: ChatRequest) -> str:
        await anyio.sleep(10)
        return "never"

    model = FunctionChatModel(reply, policy=policy(timeout_s=0.1, attempts=2))
    with pytest.raises(ChatModelError) as info:
        await model.achat(MESSAGES)
    assert info.value.kind == "timeout"


async def test_concurrency_slot_is_held_per_attempt_not_during_backoff() -> None:
    in_flight = 0
    peak = 0
    events: list[str] = []

    async def reply(request: ChatRequest) -> str:
        nonlocal in_flight, peak
        name = str(request.messages[0]["content"])
        in_flight += 1
        peak = max(peak, in_flight)
        events.append(f"start {name}")
        try:
            await anyio.sleep(0.05)
            if name == "first" and events.count("start first") == 1:
                raise http(503, retry_after_s=0.3)
            return "ok"
        finally:
            in_flight -= 1

    model = FunctionChatModel(reply, policy=policy(concurrency=1, adaptive=False))
    async with anyio.create_task_group() as tg:
        tg.start_soon(model.achat, [{"role": "user", "content": "first"}])
        await anyio.sleep(0.01)
        for name in ("second", "third"):
            tg.start_soon(model.achat, [{"role": "user", "content": name}])
    assert peak == 1
    assert model.peak_in_flight == 1
    # The others ran while the first slept out its Retry-After, so its retry came last.
    assert events == ["start first", "start second", "start third", "start first"]


async def test_aimd_halves_on_429_and_grows_back() -> None:
    script = Script(http(429), "ok")
    model = FunctionChatModel(script, policy=policy(concurrency=8))
    await model.achat(MESSAGES)
    gate = model.gate()
    assert gate.concurrency.total_tokens == 4
    for _ in range(4 + 5):
        await model.achat(MESSAGES)
    assert gate.concurrency.total_tokens == 6
    for _ in range(6 + 7 + 50):  # back to the configured cap, and never past it
        await model.achat(MESSAGES)
    assert gate.concurrency.total_tokens == 8


async def test_rpm_bucket_paces_requests() -> None:
    model = FunctionChatModel(lambda request: "ok", policy=policy(rpm=600))  # 10/s, burst 10
    started = time.monotonic()
    for _ in range(15):
        await model.achat(MESSAGES)
    assert 0.4 <= time.monotonic() - started < 3.0


async def test_token_bucket_settles_debt() -> None:
    bucket = TokenBucket(rate_per_s=100.0, capacity=100.0)
    await bucket.acquire(100.0)
    bucket.settle(50.0)  # used 50 more than reserved: that is owed before the next request
    started = time.monotonic()
    await bucket.acquire(10.0)
    assert time.monotonic() - started >= 0.55


async def test_concurrency_limiter_is_fifo_and_survives_cancellation() -> None:
    limiter = ConcurrencyLimiter(1)
    await limiter.acquire()
    order: list[int] = []

    async def waiter(i: int) -> None:
        await limiter.acquire()
        order.append(i)
        await anyio.sleep(0.01)
        limiter.release()

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter, 1)
        await anyio.sleep(0.01)
        with anyio.move_on_after(0.01) as scope:  # a waiter cancelled while queued
            await limiter.acquire()
        assert scope.cancelled_caught
        tg.start_soon(waiter, 2)
        await anyio.sleep(0.01)
        limiter.total_tokens = 1
        limiter.release()
    assert order == [1, 2]
    assert limiter.borrowed == 0


def test_one_model_serves_successive_event_loops_and_trio() -> None:
    model = FunctionChatModel(lambda request: "ok", policy=policy(concurrency=2))

    async def burst() -> list[str]:
        out: list[str] = []

        async def one() -> None:
            out.append((await model.achat(MESSAGES)).content)

        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(one)
        return out

    assert asyncio.run(burst()) == ["ok"] * 5
    assert asyncio.run(burst()) == ["ok"] * 5
    assert anyio.run(burst, backend="trio") == ["ok"] * 5
    assert model.usage.requests == 15


async def test_limits_are_shared_by_connection_key() -> None:
    in_flight = 0
    peak = 0

    async def slow(request: ChatRequest) -> str:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await anyio.sleep(0.02)
        in_flight -= 1
        return "ok"

    async def burst(*models: FunctionChatModel) -> int:
        nonlocal peak
        peak = 0
        async with anyio.create_task_group() as tg:
            for model in models:
                for _ in range(6):
                    tg.start_soon(model.achat, MESSAGES)
        return peak

    shared = ConnectionLimits()
    same = [FunctionChatModel(slow, model="m", policy=policy(concurrency=2), limits=shared) for _ in range(2)]
    assert await burst(*same) == 2  # one endpoint, model and key: one budget
    assert same[0].peak_in_flight == same[1].peak_in_flight == 2
    other = FunctionChatModel(slow, model="other", policy=policy(concurrency=2), limits=shared)
    assert await burst(same[0], other) == 4  # another connection key: its own budget
    private = [FunctionChatModel(slow, model="m", policy=policy(concurrency=2)) for _ in range(2)]
    assert await burst(*private) == 4  # without a shared object, each provider has its own


@dataclass(frozen=True)
class Score:
    value: float
    usage: TokenUsage


class LocalScorer:
    """A local backend in a few lines: fails once with a retryable error, then scores."""

    model_name = "local-scorer"
    connection_key = "local:local-scorer"
    enforces_timeout = False

    def __init__(self) -> None:
        self.attempts = 0

    async def attempt(self, request: str, timeout_s: float) -> Score:
        self.attempts += 1
        if self.attempts == 1:
            raise ChatModelError("warming up", retryable=True, error_type="Busy")
        return Score(float(len(request)), TokenUsage(len(request), 0, 1))

    async def aclose(self) -> None:
        pass


async def test_the_engine_wraps_any_transport() -> None:
    scorer = LocalScorer()
    engine: CallEngine[str, Score] = CallEngine(scorer, policy())
    outcome = await engine.call("four")
    assert (outcome.response.value, outcome.requests) == (4.0, 2)
    assert engine.usage == TokenUsage(4, 0, 2) and outcome.latency_s > 0
