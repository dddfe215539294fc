"""Failures are visible where a VERL user looks, on VERL 0.9.1's V1 trainer (VERL's own code).

* **Rollout dumps** (``trainer.rollout_data_dir``): VERL's ``_log_rollout_data`` writes
  ``<dir>/<step>.jsonl`` with ``uid`` as its only extra column (it reads no
  ``extra_fields``); the openjudge replay buffer writes ``<dir>/openjudge/<step>.jsonl``
  beside it, one row per trajectory with the same ``uid`` and every failure key.
* **Validation on the colocated reward-model path**: VERL's ``_validate`` reads
  ``extra_fields["reward_extra_info"]`` while ``_compute_reward_colocate`` writes the
  manager's keys as fields of their own; the manager also returns an ``extra_fields`` key
  there, so VERL's validation metrics carry ``openjudge/failed``.

Runs VERL's ``fit()`` / ``_validate()`` through ``trainer_rig`` (which lists what is scripted).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from openjudge.testing.judge_server import JudgeServerProcess
from tests.integrations.verl import fake_tq
from tests.integrations.verl.trainer_rig import BATCH, N, graders_yaml, ray_get_identity, verl_run

pytestmark = pytest.mark.slow  # real VERL managers and trainers (seconds per test)


@pytest.fixture
def store() -> Iterator[fake_tq.Store]:
    with fake_tq.installed() as s:
        yield s


def read_jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_v1_rollout_dumps_get_the_failure_keys_beside_vERL_s(
    store: fake_tq.Store, model_dir: Path, tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    dumps = tmp_path / "dumps"
    graders = graders_yaml(tmp_path, judge_server.base_url, fail_first=3, tag="dumps")
    overrides = (
        "+reward.openjudge.on_failure=neutral",  # failed samples stay in the batch (flagged)
        "+reward.openjudge.breaker_failures=0",
        f"trainer.rollout_data_dir={dumps}",
        "+trainer.v1.sampler.sampler_kwargs.rollout_data_dir=${trainer.rollout_data_dir}",
    )
    with verl_run("sync", model_dir, graders, *overrides) as run:
        run.fit()
    ours = {step: read_jsonl(dumps / "openjudge" / f"{step}.jsonl") for step in (1, 2, 3)}
    for step, rows in ours.items():
        verl_rows = read_jsonl(dumps / f"{step}.jsonl")  # written by VERL's _log_rollout_data
        assert [r["uid"] for r in rows] == [r["uid"] for r in verl_rows]
        assert len(rows) == BATCH * N and all(r["step"] == step for r in rows)
    flat = [r for rows in ours.values() for r in rows]
    assert sum(float(str(r["openjudge/failed"])) for r in flat) == 3.0
    assert sorted(str(r["openjudge/quality/error_kind"]) for r in flat)[-3:] == ["provider_error"] * 3


def test_v1_colocated_validation_metrics_carry_the_failure_keys(
    store: fake_tq.Store, model_dir: Path, tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    graders = graders_yaml(tmp_path, judge_server.base_url, fail_first=1, tag="colocated-val")
    overrides = ("actor_rollout_ref.rollout.val_kwargs.n=2", "+reward.openjudge.breaker_failures=0")
    with (
        verl_run("sync", model_dir, graders, *overrides, colocated=True) as run,
        ray_get_identity(),
    ):
        run.trainer.global_steps = 1
        metrics = run.trainer._validate()  # VERL's: agent loop, buffer, compute_rm_score, metrics
    assert metrics["val-aux/weather/openjudge/failed/mean@2"] == 0.5  # one of the two samples
    assert metrics["val-aux/weather/openjudge/quality/error/mean@2"] == 0.5
    assert "val-core/weather/reward/mean@2" in metrics  # VERL's own, beside ours
