"""What every trainer adapter configures: the failure policy and how samples are scored.

One hierarchy, read by :class:`~openjudge.integrations.scoring.RewardScorer`:

* :class:`FallbackPolicy`: what a failed sample becomes (``on_failure``, ``fallback_score``);
* :class:`FailurePolicy`: and when judge failures stop the run (breaker, failure rate);
* :class:`ScorerSettings`: and the graders YAML, the reward's aggregate, timeouts, limits.

Each adapter subclasses :class:`ScorerSettings` only to change a default (VERL keeps no
judge cache; TRL normalises; SkyRL must return a number) or to name an option its users
already know; an option added here reaches VERL, TRL and SkyRL at once.
"""

from __future__ import annotations

import math
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["FailurePolicy", "FallbackPolicy", "OnFailure", "ScorerSettings"]

OnFailure = Literal["drop", "neutral", "fallback"]
"""What a sample that could not be scored becomes (:class:`FallbackPolicy`)."""


class FallbackPolicy(BaseModel):
    """What a sample that could not be scored becomes. Never an exception that ends the step.

    Attributes:
        on_failure: ``drop`` (default): the trainer trains without the sample where it
            can leave one out (VERL's V1 streaming path fails the session; TRL gets
            ``None``); everywhere else it is made *neutral*, as below. ``neutral``: the
            sample's reward is the mean reward of the members of its group that were
            scored (0.0 when every member failed, or no group is known), so its GRPO
            advantage is zero; flagged in ``openjudge/failed``. A group with none scored
            and members missing after ``neutral_wait_s`` has no mean: the sample is
            dropped where the trainer can drop it, else given 0.0 with a warning.
            ``fallback``: reward the sample with ``fallback_score``, flagged.
        fallback_score: The reward of a failed sample under ``fallback`` (required there,
            refused otherwise).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    on_failure: OnFailure = "drop"
    fallback_score: float | None = None

    @field_validator("fallback_score")
    @classmethod
    def _finite_fallback(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("fallback_score must be a finite number")
        return value

    @model_validator(mode="after")
    def _fallback_is_explicit(self) -> Self:
        if self.on_failure == "fallback" and self.fallback_score is None:
            raise ValueError("on_failure=fallback needs an explicit fallback_score (e.g. fallback_score=0.0)")
        if self.on_failure != "fallback" and self.fallback_score is not None:
            raise ValueError(
                "fallback_score is used only with on_failure=fallback; set on_failure=fallback too, "
                "or remove fallback_score"
            )
        return self


class FailurePolicy(FallbackPolicy):
    """What a failed sample becomes, and when judge failures stop the run.

    ``on_failure`` and ``fallback_score`` are :class:`FallbackPolicy`'s.

    Attributes:
        breaker_failures: After this many consecutive samples failed by one provider
            (provider error or timeout), that provider's samples fail at once, without a
            call, for ``breaker_cooldown_s``; then one sample probes it again.
            ``0`` disables the breaker.
        breaker_cooldown_s: How long the breaker stays open.
        max_failure_rate: Stop when more than this share of the last
            ``failure_window`` samples failed: every later sample raises
            :class:`~openjudge.integrations.scoring.FailureRateExceeded`. ``None``: no limit.
        failure_window: Samples the failure rate is measured over (it is checked only
            once the window is full).
        neutral_wait_s: Where a neutral sample's group is still being scored (VERL's
            streaming path), how long it waits at most for the rewards of the group's
            other members (then takes the mean of those that were scored; see
            ``neutral``). The breaker, the failure rate and this wait are kept in the
            scorer's failure ledger
            (:class:`~openjudge.integrations.scoring.FailureLedger`): per process, or for
            the whole run under VERL.
    """

    breaker_failures: int = Field(default=5, ge=0)
    breaker_cooldown_s: float = Field(default=30.0, gt=0)
    max_failure_rate: float | None = Field(default=0.5, ge=0, le=1)
    failure_window: int = Field(default=100, ge=1)
    neutral_wait_s: float = Field(default=600.0, gt=0)

    def failure_policy(self) -> FailurePolicy:
        """The failure-policy options alone (what the failure ledger is configured with)."""
        return FailurePolicy.model_validate(self.model_dump(include=set(FailurePolicy.model_fields)))


class ScorerSettings(FailurePolicy):
    """Options of a :class:`~openjudge.integrations.scoring.RewardScorer`.

    The failure-policy options are inherited from :class:`FailurePolicy`.

    Attributes:
        config: Path of the graders YAML (``openjudge.config`` format). Relative paths
            resolve against the working directory of the process that loads it; paths
            inside it (the judge cache, custom aggregators) against its directory.
            ``None`` for graders built in code.
        aggregate: Name of the aggregator (or grader) whose score is the reward.
            Default: the config's first aggregator, or ``mean`` (equal-weight mean of
            every grader's normalised score; any failed grader fails it) when it has none.
        include_reasons: Keep each grader's reason (``openjudge/<name>/reason``).
        normalize: The reward is the normalised score (0 worst, 1 best, by the declared
            score range) rather than the raw one.
        timeout_s: Seconds one (sample, grader) pair may take, retries included; ``None``
            keeps the config's ``runner.timeout_s``.
        max_concurrent_samples: Samples graded at once per process (``None``: no cap;
            provider limits still bound judge calls).
        judge_cache: Use a judge cache: this process's own (a temporary file in the node's
            ``$TMPDIR``, deleted when the process ends; never a file on a shared home
            directory), or the file the YAML's ``cache.path`` shares. Identical judge
            calls in flight at once are made only once either way.
    """

    config: str | None = Field(default=None, min_length=1)
    aggregate: str | None = None
    include_reasons: bool = False
    normalize: bool = False
    timeout_s: float | None = Field(default=None, gt=0)
    max_concurrent_samples: int | None = Field(default=None, ge=1)
    judge_cache: bool = True
