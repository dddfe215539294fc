"""VERL's reward-loop base class and registry (VERL 0.7.0 and later)."""

from __future__ import annotations

from integrations.verl._verl import INSTALL_HINT

try:
    from verl.experimental.reward_loop.reward_manager import register as register_reward_loop
    from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase
except ImportError as exc:  # pragma: no cover - exercised only on old or missing verl
    raise ImportError(
        f"OpenJudgeRewardManager needs VERL's reward loop (VERL >= 0.7.1); on older VERL use "
        f"integrations.verl.OpenJudgeLegacyRewardManager.\n{INSTALL_HINT}\n(import failed: {exc})"
    ) from exc

__all__ = ["RewardManagerBase", "register_reward_loop"]
