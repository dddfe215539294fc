"""A grader class of one's own beside the config: it runs, validates and meta-evaluates like a built-in.

Run as a user runs it (the command in a subprocess), and its mistakes name the line and the fix.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests.cli._support import openjudge, results

GRADER_MODULE = '''
from openjudge.graders.base_grader import BaseGrader
from openjudge.results import GraderScore


class NumericAnswer(BaseGrader):
    """1 when the response's last number equals the reference, else 0."""

    def __init__(self, name: str = "numeric", tolerance: float = 0.0) -> None:
        super().__init__(name=name, score_range=(0, 1))
        self.tolerance = tolerance

    async def aevaluate(self, response: str, reference: str) -> GraderScore:
        numbers = [float(w) for w in response.replace(",", " ").split() if w.lstrip("-").isdigit()]
        ok = bool(numbers) and abs(numbers[-1] - float(reference)) <= self.tolerance
        return GraderScore(name=self.name, score=float(ok), reason=f"numbers {numbers}", score_range=self.score_range)


class Strictest:
    """An aggregator: the lowest normalised score, or `floor` when there is none."""

    def __init__(self, floor: float = 0.0) -> None:
        self.floor = floor

    def __call__(self, results):
        scores = [r.normalized_score for r in results.values() if hasattr(r, "normalized_score")]
        return GraderScore(name="strictest", score=min(scores, default=self.floor), reason="min")
'''


def test_a_grader_class_beside_the_config_runs_validates_and_meta_evaluates(tmp_path: Path) -> None:
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "numeric.py").write_text(GRADER_MODULE, encoding="utf-8")
    (tmp_path / "jobs" / "job.yaml").write_text(
        textwrap.dedent(
            """
            graders:
              numeric:
                type: numeric:NumericAnswer
                params: {tolerance: 0.5}
                mapper: {response: response, reference: reference}
              exact: {type: string_match, mapper: {response: response, reference: reference}}
            aggregators:
              - {type: numeric:Strictest, name: reward, params: {floor: 0.0}}
            """
        ),
        encoding="utf-8",
    )
    items = [("It is 4", "4", 1), ("It is 5", "4", 0), ("4", "4", 1), ("no idea", "4", 0)]
    (tmp_path / "data.jsonl").write_text(
        "".join(
            json.dumps({"id": f"q{i}", "prompt": "2 + 2?", "response": r, "reference": ref, "label": label})
            + "\n"
            for i, (r, ref, label) in enumerate(items)
        ),
        encoding="utf-8",
    )
    # Run from another directory: the module is found beside the config, and so are the results.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    validated = openjudge("validate", "../jobs/job.yaml", "--data", "../data.jsonl", cwd=elsewhere)
    assert validated.returncode == 0, validated.stderr
    assert (
        "ok (2 graders, 0 providers; the first 4 records of ../data.jsonl fit every grader)"
        in validated.stdout
    )

    run = openjudge("run", "../jobs/job.yaml", "--data", "../data.jsonl", "--no-progress", cwd=elsewhere)
    assert run.returncode == 0, run.stderr
    rows = results(tmp_path / "jobs" / "results.jsonl")
    assert [rows[f"q{i}"]["numeric"]["score"] for i in range(4)] == [1.0, 0.0, 1.0, 0.0]
    assert rows["q0"]["numeric"]["reason"] == "numbers [4.0]"
    aggregates = {
        json.loads(line)["id"]: json.loads(line)["aggregates"]
        for line in (tmp_path / "jobs" / "results.jsonl").read_text().splitlines()[1:]
    }
    assert aggregates["q0"] == {"reward": 0.0} and aggregates["q2"] == {"reward": 1.0}  # exact fails q0

    meta = openjudge(
        "meta-eval",
        "jobs/job.yaml",
        "--data",
        "data.jsonl",
        "--grader",
        "numeric",
        "--json",
        "m.json",
        "--no-progress",
        "--bootstrap",
        "50",
        cwd=tmp_path,
    )
    assert meta.returncode == 0, meta.stderr
    report = json.loads((tmp_path / "m.json").read_text())
    assert "numeric" in json.dumps(report)


def test_a_grader_class_mistake_names_the_line_and_the_fix(tmp_path: Path) -> None:
    (tmp_path / "numeric.py").write_text(GRADER_MODULE, encoding="utf-8")
    (tmp_path / "job.yaml").write_text(
        "graders:\n"
        "  a: {type: numeric:NumericAnswr}\n"
        "  b: {type: numerc:NumericAnswer}\n"
        "  c: {type: numeric.NumericAnswer}\n"
        "  d: {type: numeric:NumericAnswer, params: {tolerence: 1}}\n",
        encoding="utf-8",
    )
    done = openjudge("validate", "job.yaml", cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0] == (
        f"error: job.yaml:2: graders.a.type: {tmp_path / 'numeric.py'} has no 'NumericAnswr'; "
        "did you mean numeric:NumericAnswer?"
    )
    assert lines[1].startswith(
        "error: job.yaml:3: graders.b.type: no module named 'numerc'; did you mean 'numeric'?"
    )
    assert lines[2].startswith(
        "error: job.yaml:4: graders.c.type: unknown grader type 'numeric.NumericAnswer'"
    )
    assert lines[2].endswith("a class of your own is named with a colon: 'numeric:NumericAnswer'")
    assert lines[3].startswith(
        "error: job.yaml:5: graders.d.params.tolerence: unknown parameter 'tolerence'; did you mean 'tolerance'?"
    )
    assert len(lines) == 4
