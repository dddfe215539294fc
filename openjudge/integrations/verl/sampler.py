"""Judge failures per training step, in VERL's V1 training metrics.

VERL's training metrics are computed from tensors; ``reward_extra_info`` reaches only
validation metrics and rollout dumps. The V1 trainer merges whatever its replay buffer's
``sample()`` returns into the step's metrics, so these ``ReplayBuffer`` subclasses add,
for every sampled batch::

    training/openjudge/samples                 trajectories in the batch
    training/openjudge/failed                  of which rewarded with fallback_score
    training/openjudge/group/failed            of which given a neutral or fallback group reward
    training/openjudge/<grader>/error          of which that grader failed
    training/openjudge/groups_with_dropped     prompt groups trained without a dropped member (sync)
    training/openjudge/run/{samples,failed,blocked}   the run's totals, across every reward worker

Dropped groups of the async trainers are evicted before selection: VERL counts them as
``training/rollout_failure/evicted_samples``.

**Rollout dumps.** VERL's V1 dump (``trainer.rollout_data_dir``) has no ``reward_extra_info``
column; with ``trainer.v1.sampler.sampler_kwargs.rollout_data_dir`` set (e.g. to
``${trainer.rollout_data_dir}``) the buffers write each sampled training batch's keys to
``<dir>/openjudge/<step>.jsonl``, joined to VERL's file on ``uid`` (:func:`write_rollout_dump`).

**The stop.** Both buffers check the run's failure ledger (:mod:`openjudge.integrations.verl._ledger`)
at every ``sample()``, every poll (``poll_interval``, 2 s) and every eviction. Once the
failure rate is passed, or a reward worker could not start, they raise
:class:`~openjudge.integrations.scoring._guard.FailureRateExceeded` with the ledger's message, in the
driver: VERL's trainer ends there, in every V1 mode, instead of refilling failed
groups for ever. When VERL's sync buffer finds a whole batch without a trajectory (every
session failed) before the failure window is full, the stop names the judge too.

Select with ``trainer.v1.sampler.custom_sampler.path=pkg://openjudge.integrations.verl.sampler``
and ``trainer.v1.sampler.custom_sampler.name=OpenJudgeReplayBuffer`` (sync trainer) or
``OpenJudgeReplayBufferAsync`` (``colocate_async`` / ``separate_async``). VERL gives a
custom sampler no DAPO settings: its ``algorithm.filter_groups`` does not apply with one.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from openjudge._text import encodable_json_text
from openjudge.integrations.scoring._guard import FailureRateExceeded
from openjudge.integrations.scoring._keys import FAILED_KEY, GROUP_FAILED_KEY, KEY_PREFIX, as_float
from openjudge.integrations.verl._ledger import driver_summary, driver_view

try:
    from verl.trainer.ppo.v1 import replay_buffer as _verl_replay_buffer
    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer, ReplayBufferAsync
except ImportError as exc:  # pragma: no cover - exercised only without VERL's V1 stack
    raise ImportError(
        f"openjudge.integrations.verl.sampler needs VERL's V1 trainer (verl>=0.9 and TransferQueue): {exc}"
    ) from exc

__all__ = [
    "OpenJudgeReplayBuffer",
    "OpenJudgeReplayBufferAsync",
    "failure_metrics",
    "stop_if_failed",
    "write_rollout_dump",
]


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


def stop_if_failed() -> dict[str, int]:
    """Raise the run's stop (:mod:`openjudge.integrations.verl._ledger`); else its counts.

    Raises:
        FailureRateExceeded: The judge failure rate was passed, or a reward worker could
            not start; the message names the provider and the counts.
    """
    problem, counts = driver_view()
    if problem is not None:
        raise FailureRateExceeded(problem)
    return counts


DUMP_OPTION = "rollout_data_dir"
"""``trainer.v1.sampler.sampler_kwargs.rollout_data_dir``: where :func:`write_rollout_dump` writes."""
DUMP_SUBDIR = "openjudge"


def _dump_dir(sampler_kwargs: Any) -> str | None:
    value = sampler_kwargs.get(DUMP_OPTION) if hasattr(sampler_kwargs, "get") else None
    return str(value) if value else None


def _verl_dump_order(key: str) -> tuple[str, int, int]:
    """VERL's ``_log_rollout_data`` sorts rows by ``{uid}_{session}_{index}``; so do we."""
    parts = key.rsplit("_", 2)
    return (parts[0], int(parts[1]), int(parts[2])) if len(parts) == 3 else (key, 0, 0)


