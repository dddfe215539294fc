"""``OpenJudgeAgentLoopWorker``: VERL 0.9's V1 agent-loop worker, judging whole GRPO groups.

VERL's ``AgentLoopWorkerTQ._run_prompt`` runs the ``n`` sessions of one prompt (one
``uid``) as tasks of this process and settles them together, so the worker can hold a
:class:`~openjudge.integrations.verl.group._barrier.GroupBarrier` per ``uid`` and meet every member
in process. Three private methods are overridden (pinned by contract tests):

* ``_run_prompt``: open the group's barrier with its size ``n`` (``__rollout_n__``,
  else ``rollout.n``, or ``rollout.val_kwargs.n`` when validating), then VERL's own;
* ``_run_agent_loop``: when a session ends without reaching its score (generation
  raised, it was dropped or cancelled), it leaves the barrier, so the group never
  waits for it;
* ``_compute_score``: the pointwise pass through VERL's reward loop (``super()``, as
  without group judging), then wait for the group, one group judgement, and this
  member's ``reward_score`` and ``reward_extra_info``. A member whose outcome is
  *dropped* raises, so VERL drops its trajectory (the group's status becomes
  ``failure``: the sync trainer trains the group without it, the async trainers
  generate the group again; VERL pads batches only to a multiple of the DP size).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any, cast

from openjudge.errors import GroupJudgingError
from openjudge.integrations.scoring._keys import FAILED_KEY, as_float
from openjudge.integrations.verl._settings import SettingsError, config_value
from openjudge.integrations.verl.group._barrier import GroupBarrier, RolloutClock
from openjudge.integrations.verl.group._stage import GroupStage, build_stage
from openjudge.integrations.verl.group._verdict import GroupVerdict, MemberDropped
from openjudge.integrations.verl.group._verl_v1 import (
    AgentLoopOutput,
    AgentLoopWorkerTQ,
    get_custom_reward_fn,
)
from openjudge.integrations.verl.group.members import Member
from openjudge.integrations.verl.samples import sample_from_agent_output

__all__ = ["GroupJudgingError", "OpenJudgeAgentLoopWorker"]

logger = logging.getLogger(__name__)

_BaseWorker: type[Any] = cast(Any, AgentLoopWorkerTQ).__ray_actor_class__  # the class behind @ray.remote


class OpenJudgeAgentLoopWorker(_BaseWorker):  # type: ignore[misc]  # a base of type Any (VERL's actor class)
    """The V1 agent-loop worker with a group stage (see the module docstring).

    Constructed by VERL (through :class:`~openjudge.integrations.verl.group.OpenJudgeAgentLoopManager`)
    with the trainer config, the rollout client, the teacher client and the reward-loop
    worker handles.

    Raises:
        SettingsError: The group options are missing or invalid.
        ConfigError: The group graders YAML is invalid.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.group_stage: GroupStage = build_stage(self.config, get_custom_reward_fn(self.config))
        if self.group_stage.pointwise and self.reward_loop_worker_handles is None:
            raise SettingsError(
                "reward.openjudge_group.pointwise=true needs VERL's streaming reward loop, which this run "
                "does not have (a colocated reward model): set reward.reward_model.enable_resource_pool=True, "
                "or +reward.openjudge_group.pointwise=false"
            )
        self.groups: dict[str, GroupBarrier[Member, GroupVerdict]] = {}
        self.reward_fn_key = str(config_value(self.config, "data", "reward_fn_key") or "data_source")
        self._warned_ungrouped = False
        self.rollout_clock = RolloutClock()  # paused with rollout (colocate_async trains meanwhile)

    async def _run_prompt(
        self,
        prompt: dict[str, Any],
        sampling_params: dict[str, Any],
        trajectory: dict[str, Any],
        trace: bool = False,
    ) -> None:
        rollout = self.config.actor_rollout_ref.rollout
        validate = bool(trajectory["validate"])
        # As VERL reads it (before super() pops __rollout_n__).
        n = int(prompt.get("__rollout_n__", rollout.val_kwargs.n if validate else rollout.n))
        uid = str(prompt["uid"])
        judge = self.group_stage.judge

        async def judge_group(members: Mapping[int, Member]) -> GroupVerdict:
            return await judge.judge(members, n)

        self.groups[uid] = GroupBarrier(
            uid, n, self.group_stage.settings.wait_timeout_s, judge_group, clock=self.rollout_clock
        )
        try:
            await super()._run_prompt(prompt, sampling_params, trajectory, trace)
        finally:
            self.groups.pop(uid, None)

    async def _run_agent_loop(
        self,
        sampling_params: dict[str, Any],
        trajectory: dict[str, Any],
        *,
        agent_name: str,
        trace: bool = True,
        **kwargs: Any,
    ) -> Any:
        self.rollout_clock.tick()
        try:
            return await super()._run_agent_loop(
                sampling_params, trajectory, agent_name=agent_name, trace=trace, **kwargs
            )
        finally:
            self.rollout_clock.tick()
            barrier = self.groups.get(str(kwargs.get("uid")))
            session_id = kwargs.get("session_id")
            if barrier is not None and session_id is not None:
                barrier.leave(int(session_id))  # a no-op for a member that arrived

    async def _compute_score(self, outputs: list[AgentLoopOutput], kwargs: dict[str, Any]) -> None:
        barrier = self.groups.get(str(kwargs.get("uid")))
        session_id = kwargs.get("session_id")
        if barrier is None or session_id is None:
            if not self._warned_ungrouped:
                self._warned_ungrouped = True
                logger.warning(
                    "openjudge: a trajectory reached _compute_score outside AgentLoopWorkerTQ._run_prompt; "
                    "it is scored per trajectory by the reward loop, without group judging"
                )
            await super()._compute_score(outputs, kwargs)
            return
        started = time.perf_counter()
        final = outputs[-1]
        if self.group_stage.pointwise:
            await super()._compute_score(outputs, kwargs)  # raises: the member leaves the group
        pointwise_extra = dict(final.extra_fields.get("reward_extra_info") or {})
        member = Member(
            session_id=int(session_id),
            sample=await sample_from_agent_output(
                final, kwargs, self.tokenizer, reward_fn_key=self.reward_fn_key
            ),
            pointwise=None if final.reward_score is None else float(final.reward_score),
            pointwise_extra=pointwise_extra,
            pointwise_failed=bool(as_float(pointwise_extra.get(FAILED_KEY))),
        )
        barrier.arrive(member.session_id, member)
        verdict, judged = await barrier.verdict(member.session_id)
        outcome = verdict.outcome(member.session_id, judged)
        final.metrics.compute_score = time.perf_counter() - started  # pointwise + wait + judgement
        if isinstance(outcome, MemberDropped):
            raise GroupJudgingError(
                f"uid={barrier.uid} session {member.session_id} dropped: {outcome.message}"
            )
        final.reward_score = outcome.reward
        final.extra_fields["reward_extra_info"] = outcome.extra
