"""The test environment is the locked one (requirements/test.txt), and drift is caught."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECK = ROOT / "scripts" / "check_env.py"
LOCK = ROOT / "requirements" / "test.txt"
TOOLS = ("pytest", "mypy", "ruff", "hypothesis", "respx", "trio", "pydantic", "anyio", "openai")


def _check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CHECK), *args], capture_output=True, text=True, check=False)


def _pins(lock: Path) -> dict[str, str]:
    pins = {}
    for line in lock.read_text(encoding="utf-8").splitlines():
        name, sep, pinned = line.partition("==")
        if sep and not line.startswith((" ", "#")):
            pins[name.lower()] = pinned.strip()
    return pins


def test_the_tools_the_suite_depends_on_are_the_locked_versions() -> None:
    pins = _pins(LOCK)
    assert {tool: version(tool) for tool in TOOLS} == {tool: pins[tool] for tool in TOOLS}


@pytest.mark.slow  # pip's view of every package (scripts/test.sh --fast runs the same check itself)
def test_the_whole_environment_matches_the_lock() -> None:
    run = _check(str(LOCK))
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("check_env: ") and "packages match test.txt" in run.stdout


def test_a_drifted_tool_fails_the_check_with_the_fix(tmp_path: Path) -> None:
    lock = tmp_path / "lock.txt"
    lock.write_text(f"pytest==0.0.1\n    # via -r x\nruff=={version('ruff')}\n", encoding="utf-8")
    run = _check(str(lock), "definitely-not-installed-pkg==1.0")
    assert run.returncode == 1
    lines = run.stderr.splitlines()
    assert f"  pytest: installed {version('pytest')}, lock 0.0.1" in lines
    assert "  definitely-not-installed-pkg: not installed (lock: 1.0)" in lines
    assert not any(line.startswith("  ruff") for line in lines)
    assert "bash scripts/test.sh" in run.stderr and "bash scripts/lock.sh" in run.stderr
