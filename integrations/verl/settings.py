"""What the training command configures: ``+reward.openjudge.<option>=<value>``."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from integrations._shared import plain_options, validation_problems

__all__ = ["CONFIG_ENV", "OpenJudgeVerlSettings", "SettingsError", "read_settings"]

CONFIG_ENV = "OPENJUDGE_VERL_CONFIG"
"""Environment variable naming the graders YAML when no ``config`` option is given."""


class SettingsError(ValueError):
    """The ``reward.openjudge`` options are missing or invalid (the message says how to fix them)."""


class OpenJudgeVerlSettings(BaseModel):
    """Options of the VERL integration, read from ``config.reward.openjudge``.

    Attributes:
        config: Path of the graders YAML (``openjudge.config`` format). Relative paths
            resolve against the working directory of the process that loads it (each
            Ray worker), so prefer an absolute path.
        aggregate: Name of the aggregator whose score is the reward. Default: the
            config's first aggregator, or ``mean`` (equal-weight mean of every grader's
            normalised score; any failed grader fails it) when the config has none.
        fallback_score: The reward of a sample whose aggregate failed. Explicit: a failure
            is never silently turned into a number anywhere else.
        flag_failures: Add ``/error`` and ``/error_kind`` keys per grader and aggregator,
            and ``openjudge/failed``, to ``reward_extra_info`` (for every sample).
        include_reasons: Add each grader's reason as ``openjudge/<name>/reason``.
        timeout_s: Seconds one (sample, grader) pair may take, retries included; ``None``
            keeps the config's ``runner.timeout_s``.
        max_concurrent_samples: Samples graded at once per worker process (``None``: no
            cap; provider limits still bound judge calls).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    config: str = Field(min_length=1)
    aggregate: str | None = None
    fallback_score: float = 0.0
    flag_failures: bool = True
    include_reasons: bool = False
    timeout_s: float | None = Field(default=None, gt=0)
    max_concurrent_samples: int | None = Field(default=None, ge=1)

    @field_validator("fallback_score")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("fallback_score must be a finite number")
        return value


def read_settings(
    options: OpenJudgeVerlSettings | Mapping[str, object] | object,
    *,
    where: str = "reward.openjudge",
) -> OpenJudgeVerlSettings:
    """Validate options given as a mapping (a dict or an OmegaConf node).

    With no options at all, the ``OPENJUDGE_VERL_CONFIG`` environment variable may name
    the graders YAML (read now, at call time, never at import).

    Raises:
        SettingsError: Missing config path or an invalid option (the message names it).
    """
    if isinstance(options, OpenJudgeVerlSettings):
        return options
    raw = plain_options(options)
    data: dict[str, object] = {}
    if isinstance(raw, Mapping):
        data = {str(k): v for k, v in raw.items()}
    elif raw is not None:
        raise SettingsError(f"{where} must be a mapping of options, got {type(raw).__name__}")
    if "config" not in data and os.environ.get(CONFIG_ENV):
        data["config"] = os.environ[CONFIG_ENV]
    if "config" not in data:
        raise SettingsError(
            f"no graders config: pass +{where}.config=/abs/path/graders.yaml on the training command "
            f"(or set {CONFIG_ENV})"
        )
    try:
        return OpenJudgeVerlSettings.model_validate(data)
    except ValidationError as exc:
        raise SettingsError(validation_problems(exc, where)) from None
