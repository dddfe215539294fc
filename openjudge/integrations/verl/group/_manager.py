"""``OpenJudgeAgentLoopManager``: VERL's V1 agent-loop manager with group-judging workers.

Enable it with::

    +actor_rollout_ref.rollout.agent.agent_loop_manager_class=openjudge.integrations.verl.group.OpenJudgeAgentLoopManager

VERL builds it with ``create(config=..., llm_client=..., teacher_client=...,
reward_loop_worker_handles=...)`` in the V1 trainer (``main_ppo.TaskRunnerV1``) and in the
legacy V0 trainer (``ray_trainer.RayPPOTrainer``). On V1 its workers are
:class:`~openjudge.integrations.verl.group._worker.OpenJudgeAgentLoopWorker`. On V0
(``trainer.use_v1=false``) the manager chunks each batch over its workers row by row, so
a group is whole in one worker only by accident: there it falls back to VERL's own
``AgentLoopManager`` (each trajectory scored alone by the reward loop) and says so.
"""

from __future__ import annotations

import logging
from typing import Any

import ray

from openjudge.integrations.verl._settings import config_value
from openjudge.integrations.verl.group._stage import build_stage
from openjudge.integrations.verl.group._verl_v1 import (
    AgentLoopManager,
    AgentLoopManagerTQ,
    auto_await,
    get_custom_reward_fn,
)
from openjudge.integrations.verl.group._worker import OpenJudgeAgentLoopWorker

__all__ = ["V0_FALLBACK", "OpenJudgeAgentLoopManager"]

logger = logging.getLogger(__name__)

V0_FALLBACK = (
    "openjudge: group judging needs VERL's V1 trainer (trainer.use_v1=true), where one agent-loop worker "
    "runs all n sessions of a prompt; the V0 trainer (trainer.use_v1=false) splits each batch over "
    "actor_rollout_ref.rollout.agent.num_workers row by row, so groups are not whole. Falling back to "
    "VERL's AgentLoopManager: every trajectory gets the reward loop's pointwise reward "
    "(reward.reward_manager); the group graders are not used."
)


def _config(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return kwargs["config"] if "config" in kwargs else args[0]


class OpenJudgeAgentLoopManager(AgentLoopManagerTQ):
    """VERL's ``AgentLoopManagerTQ`` whose workers judge whole groups (see the module docstring).

    The group options are validated here, in the driver, before any worker starts, so a
    mistake in ``reward.openjudge_group`` or the group YAML stops the run at once.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]  # VERL's __init__ is unannotated
        build_stage(self.config, get_custom_reward_fn(self.config))  # fail fast in the driver
        self.agent_loop_workers_class = ray.remote(OpenJudgeAgentLoopWorker)

    @classmethod
    @auto_await  # type: ignore[untyped-decorator]  # VERL's decorator is unannotated
    async def create(cls, *args: Any, **kwargs: Any) -> Any:
        """Build the manager and start its workers (VERL's ``create`` contract)."""
        if not bool(config_value(_config(args, kwargs), "trainer", "use_v1")):
            logger.warning(V0_FALLBACK)
            fallback = AgentLoopManager(*args, **kwargs)
            await fallback._init_agent_loop_workers()  # type: ignore[no-untyped-call]  # VERL's, unannotated
            return fallback
        instance = cls(*args, **kwargs)
        await instance._init_agent_loop_workers()  # type: ignore[no-untyped-call]  # VERL's, unannotated
        return instance
