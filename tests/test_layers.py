"""The layer contract (pyproject's [tool.importlinter]): arrows point one way.

``lint-imports`` runs over the tree in scripts/test.sh; these tests show that it passes on the
tree and that it catches an arrow reversed on purpose in a copy of the package.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def lint_imports(project: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(project)}
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())",
            "--no-cache",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def copy_project(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "openjudge", tmp_path / "openjudge", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_tree_keeps_the_contract(tmp_path: Path) -> None:
    result = lint_imports(copy_project(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 2 kept, 0 broken." in result.stdout


def test_a_reversed_import_breaks_the_contract(tmp_path: Path) -> None:
    project = copy_project(tmp_path)
    engine = project / "openjudge" / "models" / "engine.py"
    engine.write_text(
        engine.read_text() + "\nfrom openjudge.graders import base_grader as _reversed  # noqa\n"
    )
    result = lint_imports(project)
    assert result.returncode == 1
    assert "openjudge.models.engine -> openjudge.graders.base_grader" in result.stdout


def test_an_export_planted_in_a_package_breaks_the_contract(tmp_path: Path) -> None:
    # A lazy export is an import statement (openjudge/_lazy.py), so exporting a provider
    # from the graders package is an arrow from graders up to providers, which lint-imports sees.
    project = copy_project(tmp_path)
    init = project / "openjudge" / "graders" / "__init__.py"
    guard = "if TYPE_CHECKING or not lazy_exports(globals()):\n"
    planted = "    from openjudge.providers.openai import OpenAIChatModel as OpenAIChatModel\n"
    assert guard in init.read_text()
    init.write_text(init.read_text().replace(guard, guard + planted))
    exported = subprocess.run(
        [sys.executable, "-c", "import openjudge.graders as g; print(g.OpenAIChatModel.__module__)"],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(project)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert exported.stdout.strip() == "openjudge.providers.openai"  # the plant is a working export
    result = lint_imports(project)
    assert result.returncode == 1
    assert "openjudge.graders -> openjudge.providers.openai" in result.stdout
