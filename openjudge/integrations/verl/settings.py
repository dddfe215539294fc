"""What the training command configures: ``+reward.openjudge.<option>=<value>``.

The failure-policy options are also available as one object,
:meth:`OpenJudgeVerlSettings.failure_policy`. :class:`FallbackPolicy` (``on_failure``,
``fallback_score``), :func:`option_mapping`, :func:`validated` and :func:`config_value`
serve the group stage's options too (:mod:`openjudge.integrations.verl.group.settings`).
"""

from __future__ import annotations

import difflib
import math
import os
import re
from collections.abc import Mapping
from typing import Literal, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from openjudge.integrations._shared import plain_options

__all__ = [
    "CONFIG_ENV",
    "FailurePolicy",
    "FallbackPolicy",
    "OpenJudgeVerlSettings",
    "SettingsError",
    "config_value",
    "option_mapping",
    "read_settings",
    "validated",
]

CONFIG_ENV = "OPENJUDGE_VERL_CONFIG"
"""Environment variable naming the graders YAML when no ``config`` option is given."""


class SettingsError(ValueError):
    """The ``reward.openjudge`` options are missing or invalid (the message says how to fix them)."""


def config_value(node: object, *path: str) -> object:
    """``node.a.b...`` of VERL's config (an OmegaConf node or a mapping); ``None`` when any part is missing."""
    for key in path:
        if node is None:
            return None
        getter = getattr(node, "get", None)
        node = getter(key) if callable(getter) else getattr(node, key, None)
    return node


class FallbackPolicy(BaseModel):
    """What a sample that could not be scored becomes: dropped, or an explicit, flagged fallback.

    Attributes:
        on_failure: ``drop``: raise, so VERL never trains on the sample (the V1 trainer
            drops the trajectory; V0 aborts the step). ``fallback``: reward the sample
            with ``fallback_score``, flagged in ``reward_extra_info``.
        fallback_score: The reward of a failed sample under ``fallback`` (required there,
            refused otherwise).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    on_failure: Literal["drop", "fallback"] = "drop"
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
        if self.on_failure == "drop" and self.fallback_score is not None:
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
            :class:`~openjudge.integrations.verl.guard.FailureRateExceeded`. ``None``: no limit.
        failure_window: Samples the failure rate is measured over (it is checked only
            once the window is full).
    """

    breaker_failures: int = Field(default=5, ge=0)
    breaker_cooldown_s: float = Field(default=30.0, gt=0)
    max_failure_rate: float | None = Field(default=0.5, ge=0, le=1)
    failure_window: int = Field(default=100, ge=1)


class OpenJudgeVerlSettings(FailurePolicy):
    """Options of the VERL integration, read from ``config.reward.openjudge``.

    The failure-policy options are inherited from :class:`FailurePolicy`.

    Attributes:
        config: Path of the graders YAML (``openjudge.config`` format). Relative paths
            resolve against the working directory of the process that loads it (each
            Ray worker), so prefer an absolute path.
        aggregate: Name of the aggregator whose score is the reward. Default: the
            config's first aggregator, or ``mean`` (equal-weight mean of every grader's
            normalised score; any failed grader fails it) when the config has none.
        include_reasons: Add each grader's reason as ``openjudge/<name>/reason``.
        timeout_s: Seconds one (sample, grader) pair may take, retries included; ``None``
            keeps the config's ``runner.timeout_s``.
        max_concurrent_samples: Samples graded at once per worker process (``None``: no
            cap; provider limits still bound judge calls).
        judge_cache: Keep the YAML's on-disk judge cache. Off by default under VERL: RL
            samples rarely repeat, and every worker would write its own SQLite file.
            Identical judge calls in flight at once are still made only once.
    """

    config: str = Field(min_length=1)
    aggregate: str | None = None
    include_reasons: bool = False
    timeout_s: float | None = Field(default=None, gt=0)
    max_concurrent_samples: int | None = Field(default=None, ge=1)
    judge_cache: bool = False

    def failure_policy(self) -> FailurePolicy:
        """The failure-policy options alone."""
        return FailurePolicy.model_validate(self.model_dump(include=set(FailurePolicy.model_fields)))


def option_mapping(options: object, where: str) -> dict[str, object]:
    """Options given as a mapping or an OmegaConf node (``None``: none) as a plain dict.

    Raises:
        SettingsError: ``options`` is something else.
    """
    raw = plain_options(options)
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise SettingsError(f"{where} must be a mapping of options, got {type(raw).__name__}")
    return {str(k): v for k, v in raw.items()}


M = TypeVar("M", bound=BaseModel)


def validated(model: type[M], data: Mapping[str, object], where: str) -> M:
    """``model`` validated from ``data``; a mistake names each option by its full path under ``where``.

    Raises:
        SettingsError: An invalid option.
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise SettingsError(_problems(exc, model, where)) from None


def _problems(exc: ValidationError, model: type[BaseModel], where: str) -> str:
    """Each invalid option by its full path under ``where``; an unknown one gets a "did you mean"."""
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden" and len(err["loc"]) == 1:
            options = sorted(model.model_fields)
            close = difflib.get_close_matches(loc, options, n=1, cutoff=0.6)
            hint = f"; did you mean +{where}.{close[0]}?" if close else ""
            message = f"unknown option{hint} (options: {', '.join(options)})"
        if not loc:  # a check across options: name each option it mentions by its full path
            fields = "|".join(sorted(model.model_fields, key=len, reverse=True))
            message = re.sub(rf"(?<![\w.])({fields})\b", rf"{where}.\1", message)
        lines.append(f"{where}.{loc}: {message}" if loc else message)
    return "; ".join(lines)


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
    data = option_mapping(options, where)
    if "config" not in data and os.environ.get(CONFIG_ENV):
        data["config"] = os.environ[CONFIG_ENV]
    if "config" not in data:
        raise SettingsError(
            f"no graders config: pass +{where}.config=/abs/path/graders.yaml on the training command "
            f"(or set {CONFIG_ENV})"
        )
    return validated(OpenJudgeVerlSettings, data, where)
