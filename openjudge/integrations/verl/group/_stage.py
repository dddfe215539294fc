"""The group stage of one agent-loop worker: its settings and its judge, built from VERL's config."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from openjudge.config import build_job, load_config
from openjudge.integrations.verl._functions import find_reward_function
from openjudge.integrations.verl._gc_freeze import freeze_long_lived_objects
from openjudge.integrations.verl._ledger import run_ledger
from openjudge.integrations.verl._scoring import reward_loop_names
from openjudge.integrations.verl._settings import FailurePolicy, SettingsError, config_value, read_settings
from openjudge.integrations.verl.group._settings import WHERE, GroupSettings, read_group_settings
from openjudge.integrations.verl.group.judges import FunctionGroupJudge, GraderGroupJudge, GroupJudge
from openjudge.integrations.verl.lifecycle import close_at_exit

__all__ = ["GroupStage", "build_stage"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class GroupStage:
    """How this worker judges groups.

    Attributes:
        settings: The ``reward.openjudge_group`` options.
        judge: The group graders, or a reward function in the shape of OpenJudge's VERL guide.
        pointwise: Run VERL's reward loop per trajectory first.
    """

    settings: GroupSettings
    judge: GroupJudge
    pointwise: bool


def build_stage(config: object, custom_reward_fn: object = None) -> GroupStage:
    """The group stage the trainer config asks for.

    Args:
        config: VERL's trainer config.
        custom_reward_fn: ``get_custom_reward_fn(config)``: when it is (or wraps) a
            ``BaseOpenJudgeRewardFunction``, the whole group goes to its
            ``compute_batch_scores`` and the reward loop is not used.

    Raises:
        SettingsError: Neither a group graders config nor a reward function, or both.
        ConfigError: The group graders YAML is invalid.
    """
    stage = _stage(config, custom_reward_fn)
    freeze_long_lived_objects()  # if asked: the worker's imports and group graders out of full GC passes
    return stage


def _stage(config: object, custom_reward_fn: object) -> GroupStage:
    per_sample = config_value(config, "reward", "openjudge")
    settings = read_group_settings(config_value(config, "reward", "openjudge_group"), per_sample)
    function = find_reward_function(custom_reward_fn)
    if function is not None:
        if settings.config is not None:
            raise SettingsError(
                f"both {WHERE}.config and a BaseOpenJudgeRewardFunction (reward.custom_reward_function) "
                "were given; use one: the group graders YAML, or your reward function"
            )
        logger.info("openjudge: groups go to %s.compute_batch_scores", type(function).__name__)
        return GroupStage(settings, FunctionGroupJudge(function), pointwise=False)
    if settings.config is None:
        raise SettingsError(
            f"group judging has nothing to judge with: pass +{WHERE}.config=/abs/path/group.yaml "
            "(group graders), or set reward.custom_reward_function to a BaseOpenJudgeRewardFunction"
        )
    taken: tuple[str, ...] = ()
    if settings.pointwise and per_sample is not None:  # the group's keys join the reward loop's
        try:
            taken = reward_loop_names(read_settings(per_sample))
        except SettingsError:  # no graders YAML there: the reward manager reports its own options
            logger.debug("openjudge: reward.openjudge names no graders YAML; group names checked per group")
    path = os.path.realpath(settings.config)
    job = build_job(load_config(path), source=settings.config, use_cache=False, members_scored=True)
    close_at_exit(job)
    try:
        policy = read_settings(per_sample).failure_policy() if per_sample is not None else FailurePolicy()
    except SettingsError:
        policy = FailurePolicy()
    judge = GraderGroupJudge(
        job.runner,
        settings,
        source=settings.config,
        reward_loop_names=taken,
        grader_providers=job.grader_providers,
        ledger=run_ledger(policy),  # the run's breaker and failure rate, shared with the reward workers
    )
    logger.info(
        "openjudge: group graders %s, reward = %s, from %s",
        ", ".join(judge.grader_names),
        getattr(judge.aggregator, "name", "?"),
        path,
    )
    return GroupStage(settings, judge, pointwise=settings.pointwise)
