"""What CPython's garbage collector costs a client over HTTP: objects in flight, results kept.

Diagnostics with no target of their own (the goals are bench/ratios.py's): ``census``
counts the objects the collector tracks per call in flight on each side; ``keeping``
measures what keeping one object per result costs raw aiohttp itself.
"""

from __future__ import annotations

import asyncio
import gc
from collections import Counter
from collections.abc import Awaitable, Callable

from bench.common import LATENCY_S, load, median, samples
from bench.floor import UNTUNED, Record, measure_openjudge, measure_raw, probe_each_side
from openjudge.testing.judge_server import JudgeServerProcess


def _tracked_by_type() -> Counter[str]:
    gc.collect()
    return Counter(type(o).__name__ for o in gc.get_objects())


async def _census_in_flight(start: Callable[[], Awaitable[object]]) -> Counter[str]:
    """Objects the collector tracks while the calls ``start`` sends wait on the judge, by type."""
    before = _tracked_by_type()
    task = asyncio.ensure_future(start())
    await asyncio.sleep(0.5)  # every call is sent and waiting (the judge answers after 1 s)
    during = _tracked_by_type()
    await task
    return during - before


def bench_census(concurrency: int = 256) -> None:
    """Objects the collector tracks per call in flight, openjudge against raw aiohttp.

    Deterministic where CPU figures are noisy, and what the collector's share follows: once
    results are kept, collections come often enough to scan each in-flight object about once
    or twice (the collector figures of bench/ratios.py). Workers' own objects count too (one per call).
    """
    with JudgeServerProcess(latency_s=1.0) as server:
        floor, openjudge = probe_each_side(
            server.base_url, samples(concurrency), concurrency, _census_in_flight
        )
    per_call = {name: sum(c.values()) / concurrency for name, c in (("raw", floor), ("openjudge", openjudge))}
    extra = openjudge - floor
    print(
        f"  tracked objects per call in flight at C={concurrency}: raw aiohttp {per_call['raw']:.1f}, "
        f"openjudge {per_call['openjudge']:.1f}; openjudge's extra, by type: "
        + ", ".join(f"{name} {count / concurrency:.1f}" for name, count in extra.most_common(12))
    )
    # A diagnostic with no target of its own: the CPU ratios in bench/ratios.py are the goals.
    print(
        f"tracked objects per call in flight, openjudge / raw aiohttp: "
        f"{per_call['openjudge'] / per_call['raw']:.2f}x\n"
        "    made of: coroutine frames of the call path (runner, grader, judge rounds, chat client, "
        "engine, transport, HTTP client), the prepared call and request, and each runner worker's "
        "task state (anyio's, and two timers: the runner's per pair, the HTTP client's per request)"
    )


def _score_and_reason(score: float, reason: str) -> object:
    return {"score": score, "reason": reason}  # only atoms: the collector never tracks this dict


def _reason(score: float, reason: str) -> object:
    return reason


KEEPS: dict[str, Callable[[float, str], object] | None] = {
    "a float (the floor)": None,
    "the reason, a str (not an object the collector counts)": _reason,
    "a dict of score and reason (counted, never tracked)": _score_and_reason,
    "a Record (one tracked object)": Record,
}


def bench_keeping(n: int = 6_000, concurrency: int = 256, rounds: int = 3) -> None:
    """What keeping one object per result costs raw aiohttp itself, against openjudge in the same run.

    CPython's collector runs its youngest generation when objects the collector counts
    (containers, tracked or not) outnumber the ones freed by 700, and scans what was allocated
    since and still lives: mostly the calls in flight. Counted from ``gc.callbacks`` over 6,000
    calls at C=256, raw aiohttp keeping floats ran it 33 times over ~1.6k objects each; keeping a
    Record per result, 45 times over ~5.7k. Kept results make each collection scan many more
    calls in flight. So this is the floor for any client that returns result objects, as
    openjudge must; openjudge is measured here under the same default threshold
    (``tune_collector=False``). A diagnostic with no target of its own: the goals are in bench/ratios.py.
    """
    cpu: dict[str, list[float]] = {}
    collector: dict[str, list[float]] = {}
    with JudgeServerProcess(latency_s=LATENCY_S) as server:
        for _ in range(rounds):
            for label in (*KEEPS, UNTUNED):
                if label in KEEPS:
                    timing = measure_raw(server.base_url, "short", n, concurrency, keep=KEEPS[label])
                else:  # under the same collector threshold as the raw lines
                    timing = measure_openjudge(server.base_url, "short", n, concurrency, tune_collector=False)
                cpu.setdefault(label, []).append(timing.cpu / n)
                collector.setdefault(label, []).append(timing.gc / n)
    print(f"  {n:,} calls per run at C={concurrency}, 200 ms judge, {rounds} rounds, medians ({load()}):")
    floor = median(cpu["a float (the floor)"])
    for label, values in cpu.items():
        side = label if label == UNTUNED else f"raw aiohttp keeping {label}"
        print(
            f"    {side}: {median(values) * 1e6:.0f} us CPU per call ({median(values) / floor:.2f}x the floor; "
            f"of it in the garbage collector {median(collector[label]) * 1e6:.0f} us)"
        )
    print(
        "    bounded by: how often the collector's youngest generation runs (once any counted object "
        "is kept per result) times the objects of the calls in flight it then scans"
    )
