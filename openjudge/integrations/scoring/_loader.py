"""A scorer's graders from a YAML, built once per process, whatever the adapter.

Every adapter builds its graders the same way: the YAML read from the settings'
``config``, relative paths inside it (judge cache, custom aggregators) resolved against
its directory, the judge cache kept or not (``judge_cache``), and one scorer per process
for equal settings, so every trajectory a process scores shares the providers' clients
and limits, the breakers and the failure rate. Adapters add what is theirs through
hooks (VERL: the judge it hosts, closing at exit, the run-wide ledger).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Generic, TypeVar

from openjudge.config import ConfigError, load_config
from openjudge.config._build import BuiltJob, build_job
from openjudge.config._spec import JobConfig
from openjudge.integrations.scoring._settings import ScorerSettings

__all__ = ["ProcessCache", "describe_providers", "load_job", "settings_path"]

T = TypeVar("T")


def settings_path(settings: ScorerSettings, *, hint: str = "set the config option") -> str:
    """The graders YAML of ``settings``, resolved (a cache key: two spellings, one scorer).

    Raises:
        ConfigError: ``settings.config`` is not set.
    """
    if settings.config is None:
        raise ConfigError([f"no graders config: {hint}"])
    return os.path.realpath(settings.config)


def load_job(
    settings: ScorerSettings,
    *,
    prepare: Callable[[JobConfig], JobConfig] | None = None,
) -> tuple[JobConfig, BuiltJob]:
    """Read the settings' graders YAML and build its providers, graders and aggregators.

    Args:
        settings: ``config`` names the YAML; ``judge_cache`` keeps its on-disk cache.
        prepare: Changes the config before it is built (VERL resolves ``kind: verl``).

    Raises:
        ConfigError: The YAML is unreadable or invalid (every problem is listed).
    """
    path = Path(settings_path(settings))
    source = settings.config or str(path)
    try:
        config = load_config(path)
        if prepare is not None:
            config = prepare(config)
    except ValueError as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError([str(exc)]) from None
    return config, build_job(config, source=source, base_dir=path.parent, use_cache=settings.judge_cache)


def describe_providers(job: BuiltJob) -> dict[str, str]:
    """Provider name -> endpoint and model, for messages."""
    return {
        name: f"{getattr(model, 'base_url', None) or name}, model {model.model_name!r}"
        for name, model in job.providers.items()
    }


class ProcessCache(Generic[T]):
    """One value per key in this process, built on first use (under a lock: built once)."""

    def __init__(self) -> None:
        self._values: dict[Hashable, T] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, build: Callable[[], T]) -> T:
        with self._lock:
            value = self._values.get(key)
            if value is None:
                value = self._values[key] = build()
            return value