def write_rollout_dump(
    directory: str, global_steps: int, keys: list[str], infos: list[dict[str, Any]]
) -> Path:
    """Append the batch's ``reward_extra_info`` to ``<directory>/openjudge/<global_steps>.jsonl``.

    VERL 0.9.1's V1 trainer dumps each training step to ``<rollout_data_dir>/<step>.jsonl``
    with only ``input``, ``output``, ``gts``, ``score``, ``step`` and ``uid`` (the
    TransferQueue key ``{uid}_{session}_{index}``): ``PPOTrainer._log_rollout_data`` reads
    no ``extra_fields``, so no reward manager can add a column there. This file has one
    row per trajectory, in VERL's order, with the same ``uid`` and ``step`` and every
    ``reward_extra_info`` key (``openjudge/failed``, ``openjudge/<grader>/error_kind``, ...):
    join the two on ``uid``. A lone surrogate in a text (a reason quoting a response) is
    written as the six characters ``\\udXXX`` (:mod:`openjudge._text`), so the line stays
    UTF-8 that any JSON reader reads.
    """
    path = Path(directory) / DUMP_SUBDIR / f"{global_steps}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    order = sorted(range(len(keys)), key=lambda i: _verl_dump_order(keys[i]))
    with path.open("a", encoding="utf-8") as f:  # sync trainers sample a step in several parts
        for i in order:
            row = {"uid": keys[i], "step": global_steps, **infos[i]}
            f.write(encodable_json_text(json.dumps(row, ensure_ascii=False, default=str)) + "\n")
    return path


_NO_TRAJECTORIES = "no materializable trajectories"
"""VERL's sync buffer, when every group of a batch failed (``ReplayBuffer.sample``)."""


def _nothing_scored(exc: RuntimeError) -> FailureRateExceeded | None:
    """VERL's "no materializable trajectories", said with the judge's name and counts when the
    judge is why (every session of the batch failed to be scored); ``None`` otherwise."""
    problem, counts = driver_view()
    if problem is not None:
        return FailureRateExceeded(problem)
    summary = driver_summary()
    if not counts.get("failed") or summary is None:
        return None  # the sessions failed for another reason: VERL's message stands
    return FailureRateExceeded(
        f"openjudge: no trajectory of this batch could be scored, so VERL's sync trainer has nothing to "
        f"train ({exc}); the judge: {summary}. Fix the judge, then resume from the last checkpoint"
    )


class _FailureMetrics:
    failure_keys: dict[str, set[str]]
    sampler_kwargs: Any

    def _wait_for_next_poll(self, partition_id: str, last_debug_time: float) -> float:
        stop_if_failed()  # the async trainers poll (and refill failed groups) until enough are ready
        waited_s: float = super()._wait_for_next_poll(partition_id, last_debug_time)  # type: ignore[misc]  # VERL's base
        return waited_s

    def _evict_terminal_groups(self, global_steps: int, partition_id: str, reasons: Any) -> Any:
        stop_if_failed()  # evict-and-refill loops here without polling when every group fails fast
        return super()._evict_terminal_groups(global_steps, partition_id, reasons)  # type: ignore[misc]  # VERL's base

    def sample(self, global_steps: int, partition_id: str, batch_size: int) -> tuple[Any, dict[str, Any]]:
        stop_if_failed()
        try:
            batch, metrics = super().sample(global_steps, partition_id, batch_size)  # type: ignore[misc]  # the VERL base comes second in the MRO
        except RuntimeError as exc:
            stop = _nothing_scored(exc) if _NO_TRAJECTORIES in str(exc) else None
            if stop is None:
                raise
            raise stop from exc
        counts = stop_if_failed()  # the run's totals now, this batch's samples included
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
        directory = _dump_dir(self.sampler_kwargs)
        if directory is not None and partition_id == "train" and keys:
            write_rollout_dump(directory, global_steps, keys, infos)
        out = dict(metrics)
        out.update(failure_metrics(infos, prefix))
        sampled = {key.split("_")[0] for key in batch.keys}
        out[f"{prefix}/openjudge/groups_with_dropped"] = float(len(sampled & self.failure_keys[partition_id]))
        for name, count in counts.items():  # the run's totals, across every reward worker
            out[f"{prefix}/openjudge/run/{name}"] = float(count)
        return batch, out


class OpenJudgeReplayBuffer(_FailureMetrics, ReplayBuffer):
    """VERL's sync ``ReplayBuffer`` plus openjudge failure counts in each step's metrics."""


class OpenJudgeReplayBufferAsync(_FailureMetrics, ReplayBufferAsync):
    """VERL's async ``ReplayBufferAsync`` plus openjudge failure counts in each step's metrics."""
