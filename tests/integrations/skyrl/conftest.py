"""Fixtures for the SkyRL tests: a slow judge server per module (they run against the real skyrl-gym)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from openjudge.testing.judge_server import JudgeServerProcess

try:
    import skyrl_gym  # type: ignore[import-untyped]  # noqa: F401  # the tests here use the real skyrl-gym
except ImportError as exc:  # pragma: no cover
    raise ImportError(
        "the SkyRL tests need skyrl-gym: run `bash scripts/test.sh` (it installs them)"
    ) from exc


@pytest.fixture(scope="module")
def judge_server() -> Iterator[JudgeServerProcess]:
    with JudgeServerProcess(latency_s=0.05) as server:
        yield server
