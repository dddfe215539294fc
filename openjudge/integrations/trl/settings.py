"""The options of the TRL integration, validated once (a failure is never a number unless asked)."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["OpenJudgeTRLSettings"]


class OpenJudgeTRLSettings(BaseModel):
    """Options of :class:`~openjudge.integrations.trl.OpenJudgeRewards` built from a graders YAML.

    Attributes:
        config: Path of the graders YAML (``openjudge.config`` format: providers, graders
            with mappers, aggregators). Relative paths resolve against the working
            directory of the process that loads it.
        fallback_score: The reward of a completion whose grading failed. ``None`` (the
            default) returns ``None``, which TRL turns into NaN and leaves out of the
            reward sum; a number is used only when you set one.
        normalize: Return each result's normalised score (0 worst, 1 best, using the
            grader's declared score range; the raw score when it declares none) instead of
            the raw score. Keeps "lower is better" graders usable as rewards.
        max_concurrency: Gradings in flight at once, shared by every reward function of
            the set (a grading is one completion for one reward function). ``None``: the
            YAML's ``runner.max_concurrency``. Provider limits apply on top.
        timeout_s: Seconds one (completion, grader) pair may take, retries included;
            ``None`` keeps the YAML's ``runner.timeout_s``.
        log_failures: Report each function's failure rate through TRL's ``log_metric``
            (``openjudge/<name>/failed``) and each completion's error kind through
            ``log_extra`` (a column of the completions table).
        log_reasons: Also add each grader's reason as a completions-table column.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    config: str = Field(min_length=1)
    fallback_score: float | None = None
    normalize: bool = True
    max_concurrency: int | None = Field(default=None, ge=1)
    timeout_s: float | None = Field(default=None, gt=0)
    log_failures: bool = True
    log_reasons: bool = False

    @field_validator("fallback_score")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("fallback_score must be a finite number or None (TRL turns None into NaN)")
        return value
