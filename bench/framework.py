"""The framework without the network: an in-process judge, so only openjudge's own work is measured.

``overhead`` is CPU per grading call; ``memory`` the RSS growth of a long stream;
``instructions`` the instructions per call under callgrind (start-up cancels out).
"""

from __future__ import annotations

import asyncio
import gc
import os
import resource
import shutil
import subprocess
import sys

from bench.common import Timing, judge_runner, reply, report, samples, timed
from openjudge.models.policy import ProviderLimits, ProviderPolicy
from openjudge.runner.grading_runner import GradingRunner
from openjudge.testing.function_model import FunctionChatModel

FRAMEWORK_CALLS = 20_000
FRAMEWORK_RUNS_PER_ROUND = 5


def framework_runner() -> GradingRunner:
    """One LLM grader on an in-process judge: the framework measured without the network."""
    model = FunctionChatModel(reply, policy=ProviderPolicy(limits=ProviderLimits(max_concurrency=32)))
    return judge_runner(model, 1, 32)


def framework_timing(n: int = FRAMEWORK_CALLS) -> Timing:
    """n grading calls with an in-process judge: everything but the network."""
    runner = framework_runner()
    data = samples(n)

    async def main() -> Timing:
        await runner.arun(data[:500])  # warm caches
        return await timed(lambda: runner.arun(data))

    return asyncio.run(main())


def framework_cpu(n: int = FRAMEWORK_CALLS) -> float:
    """CPU seconds per grading call with an in-process judge."""
    return framework_timing(n).cpu / n


def bench_overhead(n: int = 20_000) -> None:
    """CPU per grading call with an in-process judge: everything but the network."""
    report(
        "framework CPU per LLM-grader call (function judge, best of 3)",
        min(framework_cpu(n) for _ in range(3)) * 1e6,
        " us",
        30,
        openjudge=195,
        bound="the runner's pool, the LLM grader (prompt, verdict validation) and the engine (limits, usage)",
    )


def _rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def memory_child(n: int) -> None:
    model = FunctionChatModel(reply, policy=ProviderPolicy(limits=ProviderLimits(max_concurrency=256)))
    runner = judge_runner(model, 1, 256)
    data = samples(n)  # all 100,000 queued up front

    peak = [0.0]

    async def main(items: list[dict[str, str]]) -> int:
        count = 0
        async with runner.astream(items) as stream:
            async for _ in stream:
                count += 1
                if count % 500 == 0:
                    peak[0] = max(peak[0], _rss_mib())
        return count

    asyncio.run(main(data[:1000]))  # warm up: first-use caches, pydantic validators
    gc.collect()
    before = _rss_mib()
    peak[0] = before
    assert asyncio.run(main(data)) == n
    print(f"{before:.1f} {peak[0]:.1f} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f}")
    print(peak[0] - before)


def bench_memory(n: int = 100_000) -> None:
    """RSS growth of a process that streams 100,000 queued samples through the runner."""
    out = subprocess.run(
        [sys.executable, "-m", "bench.runner", "_memory_child", str(n)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    before, peak, lifetime_peak = out.strip().splitlines()[-2].split()
    print(
        f"  RSS {before} MiB before the run (samples queued), {peak} MiB at most during it; process peak {lifetime_peak} MiB"
    )
    report(
        f"RSS growth while {n:,} queued samples stream through (astream, function judge)",
        float(out.strip().splitlines()[-1]),
        " MiB",
        50,
        bound="O(concurrency) work in flight; results are handed out, not kept",
    )


def instructions_child(n: int) -> None:
    """n grading calls with an in-process judge after a warm-up (run under callgrind)."""
    runner = framework_runner()
    data = samples(n)

    async def grade() -> None:
        await runner.arun(samples(300))
        await runner.arun(data)

    asyncio.run(grade())


def _instructions(n: int) -> int:
    """Instructions callgrind counts for a whole :func:`instructions_child` process."""
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    command += [sys.executable, "-m", "bench.runner", "_instructions_child", str(n)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    collected = [line for line in done.stderr.splitlines() if "Collected :" in line]
    return int(collected[-1].rsplit(":", 1)[1])


def bench_instructions(small: int = 1_000, large: int = 3_000) -> None:
    """Instructions per in-process judge call: the difference of two runs, so start-up cancels out.

    CPU time on a shared machine drifts by up to ~1.7x over seconds; instruction counts do
    not, so this is the figure to compare two versions of the call path by. Needs valgrind.
    """
    if shutil.which("valgrind") is None:
        print("instructions per in-process judge call: skipped (valgrind is not installed)")
        return
    per_call = (_instructions(large) - _instructions(small)) / (large - small)
    print(
        f"instructions per in-process judge call (callgrind, runner + LLM grader + function judge, "
        f"{large:,} minus {small:,} calls): {per_call / 1e3:.0f}k"
    )
    print(
        "    bounded by: the Python calls on the path (runner pair, mapper, prompt rendering, chat "
        "client, engine, verdict parsing, the score) and the objects each builds; 177k at 85179c8"
    )
