"""One test judge server for the whole session, as fresh as a new one for each test that uses it.

The server is a child process (:class:`~openjudge.testing.judge_server.JudgeServerProcess`),
so any event loop, thread, subprocess (``openjudge run``) or Ray actor can call it. Before
each test that uses it, directly or through another fixture, its counters are zeroed, its
``times`` fault budgets forgotten and its latency set to the ``judge_latency_s`` fixture's
(0 s; a folder or module that wants a slower judge overrides that fixture).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from openjudge.testing.judge_server import JudgeServerProcess

__all__ = ["fresh_judge_server", "judge_latency_s", "judge_server"]


@pytest.fixture(scope="session")
def judge_server() -> Iterator[JudgeServerProcess]:
    """The session's test judge server (started on first use)."""
    with JudgeServerProcess() as server:
        yield server


@pytest.fixture
def judge_latency_s() -> float:
    """Seconds the judge server waits before each reply in this test (override to change)."""
    return 0.0


@pytest.fixture(autouse=True)
def fresh_judge_server(request: pytest.FixtureRequest) -> None:
    """Reset the session's judge server before a test that uses it (and only then: no server otherwise)."""
    if "judge_server" not in request.fixturenames:
        return
    server: JudgeServerProcess = request.getfixturevalue("judge_server")
    latency_s: float = request.getfixturevalue("judge_latency_s")
    server.set_latency(latency_s, 0.0)
    server.reset_stats(faults=True)
