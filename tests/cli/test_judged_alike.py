"""``validate`` and ``run`` judge a job the same way; ``run`` fails a job whose grader never worked.

The command in a subprocess, on real files, as a user runs it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli._support import openjudge, results

pytestmark = pytest.mark.slow  # the command in a subprocess

BROKEN = """
from openjudge.graders.base_grader import BaseGrader
from openjudge.results import GraderScore


class Broken(BaseGrader):
    async def aevaluate(self, *, response: str) -> GraderScore:
        raise RuntimeError("my grader has a bug")
"""


def _samples(path: Path, n: int) -> None:
    path.write_text(
        "".join(
            json.dumps({"id": f"s{i}", "response": f"answer {i}", "reference": f"answer {i % 2}"}) + "\n"
            for i in range(n)
        ),
        encoding="utf-8",
    )


def test_validate_refuses_a_data_path_that_run_refuses(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(
        "graders:\n  exact: {type: string_match}\ndata:\n  path: missing.jsonl\n", encoding="utf-8"
    )
    validated = openjudge("validate", "job.yaml", cwd=tmp_path)
    ran = openjudge("run", "job.yaml", "--no-progress", cwd=tmp_path)
    message = (
        f"error: job.yaml:4: data.path: dataset file not found: {Path('missing.jsonl')} "
        "(fix data.path, or give --data FILE)"
    )
    assert (validated.returncode, ran.returncode) == (1, 1)
    assert validated.stderr.strip() == ran.stderr.strip() == message
    assert not (tmp_path / "results.jsonl").exists()
    # --data names the dataset for both, and a missing one is refused alike.
    for command in ("validate", "run", "estimate"):
        done = openjudge(command, "job.yaml", "--data", "nope.jsonl", cwd=tmp_path)
        assert done.returncode == 1 and "nope.jsonl: dataset file not found (--data)" in done.stderr
    _samples(tmp_path / "missing.jsonl", 3)  # now it exists
    assert openjudge("validate", "job.yaml", cwd=tmp_path).returncode == 0
    assert openjudge("run", "job.yaml", "--no-progress", cwd=tmp_path).returncode == 0


def test_run_warns_about_the_records_validate_refuses(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(
        "graders:\n  exact: {type: string_match}\ndata: {path: data.jsonl}\n", encoding="utf-8"
    )
    _samples(tmp_path / "data.jsonl", 4)
    with (tmp_path / "data.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps({"id": "no-reference", "response": "x"}) + "\n")
    validated = openjudge("validate", "job.yaml", cwd=tmp_path)
    ran = openjudge("run", "job.yaml", "--no-progress", cwd=tmp_path)
    problem = "job.yaml:2: graders.exact: cannot read 1 of the first 5 records of"
    assert validated.returncode == 1 and f"error: {problem}" in validated.stderr
    assert ran.returncode == 0 and f"warning: {problem}" in ran.stderr  # the same problem, found alike
    assert results(tmp_path / "results.jsonl")["no-reference"]["exact"]["kind"] == "invalid_input"


def test_a_grader_that_fails_on_every_sample_fails_the_job(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text(BROKEN, encoding="utf-8")
    (tmp_path / "job.yaml").write_text(
        "graders:\n"
        "  exact: {type: string_match}\n"
        "  length: {type: length_penalty}\n"
        "  mine: {type: broken:Broken}\n",
        encoding="utf-8",
    )
    _samples(tmp_path / "data.jsonl", 20)
    done = openjudge("run", "job.yaml", "--data", "data.jsonl", "--no-progress", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert (
        "error: grader 'mine' failed on every sample it graded (20 of 20); "
        "the first: internal: my grader has a bug"
    ) in done.stderr
    assert "error: 20 of 60 grader results in results.jsonl are errors (33.3%)" in done.stderr
    rows = results(tmp_path / "results.jsonl")
    assert {rows[f"s{i}"]["exact"]["score"] for i in range(20)} == {0.0, 1.0}  # the others are kept
    # A rerun grades the broken grader again (a system failure), and fails the same way.
    again = openjudge("run", "job.yaml", "--data", "data.jsonl", "--no-progress", cwd=tmp_path)
    assert again.returncode == 3 and "grader 'mine' failed on every sample" in again.stderr
    # A partial failure stays --max-error-rate's to judge.
    (tmp_path / "partial.py").write_text(
        BROKEN.replace("raise RuntimeError", "if response.endswith('7'):\n            raise RuntimeError")
        + "        return GraderScore(name=self.name, score=1.0)\n",
        encoding="utf-8",
    )
    (tmp_path / "job.yaml").write_text("graders:\n  mine: {type: partial:Broken}\n", encoding="utf-8")
    partial = openjudge(
        "run", "job.yaml", "--data", "data.jsonl", "--out", "p.jsonl", "--no-progress", cwd=tmp_path
    )
    assert (
        partial.returncode == 0 and "2 of 20 grader results in p.jsonl are errors (10.0%)" in partial.stdout
    )
    gated = openjudge(
        "run",
        "job.yaml",
        "--data",
        "data.jsonl",
        "--out",
        "p.jsonl",
        "--max-error-rate",
        "0.01",
        "--no-progress",
        cwd=tmp_path,
    )
    assert gated.returncode == 3 and "above --max-error-rate 0.01" in gated.stderr
