"""The ``verl.plugins`` entry point: ``import verl`` (0.9+) imports this in every process.

Importing it registers :class:`~integrations.verl.OpenJudgeRewardManager` as ``openjudge``
in VERL's reward-loop registry, so ``reward.reward_manager.name=openjudge`` works in the
driver and in every Ray worker. VERL swallows plugin errors at DEBUG level, so a
failure is logged here as an error before it is re-raised.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

try:
    from integrations.verl.reward_loop import REGISTERED_NAME, OpenJudgeRewardManager
except Exception:
    logger.exception("openjudge: could not register the VERL reward manager 'openjudge'")
    raise

__all__ = ["REGISTERED_NAME", "OpenJudgeRewardManager"]
