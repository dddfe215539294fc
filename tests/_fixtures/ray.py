"""One local Ray session for every test that needs Ray, started once and only for them.

Starting Ray costs seconds, and a running Ray changes what other code does (the VERL
failure ledger becomes a Ray actor when Ray is up). So the tests that use ``ray_session``
run last, in their collected order (:func:`run_ray_tests_last`), and Ray starts at the
first of them and stops at the end of the session.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["ray_session", "run_ray_tests_last"]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def ray_session() -> Iterator[None]:
    """A local Ray instance whose workers import this checkout.

    8 logical CPUs on the 2-core machine: TransferQueue's actors (the VERL tests) hold one
    each. Modules stop the actors they start: VERL names its reward workers
    ``reward_loop_worker_<i>``, so a second ``RewardLoopManager`` needs the names free.
    """
    ray = pytest.importorskip("ray", reason="needs Ray: pip install -e '.[ray]'")
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


def run_ray_tests_last(items: list[pytest.Item]) -> None:
    """Move the tests that use ``ray_session`` to the end, keeping every other order."""
    items.sort(key=lambda item: "ray_session" in getattr(item, "fixturenames", ()))
