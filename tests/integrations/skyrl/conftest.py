"""The SkyRL tests run against the real skyrl-gym, with a judge slow enough for calls to overlap."""

from __future__ import annotations

import pytest

try:
    import skyrl_gym  # type: ignore[import-untyped]  # noqa: F401  # the tests here use the real skyrl-gym
except ImportError as exc:  # pragma: no cover
    raise ImportError(
        "the SkyRL tests need skyrl-gym: run `bash scripts/test.sh` (it installs them)"
    ) from exc


@pytest.fixture
def judge_latency_s() -> float:
    """A judge slow enough for calls to overlap (the session's judge server, tests/_fixtures/judge.py)."""
    return 0.05
