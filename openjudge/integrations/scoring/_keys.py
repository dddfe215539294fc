"""The ``reward_extra_info`` keys the integration writes, and the names that would collide with them.

Both paths (the reward managers, :mod:`openjudge.integrations.verl._scoring`; the group stage,
:mod:`openjudge.integrations.verl.group`) write these keys, the same for every sample::

    openjudge/<name>                the score, or 0.0 when it failed (never None)
    openjudge/<name>/error          0.0 or 1.0
    openjudge/<name>/error_kind     "" or the GraderError kind           (reward managers)
    openjudge/<name>/reason         the grader's reason (include_reasons; reward managers)
    openjudge/<name>/not_applicable 1.0 where routing leaves it out (0.0 score, no error;
                                    configs that route only)
    openjudge/reward                the reward the sample trains on
    openjudge/failed                1.0 when that reward is a fallback    (reward managers)
    openjudge/group/failed          1.0 when it is neutral or a fallback  (group stage)
    openjudge/group/size            members judged together               (group stage)
    extra_fields                    {"reward_extra_info": the keys above}  (VERL's V1 colocated path
                                    only, :func:`openjudge.integrations.verl._keys.with_v1_extra_fields`)

A grader or aggregator whose name would make one of its keys equal to another key is
refused when the manager starts (:func:`check_names`): ``reward``, ``failed``,
``group`` (and ``group/...``), names ending in ``/error``, ``/error_kind``, ``/reason``
or ``/not_applicable``, and two writers of one name. Every numeric value is a float
(:func:`as_float`): VERL's metrics, DAPO's ``filter_groups`` and GDPO call ``np.mean``
or ``float(...)`` on them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeAlias

from openjudge.config import ConfigError
from openjudge.results import GraderError, GraderScore, NotApplicable

__all__ = [
    "FAILED_KEY",
    "GROUP_FAILED_KEY",
    "GROUP_SIZE_KEY",
    "KEY_PREFIX",
    "RESERVED_NAMES",
    "REWARD_KEY",
    "ExtraValue",
    "as_float",
    "check_names",
    "error_key",
    "failed",
    "name_problems",
    "not_applicable_key",
    "score_entries",
    "score_key",
]

KEY_PREFIX = "openjudge/"
REWARD_KEY = f"{KEY_PREFIX}reward"
FAILED_KEY = f"{KEY_PREFIX}failed"
GROUP_FAILED_KEY = f"{KEY_PREFIX}group/failed"
GROUP_SIZE_KEY = f"{KEY_PREFIX}group/size"

ExtraValue: TypeAlias = float | int | str | bool | None
"""A value in ``reward_extra_info``: a number, a flag, a string, or ``None`` (no value)."""

RESERVED_NAMES = frozenset({"reward", "failed", "group"})
"""Names whose ``openjudge/<name>`` is (or is the namespace of) a key the integration writes."""
_SUFFIXES = ("/error", "/error_kind", "/reason", "/not_applicable")


def score_key(name: str) -> str:
    return f"{KEY_PREFIX}{name}"


def error_key(name: str) -> str:
    return f"{KEY_PREFIX}{name}/error"


def not_applicable_key(name: str) -> str:
    return f"{KEY_PREFIX}{name}/not_applicable"


def score_entries(name: str, result: GraderScore | GraderError | NotApplicable) -> dict[str, ExtraValue]:
    """``openjudge/<name>`` (the score; 0.0 when it failed or does not apply) and ``openjudge/<name>/error``."""
    return {
        score_key(name): float(result.score) if isinstance(result, GraderScore) else 0.0,
        error_key(name): 1.0 if isinstance(result, GraderError) else 0.0,
    }


def as_float(value: object) -> float | None:
    """A number or a flag as a float; ``None`` for anything else (strings, lists, ``None``)."""
    if isinstance(value, bool | int | float):
        return float(value)
    return None


def failed(extra: Mapping[str, ExtraValue], key: str) -> bool:
    """Whether ``key``'s value failed: missing, ``None``, or flagged by ``<key>/error``."""
    return extra.get(key) is None or bool(as_float(extra.get(f"{key}/error")))


def name_problems(writers: Iterable[tuple[str, str]], *, source: str) -> list[str]:
    """What is wrong with the names that will be written as ``openjudge/<name>`` keys.

    Args:
        writers: ``(name, what)`` for each grader or aggregate whose keys are written,
            ``what`` saying where it comes from (e.g. ``"grader"``, ``"aggregators[0]"``).
        source: The YAML they come from (for messages).
    """
    problems: list[str] = []
    seen: dict[str, str] = {}
    for name, what in writers:
        suffix = next((s for s in _SUFFIXES if name.endswith(s)), None)
        clash = None
        if name in RESERVED_NAMES or name.startswith("group/"):
            clash = f"{score_key(name)}, a key the integration writes itself"
        elif suffix is not None:
            clash = f"{score_key(name)}, the {suffix[1:]} key of a grader named {name.removesuffix(suffix)!r}"
        if clash is not None:
            problems.append(
                f"{source}: {what} {name!r} would write {clash}, and one would overwrite the other in "
                f"reward_extra_info: rename it (openjudge.integrations.verl reserves {', '.join(sorted(RESERVED_NAMES))}, "
                f"group/... and names ending in {', '.join(_SUFFIXES)})"
            )
        elif name in seen:
            problems.append(
                f"{source}: {what} {name!r} and {seen[name]} would both write {score_key(name)}: rename one"
            )
        seen.setdefault(name, f"{what} {name!r}")
    return problems


def check_names(writers: Iterable[tuple[str, str]], *, source: str) -> None:
    """Raise :class:`~openjudge.config.ConfigError` listing :func:`name_problems`, if any."""
    problems = name_problems(writers, source=source)
    if problems:
        raise ConfigError(problems)
