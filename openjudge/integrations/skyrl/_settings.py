"""The options of the SkyRL environment: the shared scorer's, with SkyRL's defaults."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

from pydantic import Field, ValidationError, model_validator

from openjudge.errors import SettingsError
from openjudge.integrations._shared import plain_options, validation_problems
from openjudge.integrations.scoring._settings import ScorerSettings

__all__ = ["CONFIG_ENV", "OpenJudgeSkyRLSettings", "SettingsError", "read_settings"]

CONFIG_ENV = "OPENJUDGE_SKYRL_CONFIG"
"""Environment variable naming the graders YAML when no ``config`` option is given."""


class OpenJudgeSkyRLSettings(ScorerSettings):
    """Options of :class:`~openjudge.integrations.skyrl.OpenJudgeEnv`.

    Every option of :class:`~openjudge.integrations.scoring.ScorerSettings` (failure policy,
    breaker, failure rate, timeouts), with SkyRL's defaults:

    Attributes:
        config: Path of the graders YAML (``openjudge.config`` format). The judge is a
            provider entry there: a frozen vLLM reward model is ``kind: vllm`` (or
            ``kind: openai``) with the server's ``base_url``. Prefer an absolute path.
        on_failure: SkyRL needs a number for every step, so the default is ``fallback``
            with ``fallback_score`` 0.0; ``drop`` and ``neutral`` give 0.0 (a step knows no
            group). The step's ``metadata`` and the episode's metrics flag the failure
            (``openjudge/failed``).
        fallback_score: The reward of a step whose grading failed (0.0 unless set).
    """

    config: str = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _fallback_by_default(cls, data: object) -> object:
        """Without ``on_failure``, a failed step gets ``fallback_score`` (0.0 unless set)."""
        if isinstance(data, dict) and data.get("on_failure", "fallback") == "fallback":
            data = {"fallback_score": 0.0, **data, "on_failure": "fallback"}
            if data["fallback_score"] is None:
                data["fallback_score"] = 0.0
        return data


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
            data.update(source.model_dump(exclude_unset=True))
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
