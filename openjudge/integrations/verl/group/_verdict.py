"""A group's verdict: each member's reward and ``reward_extra_info``, or why it is dropped.

The failure policy lives here, in one place:

* A **failed member** (its group graders or its pointwise reward failed, so its
  aggregate failed) is ``neutral`` (it gets the mean reward of the members that were
  scored, so its GRPO advantage is exactly zero, and ``openjudge/group/failed`` = 1) or
  ``drop`` (its trajectory is dropped).
* A **failed group** (no member scored) follows ``on_failure``: ``drop``, ``neutral``
  (every member 0.0: equal rewards, zero advantage), or a ``fallback`` reward, flagged.
* Every numeric ``reward_extra_info`` value is a float. A value that failed (``None``, or
  flagged by its ``<key>/error``) is replaced by the mean of that key over the members
  where it did not fail, so a per-key estimator such as GDPO sees zero advantage there
  too; if it failed for every member it is 0.0 for all (a constant: again no signal).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from openjudge.integrations.scoring._keys import GROUP_FAILED_KEY, REWARD_KEY, ExtraValue, as_float, failed
from openjudge.integrations.verl.group._settings import GroupSettings

__all__ = ["GroupVerdict", "MemberDropped", "MemberReward", "Outcome", "neutralise", "settle"]


@dataclass(frozen=True, slots=True)
class MemberReward:
    """What VERL stores for a member: ``reward_score`` and ``reward_extra_info``."""

    reward: float
    extra: dict[str, ExtraValue]


@dataclass(frozen=True, slots=True)
class MemberDropped:
    """The member's trajectory is dropped (its session raises with this message)."""

    message: str


Outcome = MemberReward | MemberDropped


@dataclass(frozen=True, slots=True)
class GroupVerdict:
    """Outcomes of the members that were judged, and what a late member gets."""

    outcomes: Mapping[int, Outcome]
    late: Outcome

    def outcome(self, session_id: int, judged: bool) -> Outcome:
        return self.outcomes[session_id] if judged else self.late


def neutralise(extras: Sequence[dict[str, ExtraValue]]) -> list[dict[str, ExtraValue]]:
    """Floats everywhere; failed values replaced by the mean of the members where they held.

    Keys whose values are strings (or lists) are left as they are. The input dicts must
    have the same keys.
    """
    if not extras:
        return []
    keys = list(extras[0])
    out = [dict(e) for e in extras]
    for key in keys:
        values = [e.get(key) for e in extras]
        if any(v is not None and as_float(v) is None for v in values):
            continue  # a text column (error kinds, reasons)
        ok = [
            n
            for e, v in zip(extras, values, strict=True)
            if not failed(e, key) and (n := as_float(v)) is not None
        ]
        neutral = sum(ok) / len(ok) if ok else 0.0
        for e, o, v in zip(extras, out, values, strict=True):
            number = as_float(v)
            o[key] = neutral if number is None or failed(e, key) else number
    return out


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def settle(
    rewards: Mapping[int, float | None],
    extras: Mapping[int, dict[str, ExtraValue]],
    settings: GroupSettings,
    *,
    why: Mapping[int, str],
) -> GroupVerdict:
    """Apply the failure policy to a judged group (see the module docstring).

    Args:
        rewards: Per judged session, its aggregate reward, or ``None`` if it failed.
        extras: Per judged session, its ``reward_extra_info`` (same keys for all; numeric
            values may be ``None`` where they failed).
        settings: The policy.
        why: Per failed session, what failed (for the drop message and the logs).
    """
    sessions = sorted(rewards)
    scored = [rewards[s] for s in sessions if rewards[s] is not None]
    tables = neutralise(
        [{**extras[s], GROUP_FAILED_KEY: 0.0 if rewards[s] is not None else 1.0} for s in sessions]
    )
    by_session = dict(zip(sessions, tables, strict=True))
    if not scored:  # nothing to be relative to: the per-sample policy decides
        reason = "; ".join(f"session {s}: {why.get(s, 'failed')}" for s in sessions[:3])
        if settings.on_failure in ("fallback", "neutral"):
            # neutral: every member 0.0, equal rewards, zero advantage (nothing to be relative to)
            fallback = settings.fallback_score if settings.on_failure == "fallback" else 0.0
            assert fallback is not None  # checked by GroupSettings
            outcomes: dict[int, Outcome] = {
                s: MemberReward(fallback, {**by_session[s], REWARD_KEY: fallback, GROUP_FAILED_KEY: 1.0})
                for s in sessions
            }
            flagged = MemberReward(fallback, {**tables[0], REWARD_KEY: fallback, GROUP_FAILED_KEY: 1.0})
            return GroupVerdict(outcomes, flagged)
        dropped = MemberDropped(f"no member of the group could be scored ({reason}); on_failure=drop")
        return GroupVerdict(dict.fromkeys(sessions, dropped), dropped)
    neutral = _mean([r for r in scored if r is not None])
    # What a late member gets: every value the group's mean, every error flag set.
    neutral_extra: dict[str, ExtraValue] = {}
    for k, first in tables[0].items():
        numbers = [n for t in tables if (n := as_float(t[k])) is not None]
        if isinstance(first, float) and len(numbers) == len(tables):
            neutral_extra[k] = 1.0 if k.endswith("/error") else _mean(numbers)
        else:
            neutral_extra[k] = first
    neutral_extra.update({REWARD_KEY: neutral, GROUP_FAILED_KEY: 1.0})
    outcomes = {}
    for s in sessions:
        reward = rewards[s]
        if reward is not None:
            outcomes[s] = MemberReward(reward, {**by_session[s], REWARD_KEY: reward})
        elif settings.on_member_failure == "drop":
            outcomes[s] = MemberDropped(
                f"its group judgement failed ({why.get(s, 'failed')}); on_member_failure=drop"
            )
        else:
            outcomes[s] = MemberReward(neutral, {**by_session[s], REWARD_KEY: neutral})
    late: Outcome
    if settings.on_member_failure == "drop":
        late = MemberDropped(
            "it finished after its group was judged (wait_timeout_s); on_member_failure=drop"
        )
    else:
        late = MemberReward(neutral, neutral_extra)
    return GroupVerdict(outcomes, late)
