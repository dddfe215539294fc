"""What the run's failure ledger costs a reward worker per sample.

    python -m bench.verl_ledger

Every sample a ``RewardLoopWorker`` grades asks the ledger before grading (``admit``:
may it call the judge?) and tells it after (``record``). The worker answers both from
its view of the ledger actor (refreshed every 50 ms) and sends scored samples' records
in batches; a failed sample's record is sent at once. Measured from an async Ray actor,
as VERL's reward workers are, with ``C`` samples in flight at once, over ``N`` samples;
printed per sample against the target (< 2 ms per sample, i.e. < 1 % of a 200 ms judge
call) and what bounds it. The failed-sample path (one Ray call each; it matters only
while the judge is failing, when calls to it fail anyway) and the in-process ledger
(no Ray) are printed beside it.

First run (two Ray calls per sample, before the batching): 4.81 ms/sample, target missed
(load average 13.8 on 2 cores).
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import anyio

from openjudge.integrations.scoring._ledger import Ledger
from openjudge.integrations.verl._ledger import RECORD_BATCH, VIEW_TTL_S, run_ledger
from openjudge.integrations.verl._settings import FailurePolicy

N = 2_000
C = 64
TARGET_MS = 2.0


async def samples(n: int, concurrency: int, *, failed: bool = False) -> float:
    """Seconds for ``n`` samples' admit + record against the run's ledger, ``concurrency`` at a time."""
    ledger = run_ledger(
        FailurePolicy(max_failure_rate=None, breaker_failures=0), {"judge": "http://judge/v1"}
    )
    await ledger.admit(["judge"])  # warm up: the actor exists and is reachable
    limiter = asyncio.Semaphore(concurrency)
    labels = ["judge: timeout"] if failed else []

    async def one() -> None:
        async with limiter:
            await ledger.admit(["judge"])
            await ledger.record({"judge": failed}, labels)

    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(n)))
    return time.perf_counter() - start


def main() -> None:
    import ray

    root = str(Path(__file__).resolve().parents[1])
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": root}},
    )
    try:

        @ray.remote(num_cpus=0)
        class Worker:  # stands in for a RewardLoopWorker: an async actor
            async def run(self, n: int, concurrency: int, failed: bool) -> float:
                return await samples(n, concurrency, failed=failed)

        worker = Worker.remote()  # type: ignore[attr-defined]  # ray.remote's typing
        ray.get(worker.run.remote(100, C, False))
        elapsed = ray.get(worker.run.remote(N, C, False))
        failed_elapsed = ray.get(worker.run.remote(N // 4, C, True))
    finally:
        ray.shutdown()
    per_sample_ms = elapsed / N * 1e3
    local = Ledger(FailurePolicy(max_failure_rate=None))

    async def local_run() -> float:
        start = time.perf_counter()
        for _ in range(N):
            await local.admit(["judge"])
            await local.record({"judge": False}, [])
        return time.perf_counter() - start

    local_ms = anyio.run(local_run) / N * 1e3
    failed_ms = failed_elapsed / (N // 4) * 1e3
    load = os.getloadavg()[0]
    print(
        f"ledger through Ray, scored samples, {C} in flight: {per_sample_ms:.3g} ms/sample (admit + record)"
    )
    print(f"  target: < {TARGET_MS} ms/sample ({'met' if per_sample_ms < TARGET_MS else 'MISSED'})")
    print(
        f"  bound: one Ray call per {RECORD_BATCH} scored samples plus one view refresh per "
        f"{VIEW_TTL_S * 1e3:.0f} ms per worker (load average {load:.1f} on {os.cpu_count()} cores)"
    )
    print(f"failed samples (one Ray call each, only while the judge fails): {failed_ms:.3g} ms/sample")
    print(f"in-process ledger (no Ray): {local_ms * 1e3:.3g} us/sample")


if __name__ == "__main__":
    main()
