"""The Ray engine against the single-process engine: same data, same judge server.

    python -m bench.ray [N] [--workers W] [--limit C] [--latency-s S] [--cpus K]

(run it as a module from the repository root: ``python bench/ray.py`` would make this
file shadow the ``ray`` package.)

Grades N generated samples (one LLM grader whose score each sample fixes with a
``#oj:score=`` directive, one rule grader, a weighted mean) twice against one local test
judge server (latency S): with ``openjudge run``'s local engine, then on a local Ray
cluster of K CPUs with W grading actors. The provider allows C requests in flight; the
Ray engine splits that into C // W per actor. Prints, for each engine, wall time,
throughput and the server's peak in-flight requests (which must stay <= C), the Ray run's
start-up (Ray itself, then actors until the first result) and steady-state rate, and
whether every sample's results are identical. "ideal" is the physical limit of the judge:
ceil(N / C) x S.
"""

from __future__ import annotations

import sys

if __name__ == "__main__" and not __package__:
    sys.exit("run this benchmark as a module from the repository root: python -m bench.ray")

import argparse
import json
import math
import os
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import anyio

from openjudge.config._build import build_job
from openjudge.config._loader import load_config
from openjudge.distributed import grade_on_ray, plan_workers
from openjudge.distributed._ray_backend import import_ray
from openjudge.jobs._engine import run_job
from openjudge.jobs._results import read_results
from openjudge.testing.judge_server import JudgeServerProcess

ROOT = Path(__file__).resolve().parents[1]

JOB = """
providers:
  judge:
    kind: openai
    model: bench-judge
    base_url: {base_url}
    api_key: sk-bench
    limits: {{max_concurrency: {limit}}}
graders:
  quality:
    type: llm
    provider: judge
    params: {{template: "Rate: {{answer}}", score_range: [1, 5]}}
  exact:
    type: string_match
    mapper: {{response: answer, reference: expected}}
aggregators:
  - {{type: weighted_mean, name: reward}}
runner: {{max_concurrency: 64}}
cache: {{enabled: false}}
"""


def write_samples(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            answer = f"answer {i} #oj:score={1 + (i * 7) % 5}"
            f.write(
                json.dumps({"id": f"s{i:06d}", "answer": answer, "expected": answer if i % 3 else "-"}) + "\n"
            )


def scores(path: Path) -> dict[str, str]:
    """Id -> the sample's results and aggregates without timings and usage, as canonical JSON."""
    out: dict[str, str] = {}
    for record in read_results(path):
        results = record["results"]
        assert isinstance(results, dict)
        kept = {
            name: {k: v for k, v in entry.items() if k not in ("latency_s", "queue_s", "usage")}
            for name, entry in results.items()
            if isinstance(entry, dict)
        }
        out[str(record["id"])] = json.dumps([kept, record["aggregates"]], sort_keys=True)
    return out


class FirstLine:
    """Notes when a results file gets its first sample (polled), to split start-up from steady state."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.at: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.is_set() and self.at is None:
            if self.path.exists() and self.path.read_bytes().count(b"\n") > 1:  # the header, then a sample
                self.at = time.perf_counter()
            self._stop.wait(0.02)

    def __enter__(self) -> FirstLine:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.ray", description=__doc__.split("\n\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=10_000, help="samples (default 10,000)")
    parser.add_argument("--workers", type=int, default=2, help="Ray grading actors (default 2)")
    parser.add_argument("--limit", type=int, default=16, help="provider max_concurrency (default 16)")
    parser.add_argument(
        "--latency-s", type=float, default=0.01, help="judge latency in seconds (default 0.01)"
    )
    parser.add_argument("--cpus", type=int, default=os.cpu_count() or 2, help="CPUs of the local Ray cluster")
    args = parser.parse_args(argv)
    n, limit = args.n, args.limit
    ideal = math.ceil(n / limit) * args.latency_s
    print(
        f"{n:,} samples, provider max_concurrency {limit}, judge latency {args.latency_s * 1000:g} ms, "
        f"{os.cpu_count()} CPUs here; ideal {ideal:.2f} s"
    )
    ray = import_ray()
    with tempfile.TemporaryDirectory() as tmp, JudgeServerProcess(latency_s=args.latency_s) as server:
        folder = Path(tmp)
        config_path = folder / "job.yaml"
        config_path.write_text(JOB.format(base_url=server.base_url, limit=limit), encoding="utf-8")
        data = folder / "data.jsonl"
        write_samples(data, n)
        config = load_config(config_path)

        # Single process: what `openjudge run` does.
        job = build_job(config, source=str(config_path), use_cache=False)
        local_out = folder / "local.jsonl"
        server.reset_stats()
        started = time.perf_counter()
        local = anyio.run(lambda: run_job(config, job, data_path=data, out_path=local_out))
        local_s = time.perf_counter() - started
        local_peak = server.stats().peak_in_flight
        assert local.graded == n
        print(
            f"local engine:  {local_s:7.2f} s  {n / local_s:7.0f} samples/s  "
            f"peak in flight {local_peak} (limit {limit})  {local_s / ideal:.1f}x ideal"
        )

        # Ray: a local cluster; its start-up is reported apart.
        started = time.perf_counter()
        ray.init(
            num_cpus=args.cpus,
            include_dashboard=False,
            runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}},
        )
        ray_init_s = time.perf_counter() - started
        ray_out = folder / "ray.jsonl"
        server.reset_stats()
        try:
            with FirstLine(ray_out) as first:
                started = time.perf_counter()
                stats = grade_on_ray(config_path, data, ray_out, workers=args.workers, use_cache=False)
                ended = time.perf_counter()
        finally:
            ray.shutdown()
        ray_s = ended - started
        ray_stats = server.stats()
        assert stats.graded == n and ray_stats.chat_requests == n
        warmup = (first.at or ended) - started
        steady = n / max(ended - (first.at or started), 1e-9)
        share = plan_workers(config, args.workers).limits["judge"].max_concurrency
        print(
            f"ray engine:    {ray_s:7.2f} s  {n / ray_s:7.0f} samples/s  "
            f"peak in flight {ray_stats.peak_in_flight} (limit {limit}: {stats.workers} workers x {share})  "
            f"{ray_s / ideal:.1f}x ideal"
        )
        print(
            f"  ray start-up {ray_init_s:.2f} s (not counted), actors until the first result {warmup:.2f} s, "
            f"then {steady:.0f} samples/s"
        )
        print(f"ray / local throughput: {local_s / ray_s:.2f}x (steady state {steady * local_s / n:.2f}x)")
        same = scores(ray_out) == scores(local_out)
        print(
            f"results identical per id: {'yes' if same else 'NO'}; peak within limit: "
            f"{'yes' if ray_stats.peak_in_flight <= limit else 'NO'}"
        )


if __name__ == "__main__":
    main()
