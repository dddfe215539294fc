"""PEP 562 lazy names: a package exports a name without importing its module up front.

Public packages use it so that ``import openjudge`` stays light (no provider SDK, torch or
framework, and not every grader module) while ``from openjudge import GradingRunner`` works.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, MutableMapping

__all__ = ["lazy_attribute"]


def lazy_attribute(namespace: MutableMapping[str, object], lazy: Mapping[str, str], name: str) -> object:
    """A package's ``__getattr__`` for names whose modules are imported on first use.

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
