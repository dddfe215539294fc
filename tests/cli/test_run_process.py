"""``openjudge run`` owns its process: there, and only unless the config says no, it tunes the collector."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli._support import openjudge, results

pytestmark = pytest.mark.slow  # the command in a subprocess

# A grader beside the config that scores each sample with the young threshold it ran under.
PROBE = """
import gc

from openjudge.graders.base_grader import BaseGrader
from openjudge.results import GraderScore


class YoungThreshold(BaseGrader):
    async def aevaluate(self, *, response: str) -> GraderScore:
        return GraderScore(name=self.name, score=float(gc.get_threshold()[0]))
"""


@pytest.mark.parametrize(
    ("runner", "threshold"), [("", 10_000.0), ("runner: {tune_collector: false}\n", 700.0)]
)
def test_openjudge_run_raises_the_young_threshold_unless_the_config_turns_it_off(
    tmp_path: Path, runner: str, threshold: float
) -> None:
    (tmp_path / "probe.py").write_text(PROBE, encoding="utf-8")
    (tmp_path / "job.yaml").write_text(
        f"graders:\n  young: {{type: probe:YoungThreshold}}\n{runner}", encoding="utf-8"
    )
    (tmp_path / "data.jsonl").write_text(
        "".join(json.dumps({"id": f"s{i}", "response": "x"}) + "\n" for i in range(3)), encoding="utf-8"
    )
    done = openjudge("run", "job.yaml", "--data", "data.jsonl", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = results(tmp_path / "results.jsonl")
    assert [rows[f"s{i}"]["young"]["score"] for i in range(3)] == [threshold] * 3
