"""Fixtures for the VERL tests: one judge server and one graders YAML per module, one Ray session."""

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


@pytest.fixture(scope="module")
def judge_server() -> Iterator[JudgeServerProcess]:
    with JudgeServerProcess(latency_s=0.005) as server:
        yield server


@pytest.fixture(scope="module")
def graders_yaml(judge_server: JudgeServerProcess, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.integrations.verl.helpers import write_graders_yaml

    return write_graders_yaml(tmp_path_factory.mktemp("graders"), judge_server.base_url, timeout_s=1.0)


ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="package")
def ray_session() -> Iterator[None]:
    """One local Ray session for every module here that runs VERL's actors (starting one costs seconds).

    8 logical CPUs on the 2-core machine: TransferQueue's actors hold one each. Modules
    stop the actors they start (``helpers.stop_actors``): VERL names its reward workers
    ``reward_loop_worker_<i>``, so a second ``RewardLoopManager`` needs the names free.
    """
    import ray

    ray.init(
        num_cpus=8,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}},
    )
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One model directory per session: VERL registers its function tools process-wide, once per name."""
    from tests.integrations.verl.agent_rig import write_model_dir

    return write_model_dir(tmp_path_factory.mktemp("model"))
