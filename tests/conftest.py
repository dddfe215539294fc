"""Shared fixtures (tests/_fixtures), and the test tiers.

Tiers: ``bash scripts/test.sh`` runs everything (CI runs it); ``bash scripts/test.sh --fast``
is the edit-test loop: it leaves out the tests marked ``slow`` (real trainers, Ray, real
models, runs of thousands of samples, anything over a few seconds) and ``e2e`` (a real
llama.cpp server). A new test that needs more than a few seconds is marked
``@pytest.mark.slow`` (a module of them: ``pytestmark = pytest.mark.slow``).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests._fixtures.judge import fresh_judge_server, judge_latency_s, judge_server
from tests._fixtures.ray import ray_session, run_ray_tests_last

__all__ = ["fresh_judge_server", "judge_latency_s", "judge_server", "ray_session"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


_CACHE_HOMES = itertools.count()


@pytest.fixture(scope="session")
def _cache_homes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache-homes")


@pytest.fixture(autouse=True)
def _private_cache_home(_cache_homes: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Judge caches default to $XDG_CACHE_HOME; keep each test's out of the user's home.

    Numbered here rather than by ``mktemp``, which lists its folder on every call: over
    the whole suite that grew quadratic (about 5 s).
    """
    home = _cache_homes / str(next(_CACHE_HOMES))
    home.mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # trylast: after pytest's own ordering of fixtures by scope.
    run_ray_tests_last(items)
