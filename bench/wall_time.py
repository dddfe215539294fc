"""Wall time against the physical limit of a judge of fixed latency: ``ceil(N / C) * L``.

``scale`` sends 10,000 calls at C=1024 (the cores bound it); ``waves`` grades 3 graders x
64 samples at C=32, the VERL guide's case.
"""

from __future__ import annotations

import asyncio
import math
import time

from bench.common import LATENCY_S, judge_runner, load, report, samples
from bench.floor import measure_openjudge, measure_raw
from openjudge.providers.openai import OpenAIChatModel
from openjudge.testing.judge_server import JudgeServerProcess


def bench_scale(n: int = 10_000, concurrency: int = 1024) -> None:
    """10,000 judge calls at C=1024, with raw aiohttp beside: at 5,000 requests/s the cores bound the wall."""
    ideal = math.ceil(n / concurrency) * LATENCY_S
    with JudgeServerProcess(latency_s=LATENCY_S) as server:
        floor_wall, floor_cpu, _ = measure_raw(server.base_url, "short", n, concurrency)
        wall, cpu, _ = measure_openjudge(server.base_url, "short", n, concurrency)
        peak = server.stats().peak_in_flight
    print(f"  {n:,} calls at C={concurrency}, ideal {ideal:.2f} s ({load()}):")
    print(
        f"    raw aiohttp ClientSession: {floor_cpu / n * 1e6:.0f} us CPU per call, wall/ideal {floor_wall / ideal:.2f}"
    )
    print(
        f"    openjudge: {cpu / n * 1e6:.0f} us CPU per call, wall/ideal {wall / ideal:.2f}; server peak {peak}"
    )
    report(
        f"{n:,} calls, C={concurrency}: wall / ideal",
        wall / ideal,
        "",
        2.5,
        bound="5,000 requests/s at ideal: client and server CPU per request on two shared cores "
        "(raw aiohttp's ratio above is the floor)",
    )


def bench_waves(concurrency: int = 32) -> None:
    """3 LLM graders x 64 samples at C=32 against a 200 ms server (the VERL guide's case)."""
    with JudgeServerProcess(latency_s=LATENCY_S) as server:
        model = OpenAIChatModel(
            "judge", api_key="sk-bench", base_url=server.base_url, max_concurrency=concurrency
        )
        runner = judge_runner(model, 3, concurrency)
        data = samples(64)
        ideal = math.ceil(3 * 64 / concurrency) * LATENCY_S

        async def main() -> list[float]:
            await runner.arun(data[:8])  # open connections
            walls = []
            for _ in range(3):
                started = time.perf_counter()
                result = await runner.arun(data)
                walls.append(time.perf_counter() - started)
                assert all(getattr(r, "score", None) == 3.0 for col in result.values() for r in col)
            await model.aclose()
            return walls

        walls = asyncio.run(main())
        peak = server.stats().peak_in_flight
    print(f"  walls {[round(w, 3) for w in walls]} s, ideal {ideal:.2f} s, server peak {peak} ({load()})")
    report(
        "3 graders x 64 samples, C=32, 200 ms judge: wall / ideal (median of 3)",
        sorted(walls)[1] / ideal,
        "",
        1.15,
        openjudge=1.55,
        bound="six 200 ms waves; the excess is the per-wave client and server CPU",
    )
