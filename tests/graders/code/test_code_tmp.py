"""The namespace sandboxes with the interpreter, its virtual environment, the project and the
work root all under ``/tmp`` (as on CI runners and in containers): ``/tmp`` then holds mount
points, so it cannot be the link to the work directory it is otherwise."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = r"""
import json, sys
import anyio
import openjudge
from openjudge.graders.code import CodeExecutionGrader, SandboxJob, SandboxLimits, sandbox_backend

async def main(name, work_root):
    backend = sandbox_backend(name, work_root=work_root)
    plain = await backend.run(SandboxJob("import pydantic"), SandboxLimits())
    with_site = await backend.run(SandboxJob("import pydantic\nprint('ok')"), SandboxLimits(site_packages=True))
    writes = await backend.run(SandboxJob("open('/tmp/x', 'w').write('1')\nprint(open('/tmp/x').read())"), SandboxLimits())
    grader = CodeExecutionGrader(sandbox=name, work_root=work_root)
    graded = await grader.aevaluate(
        response="def twice(x):\n    return 2 * x\n",
        test_cases=[{"test": "values = [twice(i) for i in range(3)]\nassert values == [0, 2, 4]"}],
    )
    print(json.dumps({
        "executable": sys.executable,
        "package": openjudge.__file__,
        "plain": [plain.outcome, plain.error_type],
        "with_site": [with_site.outcome, with_site.stdout, with_site.stderr[-300:]],
        "writes": [writes.outcome, writes.stdout, writes.stderr[-300:]],
        "score": getattr(graded, "score", repr(graded)),
    }))

anyio.run(main, sys.argv[1], sys.argv[2])
"""


@pytest.fixture(scope="module")
def tmp_layout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copied interpreter (``venv --copies``) that sees this environment's packages, and a copy of
    the project, under a directory in ``/tmp``."""
    base = tmp_path_factory.mktemp("under-tmp")
    if not str(base.resolve()).startswith("/tmp/"):
        pytest.skip(f"pytest's temporary directory is not under /tmp here ({base})")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--copies", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(purelib) / "parent-env.pth").write_text("\n".join(sorted(ours)) + "\n")
    shutil.copytree(
        ROOT / "openjudge", base / "project" / "openjudge", ignore=shutil.ignore_patterns("__pycache__")
    )
    (base / "work").mkdir()
    return base


def test_interpreter_project_and_work_root_under_tmp(tmp_layout: Path, namespaced_backend: str) -> None:
    python = tmp_layout / "venv" / "bin" / "python"
    env = {**os.environ, "PYTHONPATH": str(tmp_layout / "project")}
    done = subprocess.run(
        [str(python), "-c", SCRIPT, namespaced_backend, str(tmp_layout / "work")],
        cwd=tmp_layout / "project", env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert os.path.realpath(report["executable"]).startswith(
        str(tmp_layout)
    )  # a copy, not a link out of /tmp
    assert report["package"].startswith(str(tmp_layout / "project"))
    assert report["plain"] == ["error", "ModuleNotFoundError"]  # site-packages under /tmp still hidden
    assert report["with_site"][:2] == ["ok", "ok\n"], report
    assert report["writes"][:2] == ["ok", "1\n"], report  # /tmp stays writable
    assert report["score"] == 1.0
    assert list((tmp_layout / "work").iterdir()) == []  # the unshare backend's roots are removed
