"""Your own grader and aggregator classes, named in a config by import path.

A config names a class as ``type: package.module:ClassName``. The module is imported with
the config file's folder on the Python path (so a ``my_graders.py`` beside ``job.yaml`` is
``type: my_graders:NumericAnswer``), then the class is checked like a built-in one: its
``params`` against its constructor's signature. A class that takes a ``model`` parameter
is a judge: its grader needs ``provider: <name>``, and the provider's model is passed as
``model`` (:meth:`~openjudge.graders._registry.GraderType.of_class`). Every failure is a
message for the config's ``file:line: field:`` prefix.
"""

from __future__ import annotations

import difflib
import importlib
import re
import sys
import traceback
from pathlib import Path
from typing import Literal

from openjudge.graders._registry import GraderType, lookup
from openjudge.graders.base_grader import BaseGrader

__all__ = ["grader_class", "importable", "is_import_path", "load_class"]

_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def is_import_path(name: str) -> bool:
    """Whether a config ``type`` names a class (``module:Class``) rather than a built-in."""
    return ":" in name


def importable(base_dir: Path | None) -> None:
    """Put a config's folder on the Python path, once, so modules beside it import.

    It goes last: a module beside a config never shadows an installed package of the same name.
    """
    if base_dir is None:
        return
    folder = str(base_dir.resolve())
    if folder not in sys.path:
        sys.path.append(folder)


def _modules_in(base_dir: Path | None) -> list[str]:
    if base_dir is None or not base_dir.is_dir():
        return []
    return sorted(
        p.stem if p.suffix == ".py" else p.name
        for p in base_dir.iterdir()
        if (p.suffix == ".py" and p.stem.isidentifier()) or (p.is_dir() and (p / "__init__.py").is_file())
    )


def _where_it_failed(exc: BaseException) -> str:
    """``file:line`` of the innermost frame of the traceback outside importlib, if any."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "importlib" not in f.filename]
    if not frames:
        return ""
    last = frames[-1]
    return f" at {last.filename}:{last.lineno}"


def load_class(target: str, base_dir: Path | None, *, what: Literal["grader", "aggregator"]) -> type:
    """The class ``target`` (``module:Class``) names, imported with ``base_dir`` on the path.

    Raises:
        ValueError: The path is malformed, the module does not import, it has no such
            class, or the class is not a grader (for ``what="grader"``); the message says
            which and how to fix it.
    """
    if not _PATH.match(target):
        raise ValueError(
            f"{what} type {target!r} is not an import path: write 'module:ClassName' "
            f"(e.g. 'my_{what}s:Numeric{what.capitalize()}' for a class in my_{what}s.py beside the config)"
        )
    module_name, _, qualname = target.partition(":")
    importable(base_dir)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            near = difflib.get_close_matches(module_name, _modules_in(base_dir), n=1, cutoff=0.6)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            where = f" (looked beside the config, in {base_dir}, and on the Python path)" if base_dir else ""
            raise ValueError(f"no module named {module_name!r}{hint}{where}") from None
        raise ValueError(
            f"importing {module_name!r} failed: {type(exc).__name__}: {exc}{_where_it_failed(exc)}"
        ) from None
    except Exception as exc:  # the user's module raised while importing
        raise ValueError(
            f"importing {module_name!r} failed: {type(exc).__name__}: {exc}{_where_it_failed(exc)}"
        ) from None
    found: object = module
    for part in qualname.split("."):
        if not hasattr(found, part):
            classes = [n for n, v in vars(found).items() if isinstance(v, type) and not n.startswith("_")]
            near = difflib.get_close_matches(part, classes, n=1, cutoff=0.6)
            hint = f"; did you mean {module_name}:{near[0]}?" if near else ""
            origin = getattr(module, "__file__", None) or module_name
            raise ValueError(f"{origin} has no {part!r}{hint}")
        found = getattr(found, part)
    if not isinstance(found, type):
        raise ValueError(f"{target} is a {type(found).__name__}, not a class")
    if what == "grader" and not issubclass(found, BaseGrader):
        raise ValueError(
            f"{target} is not a grader: subclass openjudge.graders.base_grader.BaseGrader "
            "and implement 'async def aevaluate(self, <inputs>) -> GraderResult'"
        )
    if what == "aggregator" and not any("__call__" in vars(c) for c in found.__mro__ if c is not object):
        raise ValueError(f"{target} is not an aggregator: it needs '__call__(self, results) -> GraderResult'")
    return found


def grader_class(type_name: str, base_dir: Path | None) -> tuple[type[BaseGrader], GraderType]:
    """The class and type entry of a config's grader ``type``: a built-in name or ``module:Class``.

    Raises:
        ValueError: An unknown built-in name (with a "did you mean") or a class that
            cannot be loaded (see :func:`load_class`).
    """
    if is_import_path(type_name):
        cls = load_class(type_name, base_dir, what="grader")
        assert issubclass(cls, BaseGrader)  # load_class checked it
        return cls, GraderType.of_class(type_name, cls)
    try:
        entry = lookup(type_name)
    except KeyError as exc:
        message = str(exc.args[0])
        head, dot, tail = type_name.rpartition(".")
        if dot and head and tail[:1].isupper():
            message += f"; a class of your own is named with a colon: '{head}:{tail}'"
        else:
            message += "; a class of your own is named 'module:ClassName'"
        raise ValueError(message) from None
    return entry.load(), entry
