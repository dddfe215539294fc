"""The README's and docs' Python examples type-check under ``mypy --strict``, as written.

Each page's blocks become one module (``typed_docs.<page>``) whose body is one ``async def``,
as tests/docs/test_docs.py runs them: in order, in one namespace, with top-level ``await``,
``async with`` and ``async for``. Two allowances, for a page read as a notebook: a name may
be bound again to another type (mypy's ``allow_redefinition_new``), and a third-party
library without type information is taken as untyped (``import-untyped``). Everything else
is the project's own configuration (``--strict``, the pydantic plugin). Errors are reported
at the page's own lines.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

import pytest

from tests.docs.test_docs import PAGES, ROOT

pytestmark = pytest.mark.slow  # mypy over the package and every page: a minute or two

BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)

NOT_TYPED = {
    "openjudge-compat.md": "code written for OpenJudge, shown as its users wrote it (untyped)",
}
"""Pages whose examples are not meant to type-check, and why."""

PENDING: dict[str, str] = {}
"""Pages whose examples do not type-check yet (each passing one fails here: remove it)."""


def _module(page: Path) -> str:
    return re.sub(r"\W", "_", page.stem).lower()


def _page_source(page: Path) -> tuple[str, list[int]]:
    """The page's blocks as one async function's body, and each module line's page line."""
    text = page.read_text(encoding="utf-8")
    lines = ["async def _page() -> None:"]
    origin = [0]
    for match in BLOCK.finditer(text):
        first = text.count("\n", 0, match.start(1)) + 1
        for offset, line in enumerate(match.group(1).splitlines()):
            lines.append(f"    {line}" if line.strip() else "")
            origin.append(first + offset)
    return "\n".join(lines) + "\n", origin


def _config(path: Path) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    plugins = ", ".join(f'"{p}"' for p in project.get("plugins", []))
    path.write_text(
        "[tool.mypy]\n"
        f"strict = {str(project['strict']).lower()}\n"
        f'python_version = "{project["python_version"]}"\n'
        f"plugins = [{plugins}]\n\n"
        "[[tool.mypy.overrides]]\n"
        'module = ["typed_docs.*"]\n'
        "allow_redefinition_new = true\n"
        "local_partial_types = true\n"
        'disable_error_code = ["import-untyped"]\n',
        encoding="utf-8",
    )


@pytest.fixture(scope="module")
def page_errors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """``mypy`` once over every page: each page's errors, at its own lines."""
    folder = tmp_path_factory.mktemp("typed")
    package = folder / "typed_docs"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    origins: dict[str, tuple[str, list[int]]] = {}
    for page in PAGES:
        if page.name in NOT_TYPED or not BLOCK.search(page.read_text(encoding="utf-8")):
            continue
        source, origin = _page_source(page)
        (package / f"{_module(page)}.py").write_text(source, encoding="utf-8")
        origins[_module(page)] = (page.name, origin)
    _config(folder / "mypy.toml")
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(folder / "mypy.toml"),
            "--cache-dir",
            str(ROOT / ".mypy_cache" / "typed-docs"),  # kept apart from the project's own runs
            "-p",
            "typed_docs",
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    errors: dict[str, list[str]] = defaultdict(list)
    for line in done.stdout.splitlines():
        found = re.match(r"typed_docs[/\\](\w+)\.py:(\d+): (error|note): (.*)", line)
        if found is not None:
            name, origin = origins[found.group(1)]
            errors[name].append(
                f"{name}:{origin[int(found.group(2)) - 1]}: {found.group(3)}: {found.group(4)}"
            )
        elif "error" in line and not line.startswith("Found "):
            errors["(mypy)"].append(line)  # an error outside the pages: the package itself
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return dict(errors)


TYPED_PAGES = [p for p in PAGES if p.name not in NOT_TYPED and BLOCK.search(p.read_text(encoding="utf-8"))]


@pytest.mark.parametrize(
    "page",
    [
        pytest.param(p, marks=pytest.mark.xfail(reason=PENDING[p.name], strict=True))
        if p.name in PENDING
        else p
        for p in TYPED_PAGES
    ],
    ids=lambda p: p.name,
)
def test_page_examples_type_check(page: Path, page_errors: dict[str, list[str]]) -> None:
    found = [e for e in page_errors.get(page.name, []) if ": error: " in e]
    assert found == [], "\n".join(page_errors.get(page.name, []))
    assert page_errors.get("(mypy)", []) == []


def test_the_readme_is_checked_and_the_exceptions_are_real_pages() -> None:
    assert TYPED_PAGES[0] == ROOT / "README.md"
    names = {p.name for p in PAGES}
    assert set(NOT_TYPED) <= names and set(PENDING) <= names and not set(NOT_TYPED) & set(PENDING)
