"""Which of VERL's reward paths a run uses, read from its config: what a failure can become there.

| trainer | reward computed | a raised failure | so a failed sample is |
|---|---|---|---|
| V1 (``trainer.use_v1``, default), any mode | streaming (agent loop) | fails the session: dropped | dropped (``drop``) or neutral |
| V0 (``trainer.use_v1=false``) | streaming | ends the step (``asyncio.gather``) | neutral |
| V0 or V1 | colocated RM (``compute_rm_score``) | ends the step | neutral, set in ``assemble_rm_scores`` |
| VERL <= 0.7.0 | legacy batch call | ends the step | neutral within its ``uid`` |
"""

from __future__ import annotations

from dataclasses import dataclass

from openjudge.integrations.verl._settings import config_value

__all__ = ["RewardPath", "reward_path"]


@dataclass(frozen=True, slots=True)
class RewardPath:
    """What the trainer config says about where rewards are computed.

    Attributes:
        use_v1: The V1 trainer (``trainer.use_v1``; ``False`` when the config does not say).
        trainer_mode: ``trainer.v1.trainer_mode``: ``sync``, ``colocate_async`` or ``separate_async``.
        colocated: A reward model on the trainer's GPUs: rewards come after rollout, as a batch.
        group_size: ``actor_rollout_ref.rollout.n``, the members of a training group.
    """

    use_v1: bool
    trainer_mode: str
    colocated: bool
    group_size: int


def reward_path(config: object) -> RewardPath:
    """The reward path of VERL's trainer ``config`` (an OmegaConf node or a mapping; ``None``: unknown)."""
    mode = config_value(config, "trainer", "v1", "trainer_mode")
    n = config_value(config, "actor_rollout_ref", "rollout", "n")
    return RewardPath(
        use_v1=config_value(config, "trainer", "use_v1") is True,
        trainer_mode=mode if isinstance(mode, str) else "sync",
        colocated=config_value(config, "reward", "reward_model", "enable") is True
        and config_value(config, "reward", "reward_model", "enable_resource_pool") is not True,
        group_size=n if isinstance(n, int) and n > 0 else 1,
    )
