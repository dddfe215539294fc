"""``type: openai_grader`` in job configs, ``openjudge import-openai-graders``, and a cookbook-style
RFT grader run end to end through ``openjudge run``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from openjudge.cli import main
from openjudge.config import ConfigError, load_config
from openjudge.config._build import build_job
from openjudge.graders.openai import OpenAIGrader, graders_in, job_config_yaml
from openjudge.testing.judge_server import JudgeServerProcess
from tests.graders.openai.helpers import DATA, GUIDE_MULTI, GUIDE_SCORE_MODEL


def results(path: Path) -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    return {row["id"]: row["results"] for row in rows}


def test_cookbook_rft_job_through_import_and_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(DATA / "samples.jsonl", tmp_path / "samples.jsonl")
    config = tmp_path / "job.yaml"
    assert (
        main(
            [
                "import-openai-graders",
                str(DATA / "rft_job.json"),
                "--data",
                "samples.jsonl",
                "-o",
                str(config),
            ]
        )
        == 0
    )
    assert "wrote" in capsys.readouterr().out
    text = config.read_text()
    assert "type: openai_grader" in text and "source: |" in text and "calculate_output: 0.6 * exact" in text
    assert main(["run", str(config), "--out", str(tmp_path / "results.jsonl")]) == 0
    got = results(tmp_path / "results.jsonl")
    reward = {key: value["answer_format_and_reasoning"] for key, value in got.items()}
    assert reward["right"]["score"] == 1.0
    assert reward["right"]["metadata"]["sub_rewards"] == {"exact": 1.0, "close": 1.0, "explained": 1.0}
    # "paris" is not "Paris" (eq is case-sensitive); fuzzy_match ignores case; the explanation has 3 words.
    assert reward["close"]["score"] == pytest.approx(0.4)
    assert reward["wrong"]["score"] == 0.0
    assert reward["not_json"]["score"] == 0.0
    assert reward["not_json"]["metadata"]["blame"] == "response"
    assert reward["not_json"]["metadata"]["cause"] == "sample_parse_error"


def test_import_refuses_to_overwrite_and_explains_bad_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "job.yaml"
    out.write_text("keep me")
    assert main(["import-openai-graders", str(DATA / "rft_job.json"), "-o", str(out)]) == 1
    assert "exists; pass --force" in capsys.readouterr().err and out.read_text() == "keep me"
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{"type": "string_check", "name": "x", "input": "a", "reference": "b", "operation": "neq"}'
    )
    assert main(["import-openai-graders", str(bad)]) == 1
    assert "grader 'x': operation: Input should be 'eq', 'ne', 'like' or 'ilike'" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "type": ')
    assert main(["import-openai-graders", str(broken)]) == 1
    assert f"{broken}:2: not JSON" in capsys.readouterr().err
    empty = tmp_path / "empty.json"
    empty.write_text('{"model": "gpt-4o"}')
    assert main(["import-openai-graders", str(empty)]) == 1
    assert "no grader found" in capsys.readouterr().err


def test_the_json_shapes_that_hold_graders() -> None:
    job = json.loads((DATA / "rft_job.json").read_text())
    assert [name for name, _ in graders_in(job)] == ["answer_format_and_reasoning"]
    assert graders_in({"grader": GUIDE_MULTI, "model_sample": "x"})[0][1] == GUIDE_MULTI
    evals = {"name": "my eval", "testing_criteria": [GUIDE_SCORE_MODEL, {**GUIDE_MULTI, "name": "tools"}]}
    assert [name for name, _ in graders_in(evals)] == ["my_score_model", "tools"]
    text = job_config_yaml(evals, source="eval.json")
    assert "provider: judge" in text and "model: o4-mini-2025-04-16" in text
    assert "name: reward" in text  # two graders: one reward


def test_a_grader_file_beside_the_config_and_a_model_grader_over_http(
    tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    (tmp_path / "graders").mkdir()
    (tmp_path / "graders" / "judge.json").write_text(json.dumps(GUIDE_SCORE_MODEL))
    config = tmp_path / "job.yaml"
    config.write_text(
        f"""
providers:
  local:
    kind: openai
    base_url: {judge_server.base_url}
    api_key: sk-test
    model: any-open-model
graders:
  similarity:
    type: openai_grader
    provider: local
    params:
      grader: graders/judge.json
    mapper: {{response: answer, item: row}}
"""
    )
    job = build_job(load_config(config), source=str(config), base_dir=tmp_path, use_cache=False)
    assert job.grader_providers == {"similarity": "local"}
    grader = job.runner.grader_configs["similarity"].grader
    assert isinstance(grader, OpenAIGrader) and grader.name == "similarity"
    (tmp_path / "data.jsonl").write_text(
        json.dumps({"id": "a", "answer": "Paris", "row": {"reference_answer": "Paris"}}) + "\n"
    )
    assert (
        main(["run", str(config), "--data", str(tmp_path / "data.jsonl"), "--out", str(tmp_path / "r.jsonl")])
        == 0
    )
    result = results(tmp_path / "r.jsonl")["a"]["similarity"]
    # The test server answers every JSON request with an instance of its schema: the middle of [0, 1].
    assert result["score"] == 0.5 and result["metadata"]["passed"] is True


def test_config_problems_name_the_file_and_field(tmp_path: Path) -> None:
    config = tmp_path / "job.yaml"
    config.write_text(
        """
graders:
  judged:
    type: openai_grader
    params:
      grader: {type: label_model, name: l, model: gpt-4o, input: [{role: user, content: hi}], labels: [a], passing_labels: [a]}
  missing:
    type: openai_grader
    params:
      grader: nowhere.json
"""
    )
    with pytest.raises(ConfigError) as err:
        build_job(load_config(config), source=str(config), base_dir=tmp_path, use_cache=False)
    problems = "\n".join(err.value.problems)
    assert (
        f"{config}:5: graders.judged.params: cannot build 'openai_grader': label_model grader 'l' needs a judge"
        in problems
    )
    assert (
        "graders.missing.params: cannot build 'openai_grader':" in problems
        and "nowhere.json: cannot read" in problems
    )
