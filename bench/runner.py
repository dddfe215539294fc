"""Runner benchmarks: framework overhead, wall time against the physical limit, memory.

    python -m bench.runner            # all four
    python -m bench.runner overhead   # one of: overhead, waves, scale, memory

Each line prints the measured figure, its target, and OpenJudge 0.2.4's figure where
one was measured (research/openjudge.md section 5). "ideal" is the physical limit for a
judge of fixed latency L at concurrency C: ceil(N / C) * L.
"""

from __future__ import annotations

import asyncio
import gc
import json
import math
import resource
import subprocess
import sys
import time
from collections.abc import Iterator

from openjudge.graders.llm_grader import LLMGrader
from openjudge.models.chat_model import ChatRequest
from openjudge.models.policy import ProviderLimits, ProviderPolicy
from openjudge.runner.grading_runner import GraderConfig, GradingRunner
from providers.openai import OpenAIChatModel
from providers.testing.function_model import FunctionChatModel
from providers.testing.judge_server import JudgeServerProcess

VERDICT = json.dumps({"reason": "fine", "score": 4})


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
) -> None:
    met = value <= target if lower_is_better else value >= target
    oj = f"; OpenJudge {openjudge:g}{unit}" if openjudge is not None else ""
    print(
        f"{label}: {value:.3g}{unit} (target {'<=' if lower_is_better else '>='} {target:g}{unit}{oj}) {'MET' if met else 'NOT MET'}"
    )


def function_runner(n_graders: int, concurrency: int) -> GradingRunner:
    model = FunctionChatModel(
        reply, policy=ProviderPolicy(limits=ProviderLimits(max_concurrency=concurrency))
    )
    configs = {
        f"judge{i}": GraderConfig(
            LLMGrader(
                model, name=f"judge{i}", template="Question: {query}\nAnswer: {response}", score_range=(1, 5)
            ),
            {"query": "query", "response": "response"},
        )
        for i in range(n_graders)
    }
    return GradingRunner(configs, max_concurrency=concurrency, show_progress=False)


def samples(n: int) -> list[dict[str, str]]:
    return [{"query": f"What is {i} + {i}?", "response": f"It is {2 * i}."} for i in range(n)]


def bench_overhead(n: int = 20_000) -> None:
    """CPU per grading call with an in-process judge: everything but the network."""
    runner = function_runner(1, 32)
    data = samples(n)

    async def main() -> float:
        await runner.arun(data[:500])  # warm caches
        best = math.inf
        for _ in range(3):
            gc.collect()
            started = time.process_time()
            await runner.arun(data)
            best = min(best, (time.process_time() - started) / n)
        return best

    per_call = asyncio.run(main())
    report(
        "framework CPU per LLM-grader call (function judge, best of 3)",
        per_call * 1e6,
        " us",
        30,
        openjudge=195,
    )


def bench_waves(latency: float = 0.2) -> None:
    """3 LLM graders x 64 samples at concurrency 32 against a 200 ms server (the VERL guide's case)."""
    with JudgeServerProcess(latency_s=latency) as server:
        model = OpenAIChatModel("judge", api_key="sk-bench", base_url=server.base_url, max_concurrency=32)
        configs = {
            f"judge{i}": GraderConfig(
                LLMGrader(
                    model,
                    name=f"judge{i}",
                    template="Question: {query}\nAnswer: {response}",
                    score_range=(1, 5),
                ),
                {"query": "query", "response": "response"},
            )
            for i in range(3)
        }
        runner = GradingRunner(configs, max_concurrency=32, show_progress=False)
        data = samples(64)
        ideal = math.ceil(3 * 64 / 32) * latency

        async def main() -> list[float]:
            await runner.arun(data[:8])  # open connections
            walls = []
            for _ in range(3):
                started = time.perf_counter()
                result = await runner.arun(data)
                walls.append(time.perf_counter() - started)
                assert all(r.score == 3.0 for col in result.values() for r in col)  # type: ignore[union-attr]
            return walls

        walls = asyncio.run(main())
        peak = server.stats().peak_in_flight
    print(f"  walls {[round(w, 3) for w in walls]} s, ideal {ideal:.2f} s, server peak in flight {peak}")
    report(
        "3 graders x 64 samples, C=32, 200 ms judge: wall / ideal (median of 3)",
        sorted(walls)[1] / ideal,
        "",
        1.15,
        openjudge=1.55,
    )


def bench_scale(n: int = 10_000, concurrency: int = 512, latency: float = 0.2) -> None:
    """10,000 judge calls at concurrency 512 against a 200 ms server."""
    with JudgeServerProcess(latency_s=latency) as server:
        model = OpenAIChatModel(
            "judge", api_key="sk-bench", base_url=server.base_url, max_concurrency=concurrency
        )
        grader = LLMGrader(
            model, name="judge", template="Question: {query}\nAnswer: {response}", score_range=(1, 5)
        )
        runner = GradingRunner(
            {"judge": GraderConfig(grader, {"query": "query", "response": "response"})},
            max_concurrency=concurrency,
            show_progress=False,
        )
        data = samples(n)
        ideal = math.ceil(n / concurrency) * latency

        async def main() -> tuple[float, float]:
            await runner.arun(data[:concurrency])  # open connections
            cpu0, started = time.process_time(), time.perf_counter()
            result = await runner.arun(data)
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu0
            assert sum(1 for r in result["judge"] if getattr(r, "score", None) == 3.0) == n
            return wall, cpu

        wall, cpu = asyncio.run(main())
        peak = server.stats().peak_in_flight
    print(
        f"  wall {wall:.2f} s, ideal {ideal:.2f} s, client CPU {cpu:.2f} s = {cpu / n * 1e3:.2f} ms per call, server peak in flight {peak}"
    )
    report(f"{n} calls, C={concurrency}, 200 ms judge: wall / ideal", wall / ideal, "", 1.10)


def _memory_child(n: int) -> None:
    runner = function_runner(1, 256)

    def lazy() -> Iterator[dict[str, str]]:
        for i in range(n):
            yield {"query": f"What is {i} + {i}?", "response": f"It is {2 * i}."}

    async def main() -> int:
        count = 0
        async with runner.astream(lazy()) as stream:
            async for _ in stream:
                count += 1
        return count

    assert asyncio.run(main()) == n
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def bench_memory(n: int = 100_000) -> None:
    """Peak RSS of a process that streams 100,000 samples through the runner."""
    out = subprocess.run(
        [sys.executable, "-m", "bench.runner", "_memory_child", str(n)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    report(
        f"client peak RSS, {n:,} samples streamed (astream, function judge)",
        float(out.strip().splitlines()[-1]),
        " MB",
        200,
    )


BENCHES = {"overhead": bench_overhead, "waves": bench_waves, "scale": bench_scale, "memory": bench_memory}


def main() -> None:
    if sys.argv[1:2] == ["_memory_child"]:
        _memory_child(int(sys.argv[2]))
        return
    for name in sys.argv[1:] or list(BENCHES):
        BENCHES[name]()


if __name__ == "__main__":
    main()
