"""What the run's failure ledger costs a reward worker: two Ray calls per sample.

    python -m bench.verl_ledger

Every sample a ``RewardLoopWorker`` grades asks the ledger actor before grading
(``admit``: may it call the judge?) and tells it after (``record``). Measured from an
async Ray actor, as VERL's reward workers are, with ``C`` samples in flight at once (the
ledger actor serves them concurrently), over ``N`` samples; printed per sample, against
the target (< 2 ms per sample, i.e. < 1 % of a 200 ms judge call) and what bounds it: one
actor's event loop handling ``2 x N`` small calls (on 2 cores shared with the caller).
The in-process ledger (no Ray) is printed beside it.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import anyio

from openjudge.integrations.verl.ledger import Ledger, run_ledger
from openjudge.integrations.verl.settings import FailurePolicy

N = 2_000
C = 64
TARGET_MS = 2.0


async def samples(n: int, concurrency: int) -> float:
    """Seconds for ``n`` samples' admit + record against the run's ledger, ``concurrency`` at a time."""
    ledger = run_ledger(FailurePolicy(max_failure_rate=None), {"judge": "http://judge/v1"})
    await ledger.admit(["judge"])  # warm up: the actor exists and is reachable
    limiter = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with limiter:
            await ledger.admit(["judge"])
            await ledger.record({"judge": False}, [])

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
            async def run(self, n: int, concurrency: int) -> float:
                return await samples(n, concurrency)

        worker = Worker.remote()  # type: ignore[attr-defined]  # ray.remote's typing
        ray.get(worker.run.remote(100, C))
        elapsed = ray.get(worker.run.remote(N, C))
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
    print(f"ledger through Ray, {C} samples in flight: {per_sample_ms:.3g} ms/sample (admit + record)")
    print(f"  target: < {TARGET_MS} ms/sample ({'met' if per_sample_ms < TARGET_MS else 'MISSED'})")
    print(
        "  bound: one async actor's event loop serving 2 calls per sample (2 cores, shared with the caller)"
    )
    print(f"in-process ledger (no Ray): {local_ms * 1e3:.3g} us/sample")


if __name__ == "__main__":
    main()
