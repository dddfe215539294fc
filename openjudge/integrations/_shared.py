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
    OmegaConf nodes, tuples, sets and nested mappings included (anything else as its ``str``).

    Iterative: a completion's tool call nested thousands of levels deep is converted like any
    other value (the grader that reads it decides whose failure that is), never a
    ``RecursionError`` out of the adapter.
    """
    root: list[JsonValue] = [None]
    # (the value to convert, the container it goes into, its key or index there)
    stack: list[tuple[object, dict[str, JsonValue] | list[JsonValue], str | int]] = [(value, root, 0)]
    while stack:
        item, parent, key = stack.pop()
        if item is None or isinstance(item, bool | int | float | str):
            parent[key] = item  # type: ignore[index]  # a str key for a dict, an int index for a list
            continue
        children: list[tuple[object, str | int]]
        out: dict[str, JsonValue] | list[JsonValue]
        if isinstance(item, Mapping):
            out = {}
            children = [(v, str(k)) for k, v in item.items()]
        elif isinstance(item, list | tuple | set | frozenset):
            out = [None] * len(item)
            children = [(v, i) for i, v in enumerate(item)]
        else:
            converted = _converted(item)
            if converted is not item:
                stack.append((converted, parent, key))
                continue
            if isinstance(item, Sequence) and not isinstance(item, bytes):
                out = [None] * len(item)
                children = [(v, i) for i, v in enumerate(item)]
            else:
                parent[key] = str(item)  # type: ignore[index]
                continue
        parent[key] = out  # type: ignore[index]
        if isinstance(out, dict):
            for _, k in children:
                out[str(k)] = None  # the keys in the mapping's order
        # Reversed: children are converted in order, so of two keys that collide as
        # strings ({1: ..., "1": ...}) the later one wins, as in a dict comprehension.
        stack.extend((child, out, k) for child, k in reversed(children))
    return root[0]


def _converted(value: object) -> object:
    """An OmegaConf node as containers, a numpy or torch value as its ``tolist()``; else ``value``."""
    if "omegaconf" in sys.modules:  # a node can only come from a process that imported it
        converted = plain_options(value)
        if converted is not value:
            return converted
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars, torch tensors (duck-typed)
    if callable(tolist):
        listed: object = tolist()
        return listed
    return value


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
