"""Two training processes (torchrun, gloo on CPU): a judge that fails on one node stops both, together.

TRL gathers every process's rewards after its reward functions return. Before, the
process whose failure rate tripped raised alone and the other waited in that gather
until the failed process died (or NCCL's timeout, half an hour, when it does not). Now
every process raises ``FailureRateExceeded`` at the same call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tests.integrations.trl.two_processes as script

pytestmark = pytest.mark.slow  # two real GRPOTrainer processes

ROOT = Path(__file__).resolve().parents[3]


def test_a_judge_failing_on_one_process_stops_every_process_at_the_same_step(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "OMP_NUM_THREADS": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    started = time.monotonic()
    subprocess.run(
        [*command, script.__file__, str(tmp_path)],
        env=env,
        cwd=ROOT,
        timeout=240,
        check=False,
        capture_output=True,
    )
    elapsed = time.monotonic() - started
    results = [json.loads((tmp_path / f"rank{r}.json").read_text(encoding="utf-8")) for r in (0, 1)]

    for result in results:
        assert result["error"] == "FailureRateExceeded"
        assert "4 of the last 4 samples failed" in result["message"]  # process 1's judge, named on both
        assert result["step"] == 0  # stopped at the first batch: nothing was trained on
    assert results[0]["notes"] == [
        "openjudge: raised by training process 1; every process stops at this step"
    ]
    assert results[1]["notes"] == []
    # Process 0 did not wait for process 1 to die (it lingers up to 60 s once it has raised).
    assert results[0]["seconds"] < script.LINGER_S / 2
    assert elapsed < script.LINGER_S + 60
