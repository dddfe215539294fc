"""Local models under the core's engine: cache keys, deduplication, timeouts, limits, retries."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
import torch

from openjudge.models.cache import JudgeCache
from openjudge.models.chat_model import ChatRequest, Sampling
from openjudge.models.policy import ProviderPolicy, RetryPolicy
from openjudge.providers._registry import resolve_model
from openjudge.providers.transformers import TransformersChatModel, TransformersRewardModel
from openjudge.providers.transformers import _loading as loading
from openjudge.results import GraderError, GraderScore
from tests.providers.transformers.helpers import (
    ForwardHook,
    count_generate_calls,
    direct,
    grader,
    judge,
    no_retries,
    until,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # real (tiny) models run forward passes and generate

GREEDY = Sampling(temperature=0.0)


def held(release: threading.Event) -> None:
    """Hold a forward pass until the test releases it (bounded: a stuck test fails)."""
    assert release.wait(30)


def test_the_cache_key_names_the_checkpoint_and_the_whole_request(tmp_path: Path, judge_path: Path) -> None:
    checkpoint = shutil.copytree(judge_path, tmp_path / "checkpoint")
    request = ChatRequest([{"role": "user", "content": "2+2?"}], sampling=GREEDY)

    def body(**options: Any) -> bytes | None:
        return judge(checkpoint, **options).transport.wire_body(request)

    base = body()
    assert base is not None and base == body()  # another object, the same checkpoint and request
    assert json.loads(base)["checkpoint"]["model"] == str(checkpoint)
    variants = [
        body(revision="abc123"),
        body(dtype="float16"),
        body(chat_template="{{ messages[0]['content'] }}"),
        body(max_new_tokens=8),
        judge(checkpoint).transport.wire_body(
            ChatRequest([{"role": "user", "content": "3+3?"}], sampling=GREEDY)
        ),
    ]
    assert len({base, *variants}) == 1 + len(variants)
    odd = ChatRequest([{"role": "user", "content": "2+2?", "extra": object()}], sampling=GREEDY)
    assert judge(checkpoint).transport.wire_body(odd) is None  # not JSON: not cacheable, still callable
    assert judge(checkpoint).transport.endpoint == f"transformers:{checkpoint}"
    assert judge(checkpoint, revision="abc123").transport.endpoint == f"transformers:{checkpoint}@abc123"
    config = checkpoint / "config.json"
    stat = config.stat()
    os.utime(config, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # saved again, same path
    assert body() != base


async def test_a_cached_verdict_is_served_without_running_the_model(tmp_path: Path, judge_path: Path) -> None:
    cache = JudgeCache(tmp_path / "cache.sqlite")
    model = judge(judge_path, cache=cache)
    sizes = count_generate_calls(model)
    first = await grader(model).aevaluate(question="2+2?", answer="4")
    again = await grader(model).aevaluate(question="2+2?", answer="4")
    assert isinstance(first, GraderScore) and isinstance(again, GraderScore)
    assert (first.score, first.reason) == (again.score, again.reason) == (4.0, "fine")
    assert sizes == [1]
    assert first.usage is not None and again.usage is not None
    assert (first.usage.requests, again.usage.requests) == (1, 0)  # a hit costs nothing
    other = judge(judge_path, cache=cache)  # another provider object (or process) on the same checkpoint
    other_sizes = count_generate_calls(other)
    third = await grader(other).aevaluate(question="2+2?", answer="4")
    assert isinstance(third, GraderScore) and third.score == 4.0 and other_sizes == []


async def test_identical_calls_in_flight_take_one_row(judge_path: Path, forward_hooks: ForwardHook) -> None:
    model = judge(judge_path, max_batch_size=8)
    sizes = count_generate_calls(model)
    entered = [0]
    wire_body = model.transport.wire_body

    def counted(request: ChatRequest) -> bytes | None:
        entered[0] += 1
        return wire_body(request)

    model.transport.wire_body = counted  # type: ignore[method-assign]  # counting the calls that arrived
    release = threading.Event()
    forward_hooks(model, lambda: held(release))
    results: list[Any] = [None] * 4

    async def one(i: int) -> None:
        results[i] = await grader(model).aevaluate(question="2+2?", answer="4")

    async with anyio.create_task_group() as tg:
        for i in range(4):
            tg.start_soon(one, i)
        await until(lambda: entered[0] == 4)  # all four asked while the first is held in the model
        release.set()
    assert sizes == [1]
    assert all(isinstance(r, GraderScore) and r.score == 4.0 for r in results)


async def test_a_timed_out_call_is_a_timeout_and_leaves_the_model_usable(
    judge_path: Path, forward_hooks: ForwardHook
) -> None:
    model = judge(judge_path, policy=no_retries(timeout_s=0.3))
    release = threading.Event()
    forward_hooks(model, lambda: held(release))
    timed_out = await grader(model).aevaluate(question="2+2?", answer="4")
    release.set()
    assert isinstance(timed_out, GraderError) and timed_out.kind == "timeout"
    assert f"{judge_path}: no result within 0.3s (queueing included)" in timed_out.message
    after = await grader(model).aevaluate(question="3+3?", answer="6")
    assert isinstance(after, GraderScore) and after.score == 4.0


async def test_loading_is_not_timed(judge_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = loading.load_model

    def slow(*args: Any, **kwargs: Any) -> loading.LoadedModel:
        time.sleep(1.5)  # a large checkpoint: longer than the per-attempt timeout
        return real(*args, **kwargs)

    monkeypatch.setattr(loading, "load_model", slow)
    model = judge(judge_path, policy=no_retries(timeout_s=1.0))
    result = await grader(model).aevaluate(question="2+2?", answer="4")
    assert isinstance(result, GraderScore) and result.score == 4.0


async def test_the_event_loop_runs_while_the_model_loads(
    judge_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = loading.load_model
    loading_started, released = threading.Event(), threading.Event()

    def waits_for_the_loop(*args: Any, **kwargs: Any) -> loading.LoadedModel:
        loading_started.set()
        if not released.wait(timeout=10):  # only a task on the event loop sets it
            raise RuntimeError("the event loop stood still while the model loaded")
        return real(*args, **kwargs)

    monkeypatch.setattr(loading, "load_model", waits_for_the_loop)
    model = judge(judge_path)

    async def release_once_loading() -> None:
        await anyio.to_thread.run_sync(loading_started.wait)
        await anyio.sleep(0.05)  # the grader's call polls for the model meanwhile (or blocks the loop)
        released.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(release_once_loading)
        result = await grader(model).aevaluate(question="2+2?", answer="4")
    assert isinstance(result, GraderScore) and result.score == 4.0


async def test_the_concurrency_limit_bounds_each_batch(judge_path: Path) -> None:
    model = judge(judge_path, max_batch_size=8, batch_window_s=0.05, policy=no_retries(max_concurrency=2))
    sizes = count_generate_calls(model)
    results: list[Any] = [None] * 8

    async def one(i: int) -> None:
        results[i] = await grader(model).aevaluate(question=f"question {i}", answer=str(i))

    async with anyio.create_task_group() as tg:
        for i in range(8):
            tg.start_soon(one, i)
    assert sum(sizes) == 8 and max(sizes) <= 2 and model.peak_in_flight <= 2
    assert all(isinstance(r, GraderScore) and r.score == 4.0 for r in results)


async def test_the_reward_model_retries_an_out_of_memory_batch(reward_path: Path) -> None:
    policy = ProviderPolicy(retry=RetryPolicy(max_attempts=2, initial_backoff_s=0.0, max_backoff_s=0.0))
    rm = TransformersRewardModel(str(reward_path), device="cpu", policy=policy)
    forwards = [0]

    def first_forward_runs_out_of_memory(module: torch.nn.Module, args: object) -> None:
        forwards[0] += 1
        if forwards[0] == 1:
            raise torch.OutOfMemoryError("CUDA out of memory")

    handle = rm.local_model.load().model.register_forward_pre_hook(first_forward_runs_out_of_memory)
    try:
        reward = await rm.ascore("4", prompt="what is 2+2?")
    finally:
        handle.remove()
    assert reward.value == pytest.approx(direct(reward_path, "4", prompt="what is 2+2?"), abs=1e-5)
    assert reward.usage.requests == 2 and rm.usage.requests == 2 and forwards[0] == 2


def test_model_strings_and_the_shared_reward_head(judge_path: Path) -> None:
    model = resolve_model(f"transformers:{judge_path}", device="cpu", max_batch_size=4)
    assert isinstance(model, TransformersChatModel)
    assert (model.model_name, model.settings.max_batch_size, model.sampling.temperature) == (
        str(judge_path),
        4,
        0.0,
    )
    rm = model.reward_model()
    assert rm is model.reward_model() and rm.policy is model.policy and rm.settings is model.settings
    with pytest.raises(ValueError, match="remove base_url and api_key"):
        resolve_model(f"transformers:{judge_path}@http://127.0.0.1:9/v1")
