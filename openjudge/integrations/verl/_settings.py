"""What the training command configures: ``+reward.openjudge.<option>=<value>``.

The options are the shared scorer's (:mod:`openjudge.integrations.scoring._settings`:
the failure policy, breaker, failure rate, aggregate, timeouts), re-exported here under
their VERL names. :class:`FallbackPolicy`, :func:`option_mapping`, :func:`validated` and
:func:`config_value` serve the group stage's options too
(:mod:`openjudge.integrations.verl.group._settings`).
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from typing import TypeVar

from pydantic import BaseModel, Field, ValidationError

from openjudge.errors import SettingsError
from openjudge.integrations._shared import plain_options
from openjudge.integrations.scoring._settings import FailurePolicy, FallbackPolicy, OnFailure, ScorerSettings

__all__ = [
    "CONFIG_ENV",
    "FailurePolicy",
    "FallbackPolicy",
    "OnFailure",
    "OpenJudgeVerlSettings",
    "SettingsError",
    "config_value",
    "option_mapping",
    "read_settings",
    "validated",
]

CONFIG_ENV = "OPENJUDGE_VERL_CONFIG"
"""Environment variable naming the graders YAML when no ``config`` option is given."""


def config_value(node: object, *path: str) -> object:
    """``node.a.b...`` of VERL's config (an OmegaConf node or a mapping); ``None`` when any part is missing."""
    for key in path:
        if node is None:
            return None
        getter = getattr(node, "get", None)
        node = getter(key) if callable(getter) else getattr(node, key, None)
    return node


class OpenJudgeVerlSettings(ScorerSettings):
    """Options of the VERL integration, read from ``config.reward.openjudge``.

    Every option is :class:`~openjudge.integrations.scoring.ScorerSettings`' (the failure
    policy, breaker and failure rate included); under VERL ``config`` is required and the
    judge cache is off by default.

    Attributes:
        config: Path of the graders YAML (``openjudge.config`` format). Relative paths
            resolve against the working directory of the process that loads it (each
            Ray worker), so prefer an absolute path.
        judge_cache: Keep the YAML's on-disk judge cache. Off by default under VERL: RL
            samples rarely repeat, and every worker would write its own SQLite file.
            Identical judge calls in flight at once are still made only once.
    """

    config: str = Field(min_length=1)
    judge_cache: bool = False


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
