"""Failed validation samples on VERL 0.9.1's V1 trainer (its own ``_validate``, through ``trainer_rig``).

* **The group size of the batch being scored** (``neutral``): a validation prompt has
  ``val_kwargs.n`` members (default 1), not ``rollout.n``. VERL sends a reward worker
  neither the phase nor the size; the openjudge replay buffer, which VERL's ``_validate``
  asks for the validation batch, tells the ledger which prompts are validation prompts, so
  a failed sample's wait for its group ends when the validation group is in (a group of
  one at once), instead of waiting ``neutral_wait_s`` for siblings that do not exist.
* **Dropped validation samples are reported** (``drop``): VERL's validation metrics are
  computed over the trajectories that were scored; the buffer counts the dropped ones,
  logs them, and reports them with the next training step.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from openjudge.testing.judge_server import JudgeServerProcess
from tests.integrations.verl import fake_tq
from tests.integrations.verl.trainer_rig import graders_yaml, verl_run

pytestmark = pytest.mark.slow  # real VERL managers and trainers (seconds per test)


@pytest.fixture
def store() -> Iterator[fake_tq.Store]:
    with fake_tq.installed() as s:
        yield s


@pytest.mark.parametrize("val_n", [1, 2])
def test_a_failed_validation_sample_waits_for_its_validation_group_not_rollout_n(
    store: fake_tq.Store,
    model_dir: Path,
    tmp_path: Path,
    judge_server: JudgeServerProcess,
    caplog: pytest.LogCaptureFixture,
    val_n: int,
) -> None:
    graders = graders_yaml(tmp_path, judge_server.base_url, fail_first=1, tag=f"val-size-{val_n}")
    overrides = (
        "+reward.openjudge.on_failure=neutral",
        "+reward.openjudge.breaker_failures=0",
        "+reward.openjudge.neutral_wait_s=5",  # a wait for rollout.n would end here, with no mean
        "actor_rollout_ref.rollout.n=4",
        f"actor_rollout_ref.rollout.val_kwargs.n={val_n}",
    )
    with verl_run("sync", model_dir, graders, *overrides) as run:
        run.trainer.global_steps = 1
        metrics = run.trainer._validate()  # VERL's: agent loop, reward loop, our buffer, its metrics
    # The failed sample is in VERL's metrics, neutral: kept and flagged, not dropped for want of siblings.
    assert metrics[f"val-aux/weather/openjudge/failed/mean@{val_n}"] == pytest.approx(1 / val_n)
    assert "its mean is unknown" not in caplog.text
    if val_n == 2:  # the failed member has its sibling's reward: the prompt's mean is the judge's
        assert metrics["val-aux/weather/openjudge/quality/error/mean@2"] == 0.5
        assert metrics["val-core/weather/reward/mean@2"] == pytest.approx(0.5)  # quality 3 of 1..5


def test_dropped_validation_samples_are_reported_with_the_next_step(
    store: fake_tq.Store,
    model_dir: Path,
    tmp_path: Path,
    judge_server: JudgeServerProcess,
    caplog: pytest.LogCaptureFixture,
) -> None:
    graders = graders_yaml(tmp_path, judge_server.base_url, fail_first=1, tag="val-drop")
    overrides = (
        "+reward.openjudge.breaker_failures=0",  # drop, the sync trainer's default
        "actor_rollout_ref.rollout.val_kwargs.n=2",
        "trainer.val_before_train=True",
    )
    with verl_run("sync", model_dir, graders, *overrides) as run:
        run.fit()
    assert "1 validation trajectories could not be scored and were dropped" in caplog.text
    first = run.steps[0]  # VERL's _validate keeps none of its sampler's metrics: the next step carries them
    assert (first["validation/openjudge/dropped"], first["validation/openjudge/trajectories"]) == (1.0, 1.0)
    assert all("validation/openjudge/dropped" not in step for step in run.steps[1:])
