"""The ``verl.plugins`` entry point: ``import verl`` (0.9+) imports this in every process.

It registers :class:`~openjudge.integrations.verl.OpenJudgeRewardManager` as ``openjudge`` in VERL's
reward-loop registry, so ``reward.reward_manager.name=openjudge`` works in the driver and
in every Ray worker, and the agent loop ``openjudge_tool_agent``
(:class:`~openjudge.integrations.verl.agent_loop.OpenJudgeToolAgentLoop`). Each of those modules
registers its class as its last statement; this one imports them.

**Any import order works.** VERL runs this entry point from inside ``import verl``. When
one of our modules imported VERL first (``import openjudge.integrations.verl._reward_loop`` before
``import verl``), that module is still being imported when this runs: it is skipped here
and registers itself once its import finishes. The modules both registering modules use
(rows, samples, batch scoring) import VERL only for type checking, so none of them is
ever half-imported underneath this. VERL swallows plugin errors at DEBUG level, so a
failure is logged here as an error before it is re-raised.
"""

from __future__ import annotations

import importlib
import logging
import sys

logger = logging.getLogger(__name__)

__all__ = ["REGISTERING_MODULES"]

REGISTERING_MODULES = ("openjudge.integrations.verl._reward_loop", "openjudge.integrations.verl.agent_loop")
"""The modules that register a class with VERL when imported."""


def _load(module: str) -> None:
    if module in sys.modules:  # imported, or importing now (it imported VERL): it registers itself
        return
    try:
        importlib.import_module(module)
    except ImportError as exc:
        if module.endswith(".agent_loop"):  # VERL's agent loop cannot import here (e.g. no pillow)
            logger.debug("openjudge: agent loop 'openjudge_tool_agent' not registered: %s", exc)
            return
        logger.exception("openjudge: could not import %s to register it with VERL", module)
        raise
    except Exception:
        logger.exception("openjudge: could not import %s to register it with VERL", module)
        raise


for _module in REGISTERING_MODULES:
    _load(_module)
