"""Pieces every framework adapter needs: option parsing help, rate-limited failure logs, lazy names."""

from __future__ import annotations

import importlib
import logging
import threading
from collections import Counter
from collections.abc import Mapping, MutableMapping

from pydantic import ValidationError

from openjudge.graders.schema import GraderError

__all__ = ["FailureLog", "lazy_attribute", "plain_options", "validation_problems"]

_LOG_EVERY = 1000


class FailureLog:
    """Logs the first failure of each (result, kind) at WARNING, then one line per 1,000.

    Args:
        logger: The adapter's logger, so messages keep its name.
    """

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger
        self._counts: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    def record(self, error: GraderError) -> None:
        key = (error.name, error.kind)
        with self._lock:
            self._counts[key] += 1
            n = self._counts[key]
        if n == 1 or n % _LOG_EVERY == 0:
            self._logger.warning(
                "openjudge: %s failed (%s, %d so far): %s", error.name, error.kind, n, error.message
            )


def plain_options(value: object) -> object:
    """An OmegaConf node as plain Python containers (anything else unchanged)."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf
    except ImportError:  # no omegaconf: values are plain already
        return value
    if isinstance(value, DictConfig | ListConfig):
        return OmegaConf.to_container(value, resolve=True)
    return value


def validation_problems(exc: ValidationError, where: str) -> str:
    """One line naming each invalid option by its full path under ``where``."""
    return "; ".join(f"{where}.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())


def lazy_attribute(namespace: MutableMapping[str, object], lazy: Mapping[str, str], name: str) -> object:
    """A package's ``__getattr__`` (PEP 562) for names whose modules import a framework.

    Args:
        namespace: The package's ``globals()``; the value is cached there.
        lazy: Name -> the module that defines it.
        name: The attribute asked for.

    Raises:
        AttributeError: ``name`` is not one of ``lazy``.
    """
    module = lazy.get(name)
    if module is None:
        raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
    value: object = getattr(importlib.import_module(module), name)
    namespace[name] = value
    return value
