"""What a reward function returns to TRL for each completion: its groups and the failure policy.

**Groups.** TRL hands a reward function a batch in which each prompt's generations are
consecutive (``RepeatSampler``), and it computes advantages over those blocks. A
prompt's group is therefore a *run* of consecutive completions whose prompt is the
same, whole prompt as TRL passed it: the conversation with its system message, not
only its last user message (two conversations that end with the same question are two
groups). With one training process every run is whole. With several, each process
scores a contiguous slice of the batch, so the first and the last run of its slice may
have members on a neighbouring process; the runs between them are whole.

**Failures.** A completion *failed* when the result its function returns failed, or,
for the functions of :meth:`~openjudge.integrations.trl.OpenJudgeRewards.per_grader`,
when any of the set's per-grader results failed for it (they are judged together):

* ``drop``: ``None`` in every column, so the completion is unscorable in TRL (no
  advantage, out of its group's baseline; TRL 1.6.0 and later).
* ``neutral``: each column gets the mean of that column over its group's completions
  that did not fail, so the completion's summed reward is its group's mean (zero
  advantage). A whole group in which every completion failed gets 0.0 everywhere (equal
  rewards: zero advantage). A run that may continue on another process and had no
  completion scored here has no known mean: ``None``.
* ``fallback``: a failed result gets ``fallback_score``; the completion's other
  results keep their scores (the number was chosen explicitly).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from openjudge.integrations._shared import plain
from openjudge.integrations.scoring._settings import FallbackPolicy

__all__ = ["Column", "Groups", "prompt_groups", "reward_column"]


@dataclass(frozen=True, slots=True)
class Groups:
    """The group of each completion of a batch.

    Attributes:
        index: Each completion's group (runs numbered from 0, in batch order).
        whole: For each group, whether all of its members are in this batch.
    """

    index: tuple[int, ...]
    whole: tuple[bool, ...]


def _identity(prompt: object) -> bytes:
    """The whole prompt as bytes: its text, or its messages as canonical JSON."""
    if isinstance(prompt, str):
        return b"s" + prompt.encode("utf-8", "surrogatepass")
    return b"m" + json.dumps(plain(prompt), sort_keys=True).encode("ascii")  # ASCII: any text encodes


def prompt_groups(prompts: Sequence[object], *, batch_is_whole: bool) -> Groups:
    """Each completion's group: the run of consecutive completions of one whole prompt.

    Args:
        prompts: TRL's ``prompts``, one per completion.
        batch_is_whole: Every group of the batch is in it (one training process); else
            the first and the last run may continue on another process.
    """
    index: list[int] = []
    previous: bytes | None = None
    for prompt in prompts:
        key = _identity(prompt)
        index.append(index[-1] + (key != previous) if index else 0)
        previous = key
    runs = index[-1] + 1 if index else 0
    whole = tuple(batch_is_whole or 0 < g < runs - 1 for g in range(runs))
    return Groups(tuple(index), whole)


@dataclass(frozen=True, slots=True)
class Column:
    """One function's values for a batch, before the failure policy.

    Attributes:
        values: Each completion's score for this function (``None``: this result failed).
        failed: Whether each completion failed (its result, or one judged with it).
    """

    values: tuple[float | None, ...]
    failed: tuple[bool, ...]


def reward_column(column: Column, groups: Groups, policy: FallbackPolicy) -> tuple[list[float | None], int]:
    """The rewards TRL gets for ``column`` under ``policy``, and how many have no known value.

    Returns:
        One reward per completion (``None``: left out), and the number of failed
        completions that are ``None`` under ``neutral`` because their group's mean is
        unknown here.
    """
    if policy.on_failure == "drop":
        return [None if f else v for v, f in zip(column.values, column.failed, strict=True)], 0
    if policy.on_failure == "fallback":
        fallback = policy.fallback_score
        return [fallback if v is None else v for v in column.values], 0
    scored: dict[int, list[float]] = {}
    for value, failed, group in zip(column.values, column.failed, groups.index, strict=True):
        if not failed and value is not None:
            scored.setdefault(group, []).append(value)
    out: list[float | None] = []
    unknown = 0
    for value, failed, group in zip(column.values, column.failed, groups.index, strict=True):
        if not failed:
            out.append(value)
        elif group in scored:
            members = scored[group]
            out.append(sum(members) / len(members))
        elif groups.whole[group]:
            out.append(0.0)  # every member failed: equal rewards, zero advantage
        else:
            out.append(None)
            unknown += 1
    return out, unknown
