"""Discovery without patching VERL: the ``verl.plugins`` entry point, in a fresh process.

The process imports our modules before VERL (see ``entry_point_driver``): registration
must not depend on the import order, and nothing may be logged as an error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # fresh interpreters importing VERL (seconds each)

ROOT = Path(__file__).resolve().parents[3]


def test_the_entry_point_is_installed() -> None:
    found = {ep.name: ep.value for ep in entry_points(group="verl.plugins")}
    assert found.get("openjudge") == "openjudge.integrations.verl.plugin", (
        "reinstall the package (pip install -e .) so its verl.plugins entry point is registered"
    )


def test_fresh_process_finds_openjudge_by_name_whatever_was_imported_first(graders_yaml: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-m", "tests.integrations.verl.entry_point_driver", str(graders_yaml)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {
        "verl_after_rows": False,
        "loaded_with_the_manager": {"verl": True, "torch": True},
        "errors_logged": [],
        "agent_loop": {"_target_": "openjudge.integrations.verl.agent_loop.OpenJudgeToolAgentLoop"},
        "class": "openjudge.integrations.verl._reward_loop.OpenJudgeRewardManager",
        "registry": True,
        "rewards": [0.75, 0.25, -1.0],
        "kinds": ["", "", "provider_error"],
    }
    assert "circular import" not in proc.stderr
