"""A grading actor's process is openjudge's own: its runs tune the collector unless the config says no."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from openjudge.config._loader import parse_config
from openjudge.distributed._worker import BatchGrader

pyarrow = pytest.importorskip("pyarrow")

PROBE = """
import gc

from openjudge.graders.base_grader import BaseGrader
from openjudge.results import GraderScore


class WorkerYoungThreshold(BaseGrader):
    async def aevaluate(self, *, response: str) -> GraderScore:
        return GraderScore(name=self.name, score=float(gc.get_threshold()[0]))
"""


@pytest.fixture
def probe_module(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "worker_probe.py").write_text(PROBE, encoding="utf-8")
    yield tmp_path
    sys.modules.pop("worker_probe", None)


@pytest.mark.parametrize(
    ("runner", "threshold"), [("", 10_000.0), ("runner: {tune_collector: false}\n", 700.0)]
)
def test_a_worker_grades_under_the_raised_young_threshold_unless_the_config_says_no(
    probe_module: Path, runner: str, threshold: float
) -> None:
    text = f"graders:\n  young: {{type: worker_probe:WorkerYoungThreshold}}\n{runner}"
    config = parse_config(text, base_dir=probe_module)
    worker = BatchGrader(config, "job.yaml", str(probe_module), use_cache=False, deadline_at=None)
    batch = pyarrow.table(
        {
            "id": ["a", "b"],
            "line": [1, 2],
            "data": [json.dumps({"response": "x"}), json.dumps({"response": "y"})],
        }
    )
    outcomes = [json.loads(line) for line in worker(batch).column("outcome").to_pylist()]
    assert [o["results"]["young"]["score"] for o in outcomes] == [threshold] * 2
