"""The ``verl.plugins`` entry point: ``import verl`` (0.9+) imports this in every process.

Importing it registers :class:`~integrations.verl.OpenJudgeRewardManager` as ``openjudge``
in VERL's reward-loop registry, so ``reward.reward_manager.name=openjudge`` works in the
driver and in every Ray worker, and registers the agent loop ``openjudge_tool_agent``
(:class:`~integrations.verl.agent_loop.OpenJudgeToolAgentLoop`). VERL swallows plugin
errors at DEBUG level, so a failure is logged here as an error before it is re-raised.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

try:
    from integrations.verl.reward_loop import REGISTERED_NAME, OpenJudgeRewardManager
except Exception:
    logger.exception("openjudge: could not register the VERL reward manager 'openjudge'")
    raise

try:
    from integrations.verl.agent_loop import AGENT_LOOP_NAME
except ImportError as exc:  # VERL's agent loop itself cannot import here (e.g. no pillow): nothing to extend
    logger.debug("openjudge: agent loop 'openjudge_tool_agent' not registered: %s", exc)
    AGENT_LOOP_NAME = "openjudge_tool_agent"
except Exception:
    logger.exception("openjudge: could not register the VERL agent loop 'openjudge_tool_agent'")
    raise

__all__ = ["AGENT_LOOP_NAME", "REGISTERED_NAME", "OpenJudgeRewardManager"]
