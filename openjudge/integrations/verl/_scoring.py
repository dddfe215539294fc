"""VERL's reward scorer: the shared :class:`~openjudge.integrations.scoring.RewardScorer`,
built once per worker process from ``+reward.openjudge.*`` with what is VERL's own.

What VERL adds to the shared scorer: ``kind: verl`` providers call the judge VERL hosts
(:mod:`openjudge.integrations.verl._hosted_judge`), what was built is closed at exit
(:mod:`openjudge.integrations.verl.lifecycle`), the worker's long-lived objects leave the
garbage collector's full passes when the user asks (:mod:`openjudge.integrations.verl._gc_freeze`), and
breakers and the failure rate are kept for the whole run in one ledger
(:func:`openjudge.integrations.verl._ledger.run_ledger`). The extra keys and the failure
policy are the shared scorer's (:mod:`openjudge.integrations.scoring._scorer`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from openjudge.config import load_config
from openjudge.integrations.scoring._ledger import FailureLedger, Neutral
from openjudge.integrations.scoring._loader import ProcessCache, describe_providers, load_job, settings_path
from openjudge.integrations.scoring._scorer import DEFAULT_AGGREGATE, RewardScorer
from openjudge.integrations.verl._gc_freeze import freeze_long_lived_objects
from openjudge.integrations.verl._hosted_judge import (
    HostedJudge,
    resolve_hosted_providers,
    route_through_verl,
)
from openjudge.integrations.verl._ledger import run_ledger
from openjudge.integrations.verl._settings import CONFIG_ENV, FailurePolicy, OpenJudgeVerlSettings
from openjudge.integrations.verl.lifecycle import close_at_exit

__all__ = ["reward_loop_names", "shared_scorer"]

logger = logging.getLogger(__name__)

_SCORERS: ProcessCache[RewardScorer] = ProcessCache()


class _RunLedger:
    """The run's ledger (:func:`~openjudge.integrations.verl._ledger.run_ledger`), looked up at each call.

    A scorer lives as long as its process; the run's ledger may not (tests start a new run
    with ``reset_run_ledgers``). Looked up per call (a dict lookup), every sample reaches
    the current run's ledger, rather than each sample restarting a dead one on its own.
    """

    def __init__(self, policy: FailurePolicy, describe: Mapping[str, str]) -> None:
        self._policy, self._describe = policy, dict(describe)

    def _ledger(self) -> FailureLedger:
        return run_ledger(self._policy, self._describe)

    async def admit(self, providers: list[str]) -> tuple[str | None, str | None]:
        return await self._ledger().admit(providers)

    async def record(self, outage: dict[str, bool], labels: list[str]) -> str | None:
        return await self._ledger().record(outage, labels)

    async def problem(self) -> str | None:
        return await self._ledger().problem()

    async def start_failed(self, message: str) -> None:
        await self._ledger().start_failed(message)

    async def counts(self) -> dict[str, int]:
        return await self._ledger().counts()

    async def summary(self) -> str:
        return await self._ledger().summary()

    async def post(self, uid: str, reward: float | None, values: dict[str, float] | None = None) -> None:
        await self._ledger().post(uid, reward, values)

    async def neutral(self, uid: str, expected: int, wait_s: float) -> Neutral:
        return await self._ledger().neutral(uid, expected, wait_s)


def shared_scorer(settings: OpenJudgeVerlSettings, hosted_judge: HostedJudge | None = None) -> RewardScorer:
    """The scorer for these settings in this process, built once.

    Every manager instance and every ``compute_score`` call in a worker process shares
    it, and so shares its providers' limits and clients (clients are created lazily,
    one per running event loop); breakers and the failure rate are the run's.

    Args:
        settings: The options.
        hosted_judge: VERL's reward-model router, for ``kind: verl`` providers.

    Raises:
        ConfigError: The graders YAML is unreadable or invalid.
    """
    path = settings_path(settings, hint=f"set +reward.openjudge.config (or {CONFIG_ENV})")

    def build() -> RewardScorer:
        config, job = load_job(
            settings, prepare=lambda c: resolve_hosted_providers(c, hosted_judge, source=settings.config)
        )
        route_through_verl(job, config, hosted_judge)
        close_at_exit(job)  # in-process models and the cache file (Ray actors: see lifecycle)
        describe = describe_providers(job)
        scorer = RewardScorer(
            job.runner,
            settings,
            grader_providers=job.grader_providers,
            describe_providers=describe,
            source=settings.config,
            ledger=_RunLedger(settings.failure_policy(), describe),
        )
        freeze_long_lived_objects()  # if asked: the worker's imports and graders out of full GC passes
        logger.info(
            "openjudge: graders %s, reward = %s (on_failure=%s) from %s",
            ", ".join(scorer.grader_names),
            scorer.aggregate,
            settings.on_failure,
            path,
        )
        return scorer

    return _SCORERS.get((settings, path, hosted_judge), build)


def reward_loop_names(settings: OpenJudgeVerlSettings) -> tuple[str, ...]:
    """The names whose ``openjudge/<name>`` keys the reward manager writes with these settings.

    Reads the graders YAML (the group stage checks its own graders against these).

    Raises:
        ConfigError: The graders YAML is unreadable or invalid.
    """
    config = load_config(settings_path(settings))
    aggregators = [spec.name or spec.type for spec in config.aggregators]
    aggregate = settings.aggregate or (aggregators[0] if aggregators else DEFAULT_AGGREGATE)
    return tuple(dict.fromkeys((*config.graders, aggregate)))
