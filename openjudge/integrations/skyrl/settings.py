"""The options of the SkyRL environment: where the graders come from and the failure policy."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from openjudge.integrations._shared import plain_options, validation_problems

__all__ = ["CONFIG_ENV", "OpenJudgeSkyRLSettings", "SettingsError", "read_settings"]

CONFIG_ENV = "OPENJUDGE_SKYRL_CONFIG"
"""Environment variable naming the graders YAML when no ``config`` option is given."""


class SettingsError(ValueError):
    """The environment's options are missing or invalid (the message says how to fix them)."""


class OpenJudgeSkyRLSettings(BaseModel):
    """Options of :class:`~openjudge.integrations.skyrl.OpenJudgeEnv`.

    Attributes:
        config: Path of the graders YAML (``openjudge.config`` format). The judge is a
            provider entry there: a frozen vLLM reward model is ``kind: vllm`` (or
            ``kind: openai``) with the server's ``base_url``. Prefer an absolute path.
        aggregate: Name of the aggregator whose score is the reward. Default: the
            config's first aggregator, or ``mean`` (equal-weight mean of every grader's
            normalised score) when it declares none.
        fallback_score: The reward of a step whose grading failed. SkyRL needs a number
            for every step, so this is explicit; the step's ``metadata`` and the episode's
            metrics flag the failure (``openjudge/failed``).
        include_reasons: Add each grader's reason to the step's ``metadata``.
        timeout_s: Seconds one (step, grader) pair may take, retries included; ``None``
            keeps the YAML's ``runner.timeout_s``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    config: str = Field(min_length=1)
    aggregate: str | None = None
    fallback_score: float = 0.0
    include_reasons: bool = False
    timeout_s: float | None = Field(default=None, gt=0)

    @field_validator("fallback_score")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("fallback_score must be a finite number")
        return value


def _plain(value: object) -> object:
    """An OmegaConf node or a dataclass (SkyRL configs are either) as plain Python containers."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return plain_options(value)


def read_settings(
    *sources: object, where: str = "environment.skyrl_gym.<env_class>"
) -> OpenJudgeSkyRLSettings:
    """Merge option mappings (later ones win) and validate them.

    Each source may be ``None``, a mapping, an OmegaConf node or settings. With no
    ``config`` in any of them, the ``OPENJUDGE_SKYRL_CONFIG`` environment variable may name
    the graders YAML (read now, at call time, never at import).

    Raises:
        SettingsError: No graders config, or an invalid option (the message names it).
    """
    data: dict[str, object] = {}
    for source in sources:
        if isinstance(source, OpenJudgeSkyRLSettings):
            data.update(source.model_dump())
            continue
        raw = _plain(source)
        if raw is None:
            continue
        if not isinstance(raw, Mapping):
            raise SettingsError(f"{where} must be a mapping of options, got {type(raw).__name__}")
        data.update({str(k): v for k, v in raw.items()})
    if "config" not in data and os.environ.get(CONFIG_ENV):
        data["config"] = os.environ[CONFIG_ENV]
    if "config" not in data:
        raise SettingsError(
            f"no graders config: register the env with register_env(config='/abs/graders.yaml'), "
            f"or set {where}.config, or set {CONFIG_ENV}"
        )
    try:
        return OpenJudgeSkyRLSettings.model_validate(data)
    except ValidationError as exc:
        raise SettingsError(validation_problems(exc, where)) from None
