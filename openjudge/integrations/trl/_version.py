"""What the installed TRL does with a completion whose every reward function returned ``None``.

TRL turns ``None`` into NaN and sums the reward functions with ``nansum``. From TRL 1.6.0
on, ``GRPOTrainer`` marks a completion whose every reward is NaN *unscorable*: it is
left out of its group's baseline and its advantage is 0 (``unscorable_mask`` in
``_generate_and_score_completions``). TRL 0.27 to 1.5 sum such a completion to 0 and
train it as a reward of 0. So ``on_failure="drop"`` can leave a failed judgement out
of training only from TRL 1.6.0 on; before, it would train it as 0: refused.

The version is read from the installed distribution (no import of TRL or torch).
"""

from __future__ import annotations

import importlib.metadata
import re

from openjudge.errors import SettingsError

__all__ = ["DROPS_UNSCORABLE_SINCE", "check_drop", "drops_unscorable", "installed_trl"]

DROPS_UNSCORABLE_SINCE = (1, 6, 0)
"""The first TRL release that gives an all-``None`` completion no advantage."""

_RELEASE = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?(.*)")


def installed_trl() -> str | None:
    """The installed TRL's version, ``None`` when TRL is not installed."""
    try:
        return importlib.metadata.version("trl")
    except importlib.metadata.PackageNotFoundError:
        return None


def drops_unscorable(version: str) -> bool:
    """Whether TRL ``version`` leaves a completion whose every reward is ``None`` out of training.

    A pre-release of 1.6.0 itself (``1.6.0.dev0``, ``1.6.0rc1``) counts as older: the
    fix is known to be in the 1.6.0 release, not in every build before it.
    """
    match = _RELEASE.match(version.strip())
    if match is None:
        return False  # unknown scheme: assume the old behaviour (the safe side)
    release = (int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))
    if release == DROPS_UNSCORABLE_SINCE:
        return not re.match(r"[.+-]?(dev|a|b|rc|alpha|beta|pre)", match.group(4) or "")
    return release > DROPS_UNSCORABLE_SINCE


def check_drop(on_failure: str, version: str | None) -> None:
    """Refuse ``on_failure="drop"`` where TRL would train a dropped completion as a reward of 0.

    Args:
        on_failure: The reward set's failure policy.
        version: The installed TRL's version (``None``: TRL is not installed, nothing to check).

    Raises:
        SettingsError: ``drop`` with TRL older than 1.6.0 (the message gives the choices).
    """
    if on_failure != "drop" or version is None or drops_unscorable(version):
        return
    raise SettingsError(
        f"OpenJudgeRewards: on_failure='drop' (the default) needs TRL 1.6.0 or later. TRL {version} "
        "turns a completion whose every reward function returned None into a reward of 0 and trains "
        "on it, so a failed judgement would be trained as 0. Upgrade TRL (pip install 'trl>=1.6,<2'), "
        "or choose what a failed grading becomes: on_failure='neutral' (its group's mean reward: zero "
        "advantage) or on_failure='fallback' with fallback_score=<a reward of your choosing>."
    )
