"""Pieces every framework adapter needs: plain values, option parsing help and rate-limited failure logs."""

from __future__ import annotations

import logging
import sys
import threading
from collections import Counter
from collections.abc import Mapping, Sequence

from pydantic import JsonValue, ValidationError

from openjudge._text import encodable
from openjudge.results import GraderError

__all__ = ["FailureLog", "plain", "plain_options", "validation_problems"]

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
                "openjudge: %s failed (%s, %d so far): %s",
                error.name,
                error.kind,
                n,
                encodable(error.message),
            )


def plain(value: object) -> JsonValue:
    """What a trainer hands over, as plain JSON data: numpy arrays and scalars, torch tensors,
    OmegaConf nodes, tuples, sets and nested mappings included (anything else as its ``str``)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(v) for v in value]
    if "omegaconf" in sys.modules:  # a node can only come from a process that imported it
        converted = plain_options(value)
        if converted is not value:
            return plain(converted)
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars, torch tensors (duck-typed)
    if callable(tolist):
        listed: object = tolist()
        if listed is not value:
            return plain(listed)
    if isinstance(value, Sequence) and not isinstance(value, bytes):
        return [plain(v) for v in value]
    return str(value)


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
