"""Lazy exports built from real import statements (anyio's ``_lazyimport`` pattern).

A package exports a name by importing it, once, in the block this function guards::

    from typing import TYPE_CHECKING

    from openjudge._lazy import lazy_exports

    if TYPE_CHECKING or not lazy_exports(globals()):
        from openjudge.graders.llm_grader import LLMGrader as LLMGrader

    __all__ = ["LLMGrader"]

Type checkers and import-linter read the block as the import it is (``TYPE_CHECKING`` is
true for them), so every exported name is an edge the layer contract checks and a symbol
mypy resolves. At run time :func:`lazy_exports` reads the same statements from the
package's source and installs a PEP 562 ``__getattr__`` that imports each module on first
use; the block itself does not run. Without the source (a build that ships only bytecode)
it returns ``False`` and the block runs: the names are then imported eagerly. There is no
string table to drift from the imports, and ``tests/test_exports.py`` checks that
``__all__`` lists exactly the names the package imports this way.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Mapping, MutableMapping

__all__ = ["lazy_exports"]

_GUARD = "if TYPE_CHECKING or not lazy_exports(globals()):"


def lazy_exports(namespace: MutableMapping[str, object], *, extras: Mapping[str, str] | None = None) -> bool:
    """Make the imports under ``if TYPE_CHECKING or not lazy_exports(globals()):`` lazy.

    Args:
        namespace: The package's ``globals()``; a name is cached there on first use.
        extras: Optional top-level module -> the ``openjudge-graders`` extra that installs
            it: when a lazy import fails for want of that module, the ImportError names
            the extra.

    Returns:
        ``True`` once the lazy ``__getattr__`` is installed; ``False`` when the package's
        source cannot be read, so the guarded block runs and imports eagerly.

    Raises:
        ImportError: The guarded block is missing, or holds a statement other than
            ``from <module> import <name> as <name>`` (it would silently not run).
    """
    package = str(namespace["__name__"])
    source = _source(namespace)
    if source is None:
        return False
    lazy = _exports(package, ast.parse(source))
    hints = dict(extras or {})

    def __getattr__(name: str) -> object:
        target = lazy.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = target
        try:
            imported = importlib.import_module(module, package)
        except ModuleNotFoundError as exc:
            extra = hints.get((exc.name or "").partition(".")[0])
            if extra is None:
                raise
            raise ImportError(
                f"{package}.{name} needs {exc.name}: pip install 'openjudge-graders[{extra}]'"
            ) from exc
        value: object = getattr(imported, attribute)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *lazy})

    namespace["__getattr__"] = __getattr__
    namespace["__dir__"] = __dir__
    return True


def _source(namespace: Mapping[str, object]) -> str | None:
    spec = namespace.get("__spec__")
    loader = getattr(spec, "loader", None)
    get_source = getattr(loader, "get_source", None)
    if get_source is None:
        return None
    try:
        source = get_source(namespace["__name__"])
    except (ImportError, OSError):
        return None
    return source if isinstance(source, str) else None


def _exports(package: str, tree: ast.Module) -> dict[str, tuple[str, str]]:
    """Exported name -> (module, attribute), from the statements under the guard."""
    blocks = [node for node in tree.body if isinstance(node, ast.If) and _is_guard(node.test)]
    if len(blocks) != 1:
        raise ImportError(f"{package}: lazy_exports() is called once, as `{_GUARD}`")
    out: dict[str, tuple[str, str]] = {}
    for statement in blocks[0].body:
        if not isinstance(statement, ast.ImportFrom) or statement.module is None:
            raise ImportError(
                f"{package}, line {statement.lineno}: only `from <module> import <name> as <name>` "
                f"may stand under `{_GUARD}` (anything else would not run)"
            )
        module = "." * statement.level + statement.module
        for alias in statement.names:
            if alias.asname != alias.name:
                raise ImportError(
                    f"{package}, line {statement.lineno}: write `{alias.name} as {alias.name}` "
                    "(an explicit re-export, exported under its own name)"
                )
            out[alias.name] = (module, alias.name)
    return out


def _is_guard(test: ast.expr) -> bool:
    """``TYPE_CHECKING or not lazy_exports(...)``."""
    match test:
        case ast.BoolOp(
            op=ast.Or(),
            values=[
                ast.Name(id="TYPE_CHECKING"),
                ast.UnaryOp(op=ast.Not(), operand=ast.Call(func=ast.Name(id="lazy_exports"))),
            ],
        ):
            return True
    return False
