"""Fixtures for the VERL tests: a judge a little slower than the default, one graders YAML per module.

The judge server and the Ray session are the suite's (tests/_fixtures).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from openjudge.testing.judge_server import JudgeServerProcess

try:
    import verl  # noqa: F401  # the tests in this folder run against the real VERL
except ImportError as exc:  # pragma: no cover
    raise ImportError("the VERL tests need verl 0.9.1 and torch: run `bash scripts/install-verl.sh`") from exc


@pytest.fixture(autouse=True)
def fresh_ledger() -> Iterator[None]:
    """Each test is a new run for the process's failure ledgers (:mod:`openjudge.integrations.verl._ledger`)."""
    from openjudge.integrations.verl._ledger import reset_run_ledgers

    reset_run_ledgers()
    yield
    reset_run_ledgers()


@pytest.fixture
def judge_latency_s() -> float:
    return 0.005


@pytest.fixture(scope="module")
def graders_yaml(judge_server: JudgeServerProcess, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.integrations.verl.helpers import write_graders_yaml

    return write_graders_yaml(tmp_path_factory.mktemp("graders"), judge_server.base_url, timeout_s=1.0)


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One model directory per session: VERL registers its function tools process-wide, once per name."""
    from tests.integrations.verl.agent_rig import write_model_dir

    return write_model_dir(tmp_path_factory.mktemp("model"))
