"""The options of the TRL integration: the shared scorer's, with TRL's defaults and names."""

from __future__ import annotations

from pydantic import AliasChoices, Field, model_validator

from openjudge.integrations.scoring._settings import OnFailure, ScorerSettings

__all__ = ["OpenJudgeTRLSettings"]


class OpenJudgeTRLSettings(ScorerSettings):
    """Options of :class:`~openjudge.integrations.trl.OpenJudgeRewards`.

    Every option of :class:`~openjudge.integrations.scoring.ScorerSettings` (failure policy,
    breaker, failure rate, timeouts), with TRL's defaults:

    Attributes:
        config: Path of the graders YAML (``openjudge.config`` format: providers, graders
            with mappers, aggregators); ``None`` for graders built in code. Relative paths
            resolve against the working directory of the process that loads it.
        on_failure: What a failed completion becomes (its function's result failed, or,
            for the per-grader functions, which judge it together, any of theirs):
            ``drop`` (the default) returns ``None`` from every per-grader function, so
            TRL 1.6.0 and later leave the completion out (no advantage; refused on older
            TRL, which trains it as 0); ``neutral`` gives each function the mean of its
            rewards over the completions of the same prompt that did not fail (zero
            advantage); ``fallback`` gives a failed grading ``fallback_score``. Setting
            only ``fallback_score`` means ``fallback``.
        normalize: Return each result's normalised score (0 worst, 1 best, using the
            grader's declared score range; the raw score when it declares none) instead of
            the raw score. Keeps "lower is better" graders usable as rewards.
        max_concurrent_samples: Gradings in flight at once, shared by every reward
            function of the set (a grading is one completion for one reward function).
            ``None``: the YAML's ``runner.max_concurrency``. Also accepted as
            ``max_concurrency``.
        include_reasons: Add each grader's reason as a completions-table column. Also
            accepted as ``log_reasons``.
        log_failures: Report each function's failure rate through TRL's ``log_metric``
            (``openjudge/<name>/failed``) and each completion's error kind through
            ``log_extra`` (a column of the completions table).
    """

    normalize: bool = True
    max_concurrent_samples: int | None = Field(
        default=None, ge=1, validation_alias=AliasChoices("max_concurrent_samples", "max_concurrency")
    )
    include_reasons: bool = Field(
        default=False, validation_alias=AliasChoices("include_reasons", "log_reasons")
    )
    log_failures: bool = True

    @model_validator(mode="before")
    @classmethod
    def _fallback_means_fallback(cls, data: object) -> object:
        """``fallback_score=x`` alone (the option TRL users know) chooses ``on_failure=fallback``."""
        if isinstance(data, dict) and "on_failure" not in data:
            given = data.get("fallback_score")
            on_failure: OnFailure = "fallback" if given is not None else "drop"
            data = {**data, "on_failure": on_failure}
            if given is None:
                data.pop("fallback_score", None)
        return data

    @property
    def max_concurrency(self) -> int | None:
        """``max_concurrent_samples``, by the name TRL's options have used."""
        return self.max_concurrent_samples

    @property
    def log_reasons(self) -> bool:
        """``include_reasons``, by the name TRL's options have used."""
        return self.include_reasons
