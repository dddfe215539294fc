"""``openjudge serve`` as a process: it listens, answers, stops on SIGTERM; and what it refuses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from openjudge.integrations.serve import TOKEN_ENV
from tests.integrations.serve.helpers import RIGHT, RULES_YAML, write_yaml

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow  # fresh interpreters


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_serve_listens_answers_and_stops_on_sigterm(tmp_path: Path) -> None:
    config = write_yaml(tmp_path, RULES_YAML)
    with subprocess.Popen(
        [sys.executable, "-m", "openjudge", "serve", config, "--port", "0", "--max-pending", "8"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    ) as process:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("openjudge serve: listening on http://127.0.0.1:"), line
        url = line.split()[-1]
        with urllib.request.urlopen(f"{url}/health", timeout=10) as response:
            assert json.load(response)["max_pending"] == 8
        request = urllib.request.Request(
            f"{url}/get_reward",
            data=json.dumps({"query": ["Q" + RIGHT], "prompts": ["Q"], "labels": ["2"]}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert json.load(response)["rewards"] == [1.0]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0


def test_serve_refuses_to_listen_beyond_localhost_without_a_token(tmp_path: Path) -> None:
    config = write_yaml(tmp_path, RULES_YAML)
    done = subprocess.run(
        [sys.executable, "-m", "openjudge", "serve", config, "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert done.returncode == 1
    assert "error: openjudge serve: host '0.0.0.0' is reachable from other machines" in done.stderr
    assert TOKEN_ENV in done.stderr


def test_serve_names_a_missing_config(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "openjudge", "serve", str(tmp_path / "nope.yaml")],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert done.returncode == 1 and "nope.yaml" in done.stderr


def test_the_cli_loads_the_server_only_when_serve_runs() -> None:
    code = (
        "import sys, openjudge.cli._main as m; m._parser(); "
        "print(sorted(n for n in sys.modules if n.startswith(('openjudge.integrations', 'prometheus_client'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=60
    )
    assert done.stdout.strip() == "[]", done.stderr


def test_replicas_need_a_fixed_port(tmp_path: Path) -> None:
    config = write_yaml(tmp_path, RULES_YAML)
    done = subprocess.run(
        [sys.executable, "-m", "openjudge", "serve", config, "--replicas", "2", "--port", "0"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert done.returncode == 1 and "a fixed --port" in done.stderr
