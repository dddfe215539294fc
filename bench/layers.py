"""Where openjudge's CPU over HTTP goes: layer by layer against raw aiohttp, and bytecodes per call.

``layers`` cuts the stack at each layer (transport, chat client, grader, runner);
``bytecodes`` counts the Python bytecodes each side runs per call, the deterministic
figure under the CPU ratios.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any

from bench.common import LATENCY_S, Timing, load, median, pool, samples, timed
from bench.floor import case_runner, measure_raw, probe_each_side
from openjudge.graders.llm_grader import LLMGrader
from openjudge.models.chat_model import ChatRequest, OutputSpec
from openjudge.providers.openai import OpenAIChatModel
from openjudge.testing.judge_server import JudgeServerProcess


def measure_layer(base_url: str, layer: str, n: int, concurrency: int) -> Timing:
    """n calls over HTTP through openjudge's stack cut at ``layer`` (see :func:`bench_layers`)."""
    model = OpenAIChatModel("judge", api_key="sk-bench", base_url=base_url, max_concurrency=concurrency)
    runner = case_runner(model, "short", concurrency, tune_collector=layer == RUNNER_TUNED)
    grader = runner.grader_configs["judge0"].grader
    assert isinstance(grader, LLMGrader)
    output = OutputSpec.for_model(grader.structured_model)
    data = samples(n)
    messages = [grader.build_messages(sample) for sample in data]  # the prompt is the grader's work

    async def transport(i: int) -> object:
        return (await model.transport.attempt(ChatRequest(messages[i], output, model.sampling), 60.0)).content

    async def chat(i: int) -> object:
        return (await model.achat(messages[i], output=output)).content

    async def grade_and_drop(i: int) -> object:
        await grader.aevaluate(**data[i])
        return None

    async def grade(i: int) -> object:
        return await grader.aevaluate(**data[i])

    layers: dict[str, Callable[[int], Awaitable[object]]] = {
        "transport": transport,
        "chat client": chat,
        "grader, results dropped": grade_and_drop,
        "grader, results kept": grade,
    }

    async def go() -> Timing:
        await runner.arun(data[:concurrency])  # open the connections
        if layer.startswith("runner"):
            figures = await timed(lambda: runner.arun(data))
        else:
            figures = await timed(lambda: pool(layers[layer], n, concurrency))
        await model.aclose()
        return figures

    return asyncio.run(go())


RUNNER_TUNED = "runner, young threshold raised (as users run it)"
LAYERS = (
    "transport",
    "chat client",
    "grader, results dropped",
    "grader, results kept",
    "runner, tune_collector=False",
    RUNNER_TUNED,
)


def bench_layers(n: int = 6_000, concurrency: int = 256, rounds: int = 3) -> None:
    """Where openjudge's CPU over HTTP goes, layer by layer, against raw aiohttp in the same run.

    Each layer adds one part of the stack over the one above it: the transport alone (one
    attempt), the chat client (engine: limits, policy, usage), the LLM grader (prompt, verdict,
    score) with its results dropped and then kept, and the runner, first under the collector's
    default threshold as every layer above, then as users run it. With 256 calls interleaved
    every call's data is cache-cold, so a layer costs several times its in-process figure.
    """
    cpu: dict[str, list[float]] = {}
    collector: dict[str, list[float]] = {}
    with JudgeServerProcess(latency_s=LATENCY_S) as server:
        for _ in range(rounds):
            for layer in ("raw aiohttp", *LAYERS):
                if layer == "raw aiohttp":
                    timing = measure_raw(server.base_url, "short", n, concurrency)
                else:
                    timing = measure_layer(server.base_url, layer, n, concurrency)
                cpu.setdefault(layer, []).append(timing.cpu / n)
                collector.setdefault(layer, []).append(timing.gc / n)
    print(f"  {n:,} calls per run at C={concurrency}, 200 ms judge, {rounds} rounds, medians ({load()}):")
    floor = median(cpu["raw aiohttp"])
    for layer, values in cpu.items():
        print(
            f"    {layer}: {median(values) * 1e6:.0f} us CPU per call ({median(values) / floor:.2f}x raw; "
            f"of it in the garbage collector {median(collector[layer]) * 1e6:.0f} us)"
        )


# -- bytecodes per call over HTTP: the deterministic figure under the HTTP ratios ------------

_LAYERS = (
    ("openjudge/runner/", "runner"),
    ("openjudge/graders/", "grader"),
    ("openjudge/models/schema/", "grader"),  # prompt templates: rendered by the grader
    ("openjudge/models/", "chat client and engine"),
    ("openjudge/providers/", "transport"),
    ("openjudge/results.py", "results"),
)


def _layer(filename: str) -> str | None:
    """Which openjudge layer a code object belongs to (``None``: aiohttp, asyncio, the bench)."""
    where = filename.replace(os.sep, "/")
    for part, layer in _LAYERS:
        if part in where:
            return layer
    return None


async def _bytecodes(run: Callable[[], Awaitable[object]]) -> Counter[tuple[str, str]]:
    """Bytecodes each Python function runs while ``run()`` is awaited, by (file, qualified name).

    ``sys.settrace`` with opcode events: exact and repeatable, unlike CPU time. It sees only
    frames started after it is set, which is every frame of the calls ``run`` makes.
    """
    counts: Counter[tuple[str, str]] = Counter()

    def trace(frame: FrameType, event: str, arg: object) -> Any:
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        key = (frame.f_code.co_filename, frame.f_code.co_qualname)

        def step(frame: FrameType, event: str, arg: object) -> Any:
            if event == "opcode":
                counts[key] += 1
            return step

        return step

    sys.settrace(trace)
    try:
        await run()
    finally:
        sys.settrace(None)
    return counts


def bench_bytecodes(n: int = 2_000, concurrency: int = 256) -> None:
    """Python bytecodes run per call over HTTP, openjudge against raw aiohttp, and where openjudge's go.

    The HTTP ratios of bench/ratios.py move by a few percent between runs on a shared machine;
    this count does not move at all, so it is the figure to compare two versions of the HTTP
    path by. It tracks CPU: callgrind counted ~95 machine instructions per bytecode on both
    sides (at C=64 on 19bb992, raw aiohttp 473k instructions for 4,832 bytecodes per call,
    openjudge 625k for 6,483), since the C work (dicts, allocation, frames) follows the
    Python code that asks for it. A diagnostic with no target of its own: the goals are in
    bench/ratios.py.
    """
    with JudgeServerProcess(latency_s=LATENCY_S) as server:
        floor, openjudge = probe_each_side(server.base_url, samples(n), concurrency, _bytecodes)
    per_call = {name: sum(c.values()) / n for name, c in (("raw", floor), ("openjudge", openjudge))}
    layers: Counter[str] = Counter()
    for (filename, _), count in openjudge.items():
        layers[_layer(filename) or "aiohttp, asyncio and anyio"] += count
    top = [(name, count) for (filename, name), count in openjudge.most_common() if _layer(filename)][:8]
    print(
        f"Python bytecodes per call over HTTP (C={concurrency}, {n:,} calls, short prompt): "
        f"raw aiohttp {per_call['raw']:,.0f}, openjudge {per_call['openjudge']:,.0f}: "
        f"{per_call['openjudge'] / per_call['raw']:.3f}x"
    )
    print(
        "    openjudge's, by layer: "
        + ", ".join(f"{layer} {count / n:,.0f}" for layer, count in layers.most_common())
    )
    print("    openjudge's busiest functions: " + ", ".join(f"{name} {count / n:.0f}" for name, count in top))
