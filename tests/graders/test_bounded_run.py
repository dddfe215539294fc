"""`openjudge run` with graders stuck on hostile input: runner.timeout_s stops them, SIGTERM ends the run.

Each grader below would otherwise run for hours: a submission in an endless loop, a
backtracking regular expression, a JSON Schema pattern RE2 cannot run, an edit distance
of two long unrelated texts. Their own budgets are set to ten minutes, so only the
runner's timeout or the signal can stop them.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .code._support import is_running

pytestmark = pytest.mark.slow  # runs stopped by timeouts and SIGTERM wait them out (5 s each)

ROOT = Path(__file__).resolve().parents[2]
MARKER = "openjudge-busy-marker"
CONFIG = """
version: 1
graders:
  code:
    type: code_execution
    params: {{timeout_s: 600, cpu_time_s: 600}}
    mapper: {{response: code, test_cases: tests}}
  regex:
    type: string_match
    params: {{match_mode: regex, regex_timeout_s: 600}}
    mapper: {{response: text, reference: pattern}}
  schema:
    type: json_schema
    params: {{schema: {{type: string, pattern: "^(a+)+(?<=a)$"}}, timeout_s: 600}}
    mapper: {{response: json_text}}
  similarity:
    type: similarity
    params: {{metric: edit_distance, timeout_s: 600}}
    mapper: {{response: long_a, reference: long_b}}
runner: {{max_concurrency: 8, timeout_s: {timeout_s}}}
"""
GRADERS = ("code", "regex", "schema", "similarity")


def write_job(tmp_path: Path, timeout_s: float) -> list[str]:
    rng = random.Random(0)
    record = {
        "id": "busy-1",
        "code": f"# {MARKER}\nwhile True:\n    pass\n",
        "tests": [{"output": "1"}],
        "text": "a" * 40 + "!",
        "pattern": r"^(a+)+(?<=a)$",
        "json_text": json.dumps("a" * 40 + "!"),
        "long_a": "".join(rng.choice("abcdefgh") for _ in range(150_000)),
        "long_b": "".join(rng.choice("abcdefgh") for _ in range(150_000)),
    }
    (tmp_path / "config.yaml").write_text(CONFIG.format(timeout_s=timeout_s), encoding="utf-8")
    (tmp_path / "data.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    config, data = tmp_path / "config.yaml", tmp_path / "data.jsonl"
    return [
        sys.executable,
        "-m",
        "openjudge",
        "run",
        str(config),
        "--data",
        str(data),
        "--out",
        str(out),
        "--no-progress",
    ]


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def leftovers() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if MARKER.encode() in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def start(argv: list[str]) -> tuple[subprocess.Popen[bytes], float]:
    """Start the run and wait until its graders are at work (a sandbox and workers exist)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 90
    while len(children_of(proc.pid)) < 3 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    return proc, time.monotonic()


@pytest.mark.slow
def test_runner_timeout_stops_every_grader(tmp_path: Path) -> None:
    timeout = 2.0
    proc, working = start(write_job(tmp_path, timeout))
    _, stderr = proc.communicate(timeout=120)
    # Every call failed (as timeouts), so the run says so and exits 3.
    assert proc.returncode == 3, stderr.decode()
    assert "the first: code: timeout" in stderr.decode()
    assert time.monotonic() - working < timeout + 2.0 + 3.0  # + the run's own start and finish
    _header, line = (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()
    results = json.loads(line)["results"]
    assert {name: (results[name]["type"], results[name]["kind"]) for name in GRADERS} == dict.fromkeys(
        GRADERS, ("error", "timeout")
    )
    time.sleep(0.3)
    assert leftovers() == []


@pytest.mark.slow
def test_sigterm_ends_the_run_within_seconds(tmp_path: Path) -> None:
    proc, _ = start(write_job(tmp_path, 300.0))
    time.sleep(1.0)  # every grader is now deep in its work
    helpers = children_of(proc.pid)
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert time.monotonic() - sent < 5.0
    assert proc.returncode == 130  # interrupted: rerun to resume
    time.sleep(0.3)
    assert leftovers() == []
    assert [pid for pid in helpers if is_running(pid)] == []  # sandboxes and worker processes are gone
