"""What every chat-core benchmark shares: the figure printer, timing with the collector's share, a worker pool.

``report`` prints a figure, its target (met or not) and what bounds it; the VERL benches
use it too. ``timed`` measures one awaited run's wall, process CPU and collector CPU.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import time
from collections.abc import Awaitable, Callable
from typing import NamedTuple

from openjudge.graders.llm_grader import LLMGrader
from openjudge.models.chat_model import ChatRequest
from openjudge.providers.openai import OpenAIChatModel
from openjudge.runner.grading_runner import GraderConfig, GradingRunner
from openjudge.testing.function_model import FunctionChatModel

VERDICT = json.dumps({"reason": "fine", "score": 4})
TEMPLATE = "Question: {query}\nAnswer: {response}"
LATENCY_S = 0.2


def reply(request: ChatRequest) -> str:
    return VERDICT


def report(
    label: str,
    value: float,
    unit: str,
    target: float,
    *,
    openjudge: float | None = None,
    lower_is_better: bool = True,
    bound: str = "",
) -> None:
    """Print a figure, its target (met or not), OpenJudge's figure if known, and what bounds it."""
    met = value <= target if lower_is_better else value >= target
    oj = f"; OpenJudge {openjudge:g}{unit}" if openjudge is not None else ""
    print(
        f"{label}: {value:.3g}{unit} (target {'<=' if lower_is_better else '>='} {target:g}{unit}{oj}) "
        f"{'MET' if met else 'NOT MET'}"
    )
    if bound:
        print(f"    bounded by: {bound}")


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def samples(n: int) -> list[dict[str, str]]:
    return [{"query": f"What is {i} + {i}?", "response": f"It is {2 * i}."} for i in range(n)]


def judge_runner(
    model: OpenAIChatModel | FunctionChatModel, n_graders: int, concurrency: int
) -> GradingRunner:
    configs = {
        f"judge{i}": GraderConfig(
            LLMGrader(model, name=f"judge{i}", template=TEMPLATE, score_range=(1, 5)),
            {"query": "query", "response": "response"},
        )
        for i in range(n_graders)
    }
    return GradingRunner(configs, max_concurrency=concurrency, show_progress=False)


class Timing(NamedTuple):
    """One timed run: wall and process CPU seconds, and the CPU seconds the collector took in it."""

    wall_s: float
    cpu: float
    gc: float


class _GcClock:
    """CPU time spent in the garbage collector while :attr:`on`, from ``gc.callbacks``."""

    def __init__(self) -> None:
        self.on = False
        self.total = 0.0
        self._started = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if not self.on:
            return
        if phase == "start":
            self._started = time.process_time()
        else:
            self.total += time.process_time() - self._started


_GC = _GcClock()


async def timed(run: Callable[[], Awaitable[object]]) -> Timing:
    """Wall, process CPU and collector CPU of one awaited run, after a full collection."""
    gc.collect()
    _GC.total, _GC.on = 0.0, True
    cpu0, wall0 = time.process_time(), time.perf_counter()
    try:
        await run()
        return Timing(time.perf_counter() - wall0, time.process_time() - cpu0, _GC.total)
    finally:
        _GC.on = False


async def pool(calls: Callable[[int], Awaitable[object]], n: int, concurrency: int) -> list[object]:
    """``calls(0..n-1)`` through ``concurrency`` workers, keeping each call's value."""
    jobs = iter(range(n))
    kept: list[object] = [None] * n

    async def worker() -> None:
        for i in jobs:
            kept[i] = await calls(i)

    async with asyncio.TaskGroup() as tg:
        for _ in range(concurrency):
            tg.create_task(worker())
    return kept


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]
