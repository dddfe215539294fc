"""The V1 ``extra_fields`` key: where VERL's V1 trainer reads ``reward_extra_info`` from.

The keys themselves (``openjudge/<name>``, ``openjudge/reward``, ...) are every adapter's:
:mod:`openjudge.integrations.scoring._keys`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias

from openjudge.integrations.scoring._keys import ExtraValue

__all__ = ["V1_EXTRA_FIELDS", "ExtraFields", "with_v1_extra_fields"]

V1_EXTRA_FIELDS = "extra_fields"
"""The TransferQueue field VERL's V1 trainer reads ``reward_extra_info`` from."""
ExtraFields: TypeAlias = dict[str, dict[str, ExtraValue]]


def with_v1_extra_fields(info: Mapping[str, ExtraValue]) -> dict[str, ExtraValue | ExtraFields]:
    """``info`` plus ``extra_fields = {"reward_extra_info": info}``, for VERL's V1 colocated path.

    There ``PPOTrainer._compute_reward_colocate`` writes every ``reward_extra_info`` key
    back to TransferQueue as a field of its own, while V1's validation (``_validate``:
    metrics and dumps) and its replay buffers read ``extra_fields["reward_extra_info"]``,
    which only the streaming path fills. Returning an ``extra_fields`` key makes VERL
    write that field too, so the keys reach validation metrics and dumps. It replaces the
    agent loop's other extra fields of those trajectories (``turn_scores``, speculative
    decoding counts), which nothing in VERL's V1 trainer reads after the reward except
    the speculative-decoding metrics.
    """
    return {**info, V1_EXTRA_FIELDS: {"reward_extra_info": dict(info)}}
