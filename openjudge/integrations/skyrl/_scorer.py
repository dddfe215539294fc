"""Score one environment step with the graders, from any thread, on one persistent loop.

SkyRL calls ``env.step`` (a sync method) on a thread pool, one new environment per
trajectory. The graders, their providers (with their concurrency and rate limits), the
failure ledger (breakers, failure rate) and one event-loop thread
(:class:`~openjudge.runner._sync.SyncPortal`) are therefore shared per process: every step
of every environment hands its coroutine to that loop and blocks until it is done. HTTP
clients live across steps; no ``asyncio.run`` per step. The grading itself is the shared
:class:`~openjudge.integrations.scoring.RewardScorer`'s, as under VERL and TRL.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import JsonValue

from openjudge._text import encodable
from openjudge.integrations.scoring._loader import ProcessCache, describe_providers, load_job, settings_path
from openjudge.integrations.scoring._scorer import DEFAULT_AGGREGATE, Placement, RewardScorer, ScoredSample
from openjudge.integrations.scoring._settings import ScorerSettings
from openjudge.integrations.skyrl._settings import OpenJudgeSkyRLSettings
from openjudge.results import GraderScore
from openjudge.runner._sync import SyncPortal
from openjudge.runner.grading_runner import GradingRunner

__all__ = ["DEFAULT_AGGREGATE", "EnvScorer", "StepScore", "shared_scorer"]

logger = logging.getLogger(__name__)

_PLACEMENT = Placement()
"""A step cannot be left out (SkyRL needs a number) and knows no group: neutral is 0.0."""


@dataclass(frozen=True, slots=True)
class StepScore:
    """The outcome of grading one step.

    Attributes:
        reward: The aggregate's score, or the fallback when it failed.
        failed: Whether the reward is the fallback.
        scores: Raw score per grader and for the aggregate (``None`` when it failed).
        errors: Error kind per failed grader or aggregate.
        reasons: Each grader's reason (only with ``include_reasons``).
    """

    reward: float
    failed: bool
    scores: dict[str, float | None]
    errors: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)

    def metadata(self) -> dict[str, JsonValue]:
        """The step's ``metadata``: everything under one ``openjudge`` key."""
        info: dict[str, JsonValue] = {
            "reward": self.reward,
            "failed": self.failed,
            "scores": dict[str, JsonValue](self.scores),
            "errors": dict[str, JsonValue](self.errors),
        }
        if self.reasons:
            info["reasons"] = dict[str, JsonValue](self.reasons)
        return {"openjudge": info}

    def metrics(self) -> dict[str, float]:
        """Numeric episode metrics (SkyRL averages them per environment class)."""
        out: dict[str, float] = {"openjudge/failed": 1.0 if self.failed else 0.0}
        for name, score in self.scores.items():
            out[f"openjudge/{name}/error"] = 1.0 if name in self.errors else 0.0
            if score is not None:
                out[f"openjudge/{name}"] = score
        return out


class EnvScorer:
    """Grades environment steps: graders, one aggregate as the reward, the failure policy.

    Args:
        runner: Graders (with mappers) and aggregators, e.g. ``build_job(...).runner``.
        aggregate: The aggregator whose score is the reward (default: the runner's first,
            else ``mean`` of every grader's normalised score).
        fallback_score: The reward of a step whose aggregate failed.
        include_reasons: Keep each grader's reason in the step metadata.
        timeout_s: Seconds per (step, grader) pair (default: the runner's ``timeout_s``).
        **options: The other options of :class:`OpenJudgeSkyRLSettings` (``on_failure``,
            ``breaker_failures``, ``max_failure_rate``, ...).
    """

    def __init__(
        self,
        runner: GradingRunner,
        *,
        aggregate: str | None = None,
        fallback_score: float = 0.0,
        include_reasons: bool = False,
        timeout_s: float | None = None,
        **options: object,
    ) -> None:
        on_failure = options.pop("on_failure", "fallback")
        settings = ScorerSettings.model_validate(
            {
                "on_failure": on_failure,
                "fallback_score": fallback_score if on_failure == "fallback" else None,
                "aggregate": aggregate,
                "include_reasons": include_reasons,
                "timeout_s": timeout_s,
                **options,
            }
        )
        self._setup(RewardScorer(runner, settings, where="OpenJudgeEnv", reserve_keys=False))

    def _setup(self, scorer: RewardScorer) -> None:
        self.scorer = scorer
        self.aggregate = scorer.aggregate
        self.grader_names = scorer.grader_names
        self.fallback_score = scorer.policy.fallback_score
        self.include_reasons = scorer.settings.include_reasons
        self._portal = SyncPortal()

    @classmethod
    def from_settings(cls, settings: OpenJudgeSkyRLSettings) -> EnvScorer:
        """Build the graders of the settings' YAML.

        Raises:
            ConfigError: The YAML is unreadable or invalid, or names no such aggregator.
        """
        _, job = load_job(settings)
        env_scorer = cls.__new__(cls)
        env_scorer._setup(
            RewardScorer(
                job.runner,
                settings,
                grader_providers=job.grader_providers,
                describe_providers=describe_providers(job),
                source=settings.config,
                where="environment.skyrl_gym.<env_class>",
                reserve_keys=False,
            )
        )
        logger.info(
            "openjudge: SkyRL env graders %s, reward = %s (on_failure=%s) from %s",
            ", ".join(env_scorer.grader_names),
            env_scorer.aggregate,
            settings.on_failure,
            settings.config,
        )
        return env_scorer

    async def ascore(self, sample: Mapping[str, object]) -> StepScore:
        """Grade one step's sample (its graders concurrently).

        Raises:
            FailureRateExceeded: More than ``max_failure_rate`` of the recent steps failed
                (the message names the judges): the run stops instead of training on them.
        """
        return self._step_score(await self.scorer.score(sample, _PLACEMENT))

    def score(self, sample: Mapping[str, object]) -> StepScore:
        """Blocking :meth:`ascore` on the scorer's persistent loop; safe from any thread."""
        return self._portal.call(self.ascore, sample)

    def close(self) -> None:
        """Stop the loop thread (a later :meth:`score` starts a new one)."""
        self._portal.close()

    def _step_score(self, scored: ScoredSample) -> StepScore:
        scores: dict[str, float | None] = {}
        errors: dict[str, str] = {}
        reasons: dict[str, str] = {}
        for name, result in scored.results.items():
            scores[name] = result.score if isinstance(result, GraderScore) else None
            kind = self.scorer.error_kind(scored, name)
            if kind:
                errors[name] = kind
            if self.include_reasons and name in self.grader_names:
                reasons[name] = encodable(result.reason)  # SkyRL logs it as UTF-8
        return StepScore(scored.reward, scored.failed, scores, errors, reasons)


_SCORERS: ProcessCache[EnvScorer] = ProcessCache()


def shared_scorer(settings: OpenJudgeSkyRLSettings) -> EnvScorer:
    """The scorer for these settings in this process, built once.

    Every environment instance in the process (SkyRL makes one per trajectory) shares it,
    and so shares its providers' limits, their HTTP clients, its failure ledger and its
    event-loop thread.

    Raises:
        ConfigError: The graders YAML is unreadable or invalid.
    """
    return _SCORERS.get((settings, settings_path(settings)), lambda: EnvScorer.from_settings(settings))
