"""Judge failures per training step, in VERL's V1 training metrics.

VERL's training metrics are computed from tensors; ``reward_extra_info`` reaches only
validation metrics and rollout dumps. The V1 trainer merges whatever its replay buffer's
``sample()`` returns into the step's metrics, so these ``ReplayBuffer`` subclasses add,
for every sampled batch::

    training/openjudge/samples                 trajectories in the batch
    training/openjudge/failed                  of which rewarded with fallback_score
    training/openjudge/group/failed            of which given a neutral or fallback group reward
    training/openjudge/<grader>/error          of which that grader failed
    training/openjudge/groups_with_dropped     prompt groups missing a dropped member

Select with ``trainer.v1.sampler.custom_sampler.path=pkg://openjudge.integrations.verl.sampler``
and ``trainer.v1.sampler.custom_sampler.name=OpenJudgeReplayBuffer`` (sync trainer) or
``OpenJudgeReplayBufferAsync`` (``colocate_async`` / ``separate_async``). VERL gives a
custom sampler no DAPO settings: its ``algorithm.filter_groups`` does not apply with one.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from openjudge.integrations.verl.keys import FAILED_KEY, GROUP_FAILED_KEY, KEY_PREFIX, as_float

try:
    from verl.trainer.ppo.v1 import replay_buffer as _verl_replay_buffer
    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer, ReplayBufferAsync
except ImportError as exc:  # pragma: no cover - exercised only without VERL's V1 stack
    raise ImportError(
        f"openjudge.integrations.verl.sampler needs VERL's V1 trainer (verl>=0.9 and TransferQueue): {exc}"
    ) from exc

__all__ = ["OpenJudgeReplayBuffer", "OpenJudgeReplayBufferAsync", "failure_metrics"]


def failure_metrics(reward_infos: list[dict[str, Any]], prefix: str) -> dict[str, float]:
    """Counts of failed samples and grader errors among ``reward_infos``."""
    counts: Counter[str] = Counter()
    for info in reward_infos:
        counts["samples"] += 1
        for key, value in info.items():
            number = as_float(value)
            if number is None or not key.startswith(KEY_PREFIX):
                continue
            if key in (FAILED_KEY, GROUP_FAILED_KEY) or key.endswith("/error"):
                counts[key.removeprefix(KEY_PREFIX)] += int(number)
    return {f"{prefix}/openjudge/{name}": float(count) for name, count in counts.items()}


class _FailureMetrics:
    failure_keys: dict[str, set[str]]

    def sample(self, global_steps: int, partition_id: str, batch_size: int) -> tuple[Any, dict[str, Any]]:
        batch, metrics = super().sample(global_steps, partition_id, batch_size)  # type: ignore[misc]  # the VERL base comes second in the MRO
        prefix = "training" if partition_id == "train" else "validation"
        keys = [k for k, tag in zip(batch.keys, batch.tags, strict=True) if not tag.get("is_padding", False)]
        infos: list[dict[str, Any]] = []
        if keys:
            tq: Any = getattr(_verl_replay_buffer, "tq")  # noqa: B009  # the TransferQueue client VERL's buffer uses
            data = tq.kv_batch_get(keys=keys, partition_id=partition_id, select_fields=["extra_fields"])
            for value in data["extra_fields"]:
                fields = getattr(value, "data", value)
                info = fields.get("reward_extra_info", {}) if isinstance(fields, dict) else {}
                infos.append(info if isinstance(info, dict) else {})
        out = dict(metrics)
        out.update(failure_metrics(infos, prefix))
        sampled = {key.split("_")[0] for key in batch.keys}
        out[f"{prefix}/openjudge/groups_with_dropped"] = float(len(sampled & self.failure_keys[partition_id]))
        return batch, out


class OpenJudgeReplayBuffer(_FailureMetrics, ReplayBuffer):
    """VERL's sync ``ReplayBuffer`` plus openjudge failure counts in each step's metrics."""


class OpenJudgeReplayBufferAsync(_FailureMetrics, ReplayBufferAsync):
    """VERL's async ``ReplayBufferAsync`` plus openjudge failure counts in each step's metrics."""
