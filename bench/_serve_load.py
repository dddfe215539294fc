"""The reward server's load test for bench/rewards.py: ``openjudge serve`` against ``openjudge run``.

One server process (``python -m openjudge serve``) serves every round. A round sends
``requests`` OpenRLHF requests of one sample each (as OpenRLHF's client sends them) from this
process, ``concurrency`` at once, each retried after ``Retry-After`` on a 429 up to 5 times
(OpenRLHF's client tries 5 times): a request with no reward after that is *lost*. The
server's CPU over the round (its process and children, from ``/proc``) per reward is
compared with ``openjudge run``'s CPU per sample on the same samples and graders (a child
process, from ``getrusage``), less what a one-sample run spends (interpreter start-up,
imports, reading the config), so both sides count grading and their own overhead only.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import aiohttp

__all__ = ["CONFIG", "Load", "Server", "run_cpu_per_sample", "send_load"]

ROOT = Path(__file__).resolve().parents[1]

CONFIG = """\
version: 1
graders:
  correct:
    type: math_answer_equivalence
    mapper: {response: response, reference: label}
  format:
    type: reasoning_format
aggregators:
  - type: weighted_mean
    name: reward
    weights: {correct: 3, format: 1}
"""
"""The graders of both sides: numeric math (``\\boxed{k}`` against ``k``) and the think/answer format."""


def samples(n: int, seed: int) -> list[dict[str, str]]:
    """``n`` samples, right and wrong, formatted and not (fresh numbers per seed)."""
    out = []
    for i in range(n):
        k = seed * 1_000_003 + i
        answer = k if i % 3 else k + 1
        response = (
            f"<think>{k} it is</think><answer>\\boxed{{{answer}}}</answer>"
            if i % 5
            else f"\\boxed{{{answer}}}"
        )
        out.append({"prompt": f"Q{k}: what is {k}?", "response": response, "label": str(k)})
    return out


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    env.pop("OPENJUDGE_SERVE_TOKEN", None)
    return env


def process_tree_cpu(pid: int) -> float:
    """CPU seconds of process ``pid`` and its live children (``/proc``; Linux only)."""
    pids = [str(pid)]
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as listing:
            pids += listing.read().split()
    ticks = 0
    for p in pids:
        with suppress(FileNotFoundError, ProcessLookupError), open(f"/proc/{p}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])  # own + reaped
    return ticks / os.sysconf("SC_CLK_TCK")


class Server:
    """``openjudge serve`` in a child process, on a free port of 127.0.0.1."""

    def __init__(self, config: Path, *, max_pending: int) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "openjudge",
                "serve",
                str(config),
                "--port",
                "0",
                "--max-pending",
                str(max_pending),
            ],
            stdout=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if "listening on" not in line:
            self.close()
            raise RuntimeError(f"openjudge serve did not start: {line!r}")
        self.url = line.split()[-1]

    def cpu(self) -> float:
        return process_tree_cpu(self.process.pid)

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


@dataclass(frozen=True)
class Load:
    """One round of the load test."""

    requests: int
    concurrency: int
    lost: int
    busy: int  # 429s answered (then retried)
    wall_s: float
    server_cpu_s: float
    latencies_s: list[float]

    @property
    def p50_ms(self) -> float:
        return statistics.median(self.latencies_s) * 1e3

    @property
    def p99_ms(self) -> float:
        return statistics.quantiles(self.latencies_s, n=100)[98] * 1e3


async def send_load(server: Server, batch: list[dict[str, str]], concurrency: int) -> Load:
    """Send each sample as one OpenRLHF request, ``concurrency`` at once."""
    latencies: list[float] = []
    busy = 0
    queue = iter(batch)

    async def client(session: aiohttp.ClientSession) -> None:
        nonlocal busy
        for sample in queue:
            body = {
                "query": [sample["prompt"] + sample["response"]],
                "prompts": [sample["prompt"]],
                "labels": [sample["label"]],
            }
            start = time.perf_counter()
            for _ in range(5):  # OpenRLHF's client tries 5 times
                try:
                    async with session.post(f"{server.url}/get_reward", json=body) as response:
                        if response.status == 429:
                            busy += 1
                            await asyncio.sleep(float(response.headers.get("Retry-After", "1")))
                            continue
                        answer = await response.json()
                except aiohttp.ClientError:
                    await asyncio.sleep(1)
                    continue
                if response.status == 200 and len(answer["rewards"]) == 1:
                    latencies.append(time.perf_counter() - start)
                break  # answered (a reward, or an error that a retry would repeat)

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(
        connector=connector, timeout=aiohttp.ClientTimeout(total=180)
    ) as session:
        cpu0, start = server.cpu(), time.perf_counter()
        await asyncio.gather(*(client(session) for _ in range(concurrency)))
        wall, cpu = time.perf_counter() - start, server.cpu() - cpu0
    answered = len(latencies)
    return Load(len(batch), concurrency, len(batch) - answered, busy, wall, cpu, latencies)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run_cpu(config: Path, batch: list[dict[str, str]]) -> tuple[float, float]:
    """CPU seconds and wall seconds of ``openjudge run`` over ``batch``."""
    with tempfile.TemporaryDirectory() as directory:
        data = Path(directory) / "data.jsonl"
        data.write_text("".join(json.dumps(s) + "\n" for s in batch), encoding="utf-8")
        before, start = _children_cpu(), time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "openjudge",
                "run",
                str(config),
                "--data",
                str(data),
                "--out",
                str(Path(directory) / "results.jsonl"),
                "--no-progress",
            ],
            check=True,
            env=_env(),
            stdout=subprocess.DEVNULL,
        )
        return _children_cpu() - before, time.perf_counter() - start


def run_cpu_per_sample(config: Path, batch: list[dict[str, str]]) -> tuple[float, float]:
    """``openjudge run``'s CPU seconds per sample over ``batch`` and samples per second, less
    what a one-sample run spends (start-up, imports, the config)."""
    base_cpu, base_wall = _run_cpu(config, batch[:1])
    cpu, wall = _run_cpu(config, batch)
    n = len(batch) - 1
    return max(cpu - base_cpu, 0.0) / n, n / max(wall - base_wall, 1e-9)
