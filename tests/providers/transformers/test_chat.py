"""The generative judge behind LLMGrader: verdicts, logprob scores, batching, faults, the loop."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
import torch

from openjudge.models.policy import ProviderPolicy, RetryPolicy
from openjudge.providers.transformers import TransformersChatModel
from openjudge.results import GraderError, GraderScore
from tests.providers.transformers import tiny
from tests.providers.transformers.helpers import (
    ForwardHook,
    count_generate_calls,
    grader,
    judge,
    no_retries,
    until,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # real (tiny) models run forward passes and generate


@pytest.mark.parametrize("structured_output", ["json_schema", "prompt"])
async def test_the_judge_returns_its_verdict_with_token_usage(
    judge_path: Path, structured_output: str
) -> None:
    model = judge(judge_path, structured_output=structured_output)
    result = await grader(model).aevaluate(question="2+2?", answer="4")
    assert isinstance(result, GraderScore) and (result.score, result.reason) == (4.0, "fine")
    prompt = grader(model).build_messages({"question": "2+2?", "answer": "4"})
    prompt_tokens = len(
        model.local_model.load().tokenizer.apply_chat_template(
            prompt, add_generation_prompt=True, return_dict=False
        )
    )
    assert result.usage is not None
    assert (result.usage.prompt_tokens, result.usage.completion_tokens, result.usage.requests) == (
        prompt_tokens,
        6,
        1,
    )
    assert model.capabilities.structured_output == structured_output


async def test_logprob_scores_equal_the_expectation_computed_from_the_logits(judge_path: Path) -> None:
    model = judge(judge_path)
    g = grader(model, score_mode="logprobs", top_logprobs=5)
    result = await g.aevaluate(question="what is the capital of france?", answer="paris")
    assert isinstance(result, GraderScore)
    # By hand: the model's logits at the step after `", "score": `, over the digit tokens 1..5.
    loaded = model.local_model.load()
    messages = g.build_messages({"question": "what is the capital of france?", "answer": "paris"})
    prompt = loaded.tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_dict=False)
    prefix = [tiny.IDS[t] for t in tiny.VERDICT]
    with torch.no_grad():
        logits = loaded.model(torch.tensor([list(prompt) + prefix])).logits[0, -1]
    probabilities = torch.softmax(logits[[tiny.IDS[d] for d in tiny.DIGITS]].double(), dim=0)
    expected = sum((k + 1) * float(p) for k, p in enumerate(probabilities))
    assert result.score == pytest.approx(expected, abs=1e-5)
    assert result.metadata["score_mode"] == "logprobs" and result.metadata["verdict_score"] == 4.0
    assert 3.0 < result.score < 4.0


async def test_64_concurrent_calls_make_exactly_4_batches_of_16(judge_path: Path) -> None:
    model = judge(judge_path, max_batch_size=16, batch_window_s=30.0)  # batches go only when full
    sizes = count_generate_calls(model)
    g = grader(model)
    results: list[Any] = [None] * 64

    async def one(i: int) -> None:
        results[i] = await g.aevaluate(question=f"question number {i}", answer=str(i))

    async with anyio.create_task_group() as tg:
        for i in range(64):
            tg.start_soon(one, i)
    assert sizes == [16, 16, 16, 16]
    assert all(isinstance(r, GraderScore) and r.score == 4.0 for r in results)
    assert model.local_model.stats.batches == 4


async def test_a_cancelled_caller_does_not_poison_its_batch(
    judge_path: Path, forward_hooks: ForwardHook
) -> None:
    model = judge(judge_path, max_batch_size=4, batch_window_s=30.0)
    sizes = count_generate_calls(model)
    g = grader(model)
    results: dict[int, Any] = {}
    queued_then_cancelled = anyio.CancelScope()
    running_then_cancelled = anyio.CancelScope()
    release = threading.Event()
    started = threading.Event()

    def hold() -> None:
        started.set()
        assert release.wait(30)

    forward_hooks(model, hold)

    async def one(i: int, scope: anyio.CancelScope | None = None) -> None:
        with scope or anyio.CancelScope():
            results[i] = await g.aevaluate(question=f"q{i}", answer="a")

    async with anyio.create_task_group() as tg:
        tg.start_soon(one, 0)
        tg.start_soon(one, 1)
        tg.start_soon(one, 2, queued_then_cancelled)
        await until(lambda: model.local_model.queued == 3)
        queued_then_cancelled.cancel()  # leaves the queue before any batch forms
        await until(lambda: model.local_model.queued == 2)
        tg.start_soon(one, 3, running_then_cancelled)
        tg.start_soon(one, 4)
        await anyio.to_thread.run_sync(started.wait, 30)  # the batch [0, 1, 3, 4] is running
        running_then_cancelled.cancel()
        await anyio.sleep(0.02)
        release.set()
    assert sizes == [4]
    assert sorted(results) == [0, 1, 4]
    assert all(isinstance(r, GraderScore) and r.score == 4.0 for r in results.values())


async def test_the_event_loop_keeps_ticking_during_inference(
    judge_path: Path, forward_hooks: ForwardHook
) -> None:
    model = judge(judge_path)
    release = threading.Event()
    started = threading.Event()

    def hold() -> None:
        started.set()
        assert release.wait(30)

    forward_hooks(model, hold)
    ticks = 0
    result: Any = None

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0.001)

    async def judged() -> None:
        nonlocal result
        result = await grader(model).aevaluate(question="2+2?", answer="4")

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        async with anyio.create_task_group() as work:
            work.start_soon(judged)
            await anyio.to_thread.run_sync(started.wait, 30)
            at_start = ticks
            await until(lambda: ticks >= at_start + 20)  # the forward pass is held: only a free loop ticks
            assert result is None and not release.is_set()
            release.set()
        tg.cancel_scope.cancel()
    assert isinstance(result, GraderScore) and result.score == 4.0


async def test_out_of_memory_fails_only_its_batch_and_the_batch_size_backs_off(
    judge_path: Path, forward_hooks: ForwardHook
) -> None:
    model = judge(judge_path, max_batch_size=8, batch_window_s=30.0, policy=no_retries())
    sizes = count_generate_calls(model)
    forwards = [0]

    def first_forward_runs_out_of_memory() -> None:
        forwards[0] += 1
        if forwards[0] == 1:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")

    forward_hooks(model, first_forward_runs_out_of_memory)
    g = grader(model)
    results: list[Any] = [None] * 16

    async def one(i: int) -> None:
        results[i] = await g.aevaluate(question=f"q{i}", answer="a")

    async with anyio.create_task_group() as tg:
        for i in range(16):
            tg.start_soon(one, i)
    errors = [r for r in results if isinstance(r, GraderError)]
    scores = [r for r in results if isinstance(r, GraderScore)]
    assert len(errors) == 8 and len(scores) == 8
    assert all(e.kind == "provider_error" and e.error_type == "OutOfMemoryError" for e in errors)
    assert "out of memory in a batch of 8; the batch limit is now 4" in errors[0].message
    assert all(s.score == 4.0 for s in scores)
    assert sizes == [8, 4, 4]
    assert model.local_model.stats.batch_limit == 4


async def test_out_of_memory_is_retried_in_a_smaller_batch(
    judge_path: Path, forward_hooks: ForwardHook
) -> None:
    policy = ProviderPolicy(retry=RetryPolicy(max_attempts=2, initial_backoff_s=0.0, max_backoff_s=0.0))
    model = judge(judge_path, max_batch_size=4, batch_window_s=30.0, policy=policy)
    forwards = [0]

    def first_forward_runs_out_of_memory() -> None:
        forwards[0] += 1
        if forwards[0] == 1:
            raise torch.OutOfMemoryError("CUDA out of memory")

    forward_hooks(model, first_forward_runs_out_of_memory)
    g = grader(model)
    results: list[Any] = [None] * 4

    async def one(i: int) -> None:
        results[i] = await g.aevaluate(question=f"q{i}", answer="a")

    async with anyio.create_task_group() as tg:
        for i in range(4):
            tg.start_soon(one, i)
    assert all(isinstance(r, GraderScore) and r.score == 4.0 for r in results)
    assert all(r.usage.requests == 2 for r in results)


async def test_a_model_that_cannot_load_is_a_provider_error_naming_it(tmp_path: Path) -> None:
    model = judge(tmp_path / "no-such-model", policy=no_retries())
    first = await grader(model).aevaluate(question="q", answer="a")
    assert isinstance(first, GraderError) and first.kind == "provider_error"
    assert f"cannot load '{tmp_path / 'no-such-model'}'" in first.message
    second = await grader(model).aevaluate(question="q", answer="a")
    assert isinstance(second, GraderError) and second.message == first.message  # remembered, not retried


async def test_bad_constructor_arguments_are_refused(judge_path: Path) -> None:
    with pytest.raises(
        ValueError, match=r"takes structured_output 'json_schema' .* or 'prompt', not 'json_object'"
    ):
        TransformersChatModel(str(judge_path), structured_output="json_object")
    with pytest.raises(ValueError, match="max_batch_size"):
        TransformersChatModel(str(judge_path), max_batch_size=0)
    with pytest.raises(ValueError, match="runs the model in this process: remove base_url and api_key"):
        TransformersChatModel(str(judge_path), base_url="http://127.0.0.1:9/v1")


def test_importing_and_building_loads_neither_torch_nor_the_model(judge_path: Path) -> None:
    code = (
        "import sys\n"
        "from openjudge.providers.transformers import TransformersChatModel, TransformersRewardModel\n"
        f"TransformersChatModel({str(judge_path)!r}); TransformersRewardModel({str(judge_path)!r})\n"
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules, 'imported too early'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


async def test_a_closed_model_refuses_calls_with_a_clear_error(judge_path: Path) -> None:
    model = judge(judge_path, policy=no_retries())
    assert isinstance(await grader(model).aevaluate(question="q", answer="a"), GraderScore)
    model.close()
    assert model.local_model.loaded is None
    after = await grader(model).aevaluate(question="q", answer="a")
    assert isinstance(after, GraderError) and after.kind == "provider_error" and "was closed" in after.message
