"""Running ``openjudge`` as a user does (a subprocess, real files), shared by the command-line tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from openjudge.jobs._results import read_results

ROOT = Path(__file__).resolve().parents[2]

JOB = """
providers:
  judge: {{kind: openai, model: m, base_url: "{base_url}", api_key: sk-test, max_retries: 0}}
graders:
  quality:
    type: llm
    provider: judge
    params: {{template: "{template}", score_range: [1, 5]}}
{extra}cache: {{enabled: false}}
"""


def openjudge(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True", **(env or {})}
    done = subprocess.run(
        [sys.executable, "-m", "openjudge", *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def results(path: Path) -> dict[str, dict[str, dict[str, object]]]:
    out: dict[str, dict[str, dict[str, object]]] = {}
    for record in read_results(path):
        entries = record["results"]
        assert isinstance(entries, dict)
        out[str(record["id"])] = {
            name: dict(entry) for name, entry in entries.items() if isinstance(entry, dict)
        }
    return out


def write_samples(path: Path, n: int, directive: str = "") -> None:
    """``n`` samples; ``times=K`` fault budgets are per message, so each test's messages differ."""
    path.write_text(
        "".join(
            json.dumps({"id": f"s{i}", "answer": f"{path.parent.name} {i} {directive} #oj:score={1 + i % 5}"})
            + "\n"
            for i in range(n)
        ),
        encoding="utf-8",
    )
