"""One export mechanism: every exported name is one real import statement, and ``__all__`` lists
exactly those names (openjudge/_lazy.py; docs/architecture.md, "How exports work").

A package imports what it exports eagerly at the top, or under
``if TYPE_CHECKING or not lazy_exports(globals()):`` to load it on first use. Either way the
export is an import that import-linter and mypy see; tests/test_layers.py shows a planted one
breaking the layer contract.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from openjudge._lazy import lazy_exports

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "openjudge" / "graders" / "code" / "harness"  # runs in the sandbox as `harness`


def _sources() -> list[Path]:
    return sorted(p for p in (ROOT / "openjudge").rglob("*.py") if HARNESS not in p.parents)


def _is_guard(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test).startswith(
        "TYPE_CHECKING or not lazy_exports("
    )


def _reexports(statements: list[ast.stmt]) -> set[str]:
    """Names bound by ``from m import name as name``."""
    return {
        alias.name
        for node in statements
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.asname == alias.name
    }


def _all(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            assert isinstance(value, list), "__all__ is a literal list"
            return [str(name) for name in value]
    return None


def _exporting_modules() -> list[Path]:
    """Package ``__init__`` files that export something, and modules that export lazily."""
    out = []
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if (path.name == "__init__.py" and _all(tree) is not None) or any(_is_guard(n) for n in tree.body):
            out.append(path)
    return out


@pytest.mark.parametrize("path", _exporting_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_all_is_exactly_the_names_imported_to_export(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    exported = _reexports(tree.body)
    for guard in (n for n in tree.body if _is_guard(n)):
        assert isinstance(guard, ast.If)
        exported |= _reexports(guard.body)
    assigned = {
        t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)
    }
    declared = _all(tree)
    assert declared is not None, "a module that exports lazily lists the names in __all__"
    assert sorted(declared) == sorted(exported | ({"__version__"} & assigned))
    assert len(declared) == len(set(declared))


def test_no_module_defines_its_own_module_getattr() -> None:
    # The only lazy path is lazy_exports(), whose map is read from import statements: a
    # hand-written name -> module table is an edge import-linter cannot see.
    found = [
        str(path.relative_to(ROOT))
        for path in _sources()
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
    ]
    assert found == []


def test_every_package_that_exports_lazily_exports_through_the_guard() -> None:
    lazy = [p for p in _exporting_modules() if "lazy_exports" in p.read_text(encoding="utf-8")]
    assert len(lazy) >= 12
    for path in lazy:
        guards = [n for n in ast.parse(path.read_text(encoding="utf-8")).body if _is_guard(n)]
        assert len(guards) == 1, path


def _package(tmp_path: Path, name: str, init: str, **modules: str) -> Path:
    package = tmp_path / name
    package.mkdir()
    (package / "__init__.py").write_text(init)
    for module, text in modules.items():
        (package / f"{module}.py").write_text(text)
    return tmp_path


def _run(path: Path, code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=path,
        env={"PYTHONPATH": f"{path}:{ROOT}"},
        capture_output=True,
        text=True,
        check=False,
    )


_GUARDED = (
    "from typing import TYPE_CHECKING\n"
    "from openjudge._lazy import lazy_exports\n"
    "if TYPE_CHECKING or not lazy_exports(globals(), extras={'nosuchdep': 'demo'}):\n"
)


def test_a_lazy_name_loads_its_module_on_first_use_and_is_cached(tmp_path: Path) -> None:
    init = _GUARDED + "    from pkg.heavy import Thing as Thing\n    from .light import VALUE as VALUE\n"
    root = _package(tmp_path, "pkg", init, heavy="class Thing: ...\n", light="VALUE = 41 + 1\n")
    code = (
        "import sys, pkg\n"
        "print('pkg.heavy' in sys.modules)\n"
        "print(pkg.Thing.__module__, pkg.VALUE, 'pkg.heavy' in sys.modules)\n"
        "print('Thing' in vars(pkg), 'Thing' in dir(pkg), 'TYPE_CHECKING' in dir(pkg))\n"
        "try:\n    pkg.Nope\nexcept AttributeError as exc:\n    print(exc)\n"
    )
    result = _run(root, code)
    assert result.stdout.splitlines() == [
        "False",
        "pkg.heavy 42 True",
        "True True True",
        "module 'pkg' has no attribute 'Nope'",
    ], result.stderr


def test_a_missing_dependency_names_the_extra(tmp_path: Path) -> None:
    init = _GUARDED + "    from pkg.needs import Thing as Thing\n"
    root = _package(tmp_path, "pkg", init, needs="import nosuchdep\nThing = 1\n")
    result = _run(root, "import pkg\ntry:\n    pkg.Thing\nexcept ImportError as exc:\n    print(exc)\n")
    assert result.stdout.strip() == "pkg.Thing needs nosuchdep: pip install 'openjudge-graders[demo]'"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("    VALUE = 1\n", "pkg, line 4: only `from <module> import <name> as <name>` may stand under"),
        ("    from pkg.light import VALUE\n", "pkg, line 4: write `VALUE as VALUE`"),
        ("    from pkg.light import VALUE as OTHER\n", "pkg, line 4: write `VALUE as VALUE`"),
    ],
)
def test_the_guarded_block_holds_only_explicit_re_exports(tmp_path: Path, line: str, message: str) -> None:
    root = _package(tmp_path, "pkg", _GUARDED + line, light="VALUE = 1\n")
    result = _run(root, "import pkg")
    assert result.returncode == 1
    assert message in result.stderr


def test_a_call_outside_the_guard_is_refused(tmp_path: Path) -> None:
    root = _package(tmp_path, "pkg", "from openjudge._lazy import lazy_exports\nlazy_exports(globals())\n")
    result = _run(root, "import pkg")
    assert "pkg: lazy_exports() is called once, as `if TYPE_CHECKING or not lazy_exports(globals()):`" in (
        result.stderr
    )


def test_without_source_the_block_runs_eagerly() -> None:
    # No loader that can give the source (a build that ships bytecode only): the guarded
    # imports run as written, so every name is still bound.
    namespace: dict[str, object] = {"__name__": "frozen_pkg", "__spec__": None}
    assert lazy_exports(namespace) is False
    assert "__getattr__" not in namespace


def test_the_shipped_packages_resolve_every_name_lazily() -> None:
    code = (
        "import sys, openjudge.graders, openjudge.models\n"
        "before = {m for m in sys.modules if m.startswith('openjudge.')}\n"
        "assert 'openjudge.graders.llm_grader' not in before, before\n"
        "print(openjudge.graders.LLMGrader.__module__, 'openjudge.graders.llm_grader' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["openjudge.graders.llm_grader", "True"]
