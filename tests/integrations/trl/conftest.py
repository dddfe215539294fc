"""Fixtures for the TRL tests: one judge server per module (they run against the real TRL)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from openjudge.testing.judge_server import JudgeServerProcess

try:
    import trl  # noqa: F401  # the tests in this folder run against the real TRL
except ImportError as exc:  # pragma: no cover
    raise ImportError(
        "the TRL tests need trl and torch: run `bash scripts/test.sh` (it installs them)"
    ) from exc


@pytest.fixture(scope="module")
def judge_server() -> Iterator[JudgeServerProcess]:
    with JudgeServerProcess(latency_s=0.0) as server:
        yield server
