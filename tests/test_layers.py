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
