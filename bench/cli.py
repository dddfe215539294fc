"""`openjudge run` over a generated 100,000-sample dataset: peak RSS and throughput.

    python -m bench.cli [N]

Runs the real CLI in a child process (rule graders, so no judge is needed) and reads
the child's peak RSS and CPU time from the kernel. Target: <= 250 MB however large the
dataset. The CPU time (user + system) is the figure to compare between versions on a
shared machine: wall time moves with the load average, CPU time much less.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from openjudge.jobs._results import read_results

CONFIG = """
graders:
  loops: {type: action_loop_detection}
  gain: {type: observation_information_gain}
  answer:
    type: string_match
    params: {match_mode: normalized}
    mapper: {response: response, reference: answer}
aggregators:
  - {type: weighted_mean, name: reward}
runner: {max_concurrency: 64}
"""


def sample(i: int) -> dict[str, object]:
    messages: list[dict[str, object]] = [{"role": "user", "content": f"Find fact number {i}."}]
    for k in range(3):
        call = {
            "id": f"c{k}",
            "type": "function",
            "function": {"name": "search", "arguments": json.dumps({"q": f"fact {i} {k}"})},
        }
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        messages.append(
            {"role": "tool", "tool_call_id": f"c{k}", "content": f"Fact {i} part {k}: the value is {i * k}."}
        )
    messages.append({"role": "assistant", "content": f"The answer is {i}."})
    return {
        "id": f"s{i}",
        "messages": messages,
        "response": f"The answer is {i}.",
        "answer": f"the answer is {i}",
    }


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data = root / "data.jsonl"
        with data.open("w", encoding="utf-8") as f:
            for i in range(n):
                f.write(json.dumps(sample(i)) + "\n")
        (root / "job.yaml").write_text(CONFIG, encoding="utf-8")
        started = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "openjudge",
                "run",
                str(root / "job.yaml"),
                "--data",
                str(data),
                "--out",
                str(root / "results.jsonl"),
                "--no-progress",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        wall = time.perf_counter() - started
        lines = sum(1 for _ in read_results(root / "results.jsonl"))
        size_mb = data.stat().st_size / 2**20
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak_mb = usage.ru_maxrss / 1024
    cpu = usage.ru_utime + usage.ru_stime
    assert lines == n, f"{lines} results for {n} samples"
    print(
        f"dataset: {n:,} samples, {size_mb:.0f} MB; graded in {wall:.1f} s ({n / wall:,.0f} samples/s, 3 rule graders); "
        f"CPU {cpu:.1f} s ({cpu / n * 1e6:.0f} us per sample); load average {os.getloadavg()[0]:.1f}"
    )
    verdict = "MET" if peak_mb <= 250 else "NOT MET"
    print(f"openjudge run peak RSS: {peak_mb:.0f} MB (target <= 250 MB) {verdict}")


if __name__ == "__main__":
    main()
