"""``response_failure_score`` in a config: the score a grader gives a response that broke it."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import yaml

from openjudge.cli import main
from openjudge.config import load_config
from openjudge.config._build import build_job
from openjudge.results import GraderScore

GRADER: dict[str, object] = {
    "type": "json_match",
    "params": {"strict_order": False},
    "response_failure_score": 0.25,
    "mapper": {"response": "answer", "reference": "expected"},
}
CONFIG: dict[str, object] = {
    "version": 1,
    "graders": {"json": GRADER},
    "data": {"path": "data.jsonl"},
}


def _write(folder: Path, config: dict[str, object]) -> Path:
    (folder / "data.jsonl").write_text('{"id": "a", "answer": "[]", "expected": "[]"}\n', encoding="utf-8")
    path = folder / "job.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def test_the_configured_score_is_given_to_response_failures(tmp_path: Path) -> None:
    job = build_job(load_config(_write(tmp_path, CONFIG)), base_dir=tmp_path)
    deep = "[" * 600 + "]" * 600

    async def run() -> object:
        results = await job.runner.arun([{"answer": deep, "expected": "[]"}])
        return results["json"][0]

    result = anyio.run(run)
    assert isinstance(result, GraderScore), result
    assert (result.score, result.metadata["blame"], result.metadata["cause"]) == (
        0.25,
        "response",
        "too_deep",
    )


@pytest.mark.parametrize("score", [2.0, -0.5])
def test_a_score_outside_the_range_is_a_located_config_error(
    tmp_path: Path, score: float, capsys: pytest.CaptureFixture[str]
) -> None:
    config = {**CONFIG, "graders": {"json": {**GRADER, "response_failure_score": score}}}
    assert main(["validate", str(_write(tmp_path, config))]) != 0
    err = capsys.readouterr().err
    assert "graders.json.response_failure_score" in err and "outside the grader's range" in err
