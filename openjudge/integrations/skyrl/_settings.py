"""The options of the SkyRL environment: the shared scorer's, with SkyRL's defaults."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

from pydantic import Field, ValidationError, model_validator

from openjudge.errors import SettingsError
from openjudge.integrations._shared import plain_options, validation_problems
from openjudge.integrations.scoring._settings import ScorerSettings

__all__ = ["CONFIG_ENV", "OpenJudgeSkyRLSettings", "SettingsError", "failure_problem", "read_settings"]

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
        on_failure: ``fallback``, the only choice: SkyRL trains every step's reward (a
            step cannot be left out) and a step knows no group (no neutral mean), so
            ``drop`` and ``neutral`` are refused rather than trained as a made-up 0.0.
        fallback_score: The reward of a step whose grading failed: required, since
            SkyRL trains on it (a reward of your choosing, never one made up for you).
            The step's ``metadata`` and the episode's metrics flag it (``openjudge/failed``).
    """

    config: str = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _explicit_fallback(cls, data: object) -> object:
        """A failed step gets the ``fallback_score`` the user chose (see :func:`failure_problem`)."""
        if isinstance(data, dict):
            problem = failure_problem(data)
            if problem is not None:
                raise ValueError(problem)
            data = {**data, "on_failure": "fallback"}
        return data


def failure_problem(options: Mapping[str, object]) -> str | None:
    """Why ``options`` give SkyRL no reward of the user's choosing for a failed step (``None``: they do)."""
    on_failure = options.get("on_failure", "fallback")
    if on_failure != "fallback":
        return (
            f"on_failure={on_failure!r} cannot be honoured under SkyRL: it trains every step's reward (a "
            "step cannot be left out) and a step knows no group (no neutral mean), so the step would be "
            "trained as a made-up 0.0. Use on_failure='fallback' (the default) with fallback_score=<the "
            "reward of a step whose grading failed>"
        )
    if options.get("fallback_score") is None:
        return (
            "no fallback_score: SkyRL trains every step's reward, so the reward of a step whose grading "
            "failed must be one you chose, e.g. register_env(..., fallback_score=0.0) (such steps are "
            "flagged in openjudge/failed)"
        )
    return None


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
    problem = failure_problem(data)
    if problem is not None:
        raise SettingsError(f"{where}: {problem}")
    try:
        return OpenJudgeSkyRLSettings.model_validate(data)
    except ValidationError as exc:
        raise SettingsError(validation_problems(exc, where)) from None
