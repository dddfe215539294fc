"""Which of VERL's reward paths a run uses: what a failure can become there.

| trainer | reward computed | a raised failure | so a failed sample is |
|---|---|---|---|
| V1 (``trainer.use_v1``, default), ``sync`` | streaming (``AgentLoopWorkerTQ``) | fails the session: dropped | dropped (``drop``, its default) or neutral |
| V1 ``colocate_async`` / ``separate_async`` | streaming (``AgentLoopWorkerTQ``) | fails the session: VERL evicts the whole group | neutral (its default), or dropped with its group (``drop``) |
| V0 (``trainer.use_v1=false``) | streaming (``AgentLoopWorker``) | ends the step (``asyncio.gather``) | neutral |
| ``one_step_off_policy``, ``fully_async_policy`` | streaming (V0's ``AgentLoopWorker``) | ends the step, or the run | neutral |
| V0 or V1 | colocated RM (``compute_rm_score``) | ends the step | neutral, set in ``assemble_rm_scores`` |
| VERL <= 0.7.0 | legacy batch call | ends the step | neutral within its ``uid`` |

VERL's experimental trainers (``verl.experimental.one_step_off_policy``,
``fully_async_policy``) compose ``ppo_trainer`` and so inherit ``trainer.use_v1: true``,
but generate with the V0 ``AgentLoopManager``: the flag does not say which worker calls the
reward. The row does: only V1's ``AgentLoopWorkerTQ._run_prompt`` gives each session a
``session_id`` (:func:`from_v1_session`), and only there does a raised reward drop one
trajectory rather than end the step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from openjudge.integrations.verl._settings import OpenJudgeVerlSettings, config_value

__all__ = ["RewardPath", "default_for_mode", "experimental_trainer", "from_v1_session", "reward_path"]


def experimental_trainer(config: object) -> str | None:
    """The VERL experimental trainer whose config this is (``None``: ``main_ppo``'s).

    Each composes VERL's ``ppo_trainer`` and adds a section of its own:
    ``fully_async_ppo_trainer.yaml`` an ``async_training`` section, and
    ``one_step_off_ppo_trainer.yaml`` a top-level ``rollout`` (its GPUs).
    """
    if config_value(config, "async_training") is not None:
        return "fully_async_policy"
    if config_value(config, "rollout") is not None:
        return "one_step_off_policy"
    return None


def from_v1_session(columns: Mapping[str, object]) -> bool:
    """Whether a streaming row was sent by V1's ``AgentLoopWorkerTQ`` (which settles a prompt's
    sessions with ``return_exceptions``), from its non-tensor columns.

    Its ``_run_prompt`` passes each session's ``session_id`` and the prompt's
    ``global_steps`` to the agent loop, and the reward row carries both; V0's
    ``AgentLoopWorker`` (the V0 trainer and the experimental trainers) passes neither.
    """
    return "session_id" in columns and "global_steps" in columns


@dataclass(frozen=True, slots=True)
class RewardPath:
    """What the trainer config says about where rewards are computed.

    Attributes:
        use_v1: The V1 trainer (``trainer.use_v1``; ``False`` when the config does not say).
        trainer_mode: ``trainer.v1.trainer_mode``: ``sync``, ``colocate_async`` or ``separate_async``.
        colocated: A reward model on the trainer's GPUs: rewards come after rollout, as a batch.
        group_size: ``actor_rollout_ref.rollout.n``, the members of a training group.
        validation_group_size: ``actor_rollout_ref.rollout.val_kwargs.n``, of a validation group.
        experimental: VERL's experimental trainer the config is for (:func:`experimental_trainer`).
    """

    use_v1: bool
    trainer_mode: str
    colocated: bool
    group_size: int
    validation_group_size: int = 1
    experimental: str | None = None

    @property
    def v1_trainer(self) -> bool:
        """The V1 trainer runs (not only its flag: the experimental trainers inherit it)."""
        return self.use_v1 and self.experimental is None

    @property
    def v1_async(self) -> bool:
        """A V1 async trainer (``colocate_async``, ``separate_async``): it evicts a group with a dropped member."""
        return self.v1_trainer and self.trainer_mode != "sync"


def _positive(value: object, default: int) -> int:
    return value if isinstance(value, int) and value > 0 else default


def reward_path(config: object) -> RewardPath:
    """The reward path of VERL's trainer ``config`` (an OmegaConf node or a mapping; ``None``: unknown)."""
    mode = config_value(config, "trainer", "v1", "trainer_mode")
    return RewardPath(
        use_v1=config_value(config, "trainer", "use_v1") is True,
        trainer_mode=mode if isinstance(mode, str) else "sync",
        colocated=config_value(config, "reward", "reward_model", "enable") is True
        and config_value(config, "reward", "reward_model", "enable_resource_pool") is not True,
        group_size=_positive(config_value(config, "actor_rollout_ref", "rollout", "n"), 1),
        validation_group_size=_positive(
            config_value(config, "actor_rollout_ref", "rollout", "val_kwargs", "n"), 1
        ),
        experimental=experimental_trainer(config),
    )


def default_for_mode(settings: OpenJudgeVerlSettings, path: RewardPath) -> OpenJudgeVerlSettings:
    """``settings`` with ``on_failure`` set for the trainer when the command does not set it.

    ``drop`` costs the V1 sync trainer one trajectory per failure; VERL's async trainers
    evict the whole group instead (with ``n`` = 8 and 5 % of samples failing, a third of
    the groups, most of them from the prompts whose answers the judge fails on), so there
    the default is ``neutral``: the group trains, its failed member with zero advantage.
    """
    if "on_failure" in settings.model_fields_set or not path.v1_async:
        return settings
    return settings.model_copy(update={"on_failure": "neutral"})
