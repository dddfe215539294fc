"""VERL's legacy batch-manager registry (0.4.1 to 0.7.0; still present, unused, in 0.9)."""

from __future__ import annotations

from integrations.verl._verl import INSTALL_HINT

try:
    from verl.workers.reward_manager import register as register_legacy
except ImportError as exc:  # pragma: no cover - exercised only on old or missing verl
    raise ImportError(f"VERL's legacy reward-manager registry is missing.\n{INSTALL_HINT}\n({exc})") from exc

try:  # the abstract base exists from VERL 0.6.0
    from verl.workers.reward_manager.abstract import AbstractRewardManager as LegacyBase
except ImportError:  # pragma: no cover - VERL < 0.6
    LegacyBase = object  # type: ignore[assignment,misc]  # no base class before 0.6

__all__ = ["LegacyBase", "register_legacy"]
