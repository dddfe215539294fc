"""examples/trl_grpo_cpu/ in CI: a real GRPO run on CPU with openjudge rewards, and a judge outage.

Three steps of TRL 1.16's ``GRPOTrainer`` with SmolLM2-135M-Instruct as the policy (6
completions of up to 16 tokens a step) and as the judge behind llama.cpp's server, which the
example stops for step 2. The run is a subprocess (TRL and accelerate keep process state);
its JSON log says what TRL logged. Without the model's wheel or llama.cpp's server the test
fails with the reason: it never skips.

One thread per component (torch, llama.cpp), so that a busy machine cannot stall two torch
threads waiting on each other. Measured on 2 cores (the run alone, without pytest): 28 s at
load 1 and 45 s at load 4 to 6; the former run (8 completions of up to 32 tokens, 2 threads)
took 30 s at load 1 but 326 s at load 5 to 7 and 14 minutes at load 16, and these smaller
steps with 2 threads 145 s at load 5.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import real_model

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "trl_grpo_cpu" / "train.py"


def test_grpo_steps_with_openjudge_rewards_survive_a_judge_outage(tmp_path: Path) -> None:
    try:
        real_model.smollm2_gguf()
        import llama_cpp.server  # noqa: F401  # the judge's server
    except (FileNotFoundError, ImportError) as exc:
        pytest.fail(f"the real GRPO run needs {real_model.WHEEL} and llama-cpp-python[server]: {exc}")
    log_path = tmp_path / "run.json"
    command = [
        sys.executable, str(EXAMPLE), "--steps", "3", "--outage-step", "2", "--threads", "1",
        "--generations", "3", "--max-completion-length", "16",
    ]  # fmt: skip
    done = subprocess.run(
        [*command, "--out", str(tmp_path / "out"), "--log", str(log_path)],
        env={**os.environ, "XDG_CACHE_HOME": str(real_model.CACHE_HOME)},  # the machine's GGUF copy
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    log = json.loads(log_path.read_text(encoding="utf-8"))
    steps = {record["step"]: record for record in log["steps"]}
    assert sorted(steps) == [1, 2, 3] and log["outage_steps"] == [2]
    for step, record in steps.items():
        logged = record["logged"]
        assert 0.0 < record["reward_share"] < 1.0
        # The per-grader functions judge each completion together: the math grader never fails
        # by itself, only where the judge's breaker stopped the whole completion (not called).
        assert logged["openjudge/math/failed"] <= logged["openjudge/judge/failed"]
        assert set(record["errors"]["math"]) <= {"circuit_open"}
        if logged["rewards/math/mean"] is not None:
            # TRL's reward, which its advantages are computed from, is the sum of the functions'
            # rewards over the completions both scored (a failed one is None in every column).
            assert 0.0 <= logged["rewards/math/mean"] <= 1.0
            assert logged["reward"] == pytest.approx(
                logged["rewards/math/mean"] + logged["rewards/judge/mean"], abs=1e-3
            )
        if step == 2:  # the judge is down: every completion's judging failed, so no column has a value
            assert logged["openjudge/judge/failed"] == 1.0 and logged["openjudge/math/failed"] == 0.0
            assert logged["rewards/judge/mean"] is None and logged["rewards/math/mean"] is None
            # Five connection failures in a row open the breaker: the rest fail fast, without a call.
            kinds = record["errors"]["judge"]
            assert kinds["provider_error"] >= 5 and sum(kinds.values()) == 6, kinds
            assert set(kinds) <= {"provider_error", "circuit_open"}
        else:  # the judge is up (at step 3 its breaker lets one probe through): scores in [0, 1]
            assert logged["openjudge/judge/failed"] < 1.0
            assert logged["rewards/judge/mean"] is not None and 0.0 <= logged["rewards/judge/mean"] <= 1.0
    assert "connection failed" in done.stderr  # the outage's first failure, logged at WARNING
